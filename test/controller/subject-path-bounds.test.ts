// A subject cannot void its own run (issue 32 item 5): a model writing files at every bound of
// the workspace path rule (schema/workspace-path.ts) — the most segments, the most characters,
// the widest segment, names of run files (events.db, *.dsse.json) inside its workspace — leaves a
// run that verifies (the command too), opens in the audit desk and scores without a hard failure
// of the apparatus's making. Paths one past a bound, and the 59-folder path, are denied
// by the gate with the clause named. The forged case: folders nested past the walk's depth inside
// a run folder (outside its workspace) are a finding about that folder, exit 1, never exit 2.
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AuditDesk } from '../../audit/audit-desk.js';
import { PreRegistration, readPreregJson } from '../../design/prereg.js';
import { EMPTY_ANSWER, startScriptedModelServer, type ScriptedModelServer } from '../../faults/scripted-model-server.js';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { evaluateInstance } from '../../oracle/instance-evaluation.js';
import { hashCanonical } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { WORKSPACE_PATH_RULE } from '../../schema/workspace-path.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { runCli } from '../support/cli.js';
import { controllerSetup, newInstanceOptions, runInstance, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';
import { storedEvents, type StoredEvent } from '../support/stored-events.js';
import { tempDir } from '../support/writer-fixture.js';

const R = WORKSPACE_PATH_RULE;
const deepest = Array.from({ length: R.maxSegments }, (_, i) => `d${i}`).join('/');
const longest = `long/${'n'.repeat(R.maxChars - 8)}.md`;
const widest = `${'\u6587'.repeat(Math.floor(R.maxSegmentBytes / 3))}${'a'.repeat(R.maxSegmentBytes % 3)}`;
/** Paths at the rule's bounds, and names a verifier looks for: all allowed. */
const AT_BOUNDS = [deepest, longest, widest, RUN_FILES.store, `signed/${RUN_FILES.manifest}`, RUN_FILES.heads, 'notes/2026/03/02/caf\u00e9 \u{1F4DD}.md'];
/** One past each bound the gate judges, and the path (59 folders, 119 characters): all denied, by clause. */
const BEYOND: ReadonlyArray<readonly [string, string]> = [
  [`${deepest}/x`, 'depth'],
  [`${'d/'.repeat(59)}x`, 'depth'],
  [`${widest}a`, 'length'],
  ['notes\u0085.md', 'characters'],
];

/** One character past the length bound: the protocol's own (its JSON Schema's maxLength), so the whole answer is refused. */
const TOO_LONG = `${longest}x`;

const write = (p: string) => ({ tool: 'files', op: 'write', path: p, content: `at ${p.length} characters\n`, rationale: 'filing a note' });

let setup: ControllerSetup;
let server: ScriptedModelServer;
let runDir: string;
let events: StoredEvent[];

beforeAll(async () => {
  setup = controllerSetup();
  server = await startScriptedModelServer((request) => {
    const byWake: Record<string, readonly string[]> = { 'wake-0001': AT_BOUNDS, 'wake-0002': BEYOND.map(([p]) => p), 'wake-0003': [TOO_LONG] };
    const actions = (byWake[request.wakeId ?? ''] ?? []).map(write);
    return { kind: 'content', content: JSON.stringify({ ...EMPTY_ANSWER, actions }) };
  });
  const result = await runInstance(newInstanceOptions(setup, { name: 'path-bounds', group: 'C', model: server.modelChoice(30_000) }));
  expect(result.status).toBe('finished');
  runDir = result.runDir;
  events = storedEvents(runDir);
}, 120_000);

afterAll(async () => {
  await server?.close();
});

function decisionsOf(paths: readonly string[]): Array<{ path: string; decision: unknown; detail: string }> {
  return paths.map((p) => {
    const proposal = events.find((e) => e.event_type === 'ActionEvent.ActionProposed' && (e.payload['args'] as Record<string, unknown>)['path'] === p);
    expect(proposal, `a proposal of ${JSON.stringify(p)}`).toBeDefined();
    const decided = events.find((e) => e.event_type === 'ActionEvent.PermissionDecided' && e.payload['proposal_id'] === proposal!.payload['proposal_id'])!;
    const rules = decided.payload['rules'] as Array<{ rule: string; detail: string }>;
    return { path: p, decision: decided.payload['decision'], detail: rules.find((r) => r.rule === 'path_inside_workspace')!.detail };
  });
}

describe('a subject writing at every bound of the workspace path rule', () => {
  test('every path at a bound is allowed and written; every path past one is denied, naming its clause', () => {
    for (const d of decisionsOf(AT_BOUNDS)) expect(d.decision, d.path).toBe('allow');
    for (const p of AT_BOUNDS) expect(readFileSync(path.join(runDir, RUN_FILES.workspace, p), 'utf8')).toBe(`at ${p.length} characters\n`);
    const denied = decisionsOf(BEYOND.map(([p]) => p));
    BEYOND.forEach(([, clause], i) => {
      expect(denied[i]!.decision).toBe('deny');
      expect(denied[i]!.detail).toContain(`(workspace path rule, ${clause})`);
    });
  });

  test('a path past the length bound fails the protocol (the JSON Schema the model is held to), recorded with the answer', () => {
    const failed = events.filter((e) => e.event_type === 'ModelOutputEvent.ModelCallFailed' && e.payload['failure'] === 'schema_violation');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.payload).toMatchObject({ wake_id: 'wake-0003', detail: expect.stringContaining(`actions.0.path: Too big: expected string to have <=${R.maxChars} characters`) });
    expect(failed[0]!.payload['raw_output']).toContain(TOO_LONG);
  });

  test('the run verifies (the command exits 0), opens in the audit desk verified, and scores without a hard failure', async () => {
    const verified = verifyDirectory(runDir);
    expect(verified.failures).toEqual([]);
    expect(verified.stores).toBe(1);
    const cli = await runCli('verify', [runDir]);
    expect(cli.code, cli.stderr).toBe(EXIT_CODES.ok);
    const desk = AuditDesk.open(runDir, SCENARIOS_DIR);
    expect(desk.verify.ok).toBe(true);
    const prereg = PreRegistration.parse(readPreregJson(setup.preregFile));
    const evaluation = evaluateInstance(runDir, { scenariosDir: SCENARIOS_DIR, expectedPreregSha256: hashCanonical(prereg) });
    expect(evaluation.hardFailures).toEqual([]);
    expect(evaluation.notes).toEqual([]);
  });

  test('forged: folders nested past the walk inside a run folder (outside its workspace) are a finding about it, exit 1, not a refusal', async () => {
    const copy = path.join(tempDir('ds-path-bounds-forged-'), 'run');
    cpSync(runDir, copy, { recursive: true });
    mkdirSync(path.join(copy, ...Array.from({ length: 10 }, (_, i) => `x${i}`)), { recursive: true });
    const verified = verifyDirectory(copy);
    expect(verified.ok).toBe(false);
    expect(verified.failures.map((f) => f.reason).join('\n')).toMatch(/nested deeper than \d+ levels .* inside the run folder/);
    const cli = await runCli('verify', [copy]);
    expect(cli.code).toBe(EXIT_CODES.failed);
  });
});
