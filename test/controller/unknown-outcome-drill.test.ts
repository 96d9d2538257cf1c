// The unknown-outcome drill (cli/drill.ts; docs/controller.md "Manual repair"), the
// way an operator follows it, with real parts only: `npm run experiment -- --drill
// unknown-outcome` as a real process (its writer and runtime real processes, the runtime really
// SIGKILLed at its first write intent), then the repair command exactly as the screen printed
// it (split into words by a real shell), then the printed --resume, then npm run verify.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { checkSignedManifest } from '../../design/manifest.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { DRILL_OPERATOR } from '../../cli/drill.js';
import { SubjectState } from '../../projector/subject-state.js';
import { FAULT_FILES } from '../../schema/fault-points.js';
import { FaultSwitch } from '../../schema/fault-switch.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetup, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';
import { readProjectionRow } from '../support/store-forgery.js';
import { storedEvents } from '../support/stored-events.js';

const SAME_UID = 'test drill in one uid';

/** The words a POSIX shell makes of `text` (the printed command is meant for one). */
async function shellWords(text: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)('bash', ['-c', `printf '%s\\0' ${text}`]);
  return stdout.split('\0').slice(0, -1);
}

/** The one screen line that is the command `prefix` starts (indented under "next:" / "then"), split into the script's arguments. */
async function printedArgs(stdout: string, prefix: string): Promise<string[]> {
  const lines = stdout.split('\n').map((l) => l.trim()).filter((l) => l.startsWith(`${prefix} `));
  expect(lines, `exactly one "${prefix}" line in:\n${stdout}`).toHaveLength(1);
  return shellWords(lines[0]!.slice(prefix.length + 1));
}

function stateOf(dir: string): SubjectState {
  return SubjectState.parse(JSON.parse(readProjectionRow(path.join(dir, RUN_FILES.store)).state));
}

let setup: ControllerSetup;
let runDir: string;
let drill: CliResult;

beforeAll(async () => {
  setup = controllerSetup();
  runDir = path.join(setup.dir, 'runs', 'drill');
  drill = await runCli('experiment', ['--group', 'C', '--drill', 'unknown-outcome', '--prereg', setup.preregFile, '--key-dir', setup.keyDir, '--out', runDir, '--same-uid', SAME_UID]);
}, 90_000);

afterAll(() => {
  if (setup) rmSync(setup.dir, { recursive: true, force: true });
});

describe('npm run experiment -- --drill unknown-outcome', () => {
  test('drill → exit 3 at a recorded unknown outcome; the printed repair → exit 0; the printed --resume → finished, verified', async () => {
    // 1. The drill: stopped (exit 3) right after the unknown outcome, marked a drill everywhere.
    expect(drill.code, `${drill.stdout}\n${drill.stderr}`).toBe(3);
    expect(drill.stdout).toMatch(/^STOPPED: /);
    expect(drill.stdout).toMatch(/DRILL unknown-outcome — a drill, not study data: experiment drill-\d{8}-[0-9a-f]{6}/);
    expect(drill.stderr).toContain('FAULT INJECTION (--drill unknown-outcome): armed: workspace_tampered at the first hit from 1 of runtime.intent.before_file_op whose op is write or modify or move');
    const events = storedEvents(runDir);
    const manifest = checkSignedManifest(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.manifest), 'utf8')), setup.key.keys.publicKey);
    expect(manifest.ok && manifest.manifest.experiment_id).toMatch(/^drill-\d{8}-[0-9a-f]{6}$/);
    const unknown = events.filter((e) => e.event_type === 'ActionEvent.ToolOutcomeUnknown');
    expect(unknown).toHaveLength(1);
    const intentId = String(unknown[0]!.payload.intent_event_id);
    const intent = events.find((e) => e.event_id === intentId)!;
    expect(intent.event_type).toBe('ActionEvent.ExecutionIntentRecorded');
    expect(['write', 'modify', 'move']).toContain(intent.payload.op);
    // Nothing closed the intent before the unknown outcome: the runtime died between intent and outcome.
    expect(events.filter((e) => e.seq < unknown[0]!.seq && e.payload.intent_event_id === intentId && e.event_type !== 'ActionEvent.ExecutionIntentRecorded')).toEqual([]);
    const stops = events.filter((e) => e.event_type === 'SystemEvent.EmergencyStopped');
    expect(stops).toHaveLength(2);
    expect(stops.every((s) => String(s.payload.reason).startsWith('drill unknown-outcome: '))).toBe(true);
    expect(stops[0]!.seq).toBeLessThan(unknown[0]!.seq);
    expect(stops[1]!.payload.operator).toBe(DRILL_OPERATOR);
    expect(stops[1]!.seq).toBeGreaterThan(unknown[0]!.seq);
    // The stop is the last thing recorded, its head signed; the subject is held STOPPED with the outcome open.
    expect(events.at(-1)!.event_type).toBe('SystemEvent.ChainHeadSigned');
    expect(stateOf(runDir)).toMatchObject({ lifecycle_state: 'STOPPED', current_wake_id: null });
    expect(stateOf(runDir).open_intents[intentId]?.outcome).toBe('unknown');
    expect(verifyDirectory(runDir, { allowOpen: true }).failures).toEqual([]);
    const target = String(intent.payload.op === 'move' ? intent.payload.to_path : intent.payload.path);
    expect(readFileSync(path.join(runDir, RUN_FILES.workspace, target), 'utf8')).toContain('written by a third party while the runtime was down');
    expect(drill.stdout).toContain(`unknown outcome: intent ${intentId} (${String(intent.payload.op)} ${target}), ActionEvent.ToolOutcomeUnknown at seq ${unknown[0]!.seq}`);

    // 2. The repair, run exactly as printed.
    const repairArgs = await printedArgs(drill.stdout, 'npm run repair --');
    expect(repairArgs.slice(0, 7)).toEqual([runDir, '--resolve-intent', intentId, '--resolution', 'did_not_happen', '--operator', expect.any(String)]);
    const repaired = await runCli('repair', repairArgs);
    expect(repaired.code, `${repaired.stdout}\n${repaired.stderr}`).toBe(0);
    expect(repaired.stdout).toContain(`intent ${intentId} (seq ${intent.seq}, ${String(intent.payload.op)} ${String(intent.payload.path)}): did_not_happen`);
    expect(repaired.stdout).toContain('unknown outcomes left: none');
    expect(repaired.stdout).toContain(`npm run experiment -- --resume ${runDir} will continue DORMANT`);
    const statement = storedEvents(runDir).at(-1)!;
    expect(statement).toMatchObject({ event_type: 'SystemEvent.OperatorResolved', actor: 'user', causation_id: unknown[0]!.event_id, payload: { intent_event_id: intentId, resolution: 'did_not_happen' } });

    // 3. The resume, run exactly as printed: the remaining wakes act again, the run seals and verifies.
    const resumeArgs = await printedArgs(drill.stdout, 'npm run experiment --');
    expect(resumeArgs).toEqual(['--resume', runDir, '--key-dir', setup.keyDir, '--same-uid', SAME_UID]);
    const resumed = await runCli('experiment', resumeArgs);
    expect(resumed.code, `${resumed.stdout}\n${resumed.stderr}`).toBe(0);
    expect(resumed.stdout).toMatch(/^FINISHED: /);
    expect(resumed.stdout).toContain('verify: OK (0 failure(s)');
    const after = storedEvents(runDir);
    expect(after.at(-1)!.event_type).toBe('SystemEvent.StoreSealed');
    // The resolved intent is never retried, and the subject acts again after the resume.
    expect(after.filter((e) => e.seq > statement.seq && e.payload.intent_event_id === intentId)).toEqual([]);
    const resumedAt = after.find((e) => e.event_type === 'SystemEvent.Resumed' && e.seq > statement.seq)!;
    expect(after.some((e) => e.seq > resumedAt.seq && e.event_type === 'ActionEvent.ToolSucceeded')).toBe(true);
    expect(verifyDirectory(runDir).failures).toEqual([]);
    expect(checkRunFollowsPlan(runDir, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR }).failures).toEqual([]);
    const verify = await runCli('verify', [runDir]);
    expect(verify.code, `${verify.stdout}\n${verify.stderr}`).toBe(0);
  }, 120_000);

  test('a drill name it does not know, or --drill with --experiment-id: misuse (exit 2), nothing written', async () => {
    const out = path.join(setup.dir, 'runs', 'never');
    const unknownName = await runCli('experiment', ['--group', 'C', '--drill', 'unknown-outcomes', '--prereg', setup.preregFile, '--key-dir', setup.keyDir, '--out', out, '--same-uid', SAME_UID]);
    expect(unknownName.code, unknownName.stderr).toBe(2);
    expect(unknownName.stderr).toContain('--drill must be unknown-outcome (got "unknown-outcomes")');
    expect(unknownName.stdout).toBe('');
    const ownId = await runCli('experiment', ['--group', 'C', '--drill', 'unknown-outcome', '--experiment-id', 'exp-study-1', '--prereg', setup.preregFile, '--key-dir', setup.keyDir, '--out', out]);
    expect(ownId.code, ownId.stderr).toBe(2);
    expect(ownId.stderr).toContain('--experiment-id cannot be combined with --drill: a drill makes its own experiment id (drill-…)');
    expect(existsSync(out)).toBe(false);
  }, 30_000);
});

describe('the arming a drill uses (only_if)', () => {
  test('fires at the first hit from `hit` whose context matches — not before it, not at a hit that does not match — and once', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ds-drill-arming-'));
    try {
      const lines: string[] = [];
      // A kind the process carries out itself: nothing freezes the test process.
      const faults = FaultSwitch.arm('runtime', { dir, armed: { point: 'runtime.model_call.in_flight', kind: 'model_garbage', hit: 2, only_if: { wake_id: ['wake-b'] } }, armed_by: 'test' }, (l) => lines.push(l));
      expect(lines[0]).toBe('FAULT INJECTION (test): armed: model_garbage at the first hit from 2 of runtime.model_call.in_flight whose wake_id is wake-b');
      const at = (wakeId: string) => faults.hit('runtime.model_call.in_flight', () => ({ wake_id: wakeId, call_number: 1 }));
      expect(at('wake-b')).toBeNull(); // hit 1: matches, but before `hit`
      expect(at('wake-a')).toBeNull(); // hit 2: does not match
      expect(at('wake-b')).toBe('model_garbage'); // hit 3: the first match from 2
      expect(at('wake-b')).toBeNull(); // fired once per run
      expect(JSON.parse(readFileSync(path.join(dir, FAULT_FILES.reached), 'utf8'))).toMatchObject({ hit: 3, context: { wake_id: 'wake-b' } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
