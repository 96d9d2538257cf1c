// The audit desk's read model (audit/audit-desk.ts) on one real finished run — the in-process
// controller with a real ds-writer and ds-runtime on a real SQLite file — without HTTP: the
// link index against a recount made here from the stored envelopes, the state at a seq against
// a replay of the events alone, snapshots forged on copies (the desk must not trust them), a
// forged event (the desk still opens and says verification failed), that nothing in the run
// folder changes, the refusals (a running writer, several runs, no store), and a 100,000-event
// store (the bench's) for bounded paging and the snapshot a state starts from.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AuditDesk } from '../../audit/audit-desk.js';
import { AuditInputError } from '../../audit/run-folder.js';
import { RECOVERY_EVENT_TYPES } from '../../audit/store-index.js';
import { buildStore } from '../../tools/bench/replay-bench.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { replayStore } from '../../writer/replay.js';
import { StoreReadError } from '../../writer/store-reader.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { finishedRun, type FinishedRun } from '../support/finished-run.js';
import { damageMiddleOfStore } from '../support/damaged-store-file.js';
import { editEnvelope, readProjectionRow, readSnapshots, RunCopies, storeOf, tamper } from '../support/store-forgery.js';
import { messageDraft, startWriterFixture, tempDir } from '../support/writer-fixture.js';

let run: FinishedRun | undefined;
let runDir: string;
let dbPath: string;
let copies: RunCopies | undefined;
/** Every event of the run as stored, read here with better-sqlite3, not through the desk. */
let events: EventEnvelope[];
/** Seqs of the run's snapshots, ascending, from the snapshots table. */
let snapshotSeqs: number[];
let headSeq: number;
/** The desk on the untouched run, shared by the read-only queries. */
let desk: AuditDesk | undefined;
const scratch: string[] = [];

beforeAll(async () => {
  run = await finishedRun();
  ({ runDir, dbPath, events } = run);
  copies = new RunCopies(runDir);
  headSeq = events.length;
  snapshotSeqs = readSnapshots(dbPath).map((s) => s.seq);
  // The checks below need a sealed run of some length with several periodic snapshots.
  expect(events.at(-1)?.event_type).toBe('SystemEvent.StoreSealed');
  expect(headSeq).toBeGreaterThan(300);
  expect(snapshotSeqs.length).toBeGreaterThanOrEqual(4);
  desk = open(runDir);
}, 120_000);

afterAll(() => {
  copies?.removeAll();
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
  run?.cleanup();
});

function open(dir: string): AuditDesk {
  return AuditDesk.open(dir, SCENARIOS_DIR);
}

function shared(): AuditDesk {
  if (!desk) throw new Error('the shared desk did not open');
  return desk;
}

function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw, got none');
}

/** The newest snapshot at or before `seq` (null: none), from the snapshots table. */
function newestSnapshotAtOrBefore(seqs: readonly number[], seq: number): number | null {
  const before = seqs.filter((s) => s <= seq);
  return before.length === 0 ? null : Math.max(...before);
}

const p = (e: EventEnvelope): Record<string, unknown> => e.payload as Record<string, unknown>;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

interface RecountedChain {
  proposed_seq: number;
  proposal_id: string;
  decision: string | null;
  decision_seq: number | null;
  intent_seq: number | null;
  outcomes: { seq: number; event_type: string }[];
  effects: { seq: number; event_type: string }[];
}

const OUTCOME_TYPES = new Set(['ActionEvent.ToolSucceeded', 'ActionEvent.ToolFailed', 'ActionEvent.ToolReconciled', 'ActionEvent.ToolOutcomeUnknown', 'SystemEvent.OperatorResolved']);
const EFFECT_TYPES = new Set(['MemoryEvent.JournalEntryWritten', 'MemoryEvent.TaskBoardChanged']);

/**
 * What the index must hold, recounted from the envelopes by what each event says: the
 * decision names its proposal (proposal_id), the intent its decision (permission_event_id),
 * an outcome its intent (intent_event_id); claims and checkpoints name their evidence.
 */
function recount(all: readonly EventEnvelope[]) {
  const ofType = (type: string): EventEnvelope[] => all.filter((e) => e.event_type === type);
  const proposals = ofType('ActionEvent.ActionProposed');
  const decisions = ofType('ActionEvent.PermissionDecided');
  const intents = ofType('ActionEvent.ExecutionIntentRecorded');
  // This run's proposal ids are unique (the runtime prefixes them with the wake), so a
  // decision's proposal_id names exactly one proposal without scoping it to a wake.
  expect(new Set(proposals.map((e) => p(e).proposal_id)).size).toBe(proposals.length);
  const chains: RecountedChain[] = proposals.map((proposal) => {
    const proposalId = str(p(proposal).proposal_id);
    const decided = decisions.filter((d) => p(d).proposal_id === proposalId);
    expect(decided.length, `decisions naming ${proposalId}`).toBeLessThanOrEqual(1);
    const decision = decided[0] ?? null;
    const intent = decision === null ? null : (intents.find((i) => p(i).permission_event_id === decision.event_id) ?? null);
    return {
      proposed_seq: proposal.seq,
      proposal_id: proposalId,
      decision: decision === null ? null : str(p(decision).decision),
      decision_seq: decision?.seq ?? null,
      intent_seq: intent?.seq ?? null,
      outcomes: intent === null ? [] : all.filter((e) => OUTCOME_TYPES.has(e.event_type) && p(e).intent_event_id === intent.event_id).map((e) => ({ seq: e.seq, event_type: e.event_type })),
      effects: all.filter((e) => EFFECT_TYPES.has(e.event_type) && p(e).proposal_id === proposalId).map((e) => ({ seq: e.seq, event_type: e.event_type })),
    };
  });
  const citedBy = new Map<string, { seq: number; kind: 'claim' | 'checkpoint' }[]>();
  for (const e of all) {
    const kind = e.event_type === 'MemoryEvent.ClaimRecorded' ? 'claim' : e.event_type === 'ExperimentEvent.CheckpointRecorded' ? 'checkpoint' : null;
    if (kind === null) continue;
    for (const id of p(e).evidence_event_ids as string[]) citedBy.set(id, [...(citedBy.get(id) ?? []), { seq: e.seq, kind }]);
  }
  const deliveries = ofType('ExperimentEvent.InterventionDelivered').map((e) => ({ seq: e.seq, intervention_id: p(e).intervention_id, wake_id: p(e).wake_id, event_ids: p(e).event_ids }));
  const typeCounts: Record<string, number> = {};
  for (const e of all) typeCounts[e.event_type] = (typeCounts[e.event_type] ?? 0) + 1;
  const wakes = ofType('ExperimentEvent.WakeStarted').map((start) => {
    const end = all.find((e) => e.event_type === 'ExperimentEvent.WakeEnded' && p(e).wake_id === p(start).wake_id && e.seq > start.seq);
    return { wake_id: p(start).wake_id, started_seq: start.seq, ended_seq: end?.seq ?? null, outcome: end ? p(end).outcome : null };
  });
  const recovery = all.filter((e) => RECOVERY_EVENT_TYPES.has(e.event_type) || (e.event_type === 'ExperimentEvent.WakeEnded' && p(e).outcome !== 'completed')).map((e) => ({ seq: e.seq, event_type: e.event_type }));
  return { chains, citedBy, deliveries, typeCounts, wakes, recovery };
}

describe('the link index equals a recount from the stored envelopes', () => {
  test('one chain per ActionProposed, with the decision, intent and outcomes the events name', () => {
    const expected = recount(events);
    const { index } = shared();
    // Not vacuous: the run proposes, executes and completes actions.
    expect(expected.chains.length).toBeGreaterThan(10);
    expect(expected.chains.filter((c) => c.intent_seq !== null).length).toBeGreaterThan(0);
    expect(expected.chains.filter((c) => c.outcomes.length > 0).length).toBeGreaterThan(0);
    expect(expected.chains.filter((c) => c.effects.length > 0).length).toBeGreaterThan(0);
    expect(index.chains.map((c) => ({ proposed_seq: c.proposed_seq, proposal_id: c.proposal_id, decision: c.decision, decision_seq: c.decision_seq, intent_seq: c.intent_seq, outcomes: c.outcomes, effects: c.effects }))).toEqual(expected.chains);
    // Every seq of a chain leads back to its proposal, and nothing else is mapped.
    const chainSeqs = new Map<number, number>();
    for (const c of expected.chains) {
      for (const seq of [c.proposed_seq, c.decision_seq, c.intent_seq, ...c.outcomes.map((o) => o.seq), ...c.effects.map((o) => o.seq)]) if (seq !== null) chainSeqs.set(seq, c.proposed_seq);
    }
    expect(new Map(index.chain_of_seq)).toEqual(chainSeqs);
    expect([...index.chain_by_proposed_seq.keys()]).toEqual(expected.chains.map((c) => c.proposed_seq));
  });

  test('cited_by holds exactly the claims and checkpoints citing each evidence event', () => {
    const expected = recount(events);
    expect(expected.citedBy.size).toBeGreaterThan(0);
    expect(new Map([...shared().index.cited_by].map(([id, list]) => [id, [...list]]))).toEqual(expected.citedBy);
    // Each cited id is an event of this store (the writer checked FACT evidence on append).
    const ids = new Set(events.map((e) => e.event_id));
    for (const id of expected.citedBy.keys()) expect(ids.has(id), id).toBe(true);
  });

  test('deliveries, type counts, wakes, recovery events and the seal match the events', () => {
    const expected = recount(events);
    const { index } = shared();
    expect(expected.deliveries.length).toBeGreaterThan(0);
    expect(index.deliveries).toEqual(expected.deliveries);
    const deliveredBy = new Map<string, number>();
    for (const d of expected.deliveries) for (const id of d.event_ids as string[]) deliveredBy.set(id, d.seq);
    expect(new Map(index.delivered_by)).toEqual(deliveredBy);
    expect(Object.fromEntries(index.type_counts)).toEqual(expected.typeCounts);
    expect(index.wakes).toEqual(expected.wakes);
    expect(index.recovery).toEqual(expected.recovery);
    expect(index.recovery_not_listed).toBe(0);
    expect(index.head_seq).toBe(headSeq);
    expect(index.sealed_seq).toBe(headSeq);
  });
});

describe('the state at a seq', () => {
  test('equals a replay of the events alone to that seq, starting from the newest snapshot at or before it', () => {
    const d = shared();
    const [first, second] = snapshotSeqs as [number, number];
    // A wake holding no snapshot, and a seq in its middle.
    const wake = d.index.wakes.find((w) => w.ended_seq !== null && w.ended_seq - w.started_seq >= 6 && !snapshotSeqs.some((s) => s >= w.started_seq && s <= (w.ended_seq ?? 0)));
    if (!wake || wake.ended_seq === null) throw new Error('the run has no wake of 6+ events without a snapshot');
    const midWake = wake.started_seq + Math.floor((wake.ended_seq - wake.started_seq) / 2);
    const seqs = { first: 1, justAfterSnapshot: first + 1, justBeforeSnapshot: second - 1, head: headSeq, midWake };
    for (const [name, seq] of Object.entries(seqs)) {
      const at = d.stateAt(seq);
      const snapshot = newestSnapshotAtOrBefore(snapshotSeqs, seq);
      expect(at.state_hash, `${name} (seq ${seq})`).toBe(replayStore(dbPath, { toSeq: seq }).state_hash);
      expect({ seq: at.seq, from: at.from_snapshot_seq, replayed: at.events_replayed, passed_over: at.snapshots_passed_over }, name).toEqual({ seq, from: snapshot, replayed: seq - (snapshot ?? 0), passed_over: [] });
    }
    // Seq 1 has no snapshot before it; just before a snapshot replays from the previous one.
    expect(d.stateAt(1).from_snapshot_seq).toBeNull();
    expect(d.stateAt(second - 1)).toMatchObject({ from_snapshot_seq: first, events_replayed: second - 1 - first });
    // At the head: the clean stop's snapshot, and the stored projection (which checks) agrees.
    const head = d.headState();
    expect(head).toMatchObject({ seq: headSeq, source: 'stored projection', problem: null });
    expect(hashText(canonicalJson(head.state))).toBe(d.stateAt(headSeq).state_hash);
    expect(readProjectionRow(dbPath).state_hash).toBe(d.stateAt(headSeq).state_hash);
  });

  test('every snapshot and the stored projection of the untouched run compare identical with a replay', () => {
    const d = shared();
    for (const seq of snapshotSeqs) expect(d.compareSnapshot(seq), `snapshot ${seq}`).toMatchObject({ hash_ok: true, match: true, diff: null, note: null });
    expect(d.compareSnapshot(snapshotSeqs[0]! + 1)).toBeNull();
    const projection = d.compareProjection();
    expect(projection).toMatchObject({ hash_ok: true, covers_seq: headSeq, match: true, diff: null, note: null });
    expect(projection.replay_state_hash).toBe(projection.stored_state_hash);
  });
});

describe('forged snapshots', () => {
  /**
   * Rewrites one claim's statement in the snapshot at `seq` of a copy; `rehash` also rewrites
   * its state_hash to match (a consistent forgery), else the old hash stays (a careless one).
   */
  function forgeSnapshot(seq: number, rehash: boolean): { dir: string; path: string; stored: string; replayed: string } {
    const dir = copies!.copy();
    let forged: { path: string; stored: string; replayed: string } | undefined;
    tamper(dir, (db) => {
      const row = db.prepare('SELECT state, state_hash FROM snapshots WHERE seq = ?').get(seq) as { state: string; state_hash: string };
      const state = JSON.parse(row.state) as { claims: Record<string, { statement: string }> };
      const claimId = Object.keys(state.claims).sort()[0];
      if (claimId === undefined) throw new Error(`the snapshot at seq ${seq} holds no claim to forge`);
      const claim = state.claims[claimId]!;
      forged = { path: `/claims/${claimId}/statement`, stored: JSON.stringify('the reviewer approved everything'), replayed: JSON.stringify(claim.statement) };
      claim.statement = 'the reviewer approved everything';
      const text = canonicalJson(state);
      db.prepare('UPDATE snapshots SET state = ?, state_hash = ? WHERE seq = ?').run(text, rehash ? hashText(text) : row.state_hash, seq);
    });
    return { dir, ...forged! };
  }

  test('a snapshot edited without its hash is passed over with the reason, and the state still equals the replay', () => {
    const [previous, forgedSeq, next] = snapshotSeqs as [number, number, number];
    const forged = forgeSnapshot(forgedSeq, false);
    const d = open(forged.dir);
    const seq = forgedSeq + Math.min(5, next - forgedSeq - 1);
    const at = d.stateAt(seq);
    expect(at.snapshots_passed_over).toEqual([`snapshot at seq ${forgedSeq}: its state does not hash to its state_hash (corrupt or edited): not used`]);
    expect(at).toMatchObject({ from_snapshot_seq: previous, events_replayed: seq - previous });
    expect(at.state_hash).toBe(replayStore(storeOf(forged.dir), { toSeq: seq }).state_hash);
    expect(at.state_hash).toBe(replayStore(dbPath, { toSeq: seq }).state_hash);

    const comparison = d.compareSnapshot(forgedSeq);
    expect(comparison).toMatchObject({ hash_ok: false, match: false, note: null, replay_state_hash: replayStore(dbPath, { toSeq: forgedSeq }).state_hash });
    expect(comparison?.diff).toEqual({ differences: [{ path: forged.path, left: forged.stored, right: forged.replayed }], not_listed: 0 });
    // The snapshot next to it is untouched and still compares identical.
    expect(d.compareSnapshot(previous)).toMatchObject({ hash_ok: true, match: true });
  });

  test('a consistently forged snapshot (state and state_hash rewritten) still compares DIFFERENT, naming the path', () => {
    const [, forgedSeq, next] = snapshotSeqs as [number, number, number];
    const forged = forgeSnapshot(forgedSeq, true);
    const d = open(forged.dir);
    const comparison = d.compareSnapshot(forgedSeq);
    // Its hash checks, so only the replay from seq 1 can tell.
    expect(comparison).toMatchObject({ hash_ok: true, match: false, note: null });
    expect(comparison?.diff?.differences).toEqual([{ path: forged.path, left: forged.stored, right: forged.replayed }]);
    // Why that comparison exists: a snapshot that hashes is a usable starting point for the
    // state at a later seq, so the forged statement shows there (as in the restore drill).
    const seq = forgedSeq + 1;
    expect(seq).toBeLessThan(next);
    const at = d.stateAt(seq);
    expect(at).toMatchObject({ from_snapshot_seq: forgedSeq, snapshots_passed_over: [] });
    expect(at.state_hash).not.toBe(replayStore(dbPath, { toSeq: seq }).state_hash);
  });
});

test('a forged event (a claim statement edited in place) still opens, with verification failed at that seq', () => {
  const claim = events.find((e) => e.event_type === 'MemoryEvent.ClaimRecorded');
  if (!claim) throw new Error('the run records no claim');
  const dir = copies!.copy();
  tamper(dir, (db) => editEnvelope(db, claim.seq, (env) => ({ ...env, payload: { ...env.payload, statement: 'the dataset arrived on Monday' } })));
  const d = open(dir);
  expect(d.verify.ok).toBe(false);
  // Both hashes of that envelope fail, and nothing else: the chain links still hold.
  expect(d.verify.failures).toEqual([
    { store: RUN_FILES.store, seq: claim.seq, reason: 'payload_hash does not match the payload (payload edited?)' },
    { store: RUN_FILES.store, seq: claim.seq, reason: 'event_hash does not match the envelope (event edited?)' },
  ]);
  // The desk shows the event as stored (the forgery is the evidence) and indexes the whole store.
  expect((d.eventAt(claim.seq)?.payload as { statement?: string }).statement).toBe('the dataset arrived on Monday');
  expect(d.index.head_seq).toBe(headSeq);
});

describe('read-only', () => {
  interface FileFacts {
    readonly size: number;
    readonly mtimeMs: number;
    readonly sha256: string | null;
  }

  /** Every entry under `dir`: size, mtime and (for files) sha256. */
  function folderFacts(dir: string): Map<string, FileFacts> {
    const facts = new Map<string, FileFacts>();
    const visit = (sub: string): void => {
      for (const entry of readdirSync(path.join(dir, sub), { withFileTypes: true })) {
        const rel = path.join(sub, entry.name);
        const stat = statSync(path.join(dir, rel));
        facts.set(rel, { size: stat.size, mtimeMs: stat.mtimeMs, sha256: entry.isFile() ? createHash('sha256').update(readFileSync(path.join(dir, rel))).digest('hex') : null });
        if (entry.isDirectory()) visit(rel);
      }
    };
    visit('');
    return facts;
  }

  test('the run folder is byte-for-byte and mtime-for-mtime the same after every query the desk has', async () => {
    // A copy no other connection has open: the desk is the store's first and only reader,
    // the case where SQLite would have the most to set up.
    const dir = copies!.copy();
    const before = folderFacts(dir);
    const storeSha = before.get(RUN_FILES.store)?.sha256;
    expect(storeSha).toMatch(/^[0-9a-f]{64}$/);
    // The writer's clean close leaves the store in rollback mode: no -wal/-shm for a reader to make or move.
    expect([...before.keys()].filter((name) => name.startsWith(`${RUN_FILES.store}-`))).toEqual([]);
    // mtimes are compared: let the clock move past the copy's.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const d = AuditDesk.open(dir, SCENARIOS_DIR);
    for (const e of events) {
      expect(d.eventAt(e.seq)?.event_id).toBe(e.event_id);
      expect(d.seqOfEventId(e.event_id)).toBe(e.seq);
    }
    d.timeline({ afterSeq: 0 }, 500, null);
    d.timeline({ beforeSeq: headSeq + 1 }, 20, ['MemoryEvent.ClaimRecorded', 'ExperimentEvent.CheckpointRecorded']);
    for (const seq of [1, ...snapshotSeqs.map((s) => Math.min(s + 1, headSeq)), headSeq]) d.stateAt(seq);
    d.headState();
    d.snapshots();
    for (const seq of snapshotSeqs) d.compareSnapshot(seq);
    d.compareProjection();
    expect(d.within(() => d.grownTo())).toBeNull();
    const after = folderFacts(dir);
    expect(after.get(RUN_FILES.store)?.sha256).toBe(storeSha);
    // Every entry, mtime included, is as it was: no side file was made, moved or left.
    expect(after).toEqual(before);
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
  });

  test('a store in WAL mode on disk (its writer was killed): the -shm a read-only open makes is removed again', async () => {
    const dir = copies!.copy();
    // What a killed writer leaves: the header in WAL mode (no -wal with frames here, the harder case for a reader).
    const db = new Database(storeOf(dir));
    db.pragma('journal_mode = WAL');
    db.close();
    expect(readdirSync(dir).filter((name) => name.startsWith(`${RUN_FILES.store}-`))).toEqual([]);
    const before = folderFacts(dir);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const d = AuditDesk.open(dir, SCENARIOS_DIR);
    d.timeline({ afterSeq: 0 }, 50, null);
    d.headState();
    expect(folderFacts(dir)).toEqual(before);
  });

  test('a store with random bytes over a page of an index no page reads in seq order is refused before serving (quick_check), byte-identical', () => {
    const dir = copies!.copy();
    const damage = damageMiddleOfStore(storeOf(dir), { btree: 'events_by_type' });
    const before = folderFacts(dir);
    const error = thrownBy(() => AuditDesk.open(dir, SCENARIOS_DIR));
    expect(error, `page ${damage.pageno}`).toBeInstanceOf(StoreReadError);
    expect(error).toMatchObject({ code: 'damaged', message: expect.stringContaining(`${storeOf(dir)} is damaged: it is not an intact SQLite database (SQLite`) });
    expect(folderFacts(dir)).toEqual(before);
  });

  test('a store a running writer holds is refused as locked', async () => {
    const live = await startWriterFixture();
    try {
      const client = await live.connect('experiment');
      await client.append([messageDraft()]);
      const error = thrownBy(() => AuditDesk.open(live.dir, SCENARIOS_DIR));
      expect(error).toBeInstanceOf(StoreReadError);
      expect(error).toMatchObject({ code: 'locked', message: expect.stringMatching(/a writer is still running/) });
    } finally {
      await live.cleanup();
    }
  });

  test('a folder holding two runs is refused, naming both; a folder with no store is not_found', () => {
    const parent = tempDir('ds-audit-two-');
    scratch.push(parent);
    cpSync(runDir, path.join(parent, 'run-a'), { recursive: true });
    cpSync(runDir, path.join(parent, 'run-b'), { recursive: true });
    const two = thrownBy(() => AuditDesk.open(parent, SCENARIOS_DIR));
    expect(two).toBeInstanceOf(AuditInputError);
    expect((two as Error).message).toContain(`holds 2 runs`);
    expect((two as Error).message).toContain(path.join(parent, 'run-a'));
    expect((two as Error).message).toContain(path.join(parent, 'run-b'));
    // One of them, named directly, opens.
    expect(open(path.join(parent, 'run-a')).index.head_seq).toBe(headSeq);

    const empty = tempDir('ds-audit-empty-');
    scratch.push(empty);
    for (const where of [empty, path.join(empty, 'no-such-run')]) {
      const error = thrownBy(() => AuditDesk.open(where, SCENARIOS_DIR));
      expect(error, where).toBeInstanceOf(StoreReadError);
      expect((error as StoreReadError).code, where).toBe('not_found');
    }
    expect(existsSync(path.join(empty, RUN_FILES.store))).toBe(false);
  });
});

describe('a 100,000-event store (the replay bench store: no manifest, no heads)', () => {
  const EVENTS = 100_000;
  const LIMIT = 50;
  let dir: string;
  let bigDb: string;
  let big: AuditDesk;
  let bigSnapshots: number[];
  let claimSeqs: number[];
  let built: { wakes: number; claims: number };

  beforeAll(async () => {
    dir = tempDir('ds-audit-100k-');
    scratch.push(dir);
    bigDb = path.join(dir, RUN_FILES.store);
    const buildStartMs = performance.now();
    built = await buildStore(bigDb, EVENTS);
    const buildMs = performance.now() - buildStartMs;
    bigSnapshots = readSnapshots(bigDb).map((s) => s.seq);
    const db = new Database(bigDb, { readonly: true });
    try {
      claimSeqs = (db.prepare("SELECT seq FROM events WHERE event_type = 'MemoryEvent.ClaimRecorded' ORDER BY seq").all() as { seq: number }[]).map((r) => r.seq);
    } finally {
      db.close();
    }
    const rssBefore = process.memoryUsage.rss();
    const openStartMs = performance.now();
    big = open(dir);
    const openMs = performance.now() - openStartMs;
    const rssGrowth = process.memoryUsage.rss() - rssBefore;
    console.log(
      `[audit-desk.test] ${EVENTS.toLocaleString('en-US')}-event store: built in ${Math.round(buildMs)} ms; desk opened in ${Math.round(openMs)} ms (verify ${Math.round(big.opened.verify_ms)} ms, index ${Math.round(big.opened.index_ms)} ms); RSS growth over the open ${(rssGrowth / 1024 / 1024).toFixed(1)} MB`,
    );
  }, 120_000);

  test('the index covers every event; verification fails only for the missing manifest', () => {
    expect(big.index.head_seq).toBe(EVENTS);
    expect([...big.index.type_counts.values()].reduce((a, b) => a + b, 0)).toBe(EVENTS);
    expect(big.index.wakes.length).toBe(built.wakes);
    expect(big.index.type_counts.get('MemoryEvent.ClaimRecorded')).toBe(built.claims);
    expect(claimSeqs.length).toBe(built.claims);
    // Each FACT cites one message: as many citations as claims.
    expect([...big.index.cited_by.values()].reduce((n, list) => n + list.length, 0)).toBe(built.claims);
    expect(big.index.sealed_seq).toBeNull();
    expect(big.verify.ok).toBe(false);
    expect(big.verify.failures).toEqual([expect.objectContaining({ seq: 1, reason: expect.stringContaining(`no ${RUN_FILES.manifest}`) })]);
    expect(big.folder.manifest.ok).toBe(false);
    expect(big.planCheck.ok).toBe(false);
  });

  test('the state at seq 55,555 starts from the newest snapshot at or before it, replays at most 10,000 events, and equals a full replay', () => {
    const seq = 55_555;
    const snapshot = newestSnapshotAtOrBefore(bigSnapshots, seq);
    expect(snapshot).not.toBeNull();
    expect(snapshot!).toBeGreaterThanOrEqual(45_555);
    const startMs = performance.now();
    const at = big.stateAt(seq);
    const deskMs = performance.now() - startMs;
    expect(at).toMatchObject({ seq, from_snapshot_seq: snapshot, events_replayed: seq - snapshot!, snapshots_passed_over: [] });
    expect(at.events_replayed).toBeLessThanOrEqual(10_000);
    const replayStartMs = performance.now();
    const full = replayStore(bigDb, { toSeq: seq });
    const replayMs = performance.now() - replayStartMs;
    expect(full.from_snapshot_seq).toBeNull();
    expect(at.state_hash).toBe(full.state_hash);
    console.log(`[audit-desk.test] state at seq ${seq}: desk ${Math.round(deskMs)} ms from snapshot ${snapshot} (${at.events_replayed} events); full replay ${Math.round(replayMs)} ms (${full.events} events)`);
  });

  test('timeline pages hold at most their limit, with more_before / more_after right at the start, middle and end', () => {
    const seqsOf = (page: { rows: readonly { seq: number }[] }): number[] => page.rows.map((r) => r.seq);
    const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

    const start = big.timeline({ afterSeq: 0 }, LIMIT, null);
    expect(seqsOf(start)).toEqual(range(1, LIMIT));
    expect([start.more_before, start.more_after]).toEqual([false, true]);

    const middleForward = big.timeline({ afterSeq: 50_000 }, LIMIT, null);
    expect(seqsOf(middleForward)).toEqual(range(50_001, 50_000 + LIMIT));
    expect([middleForward.more_before, middleForward.more_after]).toEqual([true, true]);
    const middleBack = big.timeline({ beforeSeq: 50_000 }, LIMIT, null);
    expect(seqsOf(middleBack)).toEqual(range(50_000 - LIMIT, 49_999));
    expect([middleBack.more_before, middleBack.more_after]).toEqual([true, true]);

    const end = big.timeline({ beforeSeq: EVENTS + 1 }, LIMIT, null);
    expect(seqsOf(end)).toEqual(range(EVENTS - LIMIT + 1, EVENTS));
    expect([end.more_before, end.more_after]).toEqual([true, false]);
    const tail = big.timeline({ afterSeq: EVENTS - 10 }, LIMIT, null);
    expect(seqsOf(tail)).toEqual(range(EVENTS - 9, EVENTS));
    expect([tail.more_before, tail.more_after]).toEqual([true, false]);
    // The first page going back ends exactly at seq 1: nothing before it.
    const firstBack = big.timeline({ beforeSeq: LIMIT + 1 }, LIMIT, null);
    expect(seqsOf(firstBack)).toEqual(range(1, LIMIT));
    expect([firstBack.more_before, firstBack.more_after]).toEqual([false, true]);

    // A limit above the maximum is cut to it.
    expect(big.timeline({ afterSeq: 0 }, 100_000, null).rows).toHaveLength(500);
  });

  test('a type filter pages through exactly the events of those types', () => {
    const claims = ['MemoryEvent.ClaimRecorded'];
    expect(claimSeqs.length).toBeGreaterThan(2 * LIMIT);
    const first = big.timeline({ afterSeq: 0 }, LIMIT, claims);
    expect(first.rows.map((r) => r.seq)).toEqual(claimSeqs.slice(0, LIMIT));
    expect(first.rows.every((r) => r.event?.event_type === 'MemoryEvent.ClaimRecorded')).toBe(true);
    expect([first.more_before, first.more_after]).toEqual([false, true]);
    const second = big.timeline({ afterSeq: first.rows.at(-1)!.seq }, LIMIT, claims);
    expect(second.rows.map((r) => r.seq)).toEqual(claimSeqs.slice(LIMIT, 2 * LIMIT));
    expect([second.more_before, second.more_after]).toEqual([true, claimSeqs.length > 2 * LIMIT]);
    const last = big.timeline({ beforeSeq: EVENTS + 1 }, LIMIT, claims);
    expect(last.rows.map((r) => r.seq)).toEqual(claimSeqs.slice(-LIMIT));
    expect([last.more_before, last.more_after]).toEqual([true, false]);

    // Two types together, in seq order, from the middle of the store.
    const two = ['WorldEvent.MessageReceived', 'MemoryEvent.ClaimRecorded'];
    const mixed = big.timeline({ afterSeq: 60_000 }, LIMIT, two);
    expect(mixed.rows).toHaveLength(LIMIT);
    expect(mixed.rows.every((r) => two.includes(r.event_type) && r.event !== null && r.seq > 60_000)).toBe(true);
    expect(mixed.rows.map((r) => r.seq)).toEqual([...mixed.rows.map((r) => r.seq)].sort((a, b) => a - b));
    expect([mixed.more_before, mixed.more_after]).toEqual([true, true]);
  });
});
