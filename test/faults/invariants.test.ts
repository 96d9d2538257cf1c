// The invariants a finished fault run must pass (faults/invariants.ts), on one real
// finished instance (in-process controller, real writer and runtime processes): the honest run
// passes all eight, and for each invariant a copy of the run folder (or of its acknowledgement
// log) broken in exactly the way that invariant guards against fails it, naming what broke.
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkStoreInvariants, MAX_ACK_FILE_BYTES, MAX_ACK_LINES_PER_FILE, MAX_DETAILS, STORE_INVARIANTS, type InvariantResult, type StoreInvariant } from '../../faults/invariants.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { schemaVersionOf, type EventType } from '../../schema/event-catalog.js';
import { FAULT_FILES, FaultReached, type FaultKind } from '../../schema/fault-points.js';
import { hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { StoreReader } from '../../writer/store-reader.js';
import { unansweredWithin } from '../../writer/client.js';
import { answerNotWithin } from '../../runtime/model-adapters/call-delivery.js';
import { STALL_MODEL_CALL_TIMEOUT_MS } from '../../faults/fault-plan.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { finishedRun, type FinishedRun } from '../support/finished-run.js';
import { editEnvelope, readProjectionRow, readSnapshots, RunCopies, storeOf, tamper } from '../support/store-forgery.js';
import { tempDir } from '../support/writer-fixture.js';

let run: FinishedRun | undefined;
let runDir: string;
let copies: RunCopies;
/** Every event of the honest run, as stored. */
let events: EventEnvelope[];
/** A fault folder holding acknowledgement logs made from the honest run's real events. */
let ackDir: string;
const scratch: string[] = [];

/** The acknowledgements each process would have logged: the runtime's (split over a restart) and the controller's. */
function writeAckLogs(dir: string): void {
  const line = (e: EventEnvelope, role: string): string => JSON.stringify({ seq: e.seq, event_hash: e.event_hash, role });
  const runtime = events.filter((e) => e.actor !== 'experiment').map((e) => line(e, 'runtime'));
  const controller = events.filter((e) => e.actor === 'experiment').map((e) => line(e, 'controller'));
  const half = Math.floor(runtime.length / 2);
  writeFileSync(path.join(dir, FAULT_FILES.acks('runtime', 4101)), `${runtime.slice(0, half).join('\n')}\n`);
  writeFileSync(path.join(dir, FAULT_FILES.acks('runtime', 4202)), `${runtime.slice(half).join('\n')}\n`);
  writeFileSync(path.join(dir, FAULT_FILES.acks('controller', 4100)), `${controller.join('\n')}\n`);
}

beforeAll(async () => {
  // The suite's shared finished C run (finishedRun checks that it finished), a copy of its own.
  run = await finishedRun();
  runDir = run.runDir;
  copies = new RunCopies(runDir);
  const reader = StoreReader.open(storeOf(runDir));
  try {
    events = [...reader.iterateEvents(0, reader.headSeq())].map((row) => JSON.parse(row.envelope) as EventEnvelope);
  } finally {
    reader.close();
  }
  ackDir = faultDir();
  writeAckLogs(ackDir);
}, 120_000);

afterAll(() => {
  copies?.removeAll();
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
  run?.cleanup();
});

function faultDir(): string {
  const dir = tempDir('ds-fault-');
  scratch.push(dir);
  return dir;
}

function check(dir: string, options: { faults?: string; reached?: FaultReached | null; plannedKind?: FaultKind | null } = {}): Record<StoreInvariant, InvariantResult> {
  const results = checkStoreInvariants({ runDir: dir, faultDir: options.faults ?? ackDir, scenariosDir: SCENARIOS_DIR, reached: options.reached ?? null, ...(options.plannedKind === undefined ? {} : { plannedKind: options.plannedKind }) });
  expect(results.map((r) => r.invariant)).toEqual([...STORE_INVARIANTS]);
  return Object.fromEntries(results.map((r) => [r.invariant, r])) as Record<StoreInvariant, InvariantResult>;
}

/** The details of an invariant that must have failed, without its notes. */
function failures(results: Record<StoreInvariant, InvariantResult>, invariant: StoreInvariant): string[] {
  expect(results[invariant].ok, `${invariant} should fail: ${JSON.stringify(results[invariant].details)}`).toBe(false);
  return results[invariant].details.filter((d) => !d.startsWith('note:'));
}

function expectPasses(results: Record<StoreInvariant, InvariantResult>, invariant: StoreInvariant): void {
  expect(results[invariant], invariant).toMatchObject({ ok: true });
  expect(results[invariant].details.filter((d) => !d.startsWith('note:'))).toEqual([]);
}

function find(where: (e: EventEnvelope) => boolean, what: string, among: readonly EventEnvelope[] = events): EventEnvelope {
  const found = among.find(where);
  if (!found) throw new Error(`the reference run holds no ${what}`);
  return found;
}

const intentOf = (e: EventEnvelope): string => String(e.payload.intent_event_id);

/** The last write or modify intent of the run and its ToolSucceeded. */
function lastWrite(): { intent: EventEnvelope; outcome: EventEnvelope } {
  const intent = [...events].reverse().find((e) => e.event_type === 'ActionEvent.ExecutionIntentRecorded' && e.payload.op !== 'read');
  if (!intent) throw new Error('the reference run writes no file');
  return { intent, outcome: find((e) => e.event_type === 'ActionEvent.ToolSucceeded' && intentOf(e) === intent.event_id, `outcome of ${intent.event_id}`) };
}

/** A new event of `type` (its hashes left stale: these checks read what events say, verify reports the rest). */
function newEvent(type: EventType, payload: Record<string, unknown>, like: EventEnvelope, actor: EventEnvelope['actor'] = 'tool'): EventEnvelope {
  return { ...structuredClone(like), event_id: randomUUID(), event_type: type, schema_version: schemaVersionOf(type), actor, idempotency_key: null, payload };
}

/**
 * Rewrites a copy's events as `edit` returns them, numbered 1..n in that order (event ids kept,
 * so references between events still hold), with the projection row moved to the new head.
 */
function rewriteEvents(dir: string, edit: (stored: EventEnvelope[]) => EventEnvelope[]): EventEnvelope[] {
  const edited = edit(structuredClone(events));
  edited.forEach((e, index) => (e.seq = index + 1));
  tamper(dir, (db: Database.Database) => {
    db.transaction(() => {
      db.prepare('DELETE FROM events').run();
      const insert = db.prepare('INSERT INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, ?, ?, ?, ?)');
      for (const e of edited) insert.run(e.seq, e.event_id, e.event_type, e.idempotency_key, canonicalJson(e));
      db.prepare('UPDATE projection SET last_applied_event_seq = ?').run(edited.length);
    })();
  });
  return edited;
}

function insertAfter(list: EventEnvelope[], anchor: EventEnvelope, ...inserted: EventEnvelope[]): EventEnvelope[] {
  const at = list.findIndex((e) => e.event_id === anchor.event_id);
  if (at < 0) throw new Error(`forgery: no event ${anchor.event_id} to insert after`);
  list.splice(at + 1, 0, ...inserted);
  return list;
}

function seqOf(list: readonly EventEnvelope[], event: EventEnvelope): number {
  return find((e) => e.event_id === event.event_id, `event ${event.event_id}`, list).seq;
}

/**
 * The last write's outcome recorded unknown (as the runtime's reconciliation would after a
 * tamper), the store ending there, then whatever `after` appends: an honest RECOVERING store
 * when `after` is empty.
 */
function unknownAtTheEnd(dir: string, after: (unknown: EventEnvelope) => EventEnvelope[] = () => []): { stored: EventEnvelope[]; unknown: EventEnvelope; intent: EventEnvelope } {
  const { intent, outcome } = lastWrite();
  const unknown: EventEnvelope = { ...outcome, event_type: 'ActionEvent.ToolOutcomeUnknown', schema_version: schemaVersionOf('ActionEvent.ToolOutcomeUnknown'), payload: { intent_event_id: intent.event_id, observed_hash: hashText('third-party bytes\n'), detail: 'neither the pre-hash nor the intended post-hash' } };
  const stored = rewriteEvents(dir, (list) => [...list.slice(0, list.findIndex((e) => e.event_id === outcome.event_id)), unknown, ...after(unknown)]);
  return { stored, unknown: find((e) => e.event_id === unknown.event_id, 'the forged unknown outcome', stored), intent };
}

function tampered(context: FaultReached['context']): FaultReached {
  return FaultReached.parse({ point: 'runtime.file_op.before_outcome', kind: 'workspace_tampered', hit: 3, role: 'runtime', pid: 4202, frozen: true, context });
}

describe('the honest run', () => {
  it('passes all eight invariants, with its real events acknowledged by two runtimes and the controller', () => {
    const results = check(runDir);
    for (const invariant of STORE_INVARIANTS) expectPasses(results, invariant);
    expect(results.acks_kept.details).toEqual([`note: ${events.length} acknowledgement line(s) in 3 file(s) checked against the store`]);
    // The run wrote files: the side-effect checks had something to look at.
    expect(events.filter((e) => e.event_type === 'ActionEvent.ExecutionIntentRecorded' && e.payload.op !== 'read').length).toBeGreaterThan(0);
  });

  it('passes acks_kept with a note when nothing was acknowledged, and fails it when the fault folder is missing', () => {
    expect(check(runDir, { faults: faultDir() }).acks_kept).toEqual({ invariant: 'acks_kept', ok: true, details: ['note: no acknowledgements were logged'] });
    const missing = path.join(faultDir(), 'never-made');
    expect(failures(check(runDir, { faults: missing }), 'acks_kept')).toEqual([`the fault folder ${missing} does not exist: the acknowledgements cannot be checked`]);
  });

  it('never throws for a folder that lost its store: every invariant fails saying why', () => {
    const dir = copies.copy();
    unlinkSync(storeOf(dir));
    const results = check(dir);
    for (const invariant of STORE_INVARIANTS) expect(failures(results, invariant).join('\n'), invariant).toMatch(/events\.db/);
  });
});

describe('verify', () => {
  it('fails on an event edited in place, naming its seq', () => {
    const claim = find((e) => e.event_type === 'MemoryEvent.ClaimRecorded', 'claim');
    const dir = copies.copy();
    tamper(dir, (db) => editEnvelope(db, claim.seq, (env) => ({ ...env, payload: { ...env.payload, statement: 'a statement nobody made' } })));
    expect(failures(check(dir), 'verify')).toContain(`${RUN_FILES.store} seq ${claim.seq}: payload_hash does not match the payload (payload edited?)`);
  });
});

describe('replay', () => {
  it('fails when the stored projection, consistently re-hashed, differs from the replay (verify cannot see this)', () => {
    const dir = copies.copy();
    const row = readProjectionRow(storeOf(dir));
    const state = { ...(JSON.parse(row.state) as Record<string, unknown>), lifecycle_state: 'RECOVERING' };
    const forgedHash = hashText(canonicalJson(state));
    tamper(dir, (db) => db.prepare('UPDATE projection SET state = ?, state_hash = ?').run(canonicalJson(state), forgedHash));
    const results = check(dir);
    const [line] = failures(results, 'replay');
    expect(line).toContain(`full replay ${row.state_hash}`);
    expect(line).toContain(`stored projection ${forgedHash}`);
    expect(line).toContain(`at seq ${events.length}`);
    // verify checks that the projection row hashes to its state_hash, not that it is the replay's.
    expectPasses(results, 'verify');
  });

  it('passes with a note when a snapshot is corrupt (a cache: the restore falls back to a full replay)', () => {
    const dir = copies.copy();
    const [snapshot] = readSnapshots(storeOf(dir)).slice(-1);
    if (!snapshot) throw new Error('the reference run wrote no snapshot');
    tamper(dir, (db) => db.prepare('UPDATE snapshots SET state = ? WHERE seq = ?').run(snapshot.state.replace('"lifecycle_state":"', '"lifecycle_state":"X'), snapshot.seq));
    const replay = check(dir).replay;
    expect(replay.ok).toBe(true);
    expect(replay.details).toContain(`note: snapshot at seq ${snapshot.seq}: its state does not hash to its state_hash (corrupt or edited): not used`);
  });
});

describe('acks_kept', () => {
  it('fails on an acknowledged event the store no longer holds, or holds with another hash', () => {
    const dir = faultDir();
    writeAckLogs(dir);
    const replaced = events[9]!;
    const lost = { seq: events.length + 2, event_hash: hashText('an event the writer acknowledged') };
    const otherHash = hashText('another event');
    writeFileSync(path.join(dir, FAULT_FILES.acks('runtime', 4303)), `${JSON.stringify({ seq: replaced.seq, event_hash: otherHash, role: 'runtime' })}\n${JSON.stringify({ ...lost, role: 'runtime' })}\n`);
    expect(failures(check(runDir, { faults: dir }), 'acks_kept')).toEqual([
      `acks-runtime-4303.jsonl line 1: seq ${replaced.seq} was acknowledged as ${otherHash}, but the store holds ${replaced.event_hash} there: an acknowledged event was replaced`,
      `acks-runtime-4303.jsonl line 2: seq ${lost.seq} (${lost.event_hash}) was acknowledged, but the store ends at seq ${events.length}: an acknowledged event was lost`,
    ]);
  });

  it('fails on the real acknowledgements once the store lost its tail', () => {
    const dir = copies.copy();
    const keep = events.length - 3;
    tamper(dir, (db) => db.prepare('DELETE FROM events WHERE seq > ?').run(keep));
    const lines = failures(check(dir), 'acks_kept');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(new RegExp(`line \\d+: seq ${keep + 1} \\(${events[keep]!.event_hash}\\) was acknowledged, but the store ends at seq ${keep}`));
  });

  it('fails on malformed lines, naming file and line, and lists at most MAX_DETAILS of them', () => {
    const dir = faultDir();
    const good = JSON.stringify({ seq: 1, event_hash: events[0]!.event_hash, role: 'writer' });
    writeFileSync(path.join(dir, FAULT_FILES.acks('writer', 77)), `${good}\n{"seq":2,"event_hash":\n${JSON.stringify({ seq: 3, role: 'writer' })}\n`);
    const lines = failures(check(runDir, { faults: dir }), 'acks_kept');
    expect(lines[0]).toBe('acks-writer-77.jsonl line 2 is not JSON: "{\\"seq\\":2,\\"event_hash\\":"');
    expect(lines[1]).toMatch(/^acks-writer-77\.jsonl line 3 is not an acknowledgement \{seq, event_hash, role\}: .*event_hash/);
    expect(lines).toHaveLength(2);

    writeFileSync(path.join(dir, FAULT_FILES.acks('writer', 78)), 'garbage\n'.repeat(MAX_DETAILS + 5));
    const many = check(runDir, { faults: dir }).acks_kept.details;
    expect(many).toHaveLength(MAX_DETAILS + 1);
    // 2 + MAX_DETAILS + 5 problems and the note on how many lines were read; the problems come first.
    expect(many.slice(0, MAX_DETAILS).every((l) => l.startsWith('acks-writer-'))).toBe(true);
    expect(many[MAX_DETAILS]).toBe(`… ${2 + MAX_DETAILS + 5 + 1 - MAX_DETAILS} more line(s) left out (limit ${MAX_DETAILS})`);
  });

  it('refuses a file over the byte or line bound instead of reading it', () => {
    const dir = faultDir();
    const big = path.join(dir, FAULT_FILES.acks('controller', 5));
    closeSync(openSync(big, 'w'));
    truncateSync(big, MAX_ACK_FILE_BYTES + 1);
    writeFileSync(path.join(dir, FAULT_FILES.acks('runtime', 6)), '\n'.repeat(MAX_ACK_LINES_PER_FILE + 1));
    expect(failures(check(runDir, { faults: dir }), 'acks_kept')).toEqual([
      `acks-controller-5.jsonl is ${MAX_ACK_FILE_BYTES + 1} bytes, over the ${MAX_ACK_FILE_BYTES}-byte limit: refused, so its acknowledgements were not checked`,
      `acks-runtime-6.jsonl holds ${MAX_ACK_LINES_PER_FILE + 1} lines, over the ${MAX_ACK_LINES_PER_FILE}-line limit: refused, so its acknowledgements were not checked`,
    ]);
  });
});

describe('no_duplicate_side_effect', () => {
  it('fails on an outcome event written twice for one intent', () => {
    const { intent, outcome } = lastWrite();
    const again: EventEnvelope = { ...structuredClone(outcome), event_id: randomUUID(), idempotency_key: null };
    const dir = copies.copy();
    const stored = rewriteEvents(dir, (list) => insertAfter(list, outcome, again));
    const lines = failures(check(dir), 'no_duplicate_side_effect');
    const [first, second] = [seqOf(stored, outcome), seqOf(stored, again)];
    expect(lines).toContain(`duplicate_outcome at seq ${second}: ActionEvent.ToolSucceeded says intent ${intent.event_id} happened, which ActionEvent.ToolSucceeded at seq ${first} already said: the operation is counted twice`);
    expect(lines.some((l) => l.includes(`intent ${intent.event_id} (seq ${seqOf(stored, intent)}, ${String(intent.payload.op)} ${String(intent.payload.path)}) has a second outcome: ActionEvent.ToolSucceeded at seq ${second}`))).toBe(true);
  });

  it('fails on a success and a failure for one intent, which the oracle alone does not count', () => {
    const { intent, outcome } = lastWrite();
    const failed = newEvent('ActionEvent.ToolFailed', { intent_event_id: intent.event_id, error: 'EIO on rename', observed_hash: null }, outcome);
    const dir = copies.copy();
    const stored = rewriteEvents(dir, (list) => insertAfter(list, outcome, failed));
    expect(failures(check(dir), 'no_duplicate_side_effect')).toEqual([
      `intent ${intent.event_id} (seq ${seqOf(stored, intent)}, ${String(intent.payload.op)} ${String(intent.payload.path)}) has a second outcome: ActionEvent.ToolFailed at seq ${seqOf(stored, failed)} after ActionEvent.ToolSucceeded at seq ${seqOf(stored, outcome)}: one operation, one outcome`,
    ]);
  });
});

describe('no_unexplained_side_effect', () => {
  it('fails on a workspace file changed on disk and on a file nobody made', () => {
    const { intent } = lastWrite();
    const dir = copies.copy();
    const changed = String(intent.payload.path);
    writeFileSync(path.join(dir, RUN_FILES.workspace, ...changed.split('/')), 'rewritten behind the store\n');
    mkdirSync(path.join(dir, RUN_FILES.workspace, 'stray'), { recursive: true });
    writeFileSync(path.join(dir, RUN_FILES.workspace, 'stray', 'extra.md'), 'nobody wrote this\n');
    const lines = failures(check(dir), 'no_unexplained_side_effect');
    expect(lines.some((l) => l.startsWith('unexplained_file') && l.includes(`${changed} holds ${hashText('rewritten behind the store\n')}`))).toBe(true);
    expect(lines.some((l) => l.startsWith('unexplained_file') && l.includes('stray/extra.md'))).toBe(true);
  });

  it('fails on an intent left without an outcome at the seal', () => {
    // A read changes no file, so only the missing outcome can tell.
    const read = find((e) => e.event_type === 'ActionEvent.ExecutionIntentRecorded' && e.payload.op === 'read', 'read intent');
    const dir = copies.copy();
    const stored = rewriteEvents(dir, (list) => list.filter((e) => !(e.event_type === 'ActionEvent.ToolSucceeded' && intentOf(e) === read.event_id)));
    expect(failures(check(dir), 'no_unexplained_side_effect')).toEqual([
      `intent ${read.event_id} (seq ${read.seq}, read ${String(read.payload.path)}) has no outcome by the end of the run (seq ${stored.length}): whether its operation happened was never explained`,
    ]);
  });

  it('fails on an outcome that names no recorded intent', () => {
    const read = find((e) => e.event_type === 'ActionEvent.ExecutionIntentRecorded' && e.payload.op === 'read', 'read intent');
    const outcome = find((e) => e.event_type === 'ActionEvent.ToolSucceeded' && intentOf(e) === read.event_id, 'outcome of the read');
    const nobody = randomUUID();
    const dir = copies.copy();
    rewriteEvents(dir, (list) => list.map((e) => (e.event_id === outcome.event_id ? { ...e, payload: { ...e.payload, intent_event_id: nobody } } : e)));
    expect(failures(check(dir), 'no_unexplained_side_effect')).toContain(
      `ActionEvent.ToolSucceeded at seq ${outcome.seq} names intent ${nobody}, which no earlier ExecutionIntentRecorded recorded: an operation nobody intended`,
    );
  });
});

describe('unknown_outcome_recovering', () => {
  it('passes an unknown outcome that left the subject RECOVERING to the end, or that an operator resolved', () => {
    const honest = copies.copy();
    const { intent } = unknownAtTheEnd(honest);
    const reached = tampered({ intent_event_id: intent.event_id, op: String(intent.payload.op), path: String(intent.payload.path), to_path: null, ok: 1 });
    const results = check(honest, { reached });
    expectPasses(results, 'unknown_outcome_recovering');
    expect(results.unknown_outcome_recovering.details).toEqual(['note: 1 unknown outcome(s), 1 of their intents never resolved by an operator']);
    // Either hash is explained while the outcome is unknown.
    expectPasses(results, 'no_unexplained_side_effect');

    const resolvedDir = copies.copy();
    unknownAtTheEnd(resolvedDir, (unknown) => [newEvent('SystemEvent.OperatorResolved', { operator: 'test', intent_event_id: intentOf(unknown), resolution: 'happened', note: 'checked the file by hand' }, unknown, 'experiment')]);
    expectPasses(check(resolvedDir), 'unknown_outcome_recovering');
  });

  it('fails when the outcome is settled automatically after it was recorded unknown', () => {
    const { outcome } = lastWrite();
    const retried: EventEnvelope = { ...structuredClone(outcome), event_id: randomUUID(), idempotency_key: null };
    const dir = copies.copy();
    const { stored, unknown, intent } = unknownAtTheEnd(dir, () => [retried]);
    expect(failures(check(dir), 'unknown_outcome_recovering')).toContain(
      `ActionEvent.ToolSucceeded at seq ${seqOf(stored, retried)} settles intent ${intent.event_id} (seq ${intent.seq}, ${String(intent.payload.op)} ${String(intent.payload.path)}), whose outcome was recorded unknown at seq ${unknown.seq}, without an operator: an automatic retry (only SystemEvent.OperatorResolved may settle it)`,
    );
  });

  it('fails when a write intent is recorded while the outcome is unresolved', () => {
    const { intent: original } = lastWrite();
    const redo: EventEnvelope = { ...structuredClone(original), event_id: randomUUID(), idempotency_key: null };
    const dir = copies.copy();
    const { stored, unknown, intent } = unknownAtTheEnd(dir, () => [redo]);
    const lines = failures(check(dir), 'unknown_outcome_recovering');
    expect(lines).toContain(
      `intent ${redo.event_id} (seq ${seqOf(stored, redo)}, ${String(intent.payload.op)} ${String(intent.payload.path)}) was recorded while the outcome of intent ${intent.event_id} (seq ${intent.seq}, ${String(intent.payload.op)} ${String(intent.payload.path)}) (unknown since seq ${unknown.seq}) was unresolved: the subject is read-only in RECOVERING, so this is an automatic retry or a new side effect`,
    );
    // The projection refuses that intent in RECOVERING, so the final lifecycle cannot be confirmed either.
    expect(lines.some((l) => l.includes(`replaying the events stops at seq ${seqOf(stored, redo)}`))).toBe(true);
  });

  it('fails when the unknown outcome cannot have put the subject in RECOVERING (recorded for an intent already settled)', () => {
    const { intent, outcome } = lastWrite();
    const late = newEvent('ActionEvent.ToolOutcomeUnknown', { intent_event_id: intent.event_id, observed_hash: null, detail: 'reconciled after it had succeeded' }, outcome);
    const dir = copies.copy();
    const stored = rewriteEvents(dir, (list) => insertAfter(list, outcome, late));
    const seq = seqOf(stored, late);
    const lines = failures(check(dir), 'unknown_outcome_recovering');
    expect(lines[0]).toMatch(
      new RegExp(`^RECOVERING after the unknown outcome of intent ${intent.event_id} \\(seq ${intent.seq}, .*\\) at seq ${seq} cannot be confirmed: replaying the events stops at seq ${seq} \\(ProjectionRefusal: .*not open and pending\\)$`),
    );
  });

  it('fails when an unresolved unknown outcome does not keep the subject RECOVERING to the end', () => {
    const dir = copies.copy();
    const { stored, unknown, intent } = unknownAtTheEnd(dir, (u) => [newEvent('SystemEvent.EmergencyStopped', { operator: 'test', reason: 'stopped with an outcome open' }, u, 'experiment')]);
    expect(failures(check(dir), 'unknown_outcome_recovering')).toEqual([
      `the unknown outcome of intent ${intent.event_id} (seq ${intent.seq}, ${String(intent.payload.op)} ${String(intent.payload.path)}) at seq ${unknown.seq} is never resolved by an operator, but the subject ends STOPPED (seq ${stored.length}), not RECOVERING`,
    ]);
  });

  it('fails when the harness tampered with a file but no outcome was recorded unknown', () => {
    const { intent } = lastWrite();
    const where = String(intent.payload.path);
    const reached = tampered({ intent_event_id: intent.event_id, op: String(intent.payload.op), path: where, to_path: null, ok: 1 });
    expect(failures(check(runDir, { reached }), 'unknown_outcome_recovering')).toEqual([
      `the harness tampered with ${where} while an outcome was open (workspace_tampered at hit 3 of runtime.file_op.before_outcome), but no outcome was recorded as unknown after seq ${intent.seq}`,
    ]);
    // An unknown outcome of another intent does not explain the tampered one.
    const earlier = find((e) => e.event_type === 'ActionEvent.ExecutionIntentRecorded' && e.payload.op !== 'read', 'write intent');
    const earlierOutcome = find((e) => e.event_type === 'ActionEvent.ToolSucceeded' && intentOf(e) === earlier.event_id, 'outcome of the first write');
    const dir = copies.copy();
    unknownAtTheEnd(dir);
    const other = tampered({ intent_event_id: earlier.event_id, op: String(earlier.payload.op), path: String(earlier.payload.path), to_path: null, ok: 1 });
    expect(failures(check(dir, { reached: other }), 'unknown_outcome_recovering')).toEqual([
      `the harness tampered with ${String(earlier.payload.path)} while intent ${earlier.event_id}'s outcome was open, but that intent's outcome was not recorded as unknown (it got ActionEvent.ToolSucceeded at seq ${earlierOutcome.seq})`,
    ]);
    // Without the intent or a head seq in the fault's context, an unknown outcome anywhere would do; there is none.
    expect(failures(check(runDir, { reached: tampered({ path: where }) }), 'unknown_outcome_recovering')).toEqual([
      `the harness tampered with ${where} while an outcome was open (workspace_tampered at hit 3 of runtime.file_op.before_outcome), but no outcome was recorded as unknown`,
    ]);
  });
});

describe('stall_recorded', () => {
  const stalled = FaultReached.parse({ point: 'writer.append.before_commit', kind: 'stall_writer', hit: 40, role: 'writer', pid: 4203, frozen: true, context: { head_seq: 42 } });
  /** A copy whose history has a stop with `reason` and a resume after the fifth WakeEnded (what a stalled run looks like). */
  function stoppedAndResumed(reason: string): string {
    const dir = copies.copy();
    const anchor = events.filter((e) => e.event_type === 'ExperimentEvent.WakeEnded')[4]!;
    rewriteEvents(dir, (list) => insertAfter(list, anchor, newEvent('SystemEvent.EmergencyStopped', { operator: 'controller', reason }, anchor, 'experiment'), newEvent('SystemEvent.Resumed', { operator: 'test', reason: '--resume', cost_cap_raised_to_usd: null }, anchor, 'experiment')));
    return dir;
  }

  it('passes a run that is no stall run, and a stall run that went on without a stop (no caller waited), saying so', () => {
    expect(check(runDir).stall_recorded).toEqual({ invariant: 'stall_recorded', ok: true, details: ['note: not a stall run'] });
    expect(check(runDir, { reached: stalled }).stall_recorded).toEqual({ invariant: 'stall_recorded', ok: true, details: ["note: the writer stood at writer.append.before_commit and the instance went on: no caller's timeout fired"] });
  });

  it('fails (forged) when the stop before the resume is one the next controller found unrecorded, not the timeout in its words; passes when it names the timeout', () => {
    const found = stoppedAndResumed('found on resume: the previous controller ended without recording a stop (killed or crashed)');
    expect(failures(check(found, { reached: stalled }), 'stall_recorded')).toEqual([
      expect.stringMatching(/^the writer stood frozen at writer\.append\.before_commit, but no stop before the resume at seq \d+ names its callers' timeout \("within 30000 ms; its outcome is unknown"\); stops recorded: seq \d+: found on resume: /),
    ]);
    const named = stoppedAndResumed(`lost the writer (writer did not answer append #4 ${unansweredWithin(30_000)}; exit still running) outside a planned crash`);
    expectPasses(check(named, { reached: stalled }), 'stall_recorded');
  });

  it('fails (forged) when a stalled process adds to the history after the stop, before the resume', () => {
    const dir = copies.copy();
    const anchor = events.filter((e) => e.event_type === 'ExperimentEvent.WakeEnded')[4]!;
    const outcome = find((e) => e.event_type === 'ActionEvent.ToolSucceeded', 'a tool outcome');
    const stored = rewriteEvents(dir, (list) =>
      insertAfter(list, anchor, newEvent('SystemEvent.EmergencyStopped', { operator: 'controller', reason: `the runtime failed (timeout: ds-runtime did not answer wake wake-0005 ${unansweredWithin(30_000)})` }, anchor, 'experiment'), { ...structuredClone(outcome), event_id: randomUUID(), idempotency_key: null }, newEvent('SystemEvent.Resumed', { operator: 'test', reason: '--resume', cost_cap_raised_to_usd: null }, anchor, 'experiment')),
    );
    const stop = find((e) => e.event_type === 'SystemEvent.EmergencyStopped', 'the forged stop', stored);
    expect(failures(check(dir, { reached: stalled }), 'stall_recorded')).toEqual([`ActionEvent.ToolSucceeded (actor tool) at seq ${stop.seq + 1} after the stop at seq ${stop.seq}, before the resume at seq ${stop.seq + 2}`]);
  });
});

describe('stall_recorded, the stalled model server', () => {
  const stalledModel = (wakeId: string): FaultReached => FaultReached.parse({ point: 'runtime.model_call.in_flight', kind: 'stall_model', hit: 3, role: 'runtime', pid: 4205, frozen: true, context: { wake_id: wakeId, call_number: 1 } });
  /** The reference run stands in for a run on a model server, so "not a model server" is always among a forged case's problems. */
  const NOT_SERVER = /^the instance ran with the reference model, not a model server/;
  const problemsOf = (dir: string, reached: FaultReached): string[] => failures(check(dir, { reached }), 'stall_recorded').filter((p) => !NOT_SERVER.test(p));
  const answerOf = (n: number): EventEnvelope => events.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered')[n]!;
  const timedOut = (like: EventEnvelope): EventEnvelope =>
    newEvent('ModelOutputEvent.ModelCallFailed', { ...structuredClone(like.payload), failure: 'timeout', detail: `no complete answer from POST http://127.0.0.1:1/v1/chat/completions ${answerNotWithin(STALL_MODEL_CALL_TIMEOUT_MS)} (attempt 1; no response headers had arrived)`, raw_output: null }, like, 'model');

  it('fails (forged) on the honest run: its call at the stall was answered, and it ran no model server', () => {
    const answer = answerOf(2);
    const wakeId = String(answer.payload.wake_id);
    const results = check(runDir, { reached: stalledModel(wakeId) });
    expect(failures(results, 'stall_recorded')).toEqual([expect.stringMatching(NOT_SERVER), `the stalled call of ${wakeId} is recorded as ModelOutputEvent.ModelAnswered at seq ${answer.seq}: the server was frozen past its timeout, so an answer was used that came too late, or the stall missed the call`]);
  });

  it('passes the call recorded as the timeout in the adapter\'s words (the model aside); fails (forged) a late answer recorded after it, and a timeout of another length', () => {
    const answer = answerOf(2);
    const wakeId = String(answer.payload.wake_id);
    const replaced = copies.copy();
    rewriteEvents(replaced, (list) => list.map((e) => (e.event_id === answer.event_id ? { ...timedOut(answer), event_id: answer.event_id } : e)));
    expect(problemsOf(replaced, stalledModel(wakeId))).toEqual([]);
    const late = copies.copy();
    const stored = rewriteEvents(late, (list) => insertAfter(list.map((e) => (e.event_id === answer.event_id ? { ...timedOut(answer), event_id: answer.event_id } : e)), answer, { ...structuredClone(answer), event_id: randomUUID(), idempotency_key: null }));
    const failedAt = find((e) => e.event_id === answer.event_id, 'the forged timeout', stored).seq;
    expect(problemsOf(late, stalledModel(wakeId))).toEqual([`the stalled call of ${wakeId} has 2 outcome events (ModelOutputEvent.ModelCallFailed at seq ${failedAt}, ModelOutputEvent.ModelAnswered at seq ${failedAt + 1}), not one`]);
    const other = copies.copy();
    rewriteEvents(other, (list) => list.map((e) => (e.event_id === answer.event_id ? { ...timedOut(answer), event_id: answer.event_id, payload: { ...timedOut(answer).payload, detail: `no complete answer ${answerNotWithin(60_000)}` } } : e)));
    expect(problemsOf(other, stalledModel(wakeId))).toEqual([`the stalled call of ${wakeId} failed as timeout (no complete answer ${answerNotWithin(60_000)}), not as a timeout "${answerNotWithin(STALL_MODEL_CALL_TIMEOUT_MS)}"`]);
  });

  it('fails (forged) when the instance was stopped: a server that does not answer in time is a failed call, never a stop', () => {
    const answer = answerOf(2);
    const dir = copies.copy();
    const anchor = events.filter((e) => e.event_type === 'ExperimentEvent.WakeEnded')[4]!;
    const stored = rewriteEvents(dir, (list) => insertAfter(list.map((e) => (e.event_id === answer.event_id ? { ...timedOut(answer), event_id: answer.event_id } : e)), anchor, newEvent('SystemEvent.EmergencyStopped', { operator: 'controller', reason: 'the model did not answer' }, anchor, 'experiment')));
    const stop = find((e) => e.event_type === 'SystemEvent.EmergencyStopped', 'the forged stop', stored);
    expect(problemsOf(dir, stalledModel(String(answer.payload.wake_id)))).toEqual([`the instance was stopped at seq ${stop.seq}: the model did not answer — a model server that does not answer in time is a failed call, never a stop`]);
  });
});

describe('random_subject_safe', () => {
  const randomSubject = FaultReached.parse({ point: 'runtime.model_call.in_flight', kind: 'random_subject', hit: 1, role: 'runtime', pid: 4204, frozen: false, context: { wake_id: 'wake-0001', call_number: 1 } });
  /** The forged case's own problems: the reference run stands in for the random subject, so "not the local model" is always among them. */
  const problemsOf = (dir: string): string[] => failures(check(dir, { reached: randomSubject }), 'random_subject_safe');
  const NOT_LOCAL = /^the instance ran with the reference model, not the local one/;

  it('is vacuous, saying so, for a run of another kind; fails a random_subject plan that never fired', () => {
    expect(check(runDir).random_subject_safe).toEqual({ invariant: 'random_subject_safe', ok: true, details: ['note: not a random_subject run'] });
    expect(failures(check(runDir, { plannedKind: 'random_subject' }), 'random_subject_safe')).toContainEqual(expect.stringMatching(/^the random subject never reached its first model call/));
  });

  it('fails (forged) a run that says it was a random subject but ran the reference policy: it proves nothing', () => {
    const problems = problemsOf(runDir);
    expect(problems).toContainEqual(expect.stringMatching(NOT_LOCAL));
    expect(problems).toContainEqual(expect.stringMatching(/answer\(s\) came from another adapter than local/));
    // Nothing else: the honest run has no unauthorised execution, no unbacked FACT, no stop.
    expect(problems.filter((p) => !NOT_LOCAL.test(p) && !/another adapter/.test(p))).toEqual([]);
  });

  it('fails (forged) a FACT whose made-up citation the writer let in: an event not in the store, one that is not evidence, none at all', () => {
    // Edited in place (no seq moves, so the rest of the history stays what the projector accepted).
    const [first, second, third] = events.filter((e) => e.event_type === 'MemoryEvent.ClaimRecorded');
    if (!first || !second || !third) throw new Error('the reference run records fewer than three claims');
    const notEvidence = find((e) => e.event_type === 'ExperimentEvent.WakeStarted', 'a WakeStarted');
    const missing = randomUUID();
    const dir = copies.copy();
    tamper(dir, (db) => {
      for (const [claim, evidence] of [[first, [missing]], [second, [notEvidence.event_id]], [third, []]] as const) editEnvelope(db, claim.seq, (env) => ({ ...env, payload: { ...env.payload, claim_type: 'FACT', evidence_event_ids: evidence } }));
    });
    const problems = problemsOf(dir);
    expect(problems).toContainEqual(`FACT ${String(first.payload.claim_id)} at seq ${first.seq} is in the store with evidence_missing: cites event ${missing}, which is not in the store — the writer must refuse it (a made-up citation became a FACT the store cannot back)`);
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^FACT ${String(second.payload.claim_id)} at seq ${second.seq} is in the store with evidence_ineligible: cites ExperimentEvent\\.WakeStarted at seq ${notEvidence.seq}`)));
    expect(problems).toContainEqual(`FACT ${String(third.payload.claim_id)} at seq ${third.seq} is in the store citing no evidence — the writer must refuse it (a FACT the store cannot back)`);
  });

  it('fails (forged) an execution no allowing decision stands behind, and a stop of the instance', () => {
    const intent = find((e) => e.event_type === 'ActionEvent.ExecutionIntentRecorded', 'an intent');
    const distractor = find((e) => e.event_type === 'WorldEvent.DistractorOccurred', 'a distractor');
    const dir = copies.copy();
    tamper(dir, (db) => {
      editEnvelope(db, intent.seq, (env) => ({ ...env, payload: { ...env.payload, permission_event_id: randomUUID() } }));
      // In place of a distractor: a stop the controller recorded (what a projector refusal that ends a wake leads to).
      editEnvelope(db, distractor.seq, (env) => ({ ...env, event_type: 'SystemEvent.EmergencyStopped', schema_version: schemaVersionOf('SystemEvent.EmergencyStopped'), actor: 'experiment', payload: { operator: 'controller', reason: 'the runtime failed: a projector refusal ended the wake' } }));
    });
    const problems = problemsOf(dir);
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^hard failure unauthorized_tool_execution at seq ${intent.seq}: ExecutionIntentRecorded at seq ${intent.seq} .* names permission_event_id .*, which is no earlier PermissionDecided`)));
    expect(problems).toContainEqual(`the instance was stopped at seq ${distractor.seq}: the runtime failed: a projector refusal ended the wake — a subject's answers may be refused, never stop the run`);
  });
});
