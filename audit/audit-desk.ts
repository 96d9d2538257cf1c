// The audit desk's read model of one run (spec §16.1): the run folder's signed files, the link
// index, and the checks an auditor reads first (chain and signatures, plan conformance). The
// store is opened read-only for one request at a time (`within`), never held between them: a
// desk left open must not stop an operator from resuming or repairing the run (the writer takes
// an exclusive lock), and a request made while a writer holds the store is answered "locked".
// Nothing here can write: connections are read-only (SQLite refuses any write on them), and only
// writer/'s read side (store reader, replay, verifier) is imported, never its client or spawner.
// A store file that is not intact SQLite (damaged, empty, unreadable) is refused at open, before
// anything is served: pages of a file with a damaged page would fail one by one, or show part.
import { EventEnvelope } from '../schema/envelope.js';
import { hashText } from '../schema/hash.js';
import type { ProjectionVersions } from '../writer/projection-versions.js';
import { replayFrom, type ReplayMode } from '../writer/replay.js';
import { StoreReadError, StoreReader, type SnapshotMeta, type StoredEventRow } from '../writer/store-reader.js';
import { verifyDirectory, type VerifyReport } from '../writer/verify-store.js';
import type { PlanConformanceReport } from '../verification/plan-findings.js';
import { checkRunFollowsPlan } from '../verification/run-plan-check.js';
import { findingsForRun, type RunFindings } from './report-findings.js';
import { openRunFolder, type Loaded, type RunFolder } from './run-folder.js';
import { stateAtSeq, type StateAtSeq } from './state-at-seq.js';
import { diffStates, type StateDiff } from './state-diff.js';
import { buildStoreIndex, type StoreIndex } from './store-index.js';

export const TIMELINE_PAGE_EVENTS = { default: 100, max: 500 } as const;
/** States computed for pages, kept for the next click (a state can be megabytes). */
const STATE_CACHE_ENTRIES = 4;
/** Comparisons (each a full replay to its seq) kept for the next click; each holds at most a bounded diff. */
const COMPARISON_CACHE_ENTRIES = 16;

/** A stored row as the desk shows it: the envelope when it reads as one for this seq and type, else why not. */
export interface StoredEvent {
  readonly seq: number;
  /** The row's indexed column, whatever the envelope says. */
  readonly event_type: string;
  readonly event: EventEnvelope | null;
  readonly problem: string | null;
  /** The stored text, for showing a row that does not read as an envelope. */
  readonly text: string;
}

export interface TimelinePage {
  readonly rows: readonly StoredEvent[];
  /** Whether events of the filter lie before the first / after the last one shown. */
  readonly more_before: boolean;
  readonly more_after: boolean;
  /** The `before` position of the earlier page and the `after` position of the later one; null at either end. */
  readonly earlier_before: number | null;
  readonly later_after: number | null;
}

export interface Comparison {
  /** The stored state text hashes to its state_hash. */
  readonly hash_ok: boolean;
  readonly stored_state_hash: string | null;
  /** null when the replay itself failed (`note` says where). */
  readonly replay_state_hash: string | null;
  readonly match: boolean;
  readonly diff: StateDiff | null;
  /** Why there is no diff or no verdict (the stored state is not JSON, the replay stopped). */
  readonly note: string | null;
}

export interface SnapshotComparison extends Comparison {
  readonly snapshot: SnapshotMeta;
}

export interface ProjectionComparison extends Comparison {
  readonly covers_seq: number | null;
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

/** Reads a stored row as an envelope of that seq and type, or says why it cannot be shown as one. */
export function readStoredRow(row: StoredEventRow): StoredEvent {
  const base = { seq: row.seq, event_type: row.event_type, text: row.envelope };
  let raw: unknown;
  try {
    raw = JSON.parse(row.envelope);
  } catch {
    return { ...base, event: null, problem: 'the stored envelope is not JSON' };
  }
  const parsed = EventEnvelope.safeParse(raw);
  if (!parsed.success) return { ...base, event: null, problem: `the stored text is not an event envelope (${parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')})` };
  if (parsed.data.seq !== row.seq) return { ...base, event: null, problem: `the envelope stored at seq ${row.seq} says seq ${parsed.data.seq}` };
  if (parsed.data.event_type !== row.event_type) return { ...base, event: null, problem: `the envelope says ${parsed.data.event_type}; the row is filed as ${row.event_type}` };
  return { ...base, event: parsed.data, problem: null };
}

function remember<K, V>(cache: Map<K, V>, key: K, value: V, entries: number): V {
  if (cache.size >= entries) cache.delete(cache.keys().next().value as K);
  cache.set(key, value);
  return value;
}

export class AuditDesk {
  private session: StoreReader | null = null;
  private readonly stateCache = new Map<string, StateAtSeq>();
  private readonly comparisonCache = new Map<string, SnapshotComparison | ProjectionComparison>();
  private headCache: { readonly state_hash: string; readonly state: unknown } | null = null;

  private constructor(
    readonly folder: RunFolder,
    readonly index: StoreIndex,
    readonly verify: VerifyReport,
    readonly planCheck: Loaded<PlanConformanceReport>,
    /** The stored projection's versions; null when the store has no projection row (replay then refuses, and pages say so). */
    readonly versions: ProjectionVersions | null,
    readonly opened: OpenedDesk,
    /** The scenario folders by id, as opened with (the 72-hour page scores the run with them). */
    readonly scenariosDir: string,
    /** What the study's report.json says of this run (its hard failures); null when the run is not in a reported study. */
    readonly findings: Loaded<RunFindings> | null,
  ) {}

  /**
   * Opens DIR (a run folder or its events.db): verification, plan check and index, all read-only.
   * `scenariosDir` holds the scenario folders by id, for the plan check (npm run audit gives the
   * bundled ones).
   * Throws StoreReadError for a store that is locked, or whose file is not intact (quick_check
   * reads every page once: ~150 ms for a 113 MB store, store-file-failure.ts).
   * `findings`: the report's findings for this run when the caller has read the report (a study
   * view); absent, they are looked up from the study folder the run sits in, if any.
   */
  static open(dirOrFile: string, scenariosDir: string, nowMs: () => number = () => performance.now(), findings?: Loaded<RunFindings> | null): AuditDesk {
    const folder = openRunFolder(dirOrFile);
    const reader = StoreReader.open(folder.storePath, { checkIntegrity: true });
    let index: StoreIndex;
    let versions: ProjectionVersions | null;
    try {
      versions = reader.storedProjection()?.versions ?? null;
      index = buildStoreIndex(reader, nowMs);
    } finally {
      reader.close();
    }
    const verifyStartMs = nowMs();
    const verify = verifyDirectory(folder.runDir, { allowOpen: true });
    const verifyMs = nowMs() - verifyStartMs;
    const planCheck: Loaded<PlanConformanceReport> = !folder.publicKey.ok
      ? { ok: false, problem: `plan conformance not checked: ${folder.publicKey.problem}` }
      : !folder.plan.ok
        ? { ok: false, problem: `plan conformance not checked: ${folder.plan.problem}` }
        : { ok: true, value: checkRunFollowsPlan(folder.runDir, folder.publicKey.value, { scenariosDir }) };
    return new AuditDesk(folder, index, verify, planCheck, versions, { verify_ms: verifyMs, index_ms: index.build_ms }, scenariosDir, findings === undefined ? findingsForRun(folder.runDir) : findings);
  }

  /**
   * Runs `read` with the store open read-only, and closes it after: one request's worth. Throws
   * StoreReadError 'locked' while a writer holds the store (an instance resumed or repaired
   * meanwhile), 'damaged' when a page it reads is (the file was damaged after the desk opened).
   * Synchronous, so requests never share a connection.
   */
  within<T>(read: () => T): T {
    if (this.session) return read();
    this.session = StoreReader.open(this.folder.storePath);
    try {
      return read();
    } finally {
      this.session.close();
      this.session = null;
    }
  }

  /** The request's connection, or (outside a request: tests, the command line) one opened for this read alone. */
  private read<T>(use: (reader: StoreReader) => T): T {
    return this.within(() => use(this.session as StoreReader));
  }

  /** The head now, when events were appended after the desk indexed the store (else null; null outside a request). */
  grownTo(): number | null {
    if (!this.session) return null;
    const head = this.session.headSeq();
    return head === this.index.head_seq ? null : head;
  }

  /** The row at `seq` as the desk shows it; null when there is no row (a gap, or past the head). */
  rowAt(seq: number): StoredEvent | null {
    const row = this.read((r) => r.rowAt(seq));
    return row === null ? null : readStoredRow(row);
  }

  /** The event at `seq` when its row reads as one; null otherwise (rowAt says why). */
  eventAt(seq: number): EventEnvelope | null {
    return this.rowAt(seq)?.event ?? null;
  }

  seqOfEventId(eventId: string): number | null {
    return this.read((r) => r.seqOfEventId(eventId));
  }

  /** Rows after `afterSeq` (or before `beforeSeq`), of `types` only when given. */
  timeline(position: { afterSeq: number } | { beforeSeq: number }, limit: number, types: readonly string[] | null): TimelinePage {
    return this.read((reader) => this.timelineOn(reader, position, limit, types));
  }

  private timelineOn(reader: StoreReader, position: { afterSeq: number } | { beforeSeq: number }, limit: number, types: readonly string[] | null): TimelinePage {
    const pageSize = Math.min(Math.max(1, limit), TIMELINE_PAGE_EVENTS.max);
    const forward = 'afterSeq' in position;
    const found = forward ? reader.eventsPage(position.afterSeq, 'after', pageSize + 1, types) : reader.eventsPage(position.beforeSeq, 'before', pageSize + 1, types);
    const more = found.length > pageSize;
    const shown = found.slice(0, pageSize);
    if (!forward) shown.reverse();
    const rows = shown.map(readStoredRow);
    // An empty page (a position past either end) still says whether events lie beyond it, so it can be left.
    const first = rows[0]?.seq ?? ('afterSeq' in position ? position.afterSeq + 1 : position.beforeSeq);
    const last = rows.at(-1)?.seq ?? ('afterSeq' in position ? position.afterSeq + 1 : position.beforeSeq - 1);
    const exists = (seq: number, direction: 'after' | 'before'): boolean => reader.eventsPage(seq, direction, 1, types).length > 0;
    const moreBefore = forward ? exists(first, 'before') : more;
    const moreAfter = forward ? more : exists(last, 'after');
    return { rows, more_before: moreBefore, more_after: moreAfter, earlier_before: moreBefore ? first : null, later_after: moreAfter ? last : null };
  }

  private requireVersions(): ProjectionVersions {
    if (this.versions === null) throw new StoreReadError('corrupt', `${this.folder.storePath} has no projection row, so nothing says which projection (and versions) to replay its states with`);
    return this.versions;
  }

  /** The projected state after the event at `seq`, from the nearest usable snapshot (strict mode), or replayed in `mode`. */
  stateAt(seq: number, mode: ReplayMode = 'strict'): StateAtSeq {
    const key = `${mode}:${seq}`;
    const cached = this.stateCache.get(key);
    if (cached) return cached;
    return remember(this.stateCache, key, this.read((r) => stateAtSeq(r, seq, this.requireVersions(), mode)), STATE_CACHE_ENTRIES);
  }

  /** The state at the head: the stored projection when it checks, else a replay (and why). */
  headState(): HeadState {
    return this.read((reader) => this.headStateOn(reader));
  }

  private headStateOn(reader: StoreReader): HeadState {
    const seq = this.index.head_seq;
    const stored = reader.storedProjection();
    let problem: string | null = null;
    if (!stored) problem = 'the store has no stored projection';
    else if (stored.last_applied_event_seq !== seq) problem = `the stored projection covers seq ${stored.last_applied_event_seq}, not the last event (seq ${seq})`;
    // The stored state can be megabytes: parsed once, and read again only when its hash changes.
    else if (this.headCache?.state_hash === stored.state_hash) return { state: this.headCache.state, seq, source: 'stored projection', problem: null };
    else {
      const text = reader.storedProjectionStateText();
      if (text === null || hashText(text) !== stored.state_hash) problem = 'the stored projection does not hash to its state_hash (edited?)';
      else {
        this.headCache = { state_hash: stored.state_hash, state: JSON.parse(text) as unknown };
        return { state: this.headCache.state, seq, source: 'stored projection', problem: null };
      }
    }
    return { state: this.stateAt(seq).state, seq, source: 'replay', problem };
  }

  snapshotAt(seq: number): SnapshotMeta | null {
    return this.read((r) => r.snapshotAt(seq));
  }

  snapshots(): { found: SnapshotMeta[]; malformed: number[] } {
    return this.read((r) => r.snapshots());
  }

  /** `stored` (a snapshot's or the projection row's state text) against a replay of seq 1 to `seq`. */
  private compare(reader: StoreReader, seq: number, storedText: string | null, storedHash: string | null, extraProblem: string | null): Comparison {
    const hashOk = storedText !== null && storedHash !== null && hashText(storedText) === storedHash;
    let replayed: { state: unknown; state_hash: string };
    try {
      // From seq 1, not from any snapshot: the point is to check the stored state against events alone.
      replayed = replayFrom(reader, { fromSnapshotSeq: null, toSeq: seq });
    } catch (error) {
      return { hash_ok: hashOk, stored_state_hash: storedHash, replay_state_hash: null, match: false, diff: null, note: `cannot be confirmed: the replay of seq 1 to ${seq} fails: ${error instanceof Error ? error.message : String(error)}` };
    }
    let stored: unknown;
    try {
      stored = storedText === null ? undefined : JSON.parse(storedText);
    } catch {
      return { hash_ok: hashOk, stored_state_hash: storedHash, replay_state_hash: replayed.state_hash, match: false, diff: null, note: 'the stored state is not JSON' };
    }
    const match = hashOk && extraProblem === null && storedHash === replayed.state_hash;
    return { hash_ok: hashOk, stored_state_hash: storedHash, replay_state_hash: replayed.state_hash, match, diff: match ? null : diffStates(stored, replayed.state), note: extraProblem };
  }

  /** The stored projection row against a replay of every event, with the paths where they differ. */
  compareProjection(): ProjectionComparison {
    return this.read((reader) => this.compareProjectionOn(reader));
  }

  private compareProjectionOn(reader: StoreReader): ProjectionComparison {
    const stored = reader.storedProjection();
    const key = `projection:${stored?.state_hash ?? 'none'}:${stored?.last_applied_event_seq ?? 0}`;
    const cached = this.comparisonCache.get(key);
    if (cached) return cached as ProjectionComparison;
    const head = this.index.head_seq;
    const covers = stored?.last_applied_event_seq ?? null;
    const result = this.compare(reader, head, reader.storedProjectionStateText(), stored?.state_hash ?? null, covers === head ? null : `the stored projection covers seq ${String(covers)}, not the last event (seq ${head})`);
    return remember(this.comparisonCache, key, { ...result, covers_seq: covers }, COMPARISON_CACHE_ENTRIES) as ProjectionComparison;
  }

  /** A snapshot against a replay of seq 1 to its seq, with the paths where they differ; null when there is none at `seq`. */
  compareSnapshot(seq: number): SnapshotComparison | null {
    return this.read((reader) => this.compareSnapshotOn(reader, seq));
  }

  private compareSnapshotOn(reader: StoreReader, seq: number): SnapshotComparison | null {
    const snapshot = reader.snapshotAt(seq);
    if (!snapshot) return null;
    const key = `snapshot:${seq}:${snapshot.state_hash}`;
    const cached = this.comparisonCache.get(key);
    if (cached) return cached as SnapshotComparison;
    const result = this.compare(reader, seq, reader.snapshotStateText(seq), snapshot.state_hash, null);
    return remember(this.comparisonCache, key, { ...result, snapshot }, COMPARISON_CACHE_ENTRIES) as SnapshotComparison;
  }
}
