// The manual repair (controller/operator-resolution.ts, `npm run repair`), with real parts:
// Subject stores written by a real ds-writer on real SQLite files, the writer stopped, then the
// real command line run as a child process. A repair appends exactly one
// SystemEvent.OperatorResolved through a writer of its own; every refusal leaves the store as
// it was (head seq unchanged, no AppendRejected), and a repeat writes nothing.
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CONTROLLER_KEYS } from '../../design/run-contract.js';
import { planIsolation, type IsolationPlan } from '../../controller/isolation.js';
import { OperatorResolutionResult } from '../../controller/operator-resolution.js';
import { writePublicKey } from '../../schema/public-key-file.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { WORKSPACE_FOLDER } from '../../controller/workspace.js';
import { sealAndSignFinalHead, signAndRecordHead, writeSignedManifest } from '../../controller/run-signatures.js';
import { subjectProjection } from '../../projector/subject-projection.js';
import { SubjectState } from '../../projector/subject-state.js';
import { generateKeyPair, type Ed25519KeyPair } from '../../schema/ed25519-keys.js';
import { FAULT_ENV, FAULT_FILES, FaultReached } from '../../schema/fault-points.js';
import { FaultSwitch } from '../../schema/fault-switch.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { WriterClient } from '../../writer/client.js';
import type { EventDraft } from '../../writer/protocol.js';
import { checkReplay } from '../../writer/replay-check.js';
import { newToken, spawnWriter, type SpawnWriterOptions } from '../../writer/spawn.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetup, newInstanceOptions, resume, runInstance, SCENARIOS_DIR, type ControllerSetup, type InstanceRun } from '../support/controller-run.js';
import { editEnvelope, readProjectionRow, readSnapshots, RunCopies, tamper } from '../support/store-forgery.js';
import { storedEvents } from '../support/stored-events.js';
import { BUDGET, d } from '../support/subject-events.js';
import { tempDir } from '../support/writer-fixture.js';

const EXPERIMENT_ID = 'exp-repair-001';
const SUBJECT_ID = 'subject-repair-001';
const T0 = Date.parse('2026-03-02T08:00:00.000Z');
const NOTE = 'opened c.md: it holds the intended text';

interface Identity {
  readonly subject_id: string;
  readonly experiment_id: string;
  readonly manifest_sha256: string;
}

/** The ids a test names on the command line. */
interface RunIds {
  /** Closed by ToolSucceeded. */
  readonly closed: EventEnvelope;
  readonly succeeded: EventEnvelope;
  /** Recorded, never given an outcome. */
  readonly pending: EventEnvelope;
  /** Outcome unknown since wake 3 (recorded second). */
  readonly first: EventEnvelope;
  readonly firstUnknown: EventEnvelope;
  /** Outcome unknown since wake 3 (recorded first). */
  readonly second: EventEnvelope;
  readonly secondUnknown: EventEnvelope;
}

interface SubjectRun {
  readonly dir: string;
  readonly keys: Ed25519KeyPair;
  readonly identity: Identity;
  readonly ids: RunIds;
}

interface BuildOptions {
  /** Leave wake 3 open (the controller was interrupted inside it). */
  readonly endLastWake?: boolean;
  /** More controller events after wake 3. */
  readonly after?: (experiment: WriterClient, at: () => string) => Promise<void>;
  /** Seal the store and sign its final head. */
  readonly seal?: boolean;
  readonly dir?: string;
  /** For a writer under another uid (the run folder must be that uid's), with code that uid can read. */
  readonly writerUid?: { uid: number; gid: number; codeRoot: string };
}

/**
 * A stopped Subject run between wakes, lifecycle RECOVERING: wake 1 closes one intent and
 * leaves one pending; wake 2 leaves one pending; wake 3 records a third and then the unknown
 * outcome of it and of wake 2's; a periodic head is signed after wake 1.
 */
async function writeSubjectRun(options: BuildOptions = {}): Promise<SubjectRun> {
  const dir = options.dir ?? tempDir('ds-repair-');
  const keys = generateKeyPair();
  writePublicKey(dir, keys);
  const manifest_sha256 = writeSignedManifest(dir, { experiment_id: EXPERIMENT_ID, subject_id: SUBJECT_ID, purpose: 'repair tests' }, keys);
  const identity = { subject_id: SUBJECT_ID, experiment_id: EXPERIMENT_ID, manifest_sha256 };
  const tokens = { runtime: newToken(), experiment: newToken() };
  const socketDir = mkdtempSync(path.join(tmpdir(), 'ds-repair-sock-'));
  const spawnOptions: SpawnWriterOptions = {};
  if (options.writerUid) {
    chownSync(socketDir, options.writerUid.uid, options.writerUid.gid);
    Object.assign(spawnOptions, options.writerUid);
  }
  const socketPath = path.join(socketDir, 'w.sock');
  const writer = await spawnWriter(
    { db_path: path.join(dir, RUN_FILES.store), socket_path: socketPath, mode: 'create', ...identity, tokens, projection: 'subject', socket_mode: 0o600, snapshot_every: 1_000 },
    spawnOptions,
  );
  const experiment = await WriterClient.connect(socketPath, 'experiment', tokens.experiment);
  const runtime = await WriterClient.connect(socketPath, 'runtime', tokens.runtime);
  let minute = 0;
  const at = (): string => new Date(T0 + (minute += 1) * 60_000).toISOString();
  const one = async (draft: EventDraft): Promise<EventEnvelope> => {
    const client = draft.actor === 'experiment' || draft.actor === 'user' ? experiment : runtime;
    const written = (await client.append([{ ...draft, occurred_at: at() }])).events[0]!;
    return (await client.read({ from_seq: written.seq, limit: 1 })).events[0]!;
  };
  const startWake = async (wakeId: string): Promise<void> => {
    const head = await experiment.head();
    await one(d.wakeStarted(wakeId, BUDGET, head.seq));
    await one(d.modelAnswered(wakeId));
  };
  const fileIntent = async (proposalId: string, file: string): Promise<EventEnvelope> => {
    await one(d.actionProposed(proposalId, 'files', 'write', { path: file }));
    const permission = await one(d.permission(proposalId, 'allow'));
    return one(d.intent(proposalId, permission.event_id, file));
  };
  try {
    await one(d.subjectInitialized());
    await startWake('wake-1');
    const closed = await fileIntent('p-closed', 'a.md');
    const succeeded = await one(d.toolSucceeded(closed.event_id));
    const pending = await fileIntent('p-pending', 'b.md');
    await one(d.wakeEnded('wake-1'));
    await signAndRecordHead(experiment, 'periodic', { runDir: dir, keys, experimentId: EXPERIMENT_ID, occurredAt: at(), now: () => new Date().toISOString() });
    await startWake('wake-2');
    const second = await fileIntent('p-second', 'd.md');
    await one(d.wakeEnded('wake-2'));
    await startWake('wake-3');
    const first = await fileIntent('p-first', 'c.md');
    const firstUnknown = await one(d.toolOutcomeUnknown(first.event_id));
    const secondUnknown = await one(d.toolOutcomeUnknown(second.event_id));
    if (options.endLastWake ?? true) await one(d.wakeEnded('wake-3'));
    if (options.after) await options.after(experiment, at);
    if (options.seal) await sealAndSignFinalHead(experiment, { runDir: dir, keys, experimentId: EXPERIMENT_ID, occurredAt: at(), now: () => new Date().toISOString() }, 'test run finished');
    return { dir, keys, identity, ids: { closed, succeeded, pending, first, firstUnknown, second, secondUnknown } };
  } finally {
    experiment.close();
    runtime.close();
    await writer.stop();
    rmSync(socketDir, { recursive: true, force: true });
  }
}

// ---- reading a stopped store

function headSeq(dir: string): number {
  return readProjectionRow(path.join(dir, RUN_FILES.store)).last_applied_event_seq;
}

function stateOf(dir: string): SubjectState {
  return SubjectState.parse(JSON.parse(readProjectionRow(path.join(dir, RUN_FILES.store)).state));
}

function repair(dir: string, intentEventId: string, more: { resolution?: string; operator?: string; note?: string; json?: boolean } = {}): Promise<CliResult> {
  const args = [dir, '--resolve-intent', intentEventId, '--resolution', more.resolution ?? 'happened', '--operator', more.operator ?? 'alice', '--note', more.note ?? NOTE];
  return runCli('repair', more.json === false ? args : [...args, '--json']);
}

function resultOf(cli: CliResult): OperatorResolutionResult {
  expect(cli.code, cli.stderr).toBe(0);
  const { exit_code: exitCode, ...result } = JSON.parse(cli.stdout) as Record<string, unknown>;
  expect(exitCode).toBe(0);
  return OperatorResolutionResult.parse(result);
}

/** A refusal: exit 1, the code in the JSON, the message on stderr, and the store exactly as it was. */
async function expectRefused(dir: string, run: () => Promise<CliResult>, code: string, message: RegExp): Promise<string> {
  const before = headSeq(dir);
  const cli = await run();
  expect(cli.code, `${cli.stdout}\n${cli.stderr}`).toBe(1);
  const body = JSON.parse(cli.stdout) as { error: { code: string; message: string } };
  expect(body.error.code).toBe(code);
  expect(body.error.message).toMatch(message);
  expect(cli.stderr).toContain(`repair: REFUSED (${code}): `);
  expect(headSeq(dir)).toBe(before);
  expect(storedEvents(dir).filter((e) => e.event_type === 'SystemEvent.AppendRejected')).toEqual([]);
  return body.error.message;
}

// ---------------------------------------------------------------------------------------

let base: SubjectRun;
let copies: RunCopies;

beforeAll(async () => {
  base = await writeSubjectRun();
  copies = new RunCopies(base.dir);
}, 60_000);

afterAll(() => {
  copies?.removeAll();
  if (base) rmSync(base.dir, { recursive: true, force: true });
});

describe('a repair between wakes', () => {
  test('the base run is what the tests assume: RECOVERING between wakes, two unknown outcomes, one pending, one closed', () => {
    const state = stateOf(base.dir);
    expect(state.lifecycle_state).toBe('RECOVERING');
    expect(state.current_wake_id).toBeNull();
    expect(Object.entries(state.open_intents).map(([id, i]) => [id, i.outcome]).sort()).toEqual(
      [
        [base.ids.pending.event_id, 'pending'],
        [base.ids.first.event_id, 'unknown'],
        [base.ids.second.event_id, 'unknown'],
      ].sort(),
    );
    expect(verifyDirectory(base.dir, { allowOpen: true }).ok).toBe(true);
  });

  test('appends OperatorResolved at head+1 through a writer, the chain verifies, and state is rebuilt from the events alone', async () => {
    const dir = copies.copy();
    const before = storedEvents(dir);
    const last = before.at(-1)!;
    const result = resultOf(await repair(dir, base.ids.first.event_id));
    expect(result).toMatchObject({
      outcome: 'written',
      seq: last.seq + 1,
      head_seq_before: last.seq,
      intent: { event_id: base.ids.first.event_id, seq: base.ids.first.seq, op: 'write', path: 'c.md' },
      unknown_outcome: { event_id: base.ids.firstUnknown.event_id, seq: base.ids.firstUnknown.seq },
      resolution: 'happened',
      operator: 'alice',
      lifecycle_before: 'RECOVERING',
      // Wake 2's intent is still unknown: the subject stays read-only.
      lifecycle_after: 'RECOVERING',
      // No recorded stop holds the subject: nothing to resume.
      held_by: null,
      lifecycle_on_resume: null,
      unknown_outcomes_left: [{ event_id: base.ids.second.event_id, seq: base.ids.second.seq, op: 'write', path: 'd.md' }],
      last_signed_head_seq: expect.any(Number),
      notes: [],
    });
    expect(result.last_signed_head_seq).toBeLessThan(result.seq);

    const after = storedEvents(dir);
    expect(after.slice(0, -1)).toEqual(before);
    const event = after.at(-1)!;
    expect(event).toMatchObject({
      seq: result.seq,
      event_id: result.event_id,
      event_hash: result.event_hash,
      event_type: 'SystemEvent.OperatorResolved',
      actor: 'user',
      causation_id: base.ids.firstUnknown.event_id,
      correlation_id: null,
      idempotency_key: CONTROLLER_KEYS.operatorResolved(base.ids.first.event_id),
      previous_event_hash: last.event_hash,
      // The virtual clock stands still: the last event's time, not the wall clock.
      occurred_at: last.occurred_at,
      payload: { operator: 'alice', intent_event_id: base.ids.first.event_id, resolution: 'happened', note: NOTE },
    });
    expect(result.occurred_at).toBe(last.occurred_at);

    const verified = verifyDirectory(dir, { allowOpen: true });
    expect(verified.failures).toEqual([]);
    const replay = checkReplay(path.join(dir, RUN_FILES.store));
    expect(replay.match).toBe(true);
    expect(stateOf(dir).open_intents[base.ids.first.event_id]).toBeUndefined();
    // The writer stopped cleanly: it snapshotted the new head.
    expect(readSnapshots(path.join(dir, RUN_FILES.store)).at(-1)?.seq).toBe(result.seq);
  }, 60_000);

  test('the second statement leaves RECOVERING; the screen names seq, event, lifecycle, what is left and the unsigned tail', async () => {
    const dir = copies.copy();
    resultOf(await repair(dir, base.ids.first.event_id));
    const cli = await repair(dir, base.ids.second.event_id, { resolution: 'did_not_happen', note: 'd.md still holds its old text', json: false });
    expect(cli.code, cli.stderr).toBe(0);
    const event = storedEvents(dir).at(-1)!;
    expect(event.payload).toMatchObject({ intent_event_id: base.ids.second.event_id, resolution: 'did_not_happen' });
    expect(cli.stdout).toContain(`WRITTEN: SystemEvent.OperatorResolved at seq ${event.seq} (event ${event.event_id}), actor user, operator alice`);
    expect(cli.stdout).toContain(`intent ${base.ids.second.event_id} (seq ${base.ids.second.seq}, write d.md): did_not_happen`);
    expect(cli.stdout).toContain(`answers ActionEvent.ToolOutcomeUnknown at seq ${base.ids.secondUnknown.seq}`);
    expect(cli.stdout).toContain('lifecycle RECOVERING → DORMANT');
    expect(cli.stdout).toContain('unknown outcomes left: none');
    expect(cli.stdout).toMatch(/not yet covered by a signed head \(the last covers seq \d+\): the controller, which holds the key, signs the run's heads when the instance is next resumed/);
    expect(cli.stdout).toContain(`npm run experiment -- --resume ${dir}`);
    expect(stateOf(dir)).toMatchObject({ lifecycle_state: 'DORMANT', current_wake_id: null });
    // The pending intent is the runtime's to reconcile, not the operator's: still open.
    expect(stateOf(dir).open_intents[base.ids.pending.event_id]?.outcome).toBe('pending');
    expect(verifyDirectory(dir, { allowOpen: true }).failures).toEqual([]);
  }, 60_000);

  test('the same command again is answered with the recorded event and writes nothing; a different statement is refused', async () => {
    const dir = copies.copy();
    const written = resultOf(await repair(dir, base.ids.first.event_id));
    const head = headSeq(dir);
    const again = resultOf(await repair(dir, base.ids.first.event_id));
    expect(again).toMatchObject({ outcome: 'already_recorded', seq: written.seq, event_id: written.event_id, event_hash: written.event_hash, head_seq_before: head, lifecycle_before: 'RECOVERING', lifecycle_after: 'RECOVERING' });
    expect(headSeq(dir)).toBe(head);
    const screen = await repair(dir, base.ids.first.event_id, { json: false });
    expect(screen.code).toBe(0);
    expect(screen.stdout).toContain(`ALREADY RECORDED: this statement is SystemEvent.OperatorResolved at seq ${written.seq} (event ${written.event_id}); nothing was written`);
    expect(headSeq(dir)).toBe(head);

    await expectRefused(dir, () => repair(dir, base.ids.first.event_id, { resolution: 'did_not_happen' }), 'already_resolved', new RegExp(`already resolved at seq ${written.seq} .*operator alice said happened.*never replaced or edited`));
    await expectRefused(dir, () => repair(dir, base.ids.first.event_id, { note: 'another account' }), 'already_resolved', /already resolved/);
  }, 90_000);
});

// State machine 1.3.0: STOPPED / PAUSED --SystemEvent.OperatorResolved--> the same state.
describe('a repair while the run is stopped or paused (state machine 1.3.0)', () => {
  /** Appends through a real writer of the run's identity, as --resume would (the store must be stopped). */
  async function appendToStopped(run: SubjectRun, draft: EventDraft): Promise<void> {
    // The virtual clock stands still while stopped: the last event's time.
    const occurredAt = storedEvents(run.dir).at(-1)!.occurred_at;
    const tokens = { runtime: newToken(), experiment: newToken() };
    const socketDir = mkdtempSync(path.join(tmpdir(), 'ds-repair-resume-'));
    const writer = await spawnWriter({ db_path: path.join(run.dir, RUN_FILES.store), socket_path: path.join(socketDir, 'w.sock'), mode: 'open', ...run.identity, tokens, projection: 'subject', socket_mode: 0o600, snapshot_every: 1_000 });
    try {
      const client = await WriterClient.connect(path.join(socketDir, 'w.sock'), 'experiment', tokens.experiment);
      try {
        await client.append([{ ...draft, occurred_at: occurredAt }]);
      } finally {
        client.close();
      }
    } finally {
      await writer.stop();
      rmSync(socketDir, { recursive: true, force: true });
    }
  }

  test('after an emergency stop: the subject stays STOPPED, the intent is closed, and the resume the screen announces is what the projector does', async () => {
    const run = await writeSubjectRun({ after: async (experiment, at) => void (await experiment.append([{ ...d.emergencyStopped(), occurred_at: at() }])) });
    try {
      const stop = storedEvents(run.dir).filter((e) => e.event_type === 'SystemEvent.EmergencyStopped').at(-1)!;
      expect(stateOf(run.dir).lifecycle_state).toBe('STOPPED');

      const first = resultOf(await repair(run.dir, run.ids.first.event_id));
      expect(first).toMatchObject({
        outcome: 'written',
        lifecycle_before: 'STOPPED',
        lifecycle_after: 'STOPPED',
        held_by: { event_type: 'SystemEvent.EmergencyStopped', seq: stop.seq },
        // Wake 2's intent is still unknown: a resume would be read-only.
        lifecycle_on_resume: 'RECOVERING',
        unknown_outcomes_left: [{ event_id: run.ids.second.event_id, seq: run.ids.second.seq, op: 'write', path: 'd.md' }],
      });
      expect(stateOf(run.dir).open_intents[run.ids.first.event_id]).toBeUndefined();

      const cli = await repair(run.dir, run.ids.second.event_id, { resolution: 'did_not_happen', note: 'd.md still holds its old text', json: false });
      expect(cli.code, cli.stderr).toBe(0);
      const event = storedEvents(run.dir).at(-1)!;
      expect(event).toMatchObject({ event_type: 'SystemEvent.OperatorResolved', actor: 'user', causation_id: run.ids.secondUnknown.event_id, payload: { intent_event_id: run.ids.second.event_id, resolution: 'did_not_happen' } });
      expect(cli.stdout).toContain('lifecycle STOPPED → STOPPED');
      expect(cli.stdout).toContain('unknown outcomes left: none');
      expect(cli.stdout).toContain(`the subject stays STOPPED (SystemEvent.EmergencyStopped at seq ${stop.seq}): the statement does not resume it`);
      expect(cli.stdout).toContain(`npm run experiment -- --resume ${run.dir} will continue DORMANT: no unknown outcome is left open, so its next wakes act normally`);

      const state = stateOf(run.dir);
      expect(state).toMatchObject({ lifecycle_state: 'STOPPED', current_wake_id: null });
      expect(Object.keys(state.open_intents)).toEqual([run.ids.pending.event_id]);
      expect(verifyDirectory(run.dir, { allowOpen: true }).failures).toEqual([]);
      expect(checkReplay(path.join(run.dir, RUN_FILES.store)).match).toBe(true);
      // The same statement again: the screen still says where the resume goes.
      const again = await repair(run.dir, run.ids.second.event_id, { resolution: 'did_not_happen', note: 'd.md still holds its old text', json: false });
      expect(again.stdout).toContain('ALREADY RECORDED');
      expect(again.stdout).toContain('will continue DORMANT');

      // The resume finds nothing open: DORMANT, not RECOVERING.
      await appendToStopped(run, d.resumed());
      expect(stateOf(run.dir)).toMatchObject({ lifecycle_state: 'DORMANT', current_wake_id: null });
      expect(verifyDirectory(run.dir, { allowOpen: true }).failures).toEqual([]);
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  }, 90_000);

  test('while paused: the subject stays PAUSED and the intent is closed', async () => {
    const run = await writeSubjectRun({ after: async (experiment, at) => void (await experiment.append([{ ...d.paused(), occurred_at: at() }])) });
    try {
      const pause = storedEvents(run.dir).filter((e) => e.event_type === 'SystemEvent.Paused').at(-1)!;
      const result = resultOf(await repair(run.dir, run.ids.first.event_id));
      expect(result).toMatchObject({
        outcome: 'written',
        lifecycle_before: 'PAUSED',
        lifecycle_after: 'PAUSED',
        held_by: { event_type: 'SystemEvent.Paused', seq: pause.seq },
        lifecycle_on_resume: 'RECOVERING',
        unknown_outcomes_left: [{ event_id: run.ids.second.event_id, seq: run.ids.second.seq, op: 'write', path: 'd.md' }],
      });
      const screen = await repair(run.dir, run.ids.first.event_id, { json: false });
      expect(screen.stdout).toContain(`the subject stays PAUSED (SystemEvent.Paused at seq ${pause.seq}): the statement does not resume it`);
      expect(screen.stdout).toContain(`npm run experiment -- --resume ${run.dir} will continue RECOVERING (read-only) while 1 unknown outcome(s) remain: resolve them too before resuming`);
      const state = stateOf(run.dir);
      expect(state.lifecycle_state).toBe('PAUSED');
      expect(state.open_intents[run.ids.first.event_id]).toBeUndefined();
      expect(verifyDirectory(run.dir, { allowOpen: true }).failures).toEqual([]);
      expect(checkReplay(path.join(run.dir, RUN_FILES.store)).match).toBe(true);
      await appendToStopped(run, d.resumed());
      expect(stateOf(run.dir).lifecycle_state).toBe('RECOVERING');
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('refusals: exit 1, nothing appended', () => {
  test('an id that is no intent, an intent that is pending, an intent already closed', async () => {
    const dir = copies.copy();
    const unknownHint = await expectRefused(dir, () => repair(dir, base.ids.firstUnknown.event_id), 'not_an_intent', /is ActionEvent\.ToolOutcomeUnknown at seq \d+, not an ActionEvent\.ExecutionIntentRecorded/);
    expect(unknownHint).toContain(`its intent is ${base.ids.first.event_id}`);
    await expectRefused(dir, () => repair(dir, '00000000-0000-4000-8000-000000000000'), 'not_an_intent', /no event of .* has event_id 00000000-0000-4000-8000-000000000000/);
    await expectRefused(dir, () => repair(dir, base.ids.pending.event_id), 'intent_pending', new RegExp(`intent ${base.ids.pending.event_id} \\(seq ${base.ids.pending.seq}, write b\\.md\\) is pending, not unknown`));
    await expectRefused(dir, () => repair(dir, base.ids.closed.event_id), 'intent_closed', new RegExp(`closed: its outcome was recorded by ActionEvent\\.ToolSucceeded at seq ${base.ids.succeeded.seq}`));
  }, 90_000);

  test('an intent an operator statement already closed is named with that statement', async () => {
    // Written by another hand than this command (no idempotency key of its own): the intent is simply closed.
    let closedSeq = 0;
    const run = await writeSubjectRun({
      after: async (experiment, at) => {
        const ids = (await experiment.read({ from_seq: 1, limit: 1_000 })).events.filter((e) => e.event_type === 'ActionEvent.ToolOutcomeUnknown');
        closedSeq = (await experiment.append([{ ...d.operatorResolved(String(ids[0]!.payload.intent_event_id)), occurred_at: at() }])).events[0]!.seq;
      },
    });
    try {
      await expectRefused(run.dir, () => repair(run.dir, run.ids.first.event_id), 'intent_closed', new RegExp(`closed: its outcome was recorded by SystemEvent\\.OperatorResolved at seq ${closedSeq} \\(operator op, happened\\)`));
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  }, 60_000);

  test('a sealed store', async () => {
    const run = await writeSubjectRun({ seal: true });
    try {
      expect(verifyDirectory(run.dir).ok).toBe(true);
      await expectRefused(run.dir, () => repair(run.dir, run.ids.first.event_id), 'sealed', /is sealed \(SystemEvent\.StoreSealed at seq \d+\): its record is final/);
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  }, 60_000);

  test('a wake in progress: the controller died inside it (a Ctrl-C would have ended it)', async () => {
    const inWake = await writeSubjectRun({ endLastWake: false });
    try {
      const message = await expectRefused(inWake.dir, () => repair(inWake.dir, inWake.ids.first.event_id), 'wake_in_progress', /wake-3 \(WakeStarted at seq \d+\) has not ended and no stop is recorded after it: the controller ended inside the subject's wake without recording either/);
      expect(message).toContain(`Resume the instance (npm run experiment -- --resume ${inWake.dir}): it ends that wake as 'stopped' and records the missing stop; then stop it with Ctrl-C`);
    } finally {
      rmSync(inWake.dir, { recursive: true, force: true });
    }
  }, 60_000);

  test('a store a writer still holds is refused as store_locked, saying it is safe', async () => {
    const dir = copies.copy();
    const tokens = { runtime: newToken(), experiment: newToken() };
    const socketDir = mkdtempSync(path.join(tmpdir(), 'ds-repair-held-'));
    const writer = await spawnWriter({ db_path: path.join(dir, RUN_FILES.store), socket_path: path.join(socketDir, 'w.sock'), mode: 'open', ...base.identity, tokens, projection: 'subject', socket_mode: 0o600, snapshot_every: 1_000 });
    let cli: CliResult;
    try {
      cli = await repair(dir, base.ids.first.event_id);
    } finally {
      await writer.stop();
      rmSync(socketDir, { recursive: true, force: true });
    }
    expect(cli.code).toBe(1);
    expect(JSON.parse(cli.stdout)).toMatchObject({ error: { code: 'store_locked', message: expect.stringMatching(/is locked: a writer is still running on it.*That is safe: nothing was changed/) } });
    expect(headSeq(dir)).toBe(headSeq(base.dir));
  }, 60_000);

  test('a store that does not verify: every failure listed, nothing chained onto it', async () => {
    const dir = copies.copy();
    const seq = base.ids.succeeded.seq;
    tamper(dir, (db) => editEnvelope(db, seq, (e) => ({ ...e, payload: { ...e.payload, observed_post_hash: `sha256:${'0'.repeat(64)}` } })));
    const message = await expectRefused(dir, () => repair(dir, base.ids.first.event_id), 'verify_failed', /does not verify \(\d+ failure\(s\)\); a repair is never chained onto a broken history/);
    expect(message).toContain(`events.db seq ${seq}: payload_hash does not match the payload (payload edited?)`);
    const cli = await repair(dir, base.ids.first.event_id);
    expect((JSON.parse(cli.stdout) as { error: { failures: unknown[] } }).error.failures).toContainEqual({ store: 'events.db', seq, reason: 'payload_hash does not match the payload (payload edited?)' });
  }, 60_000);

  test('a folder without a store', async () => {
    const dir = tempDir('ds-repair-empty-');
    try {
      const cli = await repair(dir, base.ids.first.event_id);
      expect(cli.code).toBe(1);
      expect(JSON.parse(cli.stdout)).toMatchObject({ exit_code: 1, error: { code: 'not_found', message: expect.stringContaining('holds no events.db') } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('misuse: exit 2, nothing read or written', () => {
  test.each([
    ['no run folder', [], /give the run folder \(DIR\)/],
    ['two run folders', ['DIR', 'DIR'], /give exactly one run folder, got 2/],
    ['a missing flag', ['DIR', '--resolve-intent', 'ID', '--resolution', 'happened', '--operator', 'alice'], /missing --note/],
    ['an id that is not a uuid', ['DIR', '--resolve-intent', 'seq-12', '--resolution', 'happened', '--operator', 'alice', '--note', 'x'], /--resolve-intent: /],
    ['a resolution outside the two', ['DIR', '--resolve-intent', 'ID', '--resolution', 'maybe', '--operator', 'alice', '--note', 'x'], /--resolution: /],
    ['an empty note', ['DIR', '--resolve-intent', 'ID', '--resolution', 'happened', '--operator', 'alice', '--note', '  '], /--note: say what was checked/],
    ['an unknown flag', ['DIR', '--force'], /Unknown option '--force'/],
    ['a run folder that does not exist', ['/nonexistent/run', '--resolve-intent', 'ID', '--resolution', 'happened', '--operator', 'alice', '--note', 'x'], /\/nonexistent\/run is not a folder/],
  ])('%s', async (_name, args, message) => {
    const filled = args.map((a) => (a === 'DIR' ? base.dir : a === 'ID' ? base.ids.first.event_id : a));
    const before = headSeq(base.dir);
    const cli = await runCli('repair', filled);
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stderr).toMatch(message);
    expect(cli.stderr).toContain('usage: npm run repair --');
    expect(headSeq(base.dir)).toBe(before);
  }, 30_000);
});

// Separate-uid runs: events.db belongs to the writer's uid (0600), and a later --resume starts
// the writer under that uid again. The repair runs its writer as the caller (root): afterwards
// the store and any -wal/-shm must still be that uid's, and its writer must open the store.
// The plan is the controller's own (controller/isolation.ts): the writer's system user, and
// code that uid can read — a readable copy when the checkout sits in a folder only root may
// enter (CI clones into one).
const isRoot = process.getuid?.() === 0;

describe.skipIf(!isRoot)('a store owned by the writer uid of a separate-uids run, repaired as root', () => {
  let plan: IsolationPlan | undefined;
  beforeAll(() => {
    plan = planIsolation();
    console.log(`[operator-resolution.test] ${plan.summary}`);
  });
  afterAll(() => plan?.cleanup());

  test("keeps the store's owner and mode, leaves no root-owned -wal/-shm, and that uid's writer opens it afterwards", async () => {
    if (!plan?.writer) throw new Error(`as root the controller plans separate uids, but here: ${plan?.summary ?? 'no plan'}`);
    const user = { ...plan.writer, codeRoot: plan.codeRoot };
    const parent = mkdtempSync('/tmp/ds-repair-uid-');
    chmodSync(parent, 0o755);
    const dir = path.join(parent, 'run');
    mkdirSync(dir);
    chownSync(dir, user.uid, user.gid);
    chmodSync(dir, 0o755);
    try {
      const run = await writeSubjectRun({ dir, writerUid: user });
      const db = path.join(dir, RUN_FILES.store);
      const owned = statSync(db);
      expect([owned.uid, owned.mode & 0o777]).toEqual([user.uid, 0o600]);
      const result = resultOf(await repair(dir, run.ids.first.event_id));
      expect(result.outcome).toBe('written');
      // SQLite run as root gives the files it creates the database's owner; keepOwnership had nothing to put back.
      expect(result.notes).toEqual([]);
      const after = statSync(db);
      expect({ uid: after.uid, gid: after.gid, mode: after.mode & 0o7777 }).toEqual({ uid: owned.uid, gid: owned.gid, mode: owned.mode & 0o7777 });
      for (const sidecar of [`${db}-wal`, `${db}-shm`]) {
        if (existsSync(sidecar)) expect({ file: path.basename(sidecar), uid: statSync(sidecar).uid }).toEqual({ file: path.basename(sidecar), uid: user.uid });
      }
      // What --resume does first: a writer under the writer's uid opens the store at the new head.
      const socketDir = mkdtempSync(path.join(tmpdir(), 'ds-repair-uid-sock-'));
      chownSync(socketDir, user.uid, user.gid);
      const tokens = { runtime: newToken(), experiment: newToken() };
      const writer = await spawnWriter({ db_path: db, socket_path: path.join(socketDir, 'w.sock'), mode: 'open', ...run.identity, tokens, projection: 'subject', socket_mode: 0o600, snapshot_every: 1_000 }, { uid: user.uid, gid: user.gid, codeRoot: user.codeRoot });
      try {
        expect(writer.head.seq).toBe(result.seq);
      } finally {
        expect((await writer.stop()).code).toBe(0);
        rmSync(socketDir, { recursive: true, force: true });
      }
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  }, 90_000);
});

// ---- end to end, with a real controller instance (controller, writer and runtime processes)

/** Thrown from the controller's log (see diesHere): the controller dies there, without recording a stop. */
class ControllerDied extends Error {
  override readonly name = 'ControllerDied';
}

/**
 * The controller dies here as a killed one does, leaving no stop: its writer is SIGKILLed first
 * (pid from the controller's own "ds-writer pid N" line), then ControllerDied is thrown. An
 * exception alone is no death: the controller records the stop of any error while its writer
 * can take it (controller/instance-ending.ts).
 */
function diesHere(lines: readonly string[]): never {
  const pid = Number([...lines].reverse().map((l) => /^ds-writer pid (\d+) /.exec(l)?.[1]).find((p) => p !== undefined));
  if (!Number.isInteger(pid)) throw new Error('test: no "ds-writer pid" line to find the writer by');
  process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + 5_000;
  // Dead once gone or a zombie (this process reaps it later); the controller then finds its connection reset.
  const exited = (): boolean => {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
    } catch {
      return true;
    }
  };
  while (!exited()) if (Date.now() > deadline) throw new Error(`test: ds-writer ${pid} did not die within 5 s of SIGKILL`);
  throw new ControllerDied('test: the controller dies inside the wake');
}

async function waitForReached(faultDir: string, timeoutMs: number): Promise<FaultReached> {
  const file = path.join(faultDir, FAULT_FILES.reached);
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`the armed fault did not fire within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return FaultReached.parse(JSON.parse(readFileSync(file, 'utf8')));
}

/** The same run with `onLine` called on every line the controller logs (after it is kept). */
function watched(run: InstanceRun, onLine: (line: string) => void): InstanceRun {
  return { ...run, options: { ...run.options, log: (line: string): void => {
    run.lines.push(line);
    onLine(line);
  } } };
}

/** The line the controller logs from the runtime's wake when it records an intent's outcome unknown. */
const unknownOutcomeLine = (intentId: string): RegExp => new RegExp(`^  wake-\\d{4}: intent ${intentId} \\([a-z]+ .+\\): outcome unknown`);

/** The subject's state after the events up to and including seq `upTo`, by the projector. */
function projectedAt(events: readonly EventEnvelope[], upTo: number): SubjectState {
  return subjectProjection.applyAll(subjectProjection.initial(), events.filter((e) => e.seq <= upTo));
}

describe('end to end: a real instance whose write could not be confirmed', () => {
  // How an unknown outcome arises in a real run (DESIGN §7, the fault harness's workspace_tampered):
  // the runtime dies between a write intent and the write (the controller records the stop), and
  // a third party changes the file before the resume; the resumed runtime finds neither hash and
  // records ToolOutcomeUnknown in its first wake. The same seed runs the same intents: a counting
  // run finds the first write intent's hit once for both tests.
  const point = 'runtime.intent.before_file_op' as const;
  let setup: ControllerSetup;
  let firstWriteHit: number;
  const scratch: string[] = [];

  beforeAll(async () => {
    setup = controllerSetup();
    const calibration = mkdtempSync('/tmp/ds-repair-calibration-');
    scratch.push(calibration);
    const counting = FaultSwitch.fromEnv('controller', () => undefined, { [FAULT_ENV]: JSON.stringify({ dir: calibration, armed: null }) });
    const calibrated = await runInstance(newInstanceOptions(setup, { name: 'calibration', faults: counting }));
    if (calibrated.status !== 'finished') throw new Error(`the counting run did not finish: ${calibrated.status}`);
    const hits = readFileSync(path.join(calibration, FAULT_FILES.contexts(point)), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { hit: number; context: Record<string, unknown> });
    const firstWrite = hits.find((h) => h.context.op === 'write');
    if (!firstWrite) throw new Error(`the reference policy made no write intent: ${JSON.stringify(hits)}`);
    firstWriteHit = firstWrite.hit;
  }, 60_000);

  afterAll(() => {
    for (const dir of [...scratch, ...(setup ? [setup.dir] : [])]) rmSync(dir, { recursive: true, force: true });
  });

  /** A stopped instance with a pending write intent whose file a third party has overwritten. */
  async function stoppedAtTamperedIntent(name: string): Promise<{ run: InstanceRun; runDir: string; intentId: string; tamperedPath: string }> {
    const faultDir = mkdtempSync('/tmp/ds-repair-fault-');
    scratch.push(faultDir);
    const armed = FaultSwitch.fromEnv('controller', () => undefined, { [FAULT_ENV]: JSON.stringify({ dir: faultDir, armed: { point, kind: 'workspace_tampered', hit: firstWriteHit } }) });
    const run = newInstanceOptions(setup, { name, faults: armed });
    const runDir = run.options.runDir;
    // The runtime freezes at that intent; it is killed there, and the controller records the stop.
    const running = runInstance(run);
    const reached = await waitForReached(faultDir, 60_000);
    process.kill(reached.pid, 'SIGKILL');
    expect((await running).status).toBe('stopped');
    // A third party writes the file while nothing runs.
    const tamperedPath = String(reached.context.path);
    writeFileSync(path.join(runDir, WORKSPACE_FOLDER, tamperedPath), 'written by a third party while the instance was stopped\n');
    return { run, runDir, intentId: String(reached.context.intent_event_id), tamperedPath };
  }

  /** Sealed, verified (in-process and by npm run verify), following its plan; the statement is never retried. */
  async function expectSealedAndSound(runDir: string, intentId: string, statementSeq: number, emergencyStops: number): Promise<EventEnvelope[]> {
    const events = storedEvents(runDir);
    expect(events.at(-1)!.event_type).toBe('SystemEvent.StoreSealed');
    // Resolved is closed: nothing settles, reconciles or retries that intent afterwards.
    expect(events.filter((e) => e.seq > statementSeq && e.payload.intent_event_id === intentId)).toEqual([]);
    expect(events.filter((e) => e.event_type === 'ActionEvent.ToolOutcomeUnknown' && e.payload.intent_event_id === intentId)).toHaveLength(1);
    expect(verifyDirectory(runDir).failures).toEqual([]);
    const plan = checkRunFollowsPlan(runDir, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR });
    expect(plan.failures).toEqual([]);
    expect(plan.checked).toMatchObject({ sealed: true, emergency_stops: emergencyStops });
    const verify = await runCli('verify', [runDir]);
    expect(verify.code, `${verify.stdout}\n${verify.stderr}`).toBe(0);
    return events;
  }

  test('the operator workflow: unknown outcome (RECOVERING) → Ctrl-C → npm run repair → --resume: DORMANT, acts again, seals', async () => {
    const { run, runDir, intentId, tamperedPath } = await stoppedAtTamperedIntent('repaired');

    // 1. Resumed: its first wake records the outcome unknown; the operator sees the line and presses Ctrl-C.
    const ctrlC = new AbortController();
    const stopped = await resume(watched(run, (line) => {
      if (unknownOutcomeLine(intentId).test(line)) ctrlC.abort('operator signal SIGINT');
    }), ctrlC.signal);
    expect(stopped.status).toBe('stopped');
    expect(stopped.stopReason).toBe('operator signal SIGINT');
    const beforeRepair = storedEvents(runDir);
    const unknown = beforeRepair.find((e) => e.event_type === 'ActionEvent.ToolOutcomeUnknown');
    expect(unknown?.payload.intent_event_id).toBe(intentId);
    const stop = beforeRepair.filter((e) => e.event_type === 'SystemEvent.EmergencyStopped').at(-1)!;
    expect(stop).toMatchObject({ actor: 'experiment', payload: { operator: 'test', reason: 'operator signal SIGINT' } });
    expect(stop.seq).toBeGreaterThan(unknown!.seq);
    expect(stateOf(runDir)).toMatchObject({ lifecycle_state: 'STOPPED', current_wake_id: null });
    expect(stateOf(runDir).open_intents[intentId]?.outcome).toBe('unknown');

    // 2. The repair, by the real command line, while the instance is stopped.
    const note = `${tamperedPath} holds a third party's text, not the subject's`;
    const repaired = resultOf(await repair(runDir, intentId, { resolution: 'did_not_happen', operator: 'test operator', note }));
    expect(repaired).toMatchObject({
      outcome: 'written',
      intent: { event_id: intentId, path: tamperedPath },
      unknown_outcome: { event_id: unknown!.event_id },
      lifecycle_before: 'STOPPED',
      lifecycle_after: 'STOPPED',
      held_by: { event_type: 'SystemEvent.EmergencyStopped', seq: stop.seq },
      lifecycle_on_resume: 'DORMANT',
      unknown_outcomes_left: [],
    });
    const screen = await repair(runDir, intentId, { resolution: 'did_not_happen', operator: 'test operator', note, json: false });
    expect(screen.code, screen.stderr).toBe(0);
    expect(screen.stdout).toContain(`ALREADY RECORDED: this statement is SystemEvent.OperatorResolved at seq ${repaired.seq}`);
    expect(screen.stdout).toContain(`the subject stays STOPPED (SystemEvent.EmergencyStopped at seq ${stop.seq})`);
    expect(screen.stdout).toContain(`npm run experiment -- --resume ${runDir} will continue DORMANT`);

    // 3. --resume runs the remaining wakes and seals; the statement is under the final signed head.
    const finished = await resume(run);
    expect(finished.status).toBe('finished');
    // The stop was recorded by the controller itself: the resume finds nothing to make up for.
    expect(finished.notes).toEqual([]);
    expect(finished.finalHead!.seq).toBeGreaterThan(repaired.seq);
    const events = await expectSealedAndSound(runDir, intentId, repaired.seq, 2);

    // The statement sits between the operator's stop and the resume.
    const statement = events.find((e) => e.event_type === 'SystemEvent.OperatorResolved')!;
    expect(statement).toMatchObject({ seq: repaired.seq, actor: 'user', causation_id: unknown!.event_id });
    const resumed = events.find((e) => e.event_type === 'SystemEvent.Resumed' && e.seq > stop.seq)!;
    expect(stop.seq).toBeLessThan(statement.seq);
    expect(statement.seq).toBeLessThan(resumed.seq);
    expect(events.filter((e) => e.seq > stop.seq && e.seq < resumed.seq).map((e) => e.event_type)).not.toContain('ExperimentEvent.WakeStarted');
    // The resume leaves the subject DORMANT, not RECOVERING: nothing is open.
    expect(projectedAt(events, resumed.seq - 1).lifecycle_state).toBe('STOPPED');
    expect(projectedAt(events, resumed.seq)).toMatchObject({ lifecycle_state: 'DORMANT', open_intents: {} });
    // Later wakes act normally: an action is allowed, executed and confirmed after the resume
    // (while RECOVERING the permission gate may allow nothing: the projector refuses it).
    const executed = events.find((e) => e.seq > resumed.seq && e.event_type === 'ActionEvent.ExecutionIntentRecorded');
    expect(executed, 'no execution after the resume').toBeDefined();
    const permission = events.find((e) => e.event_id === executed!.payload.permission_event_id)!;
    expect(permission).toMatchObject({ event_type: 'ActionEvent.PermissionDecided', payload: { decision: 'allow' } });
    expect(permission.seq).toBeGreaterThan(resumed.seq);
    expect(events.find((e) => e.event_type === 'ActionEvent.ToolSucceeded' && e.payload.intent_event_id === executed!.event_id)).toBeDefined();
  }, 120_000);

  test('a controller that died inside a wake: the repair is refused, and what its message says works (--resume, Ctrl-C, repair, --resume)', async () => {
    const { run, runDir, intentId } = await stoppedAtTamperedIntent('died-in-wake');

    // 1. Resumed: the controller dies inside the wake that records the unknown outcome (before its WakeEnded).
    await expect(resume(watched(run, (line) => {
      if (unknownOutcomeLine(intentId).test(line)) diesHere(run.lines);
    }))).rejects.toThrow(ControllerDied);
    const open = stateOf(runDir);
    expect(open.lifecycle_state).toBe('RECOVERING');
    expect(open.current_wake_id).not.toBeNull();
    const message = await expectRefused(runDir, () => repair(runDir, intentId), 'wake_in_progress', new RegExp(`^${open.current_wake_id} \\(WakeStarted at seq \\d+\\) has not ended and no stop is recorded after it`));
    expect(message).toContain(`Resume the instance (npm run experiment -- --resume ${runDir}): it ends that wake as 'stopped' and records the missing stop; then stop it with Ctrl-C`);

    // 2. As the message says: --resume, and Ctrl-C as soon as it has resumed.
    const ctrlC = new AbortController();
    const stopped = await resume(watched(run, (line) => {
      if (line.startsWith('resuming at ')) ctrlC.abort('operator signal SIGINT');
    }), ctrlC.signal);
    expect(stopped.status).toBe('stopped');
    expect(stopped.notes).toEqual([`${open.current_wake_id} was open when the instance stopped: ended as 'stopped' (it is not repeated)`, 'the previous controller ended without recording a stop; recorded one now']);
    const stop = storedEvents(runDir).filter((e) => e.event_type === 'SystemEvent.EmergencyStopped').at(-1)!;
    expect(stop.payload).toMatchObject({ operator: 'test', reason: 'operator signal SIGINT' });
    expect(stateOf(runDir)).toMatchObject({ lifecycle_state: 'STOPPED', current_wake_id: null });

    // 3. Now the repair is taken; then the resume seals.
    const repaired = resultOf(await repair(runDir, intentId, { resolution: 'happened', operator: 'test operator', note: 'the file is the subject\'s text after all' }));
    expect(repaired).toMatchObject({ outcome: 'written', lifecycle_before: 'STOPPED', lifecycle_after: 'STOPPED', held_by: { seq: stop.seq }, lifecycle_on_resume: 'DORMANT', unknown_outcomes_left: [] });
    expect((await resume(run)).status).toBe('finished');
    // Stops: the runtime killed at the intent; the one the resume made up for; the Ctrl-C.
    const events = await expectSealedAndSound(runDir, intentId, repaired.seq, 3);
    const resumed = events.find((e) => e.event_type === 'SystemEvent.Resumed' && e.seq > repaired.seq)!;
    expect(projectedAt(events, resumed.seq).lifecycle_state).toBe('DORMANT');
  }, 120_000);
});
