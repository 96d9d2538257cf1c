// Manual repair (issue 9 item 2; DESIGN §7): the only way an execution intent whose outcome
// was recorded ActionEvent.ToolOutcomeUnknown is closed is an operator's statement,
// SystemEvent.OperatorResolved, appended through a real ds-writer like every other event —
// never an edit of events.db. The writer assigns seq and hashes, extends the chain, runs the
// Subject projector in the same transaction (the intent leaves open_intents) and snapshots on
// its clean stop.
//
// The usual moment is right after an emergency stop: the subject is RECOVERING, the operator
// presses Ctrl-C (the controller records WakeEnded{stopped} if a wake is in progress, then
// SystemEvent.EmergencyStopped), runs this repair, and resumes with `npm run experiment --
// --resume DIR`. Since state machine 1.3.0 the lifecycle table takes OperatorResolved from
// STOPPED and PAUSED (the subject stays there; the resume then finds nothing open and goes on
// DORMANT, or RECOVERING while other unknown outcomes remain) as well as from RECOVERING (a
// controller that died between wakes without recording a stop: the last unknown outcome
// resolved leaves RECOVERING at once).
//
// Everything that would make the writer refuse, or make the statement a lie about the run,
// is checked first from the stopped store, read-only: a refusal the writer answers is itself
// recorded (SystemEvent.AppendRejected), so a refused repair must not reach it. The checks:
// the chain verifies (a repair is never chained onto a broken history), the store is a
// Subject store of this build's versions, not sealed, not inside a wake (a controller that
// died inside one left it open: --resume ends it, then a Ctrl-C stops the run), the intent is
// an ExecutionIntentRecorded whose outcome is open and unknown, and the Subject projector
// itself accepts the statement on the stored state (whether the lifecycle may move is the
// table's answer, LIFECYCLE_TABLE, not a list kept here). A repeated command finds its own
// idempotency key and answers with the recorded event, writing nothing.
import { accessSync, chmodSync, chownSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { operatorResolvedDraft, resumedDraft } from './controller-events.js';
import { CONTROLLER_KEYS } from '../design/run-contract.js';
import { INSTANCE_SNAPSHOT_EVERY_EVENTS } from './instance-runner.js';
import { prepareSocketDir, type SocketDir } from './isolation.js';
import { LIFECYCLE_TABLE, LifecycleState, type LifecycleTrigger } from '../projector/lifecycle.js';
import { ProjectionRefusal } from '../projector/projection.js';
import { subjectProjection } from '../projector/subject-projection.js';
import { SubjectState } from '../projector/subject-state.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { EventEnvelope } from '../schema/envelope.js';
import { computeEventHash, computePayloadHash, eventIdFor } from '../schema/envelope-hash.js';
import { ExecutionIntentRecorded } from '../schema/events/action-events.js';
import { OperatorResolved, StoreOpened } from '../schema/events/system-events.js';
import { HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { WriterClient, WriterUnavailableError } from '../writer/client.js';
import { describeDifference, formatVersions, versionDifferences, versionsOf } from '../writer/projection-versions.js';
import { WriterError, type AppendResult, type EventDraft, type Head } from '../writer/protocol.js';
import { newToken, spawnWriter, WriterStartError, type WriterProcess } from '../writer/spawn.js';
import { StoreReader, StoreReadError } from '../writer/store-reader.js';
import { keyFileFor, readSignedHeads, verifyDirectory, type VerifyFailure } from '../writer/verify-store.js';

/** The repair's writer gets this long to snapshot and exit before it is killed (and the result says so). */
export const REPAIR_WRITER_STOP_TIMEOUT_MS = 10_000;
/** How many verify failures the refusal's message names; all of them are in `failures`. */
export const MAX_FAILURES_IN_MESSAGE = 10;
/** Events the writer writes on its own (on the wall clock, not the virtual one): never the virtual time of the run. */
const WRITER_OWN_EVENTS = new Set(['SystemEvent.StoreOpened', 'SystemEvent.AppendRejected', 'SystemEvent.StoreSealed']);
/** What closes an intent, besides the operator. */
const OUTCOME_EVENTS = new Set(['ActionEvent.ToolSucceeded', 'ActionEvent.ToolFailed', 'ActionEvent.ToolReconciled', OperatorResolved.type]);

const payloadShape = OperatorResolved.payload.shape;

/** What the operator asks; the payload fields are the event's own schemas. */
export const OperatorResolutionRequest = z.strictObject({
  runDir: z.string().min(1),
  intentEventId: payloadShape.intent_event_id,
  resolution: payloadShape.resolution,
  operator: payloadShape.operator,
  /** Required here though the event allows an empty one: a statement nobody can check should at least say what was looked at. */
  note: payloadShape.note.refine((note) => note.trim() !== '', 'say what was checked (the note is the only account of how the operator knows)'),
});
export type OperatorResolutionRequest = z.infer<typeof OperatorResolutionRequest>;

export const OPERATOR_RESOLUTION_REFUSALS = [
  /** No events.db in the folder. */
  'not_found',
  /** The caller may not write the store (not its owner, not root). */
  'permission',
  /** A writer holds the store (a running instance, a resume, another repair): safe, nothing changed. */
  'store_locked',
  /** The file is not an intact SQLite database (store-file-failure.ts; SQLite's quick_check). */
  'store_damaged',
  /** events.db is 0 bytes. */
  'store_empty',
  /** The file cannot be read, or the disk failed a read or write of it. */
  'store_unreadable',
  'store_io_error',
  /** The file, or its folder, may not be written: the writer cannot open it; or the disk is full. */
  'store_read_only',
  'store_full',
  'not_a_store',
  /** npm run verify's checks failed: `failures` lists them. */
  'verify_failed',
  /** Not a Subject store, or one of other projector / state machine / event schema versions. */
  'not_subject_store',
  'sealed',
  /** A WakeStarted with neither its WakeEnded nor a stop after it: the controller died inside the wake. */
  'wake_in_progress',
  /**
   * The projector refuses the statement because no row of the lifecycle table (LIFECYCLE_TABLE)
   * takes SystemEvent.OperatorResolved from the subject's state. Since state machine 1.3.0 every
   * state an unknown outcome can be open in (RECOVERING, STOPPED, PAUSED) has one, so only a
   * stored state this build's writer never produces ends here.
   */
  'lifecycle',
  'not_an_intent',
  'intent_pending',
  'intent_closed',
  /** A statement for this intent is recorded, and it is not the one asked for now. */
  'already_resolved',
  /** The projector would refuse the event for a reason the checks above do not name. */
  'projection_refused',
  /** The store moved between the checks and the writer's start. */
  'store_changed',
  /** The writer would not start, or refused the append: its code and message, verbatim. */
  'writer_refused',
  /** The connection was lost around the append: its outcome is unknown (repeat the command). */
  'writer_unavailable',
] as const;
export const OperatorResolutionRefusalCode = z.enum(OPERATOR_RESOLUTION_REFUSALS);
export type OperatorResolutionRefusalCode = z.infer<typeof OperatorResolutionRefusalCode>;

/** A repair that was not made, with what to do about it; nothing was appended unless the message says so. */
export class OperatorResolutionRefusal extends Error {
  override readonly name = 'OperatorResolutionRefusal';
  constructor(
    readonly code: OperatorResolutionRefusalCode,
    message: string,
    /** For `verify_failed`: every failure verify listed. */
    readonly failures: readonly VerifyFailure[] = [],
  ) {
    super(message);
  }
}

const intentShape = ExecutionIntentRecorded.payload.shape;

/** An execution intent, as an operator looks for it in the workspace. */
export const IntentRef = z.strictObject({
  event_id: z.uuid(),
  seq: z.number().int().min(1),
  op: intentShape.op,
  path: intentShape.path,
});
export type IntentRef = z.infer<typeof IntentRef>;

export const OperatorResolutionResult = z.strictObject({
  run_dir: z.string(),
  /** `written`: appended now; `already_recorded`: this very statement was in the store, nothing was written. */
  outcome: z.enum(['written', 'already_recorded']),
  seq: z.number().int().min(1),
  event_id: z.uuid(),
  event_hash: HashString,
  intent: IntentRef,
  /** The ToolOutcomeUnknown the statement answers (its causation_id). */
  unknown_outcome: z.strictObject({ event_id: z.uuid(), seq: z.number().int().min(1) }),
  resolution: payloadShape.resolution,
  operator: payloadShape.operator,
  /** Virtual time: the run's clock stands still while the controller is stopped. */
  occurred_at: z.iso.datetime(),
  /** The head before the append; for `already_recorded`, the head as found. */
  head_seq_before: z.number().int().min(1),
  lifecycle_before: LifecycleState,
  lifecycle_after: LifecycleState,
  /**
   * The recorded stop or pause the subject stays in after the statement (lifecycle_after STOPPED
   * or PAUSED: the statement does not move it), or null when the subject is not held.
   */
  held_by: z.strictObject({ event_type: z.enum(['SystemEvent.EmergencyStopped', 'SystemEvent.Paused']), seq: z.number().int().min(1) }).nullable(),
  /**
   * Where a SystemEvent.Resumed (npm run experiment -- --resume) would take the subject now, as
   * the Subject projector computes it on the state after the statement: DORMANT when nothing is
   * left open, RECOVERING (read-only) while another unknown outcome is. Null when the subject is
   * not held (no row of the lifecycle table takes a Resumed from lifecycle_after).
   */
  lifecycle_on_resume: LifecycleState.nullable(),
  /** Intents whose outcome is still unknown after this statement: while there is one, the subject stays RECOVERING (read-only). */
  unknown_outcomes_left: z.array(IntentRef),
  /** Highest seq a signed head of this run covers (heads.jsonl, checked with controller.pub); null when none does. */
  last_signed_head_seq: z.number().int().min(1).nullable(),
  /** Things that did not stop the repair but must not pass unseen (a writer that stopped uncleanly, ownership put back). */
  notes: z.array(z.string()),
});
export type OperatorResolutionResult = z.infer<typeof OperatorResolutionResult>;

// ---------------------------------------------------------------- reading the stopped store

/** What one pass over the events tells about the store and the intent. */
interface StoreScan {
  readonly opened: EventEnvelope;
  readonly head: Head;
  /** The last event not written by the writer on its own: its occurred_at is the run's virtual now. */
  readonly lastVirtual: EventEnvelope;
  readonly sealSeq: number | null;
  /** WakeStarted without its WakeEnded. */
  readonly openWake: { readonly wake_id: string; readonly seq: number } | null;
  /** Last EmergencyStopped / Paused not followed by a Resumed. */
  readonly stoppedSeq: number | null;
  readonly pausedSeq: number | null;
  /** The event whose event_id is the intent id asked for, whatever its type. */
  readonly named: EventEnvelope | null;
  readonly lastUnknown: EventEnvelope | null;
  /** Outcome events for the intent, in seq order. */
  readonly outcomes: EventEnvelope[];
  /** The event under this repair's idempotency key, if one is recorded. */
  readonly keyed: EventEnvelope | null;
}

function scanStore(reader: StoreReader, intentEventId: string): StoreScan {
  const key = CONTROLLER_KEYS.operatorResolved(intentEventId);
  let opened: EventEnvelope | null = null;
  let last: EventEnvelope | null = null;
  let lastVirtual: EventEnvelope | null = null;
  let sealSeq: number | null = null;
  let openWake: StoreScan['openWake'] = null;
  let stoppedSeq: number | null = null;
  let pausedSeq: number | null = null;
  let named: EventEnvelope | null = null;
  let lastUnknown: EventEnvelope | null = null;
  let keyed: EventEnvelope | null = null;
  const outcomes: EventEnvelope[] = [];
  const headSeq = reader.headSeq();
  // One event at a time: a store of a million events is never held in memory.
  for (const row of reader.iterateEvents(0, headSeq)) {
    // verifyDirectory has checked every envelope against the schema already.
    const e = EventEnvelope.parse(JSON.parse(row.envelope));
    if (e.seq === 1) opened = e;
    last = e;
    if (!WRITER_OWN_EVENTS.has(e.event_type)) lastVirtual = e;
    const p = e.payload;
    switch (e.event_type) {
      case 'SystemEvent.StoreSealed':
        sealSeq = e.seq;
        break;
      case 'ExperimentEvent.WakeStarted':
        openWake = { wake_id: String(p.wake_id), seq: e.seq };
        break;
      case 'ExperimentEvent.WakeEnded':
        if (openWake?.wake_id === p.wake_id) openWake = null;
        break;
      case 'SystemEvent.EmergencyStopped':
        stoppedSeq = e.seq;
        // The stop ends the wake for the subject even without a WakeEnded (the projector clears current_wake_id).
        openWake = null;
        break;
      case 'SystemEvent.Paused':
        pausedSeq = e.seq;
        break;
      case 'SystemEvent.Resumed':
        stoppedSeq = null;
        pausedSeq = null;
        break;
      default:
        break;
    }
    if (e.event_id === intentEventId) named = e;
    if (e.idempotency_key === key) keyed = e;
    if (p.intent_event_id === intentEventId) {
      if (e.event_type === 'ActionEvent.ToolOutcomeUnknown') lastUnknown = e;
      else if (OUTCOME_EVENTS.has(e.event_type)) outcomes.push(e);
    }
  }
  if (!opened || !last || !lastVirtual) throw new OperatorResolutionRefusal('not_a_store', `${reader.path} holds no events after SystemEvent.StoreOpened: there is no run to repair`);
  return { opened, head: { seq: last.seq, event_hash: HashString.parse(last.event_hash) }, lastVirtual, sealSeq, openWake, stoppedSeq, pausedSeq, named, lastUnknown, outcomes, keyed };
}

/** A file-level problem of the store (store-file-failure.ts) as the repair's refusal of the same code; null for any other. */
function fileRefusalOf(code: string, message: string): OperatorResolutionRefusal | null {
  const refusal = OperatorResolutionRefusalCode.safeParse(code.startsWith('store_') ? code : `store_${code}`);
  if (!refusal.success || refusal.data === 'store_changed') return null;
  if (refusal.data === 'store_locked') {
    return new OperatorResolutionRefusal(
      'store_locked',
      `${message}. A repair is appended only while the instance is stopped, by a writer of its own — stop the instance first (Ctrl-C in its terminal, or SIGTERM to ds-controller, records an emergency stop), then run the repair`,
    );
  }
  return new OperatorResolutionRefusal(refusal.data, message);
}

/** The store, read-only, checked page by page (quick_check) first: a repair is never appended to a damaged file. */
function openReader(storeFile: string): StoreReader {
  try {
    return StoreReader.open(storeFile, { checkIntegrity: true });
  } catch (error) {
    if (!(error instanceof StoreReadError)) throw error;
    throw fileRefusalOf(error.code, error.message) ?? new OperatorResolutionRefusal(error.code === 'not_found' ? 'not_found' : 'not_a_store', error.message);
  }
}

function subjectStateOf(reader: StoreReader): SubjectState {
  const stored = reader.storedProjection();
  if (stored === null) throw new OperatorResolutionRefusal('not_subject_store', `${reader.path} has no projection row: it cannot tell which intents are open (rebuild it with npm run replay first)`);
  const expected = versionsOf(subjectProjection);
  if (stored.versions.projection !== expected.projection) {
    throw new OperatorResolutionRefusal('not_subject_store', `${reader.path} keeps the ${stored.versions.projection} projection, not subject: only a Subject store has execution intents to resolve`);
  }
  const differences = versionDifferences('stored projection', stored.versions, expected);
  if (differences.length > 0) {
    // The writer would refuse to continue it (projection_mismatch): say so before starting one.
    throw new OperatorResolutionRefusal('not_subject_store', `the stored projection is ${formatVersions(stored.versions)}, this build runs ${formatVersions(expected)} (${differences.map(describeDifference).join('; ')}); a writer of this build will not append to it — repair it with the build that ran the instance`);
  }
  const text = reader.storedProjectionStateText();
  const parsed = SubjectState.safeParse(text === null ? null : JSON.parse(text));
  if (!parsed.success) throw new OperatorResolutionRefusal('not_subject_store', `the stored projection of ${reader.path} is not a Subject state: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

function unknownOutcomesOf(state: SubjectState): IntentRef[] {
  return Object.entries(state.open_intents)
    .filter(([, intent]) => intent.outcome === 'unknown')
    .map(([id, intent]) => ({ event_id: id, seq: intent.seq, op: intent.op, path: intent.path }))
    .sort((a, b) => a.seq - b.seq);
}

function intentRefOf(intent: EventEnvelope): IntentRef {
  const p = ExecutionIntentRecorded.payload.parse(intent.payload);
  return { event_id: intent.event_id, seq: intent.seq, op: p.op, path: p.path };
}

/** Highest seq covered by a head in heads.jsonl that verifies with the run's controller.pub. */
function lastSignedHeadSeq(runDir: string, storeFile: string): number | null {
  const headsFile = path.join(runDir, RUN_FILES.heads);
  const keyFile = keyFileFor(storeFile, runDir);
  if (!existsSync(headsFile) || keyFile === null) return null;
  const seqs = readSignedHeads(headsFile, parsePublicKeyHex(readFileSync(keyFile, 'utf8'))).flatMap((l) => (l.head === null ? [] : [l.head.seq]));
  return seqs.length === 0 ? null : Math.max(...seqs);
}

// ---------------------------------------------------------------- the checks

function describeEvent(e: EventEnvelope): string {
  return `${e.event_type} at seq ${e.seq}`;
}

/** The recorded statement under this repair's key: the same one (a repeat) or another (refused). */
function sameStatement(recorded: EventEnvelope, request: OperatorResolutionRequest): boolean {
  const p = recorded.payload;
  return recorded.event_type === OperatorResolved.type && p.intent_event_id === request.intentEventId && p.resolution === request.resolution && p.operator === request.operator && p.note === request.note;
}

/**
 * Refuses (OperatorResolutionRefusal) every state in which the statement must not, or could
 * not, be appended; returns the ToolOutcomeUnknown it answers and the intent.
 */
function checkResolvable(scan: StoreScan, state: SubjectState, request: OperatorResolutionRequest, storeFile: string): { unknown: EventEnvelope; intent: EventEnvelope } {
  const id = request.intentEventId;
  if (scan.sealSeq !== null) {
    throw new OperatorResolutionRefusal('sealed', `${storeFile} is sealed (SystemEvent.StoreSealed at seq ${scan.sealSeq}): its record is final — nothing may follow the seal, a repair included; the unknown outcome stays unresolved in this run's record`);
  }
  const wake = scan.openWake ?? (state.current_wake_id === null ? null : { wake_id: state.current_wake_id, seq: null });
  if (wake !== null) {
    // A running controller holds the store (refused as locked, above), and a Ctrl-C ends the
    // wake it is in (WakeEnded 'stopped') before it records the stop: a wake is left open only
    // by a controller that died inside it (killed, crashed, or a second Ctrl-C: exit 130).
    const runDir = path.dirname(storeFile);
    throw new OperatorResolutionRefusal(
      'wake_in_progress',
      `${wake.wake_id}${wake.seq === null ? '' : ` (WakeStarted at seq ${wake.seq})`} has not ended and no stop is recorded after it: the controller ended inside the subject's wake without recording either (killed, crashed, or abandoned by a second Ctrl-C; one Ctrl-C records WakeEnded 'stopped' and SystemEvent.EmergencyStopped). ` +
        `An operator's statement is made between wakes, never inside one. Resume the instance (npm run experiment -- --resume ${runDir}): it ends that wake as 'stopped' and records the missing stop; ` +
        `then stop it with Ctrl-C (an emergency stop, recorded; the wakes it runs before that are read-only, RECOVERING, while an unknown outcome is open) and run this repair again. See docs/controller.md, "Manual repair"`,
    );
  }
  if (scan.named === null) throw new OperatorResolutionRefusal('not_an_intent', `no event of ${storeFile} has event_id ${id}: give the event_id of the ActionEvent.ExecutionIntentRecorded whose outcome is unknown (the intent_event_id of its ActionEvent.ToolOutcomeUnknown)`);
  if (scan.named.event_type !== 'ActionEvent.ExecutionIntentRecorded') {
    const hint = scan.named.event_type === 'ActionEvent.ToolOutcomeUnknown' ? `; its intent is ${String(scan.named.payload.intent_event_id)}` : '';
    throw new OperatorResolutionRefusal('not_an_intent', `${id} is ${describeEvent(scan.named)}, not an ActionEvent.ExecutionIntentRecorded: only an execution intent has an outcome to resolve${hint}`);
  }
  const intent = scan.named;
  const open = state.open_intents[id];
  if (open === undefined) {
    const closedBy = scan.outcomes.at(-1);
    const by = closedBy ? describeEvent(closedBy) + (closedBy.event_type === OperatorResolved.type ? ` (operator ${String(closedBy.payload.operator)}, ${String(closedBy.payload.resolution)})` : '') : 'an event this check could not find';
    throw new OperatorResolutionRefusal('intent_closed', `intent ${id} (seq ${intent.seq}) is closed: its outcome was recorded by ${by}; there is nothing to resolve`);
  }
  if (open.outcome === 'pending') {
    throw new OperatorResolutionRefusal(
      'intent_pending',
      `intent ${id} (seq ${intent.seq}, ${open.op} ${open.path}) is pending, not unknown: no ActionEvent.ToolOutcomeUnknown was recorded for it. The runtime reconciles a pending intent itself when the instance is resumed (by the file's hash); an operator resolves only what it could not`,
    );
  }
  if (scan.lastUnknown === null) throw new OperatorResolutionRefusal('projection_refused', `the stored projection says intent ${id} has an unknown outcome, but no ActionEvent.ToolOutcomeUnknown names it: check the store with npm run replay`);
  return { unknown: scan.lastUnknown, intent };
}

/** The envelope a writer would store for `draft` after `head` (recorded_at is the wall clock: it is never projected). */
function envelopeAfter(head: Head, subjectId: string, draft: EventDraft): EventEnvelope {
  const seq = head.seq + 1;
  const unhashed = {
    event_id: eventIdFor(subjectId, seq),
    subject_id: subjectId,
    seq,
    event_type: draft.event_type,
    schema_version: draft.schema_version,
    occurred_at: draft.occurred_at,
    recorded_at: new Date().toISOString(),
    actor: draft.actor,
    causation_id: draft.causation_id,
    correlation_id: draft.correlation_id,
    idempotency_key: draft.idempotency_key,
    previous_event_hash: head.event_hash,
    payload: draft.payload,
    payload_hash: computePayloadHash(draft.payload),
  };
  return { ...unhashed, event_hash: computeEventHash({ ...unhashed, event_hash: '' }) };
}

/** Whether a row of the lifecycle table takes `trigger` from `from` (to whatever state). */
function tableHasRow(from: LifecycleState, trigger: LifecycleTrigger): boolean {
  return LIFECYCLE_TABLE.some(([f, t]) => f === from && t === trigger);
}

/** The envelope the writer would store, folded into the stored state: the projector's own verdict, before any writer is asked. */
function dryRun(state: SubjectState, draft: EventDraft, scan: StoreScan): SubjectState {
  try {
    return subjectProjection.apply(state, envelopeAfter(scan.head, scan.opened.subject_id, draft));
  } catch (error) {
    if (!(error instanceof ProjectionRefusal)) throw error;
    const from = state.lifecycle_state;
    if (!tableHasRow(from, OperatorResolved.type)) {
      const takers = [...new Set(LIFECYCLE_TABLE.filter(([, t]) => t === OperatorResolved.type).map(([f]) => f))].join(', ');
      throw new OperatorResolutionRefusal(
        'lifecycle',
        `the subject is ${from}, and no row of the lifecycle table (state machine ${subjectProjection.stateMachineVersion}, projector/lifecycle.ts) takes SystemEvent.OperatorResolved from ${from} (rows exist from ${takers}), so the writer would refuse it (nothing was appended): ${error.message}`,
      );
    }
    throw new OperatorResolutionRefusal('projection_refused', `the Subject projector would refuse the statement, so the writer would too (nothing was appended): ${error.message}`);
  }
}

/** The last event a state has applied: where a further event would be chained, and the run's virtual now. */
interface StateHead extends Head {
  readonly subject_id: string;
  readonly occurred_at: string;
}

/**
 * Where a SystemEvent.Resumed appended after `head` would take the subject in state `after`,
 * by the projector; null when the subject is not held (the table takes no Resumed from its state).
 */
function lifecycleOnResume(after: SubjectState, head: StateHead): LifecycleState | null {
  if (!tableHasRow(after.lifecycle_state, 'SystemEvent.Resumed')) return null;
  const draft = resumedDraft(head.occurred_at, 'npm run repair', 'what a resume would find (not appended)');
  try {
    return subjectProjection.apply(after, envelopeAfter(head, head.subject_id, draft)).lifecycle_state;
  } catch (error) {
    if (!(error instanceof ProjectionRefusal)) throw error;
    return null;
  }
}

// ---------------------------------------------------------------- file ownership

interface FileOwnership {
  readonly uid: number;
  readonly gid: number;
  /** Permission bits only. */
  readonly mode: number;
}

function ownershipOf(file: string): FileOwnership {
  const s = statSync(file);
  return { uid: s.uid, gid: s.gid, mode: s.mode & 0o7777 };
}

/**
 * In a separate-uids run events.db belongs to the writer's uid (mode 0600), and a later
 * --resume runs the writer under that uid again: it must still be able to open the store and
 * its -wal/-shm. SQLite run as root already gives the files it creates the database's owner;
 * this puts back anything that still differs (a root-owned sidecar would lock that writer out)
 * and says so.
 */
function keepOwnership(storeFile: string, before: FileOwnership, notes: string[]): void {
  for (const file of [storeFile, `${storeFile}-wal`, `${storeFile}-shm`]) {
    if (!existsSync(file)) continue;
    const now = ownershipOf(file);
    if (now.uid !== before.uid || now.gid !== before.gid) {
      chownSync(file, before.uid, before.gid);
      notes.push(`${path.basename(file)} was owned by ${now.uid}:${now.gid} after the repair; given back to ${before.uid}:${before.gid}, the store's owner`);
    }
    if (now.mode !== before.mode) {
      chmodSync(file, before.mode);
      notes.push(`${path.basename(file)} had mode 0${now.mode.toString(8)} after the repair; set back to the store's 0${before.mode.toString(8)}`);
    }
  }
}

function checkWritable(storeFile: string, owner: FileOwnership): void {
  const me = process.getuid?.();
  try {
    accessSync(storeFile, constants.R_OK | constants.W_OK);
    // SQLite writes -wal (and the snapshot's pages) beside the store.
    accessSync(path.dirname(storeFile), constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new OperatorResolutionRefusal(
      'permission',
      `uid ${me ?? '?'} cannot write ${storeFile} or its folder (${(error as NodeJS.ErrnoException).code ?? String(error)}); the store belongs to uid ${owner.uid}: run the repair as that uid, or as root (as the controller of a separate-uids run is)`,
    );
  }
}

// ---------------------------------------------------------------- the repair

type ResultBase = Omit<OperatorResolutionResult, 'outcome' | 'seq' | 'event_id' | 'event_hash' | 'lifecycle_after' | 'held_by' | 'lifecycle_on_resume' | 'unknown_outcomes_left'>;

/** The recorded stop or pause that holds a subject in `lifecycle` (STOPPED or PAUSED), from the scan. */
function heldBy(lifecycle: LifecycleState, scan: StoreScan): OperatorResolutionResult['held_by'] {
  if (lifecycle === 'STOPPED' && scan.stoppedSeq !== null) return { event_type: 'SystemEvent.EmergencyStopped', seq: scan.stoppedSeq };
  if (lifecycle === 'PAUSED' && scan.pausedSeq !== null) return { event_type: 'SystemEvent.Paused', seq: scan.pausedSeq };
  return null;
}

/**
 * The result for the statement `event`, with the lifecycle and unknown outcomes of the state
 * `after` it; `head` is the last event of that state (the statement, or the head as found).
 */
function resultOf(base: ResultBase, event: EventEnvelope, outcome: OperatorResolutionResult['outcome'], after: SubjectState, head: StateHead, scan: StoreScan): OperatorResolutionResult {
  return OperatorResolutionResult.parse({
    ...base,
    outcome,
    seq: event.seq,
    event_id: event.event_id,
    event_hash: event.event_hash,
    lifecycle_after: after.lifecycle_state,
    held_by: heldBy(after.lifecycle_state, scan),
    lifecycle_on_resume: lifecycleOnResume(after, head),
    unknown_outcomes_left: unknownOutcomesOf(after),
  });
}

/**
 * Appends SystemEvent.OperatorResolved for `intentEventId` to the stopped run in `runDir`
 * through a writer of its own, after the read-only checks above; or answers with the
 * statement already recorded under the same idempotency key. Throws
 * OperatorResolutionRefusal for every refusal (nothing appended unless its message says so).
 */
export async function resolveUnknownOutcome(input: OperatorResolutionRequest): Promise<OperatorResolutionResult> {
  const request = OperatorResolutionRequest.parse(input);
  const runDir = path.resolve(request.runDir);
  const storeFile = path.join(runDir, RUN_FILES.store);
  if (!existsSync(storeFile)) throw new OperatorResolutionRefusal('not_found', `${runDir} holds no ${RUN_FILES.store}: give the run folder of the instance to repair`);

  // ---- read-only checks
  let reader = openReader(storeFile);
  let scan: StoreScan;
  let state: SubjectState;
  try {
    // Verify while this reader is open: no writer can start in between and change what was verified.
    const verified = verifyDirectory(runDir, { allowOpen: true });
    if (!verified.ok) {
      const listed = verified.failures.slice(0, MAX_FAILURES_IN_MESSAGE).map((f) => `${f.store}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.reason}`);
      const more = verified.failures.length > listed.length ? `; … ${verified.failures.length - listed.length} more` : '';
      throw new OperatorResolutionRefusal('verify_failed', `${runDir} does not verify (${verified.failures.length} failure(s)); a repair is never chained onto a broken history: ${listed.join('; ')}${more}`, verified.failures);
    }
    scan = scanStore(reader, request.intentEventId);
    state = subjectStateOf(reader);
  } finally {
    reader.close();
  }
  const opened = StoreOpened.payload.parse(scan.opened.payload);
  const base = {
    run_dir: runDir,
    resolution: request.resolution,
    operator: request.operator,
    head_seq_before: scan.head.seq,
    lifecycle_before: state.lifecycle_state,
    last_signed_head_seq: lastSignedHeadSeq(runDir, storeFile),
  };

  // A repeat of the same command: the recorded statement is the answer (whatever came after it).
  if (scan.keyed !== null) {
    const recorded = scan.keyed;
    if (!sameStatement(recorded, request)) {
      const p = recorded.payload;
      throw new OperatorResolutionRefusal(
        'already_resolved',
        `intent ${request.intentEventId} was already resolved at seq ${recorded.seq} (event ${recorded.event_id}): operator ${String(p.operator)} said ${String(p.resolution)}, note ${JSON.stringify(p.note)}. A recorded statement is never replaced or edited; a different one for the same intent is refused`,
      );
    }
    const unknown = scan.lastUnknown;
    if (unknown === null || recorded.causation_id !== unknown.event_id || scan.named === null) {
      throw new OperatorResolutionRefusal('intent_closed', `intent ${request.intentEventId} was closed by ${describeEvent(recorded)}, which does not answer its ActionEvent.ToolOutcomeUnknown; check the store with npm run replay`);
    }
    // Nothing changes: before and after are the store as found.
    const found = { ...base, intent: intentRefOf(scan.named), unknown_outcome: { event_id: unknown.event_id, seq: unknown.seq }, occurred_at: recorded.occurred_at, notes: [] };
    const asFound = { ...scan.head, subject_id: scan.opened.subject_id, occurred_at: scan.lastVirtual.occurred_at };
    return resultOf(found, recorded, 'already_recorded', state, asFound, scan);
  }

  const { unknown, intent } = checkResolvable(scan, state, request, storeFile);
  // The virtual clock stands still while the controller is stopped, and an operator's statement
  // does not move it: the run's virtual now is the last event the run itself wrote (the writer's
  // own events carry the wall clock).
  const occurredAt = scan.lastVirtual.occurred_at;
  const draft = operatorResolvedDraft(occurredAt, unknown.event_id, {
    operator: request.operator,
    intent_event_id: request.intentEventId,
    resolution: request.resolution,
    note: request.note,
  });
  dryRun(state, draft, scan);
  const owner = ownershipOf(storeFile);
  checkWritable(storeFile, owner);

  // ---- the append, through a writer of its own
  const notes: string[] = [];
  const appended = await appendThroughWriter(storeFile, { subject_id: scan.opened.subject_id, experiment_id: opened.experiment_id, manifest_sha256: opened.manifest_sha256 }, scan.head, draft, notes);
  keepOwnership(storeFile, owner, notes);

  // ---- what the store now says
  reader = openReader(storeFile);
  try {
    const written = appended.events[0];
    if (!written) throw new OperatorResolutionRefusal('writer_refused', 'the writer answered the append with no event (a writer bug); check the store with npm run verify');
    const row = [...reader.iterateEvents(written.seq - 1, written.seq)][0];
    const event = row ? EventEnvelope.parse(JSON.parse(row.envelope)) : null;
    if (!event || event.event_id !== written.event_id) throw new OperatorResolutionRefusal('writer_refused', `the writer acknowledged event ${written.event_id} at seq ${written.seq}, but the store holds ${event ? event.event_id : 'nothing'} there; check it with npm run verify`);
    const after = subjectStateOf(reader);
    const outcome = written.deduplicated ? 'already_recorded' : 'written';
    return resultOf({ ...base, intent: intentRefOf(intent), unknown_outcome: { event_id: unknown.event_id, seq: unknown.seq }, occurred_at: occurredAt, notes }, event, outcome, after, { seq: event.seq, event_hash: HashString.parse(event.event_hash), subject_id: event.subject_id, occurred_at: event.occurred_at }, scan);
  } finally {
    reader.close();
  }
}

interface StoreIdentity {
  readonly subject_id: string;
  readonly experiment_id: string;
  readonly manifest_sha256: string;
}

/**
 * Starts a writer on the stopped store (same uid as the caller, projection subject, fresh
 * tokens, a socket in a fresh 0700 folder), appends the one draft at exactly the head the
 * checks saw, and stops it cleanly (it snapshots on a clean stop) whatever happened.
 */
async function appendThroughWriter(storeFile: string, identity: StoreIdentity, expected: Head, draft: EventDraft, notes: string[]): Promise<AppendResult> {
  // Same uid: no isolation plan, so a private 0700 folder and a 0600 socket.
  const socket: SocketDir = prepareSocketDir({ writer: null, runtime: null });
  const tokens = { runtime: newToken(), experiment: newToken() };
  let writer: WriterProcess | null = null;
  let client: WriterClient | null = null;
  try {
    try {
      writer = await spawnWriter({
        db_path: storeFile,
        socket_path: socket.socketPath,
        mode: 'open',
        ...identity,
        tokens,
        projection: subjectProjection.name,
        socket_mode: socket.socketMode,
        snapshot_every: INSTANCE_SNAPSHOT_EVERY_EVENTS,
      });
    } catch (error) {
      if (!(error instanceof WriterStartError)) throw error;
      // The file went bad, or another writer took it, between the checks and this start.
      throw fileRefusalOf(error.code, `${error.message}; nothing was appended`) ?? new OperatorResolutionRefusal('writer_refused', `the writer did not start on ${storeFile} (${error.code}): ${error.message}; nothing was appended`);
    }
    if (writer.sealed || writer.head.seq !== expected.seq || writer.head.event_hash !== expected.event_hash) {
      throw new OperatorResolutionRefusal('store_changed', `the store moved while it was being checked (head seq ${expected.seq} when checked, ${writer.head.seq}${writer.sealed ? ', sealed' : ''} when the writer opened it): another process wrote it; nothing was appended — run the command again`);
    }
    client = await WriterClient.connect(socket.socketPath, 'experiment', tokens.experiment);
    try {
      // expect_head: exactly the head that was checked, or nothing.
      return await client.append([draft], expected);
    } catch (error) {
      if (error instanceof WriterError) {
        const recorded = error.rejectionSeq === null ? 'nothing was appended' : `the writer recorded the refusal as SystemEvent.AppendRejected at seq ${error.rejectionSeq}`;
        throw new OperatorResolutionRefusal('writer_refused', `the writer refused the statement (${error.code}): ${error.message}; ${recorded}`);
      }
      if (error instanceof WriterUnavailableError) {
        throw new OperatorResolutionRefusal(
          'writer_unavailable',
          `${error.message}. The statement may or may not be recorded: run the same command again — its idempotency key ${String(draft.idempotency_key)} makes a repeat answer with the recorded event if there is one`,
        );
      }
      throw error;
    }
  } finally {
    client?.close();
    if (writer !== null) {
      const exit = await writer.stop(REPAIR_WRITER_STOP_TIMEOUT_MS);
      if (exit.code !== 0) notes.push(`the repair's writer exited with code ${exit.code} signal ${exit.signal} (no shutdown snapshot, perhaps); every acknowledged event is committed — npm run restore -- ${path.dirname(storeFile)} checks the snapshots`);
    }
    socket.cleanup();
  }
}
