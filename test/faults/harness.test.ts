// The fault harness end to end with real instances (issue 8 item 4): a small fixed-seed batch of
// `npm run faults` and its rerun reproducing a run exactly; a tampered workspace ending in
// RECOVERING with nothing retried; and the harness's own forged case — a planted bug (a
// reconciliation that calls a completed write "did not happen") that only a kill at the right
// instant shows, and that the harness must report.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { FaultSummary } from '../../faults/fault-harness.js';
import { planFaultRun, STALL_MODEL_CALL_TIMEOUT_MS, stalledCallersTimeoutMs, type Calibration, type FaultRunPlan, type GroupCalibration } from '../../faults/fault-plan.js';
import { FAULT_RUN_WAKE_ANSWER_TIMEOUT_MS, FAULT_RUN_WRITER_REQUEST_TIMEOUT_MS, calibrate, KILLED_AT_BIRTH_NOTE, prepareHarness, RANDOM_SUBJECT_MODEL_FLAG, RANDOM_SUBJECT_TEMPERATURE, runFaultPlan, stallMsOf } from '../../faults/fault-run.js';
import { INVARIANTS } from '../../faults/run-invariants.js';
import { LockablePreRegistration } from '../../design/prereg.js';
import { DEFAULT_WRITER_REQUEST_TIMEOUT_MS } from '../../writer/protocol.js';
import { subjectProjection } from '../../projector/subject-projection.js';
import { StoreReader } from '../../writer/store-reader.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { runCli, spawnCli, type SpawnedCli } from '../support/cli.js';
import { SAME_PRESS_WINDOW_MS } from '../../cli/operator-stop.js';
import { REPO } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';
import { ROOM_NAMES } from '../../foundation/rooms.js';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { FAULT_POINTS } from '../../schema/fault-points.js';

const RUN_TIMEOUT_MS = 240_000;
/** The project's test model (../shared/models/README.md), which a random_subject run is given as the CLI's RANDOM_SUBJECT_MODEL_FLAG gives it. */
const TEST_MODEL_FILE = fileURLToPath(new URL('../../../shared/models/stories260K.gguf', import.meta.url));
const folders: string[] = [];
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

function folder(prefix: string): string {
  const dir = tempDir(prefix);
  folders.push(dir);
  return dir;
}

function eventsOf(runDir: string): EventEnvelope[] {
  const reader = StoreReader.open(path.join(runDir, 'events.db'));
  try {
    return [...reader.iterateEvents(0, reader.headSeq())].map((row) => JSON.parse(row.envelope) as EventEnvelope);
  } finally {
    reader.close();
  }
}

/** A hand-made plan: the 4th file intent of group C with the harness's instance seed is a write of notes/findings.md (the reference policy reads its three sources first). */
function planOf(point: FaultRunPlan['point'], kind: FaultRunPlan['kind'], hit: number): FaultRunPlan {
  return { index: 1, seed: 'test', group: 'C', instance_seed: 'faults-test', point, kind, hit, hits_in_calibration: hit };
}

describe('npm run faults', () => {
  const out = folder('ds-faults-cli-');
  let summary: FaultSummary;

  test(
    'a fixed-seed batch: calibration, two faults, every invariant held, the summary in its contract',
    async () => {
      const result = await runCli('faults', ['--seed', 'ci-1', '--runs', '2', '--out', out, '--json']);
      expect(result.stderr).toContain('[faults] calibration-A: calibration');
      const { exit_code: exitCode, ...printed } = JSON.parse(result.stdout) as Record<string, unknown>;
      expect(exitCode).toBe(0);
      summary = FaultSummary.parse(printed);
      expect({ code: result.code, ok: summary.ok, failures: summary.failures }).toEqual({ code: 0, ok: true, failures: [] });
      expect(summary.runs).toBe(2);
      expect(Object.values(summary.faults).reduce((a, b) => a + b, 0)).toBe(2);
      expect(Object.values(summary.points).reduce((a, b) => a + b, 0)).toBe(2);
      expect(Object.keys(summary.violations).sort()).toEqual([...INVARIANTS].sort());
      expect(Object.values(summary.violations).every((n) => n === 0)).toBe(true);
      expect(Object.keys(summary.calibration).sort()).toEqual(['A', 'B', 'C']);
      // Every run left its record: plan, the instant, exits, invariants, fingerprint.
      const records = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')) as unknown;
      expect(records).toEqual(summary);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'rerunning one run of the seed reproduces it exactly',
    async () => {
      const result = await runCli('faults', ['--seed', 'ci-1', '--run', '2', '--out', out, '--json']);
      const { exit_code: rerunExit, ...rerunPrinted } = JSON.parse(result.stdout) as Record<string, unknown>;
      expect(rerunExit).toBe(0);
      const rerun = FaultSummary.parse(rerunPrinted);
      expect(result.stderr).toContain('calibration: reused');
      expect({ code: result.code, reproduction: rerun.reproduction }).toEqual({ code: 0, reproduction: { run: 2, compared: true, same: true, differences: [] } });
    },
    RUN_TIMEOUT_MS,
  );

  test('a batch with a run it could not try (a random_subject run, no model given) ends INCOMPLETE, exit 4, naming it: not OK', async () => {
    const dir = folder('ds-faults-cli-incomplete-');
    // A saved calibration (reused: nothing runs for it), every point reached, every intent a write.
    const group: GroupCalibration = { hits: Object.fromEntries(FAULT_POINTS.map((p) => [p, 10])) as GroupCalibration['hits'], mutating: { 'runtime.intent.before_file_op': [4], 'runtime.file_op.before_outcome': [4] }, writing: { 'runtime.intent.before_file_op': [4] } };
    const calibration: Calibration = { A: group, B: group, C: group };
    const seed = Array.from({ length: 400 }, (_, i) => `incomplete-${i}`).find((s) => planFaultRun(s, 1, calibration).kind === 'random_subject');
    expect(seed).toBeDefined();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'calibration.json'), `${JSON.stringify({ seed, calibration })}\n`);
    const result = await runCli('faults', ['--seed', seed!, '--runs', '1', '--out', dir, '--json']);
    const { exit_code: exitCode, ...printed } = JSON.parse(result.stdout) as Record<string, unknown>;
    const summary = FaultSummary.parse(printed);
    expect({ code: result.code, exitCode, ok: summary.ok, failures: summary.failures }).toEqual({ code: EXIT_CODES.notEvidence, exitCode: EXIT_CODES.notEvidence, ok: true, failures: [] });
    expect(summary.skipped).toEqual([{ run: 1, name: expect.stringContaining('random_subject'), reason: expect.stringContaining(RANDOM_SUBJECT_MODEL_FLAG) }]);
    const screen = await runCli('faults', ['--seed', seed!, '--runs', '1', '--out', dir]);
    expect(screen.code).toBe(EXIT_CODES.notEvidence);
    expect(screen.stdout).toMatch(/^INCOMPLETE \(1 SKIPPED, not tried\): 1 run\(s\) of seed/m);
  });

  test('misuse is refused with exit 2 and the usage', async () => {
    for (const args of [['--runs', '-1'], ['--run', '3'], ['--runs', '2', '--run', '1', '--seed', 's'], ['--nope']]) {
      const result = await runCli('faults', args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain('usage: npm run faults');
    }
  });
});

describe('npm run faults, stopped by the operator', () => {
  const out = folder('ds-faults-stop-');
  /** The processes still alive that name the harness folder in their command line (controllers, writers, runtimes, model servers). */
  const leftOver = (): string[] =>
    readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .flatMap((pid) => {
        try {
          const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
          return cmdline.includes(out) && Number(pid) !== process.pid ? [`${pid}: ${cmdline.slice(0, 160)}`] : [];
        } catch {
          return [];
        }
      });
  const untilOutput = async (cli: SpawnedCli, pattern: RegExp, timeoutMs: number): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    // Bounded by the deadline.
    while (!pattern.test(cli.output())) {
      if (Date.now() > deadline) throw new Error(`no ${pattern} in the harness's output within ${timeoutMs} ms:\n${cli.output().slice(-2_000)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  /** The log of run 0001's controllers ('' before it is made). */
  const runOneLog = (): string => {
    const runs = path.join(out, 'runs');
    const name = existsSync(runs) ? readdirSync(runs).find((n) => n.startsWith('0001-')) : undefined;
    const log = name === undefined ? null : path.join(runs, name, 'controller.log');
    return log !== null && existsSync(log) ? readFileSync(log, 'utf8') : '';
  };
  /**
   * A batch of five runs, one at a time, in a process group of its own (a terminal's foreground
   * job), at the harness's line "start 0001" — the instant it spawns the run's controller — or,
   * with `controllerUp`, once that controller has written its first line. At the line itself a
   * press often lands between fork and the child's own session, where the signal stays pending in
   * the child and kills it before exec (4 of 4 tries here in a fresh folder; how CI failed): the
   * harness must start it again (fault-run.ts runController), saying so.
   */
  const batchWithRunOneUnderWay = async (controllerUp: boolean): Promise<SpawnedCli> => {
    // An earlier batch's record of run 0001 (the same folder) would pass for this one's: removed first.
    const runs = path.join(out, 'runs');
    for (const name of existsSync(runs) ? readdirSync(runs).filter((n) => n.startsWith('0001-')) : []) rmSync(path.join(runs, name), { recursive: true, force: true });
    const cli = spawnCli('faults', ['--seed', 'ci-stop', '--runs', '5', '--concurrency', '1', '--out', out, '--json'], { detached: true });
    await untilOutput(cli, /\[faults\] start 0001/, RUN_TIMEOUT_MS);
    if (controllerUp) await untilOutput({ ...cli, output: runOneLog }, /^\[ds-controller\] /m, RUN_TIMEOUT_MS);
    return cli;
  };
  /** Ctrl-C in a terminal: SIGINT to the harness's whole process group (its instances run in groups of their own). */
  const ctrlC = (cli: SpawnedCli): void => void process.kill(-cli.child.pid!, 'SIGINT');
  const summaryOf = (cli: SpawnedCli): FaultSummary => {
    const line = cli.output().split('\n').find((l) => l.startsWith('{"ok":'));
    expect(line, cli.output().slice(-2_000)).toBeDefined();
    const { exit_code: _exitCode, ...printed } = JSON.parse(line!) as Record<string, unknown>;
    return FaultSummary.parse(printed);
  };

  test(
    'a first Ctrl-C starts no new run; the run under way finishes and is checked; the batch ends INTERRUPTED, exit 3, leaving no process behind',
    async () => {
      const cli = await batchWithRunOneUnderWay(false);
      ctrlC(cli);
      expect(await cli.exited, cli.output().slice(-4_000)).toBe(EXIT_CODES.stopped);
      expect(cli.output()).toContain('SIGINT: no new run starts');
      const summary = summaryOf(cli);
      expect({ ok: summary.ok, runs: summary.runs, interrupted: summary.interrupted, failures: summary.failures, skipped: summary.skipped }).toEqual({ ok: false, runs: 1, interrupted: { by: 'operator signal SIGINT', not_started: 4, killed: 0 }, failures: [], skipped: [] });
      // The run under way was not cut by the press: it ran to its end and every invariant was checked on it.
      const record = JSON.parse(readFileSync(path.join(out, 'runs', readdirSync(path.join(out, 'runs')).find((n) => n.startsWith('0001-'))!, 'fault-run.json'), 'utf8')) as { invariants: unknown[]; violations: unknown[]; notes: string[] };
      expect(record.invariants).toHaveLength(INVARIANTS.length);
      expect(record.violations).toEqual([]);
      // A controller the press killed at its birth was started again, and the record says so (and says it only then).
      const bornKilled = runOneLog().includes('$ exit SIGINT\n');
      console.log(`first Ctrl-C: the press ${bornKilled ? 'killed' : 'missed'} run 0001's controller at its birth`);
      const noted = record.notes.filter((n) => n.startsWith(KILLED_AT_BIRTH_NOTE));
      expect(noted.length > 0).toBe(bornKilled);
      for (const note of noted) expect(cli.output()).toContain(note);
      expect(leftOver()).toEqual([]);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'a second Ctrl-C kills the run under way (its processes, its fault folder): it is listed unchecked, never a pass',
    async () => {
      // The same folder: the calibration of the same seed is reused.
      const cli = await batchWithRunOneUnderWay(true);
      ctrlC(cli);
      // A press after the window that folds a terminal's relayed signals into one.
      await new Promise((resolve) => setTimeout(resolve, SAME_PRESS_WINDOW_MS + 300));
      ctrlC(cli);
      expect(await cli.exited, cli.output().slice(-4_000)).toBe(EXIT_CODES.stopped);
      expect(cli.output()).toContain('second SIGINT: killing the runs under way');
      const summary = summaryOf(cli);
      expect({ ok: summary.ok, runs: summary.runs, interrupted: summary.interrupted, failures: summary.failures }).toEqual({ ok: false, runs: 1, interrupted: { by: 'operator signal SIGINT', not_started: 4, killed: 1 }, failures: [] });
      expect(summary.skipped).toEqual([{ run: 1, name: expect.stringMatching(/^0001-/), reason: expect.stringMatching(/^interrupted by the operator: its processes were killed before it finished, so no invariant was checked/) }]);
      expect(leftOver()).toEqual([]);
      // Its cleanup ran: the points' folder copied into the record (then removed from /tmp), a disk of its own released (fault-run.ts execute's finally).
      expect(existsSync(path.join(out, 'runs', summary.skipped[0]!.name, 'fault'))).toBe(true);
    },
    RUN_TIMEOUT_MS,
  );
});

describe('one run, one fault', () => {
  test(
    'a file changed by a third party while the runtime was down: unknown outcome, RECOVERING, nothing retried',
    async () => {
      const setup = prepareHarness(folder('ds-faults-tamper-'), REPO, null);
      const result = await runFaultPlan(setup, planOf('runtime.intent.before_file_op', 'workspace_tampered', 4));
      expect(result.reached).toMatchObject({ point: 'runtime.intent.before_file_op', kind: 'workspace_tampered', context: { op: 'write', path: 'notes/findings.md' } });
      expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
      const events = eventsOf(result.runDir);
      const unknown = events.filter((e) => e.event_type === 'ActionEvent.ToolOutcomeUnknown');
      expect(unknown).toHaveLength(1);
      const state = subjectProjection.applyAll(subjectProjection.initial(), events.filter((e) => e.event_type !== 'SystemEvent.StoreSealed'));
      expect(state.lifecycle_state).toBe('RECOVERING');
      // Read-only from then on: no file intent other than reads after the unknown outcome.
      const after = events.filter((e) => e.seq > unknown[0]!.seq && e.event_type === 'ActionEvent.ExecutionIntentRecorded');
      expect(after.every((e) => (e.payload as { op: string }).op === 'read')).toBe(true);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'the runtime killed with its model call under way: the stop records that the answer is lost, and nothing else is',
    async () => {
      const setup = prepareHarness(folder('ds-faults-model-'), REPO, null);
      const result = await runFaultPlan(setup, planOf('runtime.model_call.in_flight', 'kill_runtime', 3));
      expect(result.reached).toMatchObject({ point: 'runtime.model_call.in_flight', kind: 'kill_runtime', context: { wake_id: 'wake-0003', call_number: 1 } });
      expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
      const events = eventsOf(result.runDir);
      const stop = events.find((e) => e.event_type === 'SystemEvent.EmergencyStopped');
      expect((stop?.payload as { reason: string } | undefined)?.reason).toMatch(/wake-0003 .*model call 1 was under way and its outcome is not in the store: whatever the model answered \(and what it cost\) is lost, unrecorded, and the call is not repeated/);
      // No model event of that wake: the call left no trace but the stop's words.
      expect(events.filter((e) => e.correlation_id === 'wake-0003' && e.event_type.startsWith('ModelOutputEvent.'))).toEqual([]);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'a request the writer never answers: the unknown outcome comes after the pre-registered writer timeout, not a fixed 30 s, and the resume finishes',
    async () => {
      const setup = prepareHarness(folder('ds-faults-drop-'), REPO, null);
      // The harness's instances wait what their pre-registration says (design/prereg.ts writer_request_timeout_ms).
      expect(JSON.parse(readFileSync(setup.preregFile, 'utf8')).writer_request_timeout_ms).toBe(FAULT_RUN_WRITER_REQUEST_TIMEOUT_MS);
      expect(FAULT_RUN_WRITER_REQUEST_TIMEOUT_MS).toBeLessThan(DEFAULT_WRITER_REQUEST_TIMEOUT_MS);
      const result = await runFaultPlan(setup, planOf('writer.socket.append_request', 'drop_message', 40));
      expect(result.reached).toMatchObject({ point: 'writer.socket.append_request', kind: 'drop_message', hit: 40 });
      expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
      // The caller gave up after the instance's own timeout and said so; the run was stopped and resumed.
      const log = readFileSync(path.join(result.recordDir, 'controller.log'), 'utf8');
      expect(log).toContain(`within ${FAULT_RUN_WRITER_REQUEST_TIMEOUT_MS} ms; its outcome is unknown`);
      expect(log).not.toContain(`within ${DEFAULT_WRITER_REQUEST_TIMEOUT_MS} ms`);
      expect(result.exits.length).toBeGreaterThan(1);
      expect(result.exits.at(-1)).toBe(0);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'the controller\'s own append inside a wake is never answered: the wake is ended stopped before the stop is recorded (a stop inside an open wake broke every resume), and the resume finishes',
    async () => {
      // Found by a 1,000-run batch (seed hour-1, run 11): the closing append of wake-0018, dropped; the
      // stop was recorded inside the open wake, and each resume's WakeEnded was refused by the projection.
      const setup = prepareHarness(folder('ds-faults-drop-in-wake-'), REPO, null);
      const plan: FaultRunPlan = { index: 11, seed: 'hour-1', group: 'B', instance_seed: 'faults-hour-1', point: 'writer.socket.append_request', kind: 'drop_message', hit: 219, hits_in_calibration: 341 };
      const result = await runFaultPlan(setup, plan);
      expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
      expect(result.exits).toEqual([EXIT_CODES.failed, EXIT_CODES.ok]);
      const log = readFileSync(path.join(result.recordDir, 'controller.log'), 'utf8');
      const first = log.slice(0, log.indexOf('$ experiment --resume'));
      expect(first).toMatch(/note: wake-\d+ was open when the instance stopped: ended as 'stopped'[\s\S]*emergency stop: lost the writer \(writer did not answer append #\d+ within 5000 ms/);
      const events = eventsOf(result.runDir);
      const stop = events.findIndex((e) => e.event_type === 'SystemEvent.EmergencyStopped');
      const ended = events.slice(0, stop).filter((e) => e.event_type === 'ExperimentEvent.WakeEnded').at(-1)!;
      expect(ended.payload).toMatchObject({ outcome: 'stopped' });
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'a seeded sample of the kinds no other test here runs for real (issue 8\'s kills, snapshots, socket and model kinds): each fires, and every invariant holds',
    async () => {
      const setup = prepareHarness(folder('ds-faults-sample-'), REPO, null);
      const sample: ReadonlyArray<[FaultRunPlan['point'], FaultRunPlan['kind'], number]> = [
        ['writer.append.after_commit', 'kill_writer', 40],
        ['controller.head.signing', 'kill_controller', 2],
        ['writer.snapshot.write', 'snapshot_deleted', 2],
        ['writer.snapshot.write', 'snapshot_corrupted', 3],
        ['writer.socket.append_request', 'duplicate_message', 30],
        ['runtime.model_call.in_flight', 'model_timeout', 5],
        ['runtime.model_call.in_flight', 'model_garbage', 7],
      ];
      const results: Awaited<ReturnType<typeof runFaultPlan>>[] = [];
      // Two at a time, as the harness runs them on two cores.
      for (let i = 0; i < sample.length; i += 2) results.push(...(await Promise.all(sample.slice(i, i + 2).map(([point, kind, hit], j) => runFaultPlan(setup, { ...planOf(point, kind, hit), index: i + j + 1 })))));
      expect(results.map((r) => ({ kind: r.reached?.kind ?? null, hit: r.reached?.hit ?? null, violations: r.violations, failed: r.invariants.filter((inv) => !inv.ok) }))).toEqual(sample.map(([, kind, hit]) => ({ kind, hit, violations: [], failed: [] })));
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'a writer stalled (SIGSTOP) past the writer timeout under the controller\'s own append: the controller gives up, records the stop once the writer answers again, and the resume finishes with nothing twice',
    async () => {
      const setup = prepareHarness(folder('ds-faults-stall-'), REPO, null);
      const result = await runFaultPlan(setup, planOf('writer.append.before_commit', 'stall_writer', 1));
      expect(result.reached).toMatchObject({ point: 'writer.append.before_commit', kind: 'stall_writer', hit: 1, frozen: true });
      expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
      const stallMs = stallMsOf('stall_writer', LockablePreRegistration.parse(JSON.parse(readFileSync(setup.preregFile, 'utf8'))));
      expect(stallMs).toBeGreaterThan(FAULT_RUN_WRITER_REQUEST_TIMEOUT_MS);
      expect(result.notes).toContain(`SIGCONT to the writer (pid ${result.reached!.pid}) after ${stallMs} ms`);
      // The first controller ended failed (1) — but with the stop recorded in its words, before any resume.
      expect(result.exits).toEqual([1, 0]);
      const events = eventsOf(result.runDir);
      const stops = events.filter((e) => e.event_type === 'SystemEvent.EmergencyStopped');
      const firstResume = events.findIndex((e) => e.event_type === 'SystemEvent.Resumed');
      expect(stops.length).toBeGreaterThanOrEqual(1);
      expect(events.indexOf(stops[0]!)).toBeLessThan(firstResume);
      expect(stops[0]!.payload).toMatchObject({ operator: 'controller', reason: expect.stringMatching(new RegExp(`did not answer append #\\d+ within ${FAULT_RUN_WRITER_REQUEST_TIMEOUT_MS} ms; its outcome is unknown; exit still running`)) });
      // The append the writer committed after it was continued is in the store once, and nothing else twice.
      const keys = events.map((e) => e.idempotency_key).filter((k): k is string => k !== null);
      expect(new Set(keys).size).toBe(keys.length);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'a writer stalled under the controller\'s last append of the run (the periodic head after the last wake, a plain append outside any wake): the stop is recorded in the timeout\'s words, not left to the resume as an internal error',
    async () => {
      const setup = prepareHarness(folder('ds-faults-stall-last-'), REPO, null);
      // With this instance seed the run's last append is the periodic head signed after the last wake (run 167 of `--seed hour-2`, where it was found).
      const instanceSeed = 'faults-hour-2';
      const calibration = await calibrate(setup, 'C', instanceSeed);
      const last = calibration.calibration.hits['writer.append.before_commit'];
      const result = await runFaultPlan(setup, { ...planOf('writer.append.before_commit', 'stall_writer', last), instance_seed: instanceSeed });
      expect(result.reached).toMatchObject({ kind: 'stall_writer', hit: last, frozen: true });
      expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
      expect(result.exits).toEqual([1, 0]);
      const log = readFileSync(path.join(result.recordDir, 'controller.log'), 'utf8');
      expect(log).not.toContain('internal_error');
      expect(log).toContain('"code":"instance_writer"');
      const stall = result.invariants.find((i) => i.invariant === 'stall_recorded')!;
      expect(stall.details).toEqual([expect.stringMatching(new RegExp(`^note: stop recorded at seq \\d+: writer did not answer append #\\d+ within ${FAULT_RUN_WRITER_REQUEST_TIMEOUT_MS} ms; its outcome is unknown \\(the writer is still running\\)`))]);
      const events = eventsOf(result.runDir);
      const stop = events.find((e) => e.event_type === 'SystemEvent.EmergencyStopped')!;
      expect(events[stop.seq - 2]!.event_type).toBe('SystemEvent.ChainHeadSigned');
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'a runtime stalled (SIGSTOP) at a write intent past the wake answer timeout: the controller gives up on the wake and records the stop in the timeout\'s words; continued, the runtime adds nothing after the stop; the resume finishes',
    async () => {
      const setup = prepareHarness(folder('ds-faults-stall-runtime-'), REPO, null);
      const prereg = LockablePreRegistration.parse(JSON.parse(readFileSync(setup.preregFile, 'utf8')));
      expect(prereg.wake_answer_timeout_ms).toBe(FAULT_RUN_WAKE_ANSWER_TIMEOUT_MS);
      const result = await runFaultPlan(setup, planOf('runtime.intent.before_file_op', 'stall_runtime', 4));
      expect(result.reached).toMatchObject({ point: 'runtime.intent.before_file_op', kind: 'stall_runtime', frozen: true, context: { op: 'write', path: 'notes/findings.md' } });
      expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
      expect(result.notes).toContain(`SIGCONT to the runtime (pid ${result.reached!.pid}) after ${stallMsOf('stall_runtime', prereg)} ms`);
      expect(result.exits).toEqual([3, 0]);
      const stall = result.invariants.find((i) => i.invariant === 'stall_recorded')!;
      expect(stall.details).toEqual([expect.stringMatching(new RegExp(`^note: stop recorded at seq \\d+: the runtime failed in wake-\\d+ outside any planned crash \\(timeout: ds-runtime did not answer wake wake-\\d+ within ${stalledCallersTimeoutMs('stall_runtime', prereg)} ms; it was left running\\)`))]);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'a model server stalled (SIGSTOP) while the runtime\'s call to it is open, past the call\'s timeout: the call is recorded as that timeout, the late answer is never used, the instance goes on to the end without a stop',
    async () => {
      const setup = prepareHarness(folder('ds-faults-stall-model-'), REPO, null);
      const prereg = LockablePreRegistration.parse(JSON.parse(readFileSync(setup.preregFile, 'utf8')));
      const result = await runFaultPlan(setup, planOf('runtime.model_call.in_flight', 'stall_model', 3));
      expect(result.reached).toMatchObject({ point: 'runtime.model_call.in_flight', kind: 'stall_model', hit: 3, frozen: true, context: { call_number: 1 } });
      expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
      const stallMs = stallMsOf('stall_model', prereg);
      expect(stallMs).toBeGreaterThan(STALL_MODEL_CALL_TIMEOUT_MS);
      const server = /^model server \(pid (\d+)\) at http:\/\/127\.0\.0\.1:\d+\/v1/.exec(result.notes.find((n) => n.startsWith('model server')) ?? '');
      expect(server).not.toBeNull();
      expect(result.notes).toContain(`SIGCONT to the model server (pid ${server![1]}) after ${stallMs} ms`);
      // One controller: a model server that does not answer in time is a failed call, not a stop.
      expect(result.exits).toEqual([0]);
      const events = eventsOf(result.runDir);
      const wakeId = result.reached!.context.wake_id;
      const outcomes = events.filter((e) => (e.event_type === 'ModelOutputEvent.ModelAnswered' || e.event_type === 'ModelOutputEvent.ModelCallFailed') && e.payload.wake_id === wakeId);
      expect(outcomes.map((e) => [e.event_type, e.payload.failure])).toEqual([['ModelOutputEvent.ModelCallFailed', 'timeout']]);
      expect(String(outcomes[0]!.payload.detail)).toContain(`within timeoutMs ${STALL_MODEL_CALL_TIMEOUT_MS}`);
      // The other wakes were answered by the server (the stall is one call's, not the run's).
      expect(events.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered' && e.payload.adapter === 'openai').length).toBeGreaterThan(0);
      const stall = result.invariants.find((i) => i.invariant === 'stall_recorded')!;
      expect(stall.details).toEqual([expect.stringMatching(new RegExp(`^note: the call of ${String(wakeId)} timed out after ${STALL_MODEL_CALL_TIMEOUT_MS} ms as recorded`))]);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'a random subject (stories260K under the grammar, sampled with the plan\'s seed) answers arbitrary schema-valid content: nothing unauthorised runs, no made-up citation becomes a FACT, nothing stops the instance; it replays and verifies',
    async () => {
      expect(existsSync(TEST_MODEL_FILE), `the test model ${TEST_MODEL_FILE}`).toBe(true);
      const setup = prepareHarness(folder('ds-faults-random-'), REPO, null, TEST_MODEL_FILE);
      const plan = { ...planOf('runtime.model_call.in_flight', 'random_subject', 1), model_seed: 20_004 };
      const startedMs = Date.now();
      const result = await runFaultPlan(setup, plan);
      const seconds = (Date.now() - startedMs) / 1_000;
      expect(result.reached).toMatchObject({ point: 'runtime.model_call.in_flight', kind: 'random_subject', hit: 1, frozen: false });
      expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
      // One controller, nothing to resume: the model's answers never stopped it. It ends finished and verified, with or
      // without usable data (exit 4 when too many answers were cut at their cap: the data is a fuzzer's, not a subject's).
      expect(result.exits).toHaveLength(1);
      expect([EXIT_CODES.ok, EXIT_CODES.notEvidence]).toContain(result.exits[0]);
      const events = eventsOf(result.runDir);
      const answers = events.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered');
      expect(answers.length).toBeGreaterThan(0);
      for (const e of answers) expect(e.payload).toMatchObject({ adapter: 'local', params: { seed: plan.model_seed, temperature: RANDOM_SUBJECT_TEMPERATURE } });
      const safe = result.invariants.find((i) => i.invariant === 'random_subject_safe')!;
      expect(safe.details).toContainEqual(expect.stringMatching(/^note: answers: \d+ accepted, \d+ rejected/));
      console.log(`random_subject (stories260K, seed ${plan.model_seed}, group ${plan.group}): ${seconds.toFixed(1)} s; ${safe.details.join(' | ')}`);
    },
    RUN_TIMEOUT_MS,
  );

  test('a random subject with no model given is skipped, saying how to give one: not tried, never a pass', async () => {
    const setup = prepareHarness(folder('ds-faults-random-none-'), REPO, null);
    const result = await runFaultPlan(setup, { ...planOf('runtime.model_call.in_flight', 'random_subject', 1), model_seed: 1 });
    expect(result.skipped).toContain(RANDOM_SUBJECT_MODEL_FLAG);
    expect({ invariants: result.invariants, exits: result.exits, reached: result.reached }).toEqual({ invariants: [], exits: [], reached: null });
  });

  test(
    'a random subject whose model file is missing fails loudly: the start is refused, the fault never fires, and the run is no pass',
    async () => {
      const missing = path.join(folder('ds-faults-random-missing-'), 'no-such-model.gguf');
      const setup = prepareHarness(folder('ds-faults-random-nomodel-'), REPO, null, missing);
      const result = await runFaultPlan(setup, { ...planOf('runtime.model_call.in_flight', 'random_subject', 1), model_seed: 1 });
      expect(result.reached).toBeNull();
      expect(result.violations).toEqual(expect.arrayContaining(['fault_fired', 'run_finished', 'random_subject_safe']));
      expect(result.notes).toContain(`random_subject: the model file ${missing} does not exist; the instance cannot start with it (see ${path.join(result.recordDir, 'controller.log')})`);
      expect(result.exits[0]).not.toBe(EXIT_CODES.ok);
      expect(readFileSync(path.join(result.recordDir, 'controller.log'), 'utf8')).toContain(missing);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    'the forged case: a planted bug in reconciliation is invisible in a clean run and reported after a kill at the right instant',
    async () => {
      // A copy of the code with one line changed; node_modules shared by a link.
      const code = folder('ds-faults-planted-');
      // The rooms and the experiment data (the default pre-registration and scenario).
      for (const part of [...ROOM_NAMES, 'experiments', 'package.json', 'tsconfig.json']) {
        cpSync(path.join(REPO, part), path.join(code, part), { recursive: true, filter: (source) => !source.includes(`${path.sep}runs${path.sep}`) && !source.endsWith('.lock.dsse.json') });
      }
      symlinkSync(path.join(REPO, 'node_modules'), path.join(code, 'node_modules'));
      const tool = path.join(code, 'runtime', 'tools', 'workspace-files.ts');
      const honest = "if (observed === intent.intended_post_hash) return { outcome: 'happened', observed_hash: observed, detail };";
      const source = readFileSync(tool, 'utf8');
      expect(source).toContain(honest);
      writeFileSync(tool, source.replace(honest, "if (observed === intent.intended_post_hash) return { outcome: 'did_not_happen', observed_hash: observed, detail };"));

      const out = folder('ds-faults-planted-out-');
      mkdirSync(out, { recursive: true });
      const setup = prepareHarness(out, code, null);
      const result = await runFaultPlan(setup, planOf('runtime.file_op.before_outcome', 'kill_runtime', 4));
      expect(result.reached).toMatchObject({ point: 'runtime.file_op.before_outcome', kind: 'kill_runtime', context: { op: 'write', path: 'notes/findings.md' } });
      expect(result.violations).toContain('no_unexplained_side_effect');
      const detail = result.invariants.find((i) => i.invariant === 'no_unexplained_side_effect')!.details.join('\n');
      expect(detail).toContain('notes/findings.md');
      expect(existsSync(path.join(result.recordDir, 'fault-run.json'))).toBe(true);
    },
    RUN_TIMEOUT_MS,
  );
});
