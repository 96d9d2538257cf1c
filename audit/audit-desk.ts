// The audit desk's read model of one run (spec §16.1): the store opened read-only for the
// desk's lifetime, the run folder's signed files, the link index, and the checks an auditor
// reads first (chain and signatures, plan conformance). Every query reads what it shows and
// nothing else; nothing here can write: the connection is read-only (SQLite refuses any
// write on it), and only writer/'s read side (store reader, replay, verifier) is imported,
// never its client or spawner.
import { checkRunFollowsPlan, type PlanConformanceReport } from '../controller/plan-conformance.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { hashText } from '../schema/hash.js';
import type { ProjectionVersions } from '../writer/projection-versions.js';
import { replayFrom } from '../writer/replay.js';
import { StoreReadError, StoreReader, type SnapshotMeta } from '../writer/store-reader.js';
import { verifyDirectory, type VerifyReport } from '../writer/verify-store.js';
import { openRunFolder, type Loaded, type RunFolder } from './run-folder.js';
import { stateAtSeq, type StateAtSeq } from './state-at-seq.js';
import { diffStates, type StateDiff } from './state-diff.js';
import { buildStoreIndex, type StoreIndex } from './store-index.js';

export const TIMELINE_PAGE_EVENTS = { default: 100, max: 500 } as const;
/** States computed for pages, kept for the next click (a state can be megabytes). */
const STATE_CACHE_ENTRIES = 4;

export interface TimelinePage {
  readonly events: readonly EventEnvelope[];
  /** Whether events of the filter lie before the first / after the last one shown. */
  readonly more_before: boolean;
  readonly more_after: boolean;
  /** The `before` position of the earlier page and the `after` position of the later one; null at either end. */
  readonly earlier_before: number | null;
  readonly later_after: number | null;
}

export interface SnapshotComparison {
  readonly snapshot: SnapshotMeta;
  /** The stored state text hashes to the snapshot's state_hash. */
  readonly hash_ok: boolean;
  readonly replay_state_hash: string;
  readonly match: boolean;
  readonly diff: StateDiff | null;
  /** Why there is no diff (e.g. the stored state is not JSON). */
  readonly note: string | null;
}

export interface HeadState {
  readonly state: unknown;
  readonly seq: number;
  /** Where the state shown as "at the head" comes from, and anything wrong with the stored one. */
  readonly source: 'stored projection' | 'replay';
  readonly problem: string | null;
}

export interface OpenedDesk {
  readonly verify_ms: number;
  readonly index_ms: number;
}

export class AuditDesk {
  private readonly stateCache = new Map<number, StateAtSeq>();

  private constructor(
    readonly folder: RunFolder,
    private readonly reader: StoreReader,
    readonly index: StoreIndex,
    readonly verify: VerifyReport,
    readonly planCheck: Loaded<PlanConformanceReport>,
    readonly versions: ProjectionVersions,
    readonly opened: OpenedDesk,
  ) {}

  /** Opens DIR (a run folder or its events.db): verification, plan check and index, all read-only. */
  static open(dirOrFile: string, nowMs: () => number = () => performance.now()): AuditDesk {
    const folder = openRunFolder(dirOrFile);
    const reader = StoreReader.open(folder.storePath);
    try {
      const stored = reader.storedProjection();
      if (!stored) throw new StoreReadError('corrupt', `${folder.storePath} has no projection row: nothing says which projection its states are`);
      const verifyStartMs = nowMs();
      const verify = verifyDirectory(folder.runDir, { allowOpen: true });
      const verifyMs = nowMs() - verifyStartMs;
      const planCheck: Loaded<PlanConformanceReport> = !folder.publicKey.ok
        ? { ok: false, problem: `plan conformance not checked: ${folder.publicKey.problem}` }
        : !folder.plan.ok
          ? { ok: false, problem: `plan conformance not checked: ${folder.plan.problem}` }
          : { ok: true, value: checkRunFollowsPlan(folder.runDir, folder.publicKey.value) };
      const index = buildStoreIndex(reader, nowMs);
      return new AuditDesk(folder, reader, index, verify, planCheck, stored.versions, { verify_ms: verifyMs, index_ms: index.build_ms });
    } catch (error) {
      reader.close();
      throw error;
    }
  }

  close(): void {
    this.reader.close();
  }

  /** The head now, when events were appended after the desk indexed the store (else null). */
  grownTo(): number | null {
    const head = this.reader.headSeq();
    return head === this.index.head_seq ? null : head;
  }

  eventAt(seq: number): EventEnvelope | null {
    const text = this.reader.envelopeAt(seq);
    return text === null ? null : (JSON.parse(text) as EventEnvelope);
  }

  seqOfEventId(eventId: string): number | null {
    return this.reader.seqOfEventId(eventId);
  }

  /** Events after `afterSeq` (or before `beforeSeq`), of `types` only when given. */
  timeline(position: { afterSeq: number } | { beforeSeq: number }, limit: number, types: readonly string[] | null): TimelinePage {
    const pageSize = Math.min(Math.max(1, limit), TIMELINE_PAGE_EVENTS.max);
    const forward = 'afterSeq' in position;
    const rows = forward ? this.reader.eventsPage(position.afterSeq, 'after', pageSize + 1, types) : this.reader.eventsPage(position.beforeSeq, 'before', pageSize + 1, types);
    const more = rows.length > pageSize;
    const shown = rows.slice(0, pageSize);
    if (!forward) shown.reverse();
    const events = shown.map((r) => JSON.parse(r.envelope) as EventEnvelope);
    // An empty page (a position past either end) still says whether events lie beyond it, so it can be left.
    const first = events[0]?.seq ?? ('afterSeq' in position ? position.afterSeq + 1 : position.beforeSeq);
    const last = events.at(-1)?.seq ?? ('afterSeq' in position ? position.afterSeq + 1 : position.beforeSeq - 1);
    const exists = (seq: number, direction: 'after' | 'before'): boolean => this.reader.eventsPage(seq, direction, 1, types).length > 0;
    const moreBefore = forward ? exists(first, 'before') : more;
    const moreAfter = forward ? more : exists(last, 'after');
    return { events, more_before: moreBefore, more_after: moreAfter, earlier_before: moreBefore ? first : null, later_after: moreAfter ? last : null };
  }

  /** The projected state after the event at `seq`, from the nearest usable snapshot. */
  stateAt(seq: number): StateAtSeq {
    const cached = this.stateCache.get(seq);
    if (cached) return cached;
    const computed = stateAtSeq(this.reader, seq, this.versions);
    if (this.stateCache.size >= STATE_CACHE_ENTRIES) this.stateCache.delete(this.stateCache.keys().next().value as number);
    this.stateCache.set(seq, computed);
    return computed;
  }

  /** The state at the head: the stored projection when it checks, else a replay (and why). */
  headState(): HeadState {
    const seq = this.index.head_seq;
    const stored = this.reader.storedProjection();
    const text = this.reader.storedProjectionStateText();
    let problem: string | null = null;
    if (!stored || text === null) problem = 'the store has no stored projection';
    else if (stored.last_applied_event_seq !== seq) problem = `the stored projection covers seq ${stored.last_applied_event_seq}, not the last event (seq ${seq})`;
    else if (hashText(text) !== stored.state_hash) problem = 'the stored projection does not hash to its state_hash (edited?)';
    if (problem === null && text !== null) return { state: JSON.parse(text) as unknown, seq, source: 'stored projection', problem: null };
    return { state: this.stateAt(seq).state, seq, source: 'replay', problem };
  }

  snapshotAt(seq: number): SnapshotMeta | null {
    return this.reader.snapshotAt(seq);
  }

  snapshots(): { found: SnapshotMeta[]; malformed: number[] } {
    return this.reader.snapshots();
  }

  /** The stored projection row against a replay of every event, with the paths where they differ. */
  compareProjection(): { stored_hash_ok: boolean; covers_seq: number | null; replay_state_hash: string; stored_state_hash: string | null; match: boolean; diff: StateDiff | null; note: string | null } {
    const stored = this.reader.storedProjection();
    const text = this.reader.storedProjectionStateText();
    const replay = replayFrom(this.reader, { fromSnapshotSeq: null, toSeq: this.index.head_seq });
    const hashOk = stored !== null && text !== null && hashText(text) === stored.state_hash;
    const base = { stored_hash_ok: hashOk, covers_seq: stored?.last_applied_event_seq ?? null, replay_state_hash: replay.state_hash, stored_state_hash: stored?.state_hash ?? null };
    let state: unknown;
    try {
      state = text === null ? undefined : JSON.parse(text);
    } catch {
      return { ...base, match: false, diff: null, note: 'the stored projection state is not JSON' };
    }
    const match = hashOk && stored.last_applied_event_seq === this.index.head_seq && stored.state_hash === replay.state_hash;
    return { ...base, match, diff: match ? null : diffStates(state, replay.state), note: null };
  }

  /** A snapshot against a replay of seq 1 to its seq, with the paths where they differ. */
  compareSnapshot(seq: number): SnapshotComparison | null {
    const snapshot = this.reader.snapshotAt(seq);
    if (!snapshot) return null;
    const text = this.reader.snapshotStateText(seq);
    const hashOk = text !== null && hashText(text) === snapshot.state_hash;
    // From seq 1, not from any snapshot: the point is to check the snapshot against events alone.
    const replay = replayFrom(this.reader, { fromSnapshotSeq: null, toSeq: seq });
    let stored: unknown;
    try {
      stored = text === null ? undefined : JSON.parse(text);
    } catch {
      return { snapshot, hash_ok: hashOk, replay_state_hash: replay.state_hash, match: false, diff: null, note: 'the snapshot state is not JSON' };
    }
    const match = hashOk && snapshot.state_hash === replay.state_hash;
    return { snapshot, hash_ok: hashOk, replay_state_hash: replay.state_hash, match, diff: match ? null : diffStates(stored, replay.state), note: null };
  }
}
