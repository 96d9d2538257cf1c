// Reading a stopped run's store for a manual repair (controller/operator-resolution.ts), read-only:
// one pass over its events for what the checks need (the seal, an open wake, a recorded stop or
// pause, the intent asked for, its outcomes, a statement already under the repair's key), the
// stored Subject state, and the signed heads. A file that cannot be read is refused with the
// store's own code (store_locked, store_damaged, …).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { CONTROLLER_KEYS } from '../design/run-contract.js';
import { subjectProjection } from '../projector/subject-projection.js';
import { SubjectState } from '../projector/subject-state.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { EventEnvelope } from '../schema/envelope.js';
import type { EventType } from '../schema/event-catalog.js';
import { ExecutionIntentRecorded } from '../schema/events/action-events.js';
import { OperatorResolved } from '../schema/events/system-events.js';
import { HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { eventIs, eventIsOneOf } from '../schema/typed-event.js';
import { describeDifference, formatVersions, versionDifferences, versionsOf } from '../writer/projection-versions.js';
import type { Head } from '../writer/protocol.js';
import { StoreReader, StoreReadError } from '../writer/store-reader.js';
import { keyFileFor } from '../writer/run-files-walk.js';
import { readSignedHeads } from '../writer/signed-files-check.js';
import { isWriterOwnEvent } from '../writer/writer-own-events.js';
import { OperatorResolutionRefusal, OperatorResolutionRefusalCode } from './operator-resolution-refusal.js';

/** What closes an intent, besides the operator. */
const OUTCOME_EVENT_TYPES = ['ActionEvent.ToolSucceeded', 'ActionEvent.ToolFailed', 'ActionEvent.ToolReconciled', OperatorResolved.type] as const satisfies readonly EventType[];

const intentShape = ExecutionIntentRecorded.payload.shape;

/** An execution intent, as an operator looks for it in the workspace. */
export const IntentRef = z.strictObject({
  event_id: z.uuid(),
  seq: z.number().int().min(1),
  op: intentShape.op,
  path: intentShape.path,
});
export type IntentRef = z.infer<typeof IntentRef>;

/** What one pass over the events tells about the store and the intent. */
export interface StoreScan {
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

export function scanStore(reader: StoreReader, intentEventId: string): StoreScan {
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
    if (!isWriterOwnEvent(e.event_type)) lastVirtual = e;
    const p: Readonly<Record<string, unknown>> = e.payload;
    if (eventIs(e, 'SystemEvent.StoreSealed')) sealSeq = e.seq;
    else if (eventIs(e, 'ExperimentEvent.WakeStarted')) openWake = { wake_id: e.payload.wake_id, seq: e.seq };
    else if (eventIs(e, 'ExperimentEvent.WakeEnded')) {
      if (openWake?.wake_id === e.payload.wake_id) openWake = null;
    } else if (eventIs(e, 'SystemEvent.EmergencyStopped')) {
      stoppedSeq = e.seq;
      // The stop ends the wake for the subject even without a WakeEnded (the projector clears current_wake_id).
      openWake = null;
    } else if (eventIs(e, 'SystemEvent.Paused')) pausedSeq = e.seq;
    else if (eventIs(e, 'SystemEvent.Resumed')) {
      stoppedSeq = null;
      pausedSeq = null;
    }
    if (e.event_id === intentEventId) named = e;
    if (e.idempotency_key === key) keyed = e;
    if (p.intent_event_id === intentEventId) {
      if (eventIs(e, 'ActionEvent.ToolOutcomeUnknown')) lastUnknown = e;
      else if (eventIsOneOf(e, OUTCOME_EVENT_TYPES)) outcomes.push(e);
    }
  }
  if (!opened || !last || !lastVirtual) throw new OperatorResolutionRefusal('not_a_store', `${reader.path} holds no events after SystemEvent.StoreOpened: there is no run to repair`);
  return { opened, head: { seq: last.seq, event_hash: HashString.parse(last.event_hash) }, lastVirtual, sealSeq, openWake, stoppedSeq, pausedSeq, named, lastUnknown, outcomes, keyed };
}

/** A file-level problem of the store (store-file-failure.ts) as the repair's refusal of the same code; null for any other. */
export function fileRefusalOf(code: string, message: string): OperatorResolutionRefusal | null {
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
export function openReader(storeFile: string): StoreReader {
  try {
    return StoreReader.open(storeFile, { checkIntegrity: true });
  } catch (error) {
    if (!(error instanceof StoreReadError)) throw error;
    throw fileRefusalOf(error.code, error.message) ?? new OperatorResolutionRefusal(error.code === 'not_found' ? 'not_found' : 'not_a_store', error.message);
  }
}

export function subjectStateOf(reader: StoreReader): SubjectState {
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

export function unknownOutcomesOf(state: SubjectState): IntentRef[] {
  return Object.entries(state.open_intents)
    .filter(([, intent]) => intent.outcome === 'unknown')
    .map(([id, intent]) => ({ event_id: id, seq: intent.seq, op: intent.op, path: intent.path }))
    .sort((a, b) => a.seq - b.seq);
}

export function intentRefOf(intent: EventEnvelope): IntentRef {
  const p = ExecutionIntentRecorded.payload.parse(intent.payload);
  return { event_id: intent.event_id, seq: intent.seq, op: p.op, path: p.path };
}

/** Highest seq covered by a head in heads.jsonl that verifies with the run's controller.pub. */
export function lastSignedHeadSeq(runDir: string, storeFile: string): number | null {
  const headsFile = path.join(runDir, RUN_FILES.heads);
  const keyFile = keyFileFor(storeFile, runDir);
  if (!existsSync(headsFile) || keyFile === null) return null;
  const seqs = readSignedHeads(headsFile, parsePublicKeyHex(readFileSync(keyFile, 'utf8'))).flatMap((l) => (l.head === null ? [] : [l.head.seq]));
  return seqs.length === 0 ? null : Math.max(...seqs);
}
