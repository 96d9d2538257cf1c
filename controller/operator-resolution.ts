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
//
// This file is the repair's sequence; its jobs are files of their own: operator-resolution-refusal.ts
// (the refusal codes), stopped-store-scan.ts (reading the stopped store), resolution-checks.ts (the
// checks and the dry run), store-ownership.ts (owner and mode), writer-session.ts (the writer).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { LifecycleState } from '../projector/lifecycle.js';
import type { SubjectState } from '../projector/subject-state.js';
import { EventEnvelope } from '../schema/envelope.js';
import type { PayloadOf } from '../schema/event-catalog.js';
import { EmergencyStopped, OperatorResolved, Paused, StoreOpened } from '../schema/events/system-events.js';
import { HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { WriterClient, WriterUnavailableError } from '../writer/client.js';
import type { StoreIdentity } from '../writer/event-store.js';
import { WriterError, type AppendResult, type EventDraft, type Head } from '../writer/protocol.js';
import { WriterStartError, type WriterProcess } from '../writer/spawn.js';
import { verifyDirectory } from '../writer/verify-store.js';
import { operatorResolvedDraft } from './controller-events.js';
import { prepareSocketDir, type SocketDir } from './isolation.js';
import { OperatorResolutionRefusal } from './operator-resolution-refusal.js';
import { checkResolvable, describeEvent, dryRun, lifecycleOnResume, sameStatement, type StateHead } from './resolution-checks.js';
import { fileRefusalOf, IntentRef, intentRefOf, lastSignedHeadSeq, openReader, scanStore, subjectStateOf, unknownOutcomesOf, type StoreScan } from './stopped-store-scan.js';
import { checkWritable, keepOwnership, ownershipOf } from './store-ownership.js';
import { connectController, newWriterTokens, spawnSubjectWriter } from './writer-session.js';

/** The repair's writer gets this long to snapshot and exit before it is killed (and the result says so). */
export const REPAIR_WRITER_STOP_TIMEOUT_MS = 10_000;
/** How many verify failures the refusal's message names; all of them are in `failures`. */
export const MAX_FAILURES_IN_MESSAGE = 10;

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
  held_by: z.strictObject({ event_type: z.enum([EmergencyStopped.type, Paused.type]), seq: z.number().int().min(1) }).nullable(),
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

type ResultBase = Omit<OperatorResolutionResult, 'outcome' | 'seq' | 'event_id' | 'event_hash' | 'lifecycle_after' | 'held_by' | 'lifecycle_on_resume' | 'unknown_outcomes_left'>;

/** The recorded stop or pause that holds a subject in `lifecycle` (STOPPED or PAUSED), from the scan. */
function heldBy(lifecycle: LifecycleState, scan: StoreScan): OperatorResolutionResult['held_by'] {
  if (lifecycle === 'STOPPED' && scan.stoppedSeq !== null) return { event_type: EmergencyStopped.type, seq: scan.stoppedSeq };
  if (lifecycle === 'PAUSED' && scan.pausedSeq !== null) return { event_type: Paused.type, seq: scan.pausedSeq };
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

  const statement: PayloadOf<'SystemEvent.OperatorResolved'> = { operator: request.operator, intent_event_id: request.intentEventId, resolution: request.resolution, note: request.note };

  // A repeat of the same command: the recorded statement is the answer (whatever came after it).
  if (scan.keyed !== null) {
    const recorded = scan.keyed;
    if (!sameStatement(recorded, statement)) {
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

  const { unknown, intent } = checkResolvable(scan, state, request.intentEventId, storeFile);
  // The virtual clock stands still while the controller is stopped, and an operator's statement
  // does not move it: the run's virtual now is the last event the run itself wrote (the writer's
  // own events carry the wall clock).
  const occurredAt = scan.lastVirtual.occurred_at;
  const draft = operatorResolvedDraft(occurredAt, unknown.event_id, statement);
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

/**
 * Starts a writer on the stopped store (same uid as the caller, projection subject, fresh
 * tokens, a socket in a fresh 0700 folder), appends the one draft at exactly the head the
 * checks saw, and stops it cleanly (it snapshots on a clean stop) whatever happened.
 */
async function appendThroughWriter(storeFile: string, identity: StoreIdentity, expected: Head, draft: EventDraft, notes: string[]): Promise<AppendResult> {
  // Same uid: no isolation plan, so a private 0700 folder and a 0600 socket.
  const socket: SocketDir = prepareSocketDir({ writer: null, runtime: null });
  const tokens = newWriterTokens();
  let writer: WriterProcess | null = null;
  let client: WriterClient | null = null;
  try {
    try {
      writer = await spawnSubjectWriter({ storeFile, mode: 'open', identity, socket, tokens });
    } catch (error) {
      if (!(error instanceof WriterStartError)) throw error;
      // The file went bad, or another writer took it, between the checks and this start.
      throw fileRefusalOf(error.code, `${error.message}; nothing was appended`) ?? new OperatorResolutionRefusal('writer_refused', `the writer did not start on ${storeFile} (${error.code}): ${error.message}; nothing was appended`);
    }
    if (writer.sealed || writer.head.seq !== expected.seq || writer.head.event_hash !== expected.event_hash) {
      throw new OperatorResolutionRefusal('store_changed', `the store moved while it was being checked (head seq ${expected.seq} when checked, ${writer.head.seq}${writer.sealed ? ', sealed' : ''} when the writer opened it): another process wrote it; nothing was appended — run the command again`);
    }
    client = await connectController(socket, tokens);
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

