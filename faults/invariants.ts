// What a finished fault run (issue 8) must still satisfy, read from its run folder and the
// harness's fault folder alone: the store verifies and replays to its stored state, nothing a
// writer acknowledged is missing, no side effect happened twice or without an explanation,
// an outcome nobody could confirm left the subject read-only (RECOVERING) with nothing
// retried behind the operator's back (DESIGN §7), and a stalled writer's timeouts were recorded
// as the stop's reason by the controller that ran into them.
//
// Each check is the existing tool for the job (npm run verify, the restore drill, the oracle's
// side-effect check, the subject projection) plus the few rules only a crash can break. A
// check that cannot run fails, saying why: a harness must never read "could not look" as
// "nothing wrong".
// Why one file: the invariants are one list (STORE_INVARIANTS), read from one ledger pass over the
// run's events that several of them share; each check is a short function over that ledger.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { checkPlansUnder } from '../verification/plans-under.js';
import { loadRunRecord, MAX_SCORED_EVENTS, payloadOf, type RunRecord } from '../oracle/run-record.js';
import { checkSideEffects, type SideEffectProblem } from '../oracle/side-effects.js';
import type { LifecycleState } from '../projector/lifecycle.js';
import { ProjectionRefusal } from '../projector/projection.js';
import { subjectProjection } from '../projector/subject-projection.js';
import type { SubjectState } from '../projector/subject-state.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { eventIs } from '../schema/typed-event.js';
import type { EventType } from '../schema/event-catalog.js';
import { FaultRole, STALL_KINDS, type FaultKind, type FaultReached } from '../schema/fault-points.js';
import { CONTRADICTING_KINDS, checkFacts, type FactProblemKind } from '../oracle/fact-check.js';
import { unauthorizedToolExecutions } from '../oracle/hard-failures.js';
import { HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { restoreDrill } from '../writer/restore.js';
import { StoreReader } from '../writer/store-reader.js';
import { verifyDirectory } from '../writer/verify-store.js';
import { unansweredWithin } from '../writer/client.js';
import { LockablePreRegistration } from '../design/prereg.js';
import { wakeUnansweredWithin } from '../runtime/spawn.js';
import { answerNotWithin } from '../runtime/model-adapters/call-delivery.js';
import { recordedAdapterOf } from '../runtime/model-adapters/adapter-list.js';
import { stalledCallersTimeoutMs, tamperTargetOf } from './fault-plan.js';

export const STORE_INVARIANTS = ['verify', 'replay', 'acks_kept', 'no_duplicate_side_effect', 'no_unexplained_side_effect', 'unknown_outcome_recovering', 'stall_recorded', 'random_subject_safe'] as const;
export type StoreInvariant = (typeof STORE_INVARIANTS)[number];

export interface InvariantResult {
  readonly invariant: StoreInvariant;
  readonly ok: boolean;
  /** Why it failed (each line names seqs/paths); at most MAX_DETAILS lines, plus one line saying how many more were left out. Lines starting `note:` inform and never fail. */
  readonly details: string[];
}

export interface InvariantInput {
  /** A run folder of `npm run experiment` (events.db, plan.json, prereg.json, manifest.dsse.json, controller.pub, heads.jsonl, workspace/). */
  readonly runDir: string;
  /** Holds acks-*.jsonl files (maybe none). */
  readonly faultDir: string;
  /** experiments/scenario. */
  readonly scenariosDir: string;
  /** The fault that fired, if any: workspace_tampered expects an unknown outcome to be recorded. */
  readonly reached: FaultReached | null;
  /** The kind the plan armed (null: a calibration; absent: as reached says): a random_subject that never fired is a failure of random_subject_safe, not a vacuous pass. */
  readonly plannedKind?: FaultKind | null;
}

/** Lines of details per invariant: enough to point at the first problems, short enough for a summary. */
export const MAX_DETAILS = 20;
/** An acknowledgement line is about 100 bytes; a run acknowledges about 500 events per process. */
export const MAX_ACK_FILE_BYTES = 64 * 1024 * 1024;
export const MAX_ACK_LINES_PER_FILE = 1_000_000;
/** One ack file per process that ever talked to the writer: a run restarts each a handful of times. */
export const MAX_ACK_FILES = 1_000;

const NOTE = 'note: ';

const OUTCOME_TYPES = ['ActionEvent.ToolSucceeded', 'ActionEvent.ToolFailed', 'ActionEvent.ToolReconciled', 'ActionEvent.ToolOutcomeUnknown'] as const satisfies readonly EventType[];
type OutcomeType = (typeof OUTCOME_TYPES)[number];

/** One line of FAULT_FILES.acks(role, pid), as FaultSwitch.recordAcks writes it. */
const AckLine = z.strictObject({
  seq: z.number().int().min(1),
  event_hash: HashString,
  role: FaultRole,
});

/** Failures first, then notes, so a cut drops notes before problems. */
function result(invariant: StoreInvariant, problems: readonly string[], notes: readonly string[] = []): InvariantResult {
  const lines = [...problems, ...notes.map((n) => `${NOTE}${n}`)];
  const details = lines.length <= MAX_DETAILS ? lines : [...lines.slice(0, MAX_DETAILS), `… ${lines.length - MAX_DETAILS} more line(s) left out (limit ${MAX_DETAILS})`];
  return { invariant, ok: problems.length === 0, details };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** A broken run must yield a failed result, never an exception that hides the other checks. */
function guarded(invariant: StoreInvariant, check: () => InvariantResult): InvariantResult {
  try {
    return check();
  } catch (error) {
    return result(invariant, [`the check could not run: ${messageOf(error)}`]);
  }
}

// ---------------------------------------------------------------- verify and replay

function checkVerify(input: InvariantInput): InvariantResult {
  // The same two reports `npm run verify -- DIR` combines (cli/verify.ts); a run
  // folder of a finished instance is sealed, so --open is not given.
  const store = verifyDirectory(input.runDir, { allowOpen: false });
  const plans = checkPlansUnder(input.runDir, { scenariosDir: input.scenariosDir });
  const at = (file: string, seq: number | null, reason: string): string => `${file}${seq === null ? '' : ` seq ${seq}`}: ${reason}`;
  return result(
    'verify',
    [...store.failures.map((f) => at(f.store, f.seq, f.reason)), ...plans.failures.map((f) => at(f.file, f.seq, f.message))],
    [...store.warnings.map((f) => at(f.store, f.seq, f.reason)), ...plans.notes.map((f) => at(f.file, f.seq, f.message))],
  );
}

function checkReplay(input: InvariantInput): InvariantResult {
  const drill = restoreDrill(path.join(input.runDir, RUN_FILES.store));
  const from = drill.snapshot_used === null ? 'a full replay from seq 1' : `the snapshot at seq ${drill.snapshot_used} and ${drill.events_replayed} event(s) after it`;
  const problems = drill.match
    ? []
    : [
        `${RUN_FILES.store} at seq ${drill.head_seq}: restored state ${drill.state_hash} (from ${from}), full replay ${drill.full_replay_state_hash}, stored projection ${drill.stored_state_hash}: they must all be equal`,
      ];
  // Snapshot warnings are expected after snapshot faults (a cache may be lost); they explain, not fail.
  return result('replay', problems, drill.warnings);
}

// ---------------------------------------------------------------- acknowledgements

interface AckSource {
  readonly file: string;
  readonly line: number;
}

/** Every acknowledged (seq, event_hash), with where it was first seen; problems with the files themselves. */
function readAcks(faultDir: string, problems: string[]): { acks: Map<number, Map<string, AckSource>>; files: number; lines: number } {
  const acks = new Map<number, Map<string, AckSource>>();
  const names = readdirSync(faultDir)
    .filter((name) => name.startsWith('acks-') && name.endsWith('.jsonl'))
    .sort();
  if (names.length > MAX_ACK_FILES) {
    problems.push(`${faultDir} holds ${names.length} acknowledgement files, over the ${MAX_ACK_FILES} this check reads: the acknowledgements were not checked`);
    return { acks, files: 0, lines: 0 };
  }
  let lines = 0;
  for (const name of names) {
    const file = path.join(faultDir, name);
    const bytes = statSync(file).size;
    if (bytes > MAX_ACK_FILE_BYTES) {
      problems.push(`${name} is ${bytes} bytes, over the ${MAX_ACK_FILE_BYTES}-byte limit: refused, so its acknowledgements were not checked`);
      continue;
    }
    const text = readFileSync(file, 'utf8');
    // recordAcks ends every batch with a newline, so the text after the last one is empty.
    const rows = text.split('\n');
    if (rows[rows.length - 1] === '') rows.pop();
    if (rows.length > MAX_ACK_LINES_PER_FILE) {
      problems.push(`${name} holds ${rows.length} lines, over the ${MAX_ACK_LINES_PER_FILE}-line limit: refused, so its acknowledgements were not checked`);
      continue;
    }
    lines += rows.length;
    rows.forEach((row, index) => {
      const line = index + 1;
      let raw: unknown;
      try {
        raw = JSON.parse(row);
      } catch {
        problems.push(`${name} line ${line} is not JSON: ${JSON.stringify(row.slice(0, 80))}`);
        return;
      }
      const parsed = AckLine.safeParse(raw);
      if (!parsed.success) {
        problems.push(`${name} line ${line} is not an acknowledgement {seq, event_hash, role}: ${z.prettifyError(parsed.error).replace(/\n/g, ' ')}`);
        return;
      }
      const bySeq = acks.get(parsed.data.seq) ?? new Map<string, AckSource>();
      acks.set(parsed.data.seq, bySeq);
      if (!bySeq.has(parsed.data.event_hash)) bySeq.set(parsed.data.event_hash, { file: name, line });
    });
  }
  return { acks, files: names.length, lines };
}

function checkAcks(input: InvariantInput): InvariantResult {
  if (!existsSync(input.faultDir) || !statSync(input.faultDir).isDirectory()) {
    return result('acks_kept', [`the fault folder ${input.faultDir} does not exist: the acknowledgements cannot be checked`]);
  }
  const problems: string[] = [];
  const { acks, files, lines } = readAcks(input.faultDir, problems);
  if (files === 0 && problems.length === 0) return result('acks_kept', [], ['no acknowledgements were logged']);
  const reader = StoreReader.open(path.join(input.runDir, RUN_FILES.store));
  try {
    const headSeq = reader.headSeq();
    const seqs = [...acks.keys()].sort((a, b) => a - b);
    const lowestSeq = seqs[0];
    if (lowestSeq !== undefined) {
      // One pass over the acknowledged range (bounded by the store's head), not a query per line.
      for (const row of reader.iterateEvents(lowestSeq - 1, Math.min(seqs[seqs.length - 1]!, headSeq))) {
        const acked = acks.get(row.seq);
        if (acked === undefined) continue;
        let stored: string | null = null;
        try {
          const hash = (JSON.parse(row.envelope) as { event_hash?: unknown }).event_hash;
          stored = typeof hash === 'string' ? hash : null;
        } catch {
          stored = null;
        }
        for (const [hash, source] of acked) {
          if (stored === null) problems.push(`${source.file} line ${source.line}: seq ${row.seq} was acknowledged as ${hash}, but the stored event there has no readable event_hash`);
          else if (stored !== hash) problems.push(`${source.file} line ${source.line}: seq ${row.seq} was acknowledged as ${hash}, but the store holds ${stored} there: an acknowledged event was replaced`);
        }
        acks.delete(row.seq);
      }
    }
    // What the pass did not meet is beyond the head (or in a gap): lost after it was acknowledged.
    for (const [seq, acked] of [...acks].sort(([a], [b]) => a - b)) {
      for (const [hash, source] of acked) problems.push(`${source.file} line ${source.line}: seq ${seq} (${hash}) was acknowledged, but the store ${seq > headSeq ? `ends at seq ${headSeq}` : `has no event at seq ${seq}`}: an acknowledged event was lost`);
    }
  } finally {
    reader.close();
  }
  return result('acks_kept', problems, [`${lines} acknowledgement line(s) in ${files} file(s) checked against the store`]);
}

// ---------------------------------------------------------------- side effects

interface IntentFacts {
  readonly seq: number;
  readonly op: string;
  readonly path: string;
  readonly toPath: string | null;
}

interface OutcomeFacts {
  readonly seq: number;
  readonly type: OutcomeType;
}

/** The file operations of a run and what was said about each, from one pass over its events. */
interface Ledger {
  readonly intents: Map<string, IntentFacts>;
  /** Terminal outcomes by intent_event_id, in seq order (also those naming no intent). */
  readonly outcomes: Map<string, OutcomeFacts[]>;
  /** Outcomes whose intent_event_id names no earlier ExecutionIntentRecorded. */
  readonly orphans: Array<OutcomeFacts & { readonly intentId: string }>;
  readonly headSeq: number;
}

function intentIdOf(event: EventEnvelope): { type: OutcomeType; intentId: string } | null {
  for (const type of OUTCOME_TYPES) {
    const payload = payloadOf(event, type);
    if (payload) return { type, intentId: payload.intent_event_id };
  }
  return null;
}

function ledgerOf(events: readonly EventEnvelope[]): Ledger {
  const ledger: Ledger = { intents: new Map(), outcomes: new Map(), orphans: [], headSeq: events[events.length - 1]?.seq ?? 0 };
  // loadRunRecord refuses more than MAX_SCORED_EVENTS, so this loop is bounded by it.
  for (const event of events.slice(0, MAX_SCORED_EVENTS)) {
    const intent = payloadOf(event, 'ActionEvent.ExecutionIntentRecorded');
    if (intent) {
      ledger.intents.set(event.event_id, { seq: event.seq, op: intent.op, path: intent.path, toPath: intent.to_path });
      continue;
    }
    const outcome = intentIdOf(event);
    if (outcome === null) continue;
    const facts: OutcomeFacts = { seq: event.seq, type: outcome.type };
    ledger.outcomes.set(outcome.intentId, [...(ledger.outcomes.get(outcome.intentId) ?? []), facts]);
    if (!ledger.intents.has(outcome.intentId)) ledger.orphans.push({ ...facts, intentId: outcome.intentId });
  }
  return ledger;
}

function describeIntent(id: string, intent: IntentFacts): string {
  return `intent ${id} (seq ${intent.seq}, ${intent.op} ${intent.path}${intent.toPath === null ? '' : ` → ${intent.toPath}`})`;
}

function describeProblem(problem: SideEffectProblem): string {
  return `${problem.kind}${problem.seq === null ? '' : ` at seq ${problem.seq}`}: ${problem.detail}`;
}

function checkDuplicates(record: RunRecord, ledger: Ledger): InvariantResult {
  const duplicateKinds: ReadonlyArray<SideEffectProblem['kind']> = ['duplicate_intent', 'duplicate_outcome', 'duplicate_memory_write'];
  const report = checkSideEffects(record, null);
  const problems = report.problems.filter((p) => duplicateKinds.includes(p.kind)).map(describeProblem);
  // The oracle counts only outcomes saying "happened"; a crash can also leave e.g. a success and a failure for one operation.
  for (const [id, intent] of ledger.intents) {
    const outcomes = ledger.outcomes.get(id) ?? [];
    const first = outcomes[0];
    if (first === undefined) continue;
    for (const extra of outcomes.slice(1)) problems.push(`${describeIntent(id, intent)} has a second outcome: ${extra.type} at seq ${extra.seq} after ${first.type} at seq ${first.seq}: one operation, one outcome`);
  }
  return result('no_duplicate_side_effect', problems);
}

function checkUnexplained(record: RunRecord, ledger: Ledger, runDir: string): InvariantResult {
  const report = checkSideEffects(record, path.join(runDir, RUN_FILES.workspace));
  const problems = report.problems.filter((p) => p.kind === 'unexplained_file' || p.kind === 'workspace_unchecked').map(describeProblem);
  for (const [id, intent] of ledger.intents) {
    if ((ledger.outcomes.get(id) ?? []).length === 0) problems.push(`${describeIntent(id, intent)} has no outcome by the end of the run (seq ${ledger.headSeq}): whether its operation happened was never explained`);
  }
  for (const orphan of ledger.orphans) problems.push(`${orphan.type} at seq ${orphan.seq} names intent ${orphan.intentId}, which no earlier ExecutionIntentRecorded recorded: an operation nobody intended`);
  return result('no_unexplained_side_effect', problems, report.notes);
}

// ---------------------------------------------------------------- unknown outcomes

interface Lifecycles {
  /** Lifecycle right after the event at each requested seq. */
  readonly after: Map<number, LifecycleState>;
  readonly final: LifecycleState | null;
  /** Where the projection refused (or broke), which leaves later lifecycles unknown. */
  readonly stopped: { readonly seq: number; readonly reason: string } | null;
}

/** Folds the events through the subject projection once, noting the lifecycle after each seq in `at`. */
function lifecyclesAt(events: readonly EventEnvelope[], at: ReadonlySet<number>): Lifecycles {
  const after = new Map<number, LifecycleState>();
  let state: SubjectState = subjectProjection.initial();
  let start = 0;
  // Chunks end at each requested seq and at the last event: one state copy per chunk, not per event.
  const ends = events.flatMap((e, index) => (at.has(e.seq) || index === events.length - 1 ? [index] : []));
  for (const end of ends) {
    const chunk = events.slice(start, end + 1);
    try {
      state = subjectProjection.applyAll(state, chunk);
    } catch (error) {
      // A refusal names its event; anything else is placed at the chunk it broke in.
      const seq = error instanceof ProjectionRefusal ? error.seq : (chunk[0]?.seq ?? 0);
      return { after, final: null, stopped: { seq, reason: messageOf(error) } };
    }
    const last = chunk[chunk.length - 1];
    if (last !== undefined && at.has(last.seq)) after.set(last.seq, state.lifecycle_state);
    start = end + 1;
  }
  return { after, final: state.lifecycle_state, stopped: null };
}


function checkTampering(reached: FaultReached, ledger: Ledger, unknownSeqs: ReadonlyArray<{ seq: number; intentId: string }>): string[] {
  const where = tamperTargetOf(reached) ?? 'the file of the open intent';
  const intentId = typeof reached.context.intent_event_id === 'string' ? reached.context.intent_event_id : null;
  // Runtime points carry the intent, not the head: the fault fired after that intent was recorded.
  const headSeq = reached.context.head_seq;
  const fired = typeof headSeq === 'number' ? headSeq : intentId !== null ? (ledger.intents.get(intentId)?.seq ?? 0) : 0;
  const after = unknownSeqs.filter((u) => u.seq > fired);
  const since = fired > 0 ? ` after seq ${fired}` : '';
  if (after.length === 0) return [`the harness tampered with ${where} while an outcome was open (${reached.kind} at hit ${reached.hit} of ${reached.point}), but no outcome was recorded as unknown${since}`];
  if (intentId !== null && !after.some((u) => u.intentId === intentId)) {
    const got = (ledger.outcomes.get(intentId) ?? []).map((o) => `${o.type} at seq ${o.seq}`).join(', ') || 'no outcome';
    return [`the harness tampered with ${where} while intent ${intentId}'s outcome was open, but that intent's outcome was not recorded as unknown (it got ${got})`];
  }
  return [];
}

function checkUnknownOutcomes(record: RunRecord, ledger: Ledger, reached: FaultReached | null): InvariantResult {
  const problems: string[] = [];
  const unknowns: Array<{ seq: number; intentId: string }> = [];
  /** Unknown outcomes no operator has resolved yet, at the point of the sweep: intent id → seq of its unknown outcome. */
  const unresolved = new Map<string, number>();
  /** Intents whose outcome was ever recorded unknown: nothing but an operator may settle them afterwards. */
  const everUnknown = new Map<string, number>();
  const name = (intentId: string): string => {
    const intent = ledger.intents.get(intentId);
    return intent ? describeIntent(intentId, intent) : `intent ${intentId}`;
  };
  // One sweep in seq order (loadRunRecord bounds the events by MAX_SCORED_EVENTS).
  for (const event of record.events.slice(0, MAX_SCORED_EVENTS)) {
    const outcome = intentIdOf(event);
    if (outcome?.type === 'ActionEvent.ToolOutcomeUnknown') {
      unknowns.push({ seq: event.seq, intentId: outcome.intentId });
      unresolved.set(outcome.intentId, event.seq);
      if (!everUnknown.has(outcome.intentId)) everUnknown.set(outcome.intentId, event.seq);
      continue;
    }
    if (outcome !== null) {
      const unknownSeq = everUnknown.get(outcome.intentId);
      if (unknownSeq !== undefined) problems.push(`${outcome.type} at seq ${event.seq} settles ${name(outcome.intentId)}, whose outcome was recorded unknown at seq ${unknownSeq}, without an operator: an automatic retry (only SystemEvent.OperatorResolved may settle it)`);
      continue;
    }
    const resolved = payloadOf(event, 'SystemEvent.OperatorResolved');
    if (resolved) {
      unresolved.delete(resolved.intent_event_id);
      continue;
    }
    const intent = payloadOf(event, 'ActionEvent.ExecutionIntentRecorded');
    if (!intent || intent.op === 'read' || unresolved.size === 0) continue;
    // Naming the oldest open one is enough: any of them makes the subject read-only.
    const [openId, openSeq] = unresolved.entries().next().value!;
    problems.push(`${name(event.event_id)} was recorded while the outcome of ${name(openId)} (unknown since seq ${openSeq}) was unresolved: the subject is read-only in RECOVERING, so this is an automatic retry or a new side effect`);
  }
  const lifecycles = unknowns.length === 0 ? null : lifecyclesAt(record.events, new Set(unknowns.map((u) => u.seq)));
  const unconfirmed = (what: string): string =>
    lifecycles?.stopped ? `${what} cannot be confirmed: replaying the events stops at seq ${lifecycles.stopped.seq} (${lifecycles.stopped.reason})` : `${what} cannot be confirmed: the replay never reached it`;
  for (const unknown of unknowns) {
    const label = `the unknown outcome of ${name(unknown.intentId)} at seq ${unknown.seq}`;
    // (a) the projection put the subject in RECOVERING at the unknown outcome.
    const lifecycle = lifecycles?.after.get(unknown.seq);
    if (lifecycle === undefined) problems.push(unconfirmed(`RECOVERING after ${label}`));
    else if (lifecycle !== 'RECOVERING') problems.push(`after ${label} the subject is ${lifecycle}, not RECOVERING (read-only)`);
    // (c) never resolved, it keeps the subject in RECOVERING to the end.
    if (unresolved.get(unknown.intentId) !== unknown.seq) continue;
    const final = lifecycles?.final ?? null;
    if (final === null) problems.push(unconfirmed(`RECOVERING at the end (${label} is never resolved)`));
    else if (final !== 'RECOVERING') problems.push(`${label} is never resolved by an operator, but the subject ends ${final} (seq ${ledger.headSeq}), not RECOVERING`);
  }
  if (reached?.kind === 'workspace_tampered') problems.push(...checkTampering(reached, ledger, unknowns));
  const notes = unknowns.length === 0 ? [] : [`${unknowns.length} unknown outcome(s), ${unresolved.size} of their intents never resolved by an operator`];
  return result('unknown_outcome_recovering', problems, notes);
}

// ---------------------------------------------------------------- stall_recorded

/**
 * A stalled process (STALL_KINDS): its callers' timeouts fired and the controller that ran into
 * them recorded the stop in their words — the pre-registered writer request timeout, or the wake
 * answer timeout with the wake's model-call budget — before any resume;
 * not a stop the next controller found unrecorded. A run that went on without a stop (no caller
 * was waiting while it stood) passes with a note. Other kinds: nothing to check.
 */
function checkStallRecorded(record: RunRecord, reached: FaultReached | null): InvariantResult {
  if (reached === null || !STALL_KINDS.includes(reached.kind)) return result('stall_recorded', [], ['not a stall run']);
  if (reached.kind === 'stall_model') return checkModelStall(record, reached);
  const timeoutMs = stalledCallersTimeoutMs(reached.kind, LockablePreRegistration.parse(record.prereg));
  const words = reached.kind === 'stall_runtime' ? wakeUnansweredWithin(timeoutMs) : unansweredWithin(timeoutMs);
  const firstResume = record.events.find((e) => eventIs(e, 'SystemEvent.Resumed'));
  const stops = record.events.filter((e) => eventIs(e, 'SystemEvent.EmergencyStopped') && (firstResume === undefined || e.seq < firstResume.seq));
  if (firstResume === undefined && stops.length === 0) return result('stall_recorded', [], [`the ${reached.role} stood at ${reached.point} and the instance went on: no caller's timeout fired`]);
  // Once stopped, only the controller writes (its signed head) until a resume: a stalled process that woke up adds nothing.
  const afterStop = stops.length === 0 ? [] : record.events.filter((e) => e.seq > stops[0]!.seq && (firstResume === undefined || e.seq < firstResume.seq) && e.actor !== 'experiment');
  const late = afterStop.slice(0, 4).map((e) => `${e.event_type} (actor ${e.actor}) at seq ${e.seq} after the stop at seq ${stops[0]!.seq}${firstResume ? `, before the resume at seq ${firstResume.seq}` : ''}`);
  const named = stops.find((e) => String(payloadOf(e, 'SystemEvent.EmergencyStopped')?.reason ?? '').includes(words));
  if (named !== undefined) return result('stall_recorded', late, [`stop recorded at seq ${named.seq}: ${String(payloadOf(named, 'SystemEvent.EmergencyStopped')?.reason).slice(0, 200)}`]);
  const said = stops.map((e) => `seq ${e.seq}: ${String(payloadOf(e, 'SystemEvent.EmergencyStopped')?.reason).slice(0, 160)}`);
  return result('stall_recorded', [...late, `the ${reached.role} stood frozen at ${reached.point}, but no stop before ${firstResume ? `the resume at seq ${firstResume.seq}` : 'the end'} names its callers' timeout ("${words}")${said.length > 0 ? `; stops recorded: ${said.join(' | ')}` : '; no stop was recorded by the controller that ran into it'}`]);
}

/**
 * stall_model: the call that was open when the model server was frozen ended as a timeout of its
 * own pre-registered length — one ModelCallFailed (failure timeout, in the adapter's words) and
 * nothing else for that call, no answer recorded for it later (the answer the server sent once
 * continued went to a closed connection) — and the instance went on: no stop, no resume.
 */
function checkModelStall(record: RunRecord, reached: FaultReached): InvariantResult {
  const wakeId = reached.context.wake_id;
  if (typeof wakeId !== 'string') return result('stall_recorded', [`the point gave no wake id for the stalled call (${JSON.stringify(reached.context)})`]);
  const timeoutMs = stalledCallersTimeoutMs(reached.kind, LockablePreRegistration.parse(record.prereg));
  const problems: string[] = [];
  const model = record.manifest?.model ?? null;
  if (model === null || recordedAdapterOf(model.adapter)?.answeredByServer !== true) problems.push(`the instance ran with the ${model?.adapter ?? 'unknown'} model, not a model server: nothing was stalled`);
  else if (model.call_timeout_ms !== timeoutMs) problems.push(`the manifest's call timeout is ${String(model.call_timeout_ms)} ms, not the ${timeoutMs} ms the stall was planned past`);
  const outcomes = record.events.filter((e) => (eventIs(e, 'ModelOutputEvent.ModelAnswered') || eventIs(e, 'ModelOutputEvent.ModelCallFailed')) && e.payload.wake_id === wakeId);
  const failed = outcomes.length === 1 ? payloadOf(outcomes[0]!, 'ModelOutputEvent.ModelCallFailed') : null;
  if (outcomes.length !== 1) problems.push(`the stalled call of ${wakeId} has ${outcomes.length} outcome events (${outcomes.map((e) => `${e.event_type} at seq ${e.seq}`).join(', ') || 'none'}), not one`);
  else if (failed === null) problems.push(`the stalled call of ${wakeId} is recorded as ${outcomes[0]!.event_type} at seq ${outcomes[0]!.seq}: the server was frozen past its timeout, so an answer was used that came too late, or the stall missed the call`);
  else if (failed.failure !== 'timeout' || !String(failed.detail).includes(answerNotWithin(timeoutMs))) problems.push(`the stalled call of ${wakeId} failed as ${String(failed.failure)} (${String(failed.detail).slice(0, 200)}), not as a timeout "${answerNotWithin(timeoutMs)}"`);
  const attemptsAfter = outcomes.length === 0 ? [] : record.events.filter((e) => eventIs(e, 'ModelOutputEvent.ModelCallAttemptFailed') && e.payload.wake_id === wakeId && e.seq > outcomes[0]!.seq);
  for (const e of attemptsAfter.slice(0, 3)) problems.push(`${e.event_type} for ${wakeId} at seq ${e.seq}, after the call's outcome: the abandoned call went on`);
  for (const e of record.events) {
    if (eventIs(e, 'SystemEvent.EmergencyStopped')) problems.push(`the instance was stopped at seq ${e.seq}: ${String(payloadOf(e, 'SystemEvent.EmergencyStopped')?.reason ?? '').slice(0, 200)} — a model server that does not answer in time is a failed call, never a stop`);
    if (eventIs(e, 'SystemEvent.Resumed')) problems.push(`the instance was resumed at seq ${e.seq}: something stopped it`);
  }
  const timedOut = record.events.filter((e) => payloadOf(e, 'ModelOutputEvent.ModelCallFailed')?.failure === 'timeout').length;
  return result('stall_recorded', problems, [`the call of ${wakeId} timed out after ${timeoutMs} ms as recorded; ${timedOut} call(s) of the run timed out in all`]);
}

// ---------------------------------------------------------------- random_subject_safe

/**
 * The fact-check problems the writer refuses at the append (writer/event-store.ts
 * checkFactEvidence: a FACT citing nothing, an event not in the store before it, or an event that
 * is not evidence): a FACT with one of them in the store is a made-up citation the store let in.
 * The other kinds (refuted evidence, a quoted hash its evidence lacks) are about what the
 * statement says, which no append check can judge; they are flagged, as fact_contradicts_store
 * where CONTRADICTING_KINDS says so, and named in the notes.
 */
export const FACT_KINDS_THE_WRITER_REFUSES = ['evidence_missing', 'evidence_ineligible'] as const satisfies readonly FactProblemKind[];

/** n things of one kind, counted by a key ("3 length, 1 schema_violation"; "none"). */
function tally(keys: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts.size === 0 ? 'none' : [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
}

/**
 * A random subject (the local model answering arbitrary, schema-valid content) met nothing the
 * apparatus lets through: no execution without an allowing decision, no FACT in the store on
 * evidence the writer must refuse (none at all included), no stop of the instance (a wake stopped,
 * an emergency stop or a resume: the model's answers may be refused, never end the run), and the
 * run really had the local model answer (else it proves nothing). Replay, verify and duplicate
 * side effects are their own invariants. The notes say what the subject did and what was refused. Other kinds: vacuous.
 */
function checkRandomSubject(record: RunRecord, input: InvariantInput): InvariantResult {
  const planned = input.plannedKind === undefined ? (input.reached?.kind ?? null) : input.plannedKind;
  if (planned !== 'random_subject' && input.reached?.kind !== 'random_subject') return result('random_subject_safe', [], ['not a random_subject run']);
  const problems: string[] = [];
  if (input.reached?.kind !== 'random_subject') problems.push('the random subject never reached its first model call (the fault did not fire): the model or its engine did not run, so nothing was tried (see the controller log)');
  const model = record.manifest?.model ?? null;
  if (model?.adapter !== 'local') problems.push(`the instance ran with the ${model === null ? 'unverified manifest\'s unknown' : model.adapter} model, not the local one: a run of the reference policy proves nothing about a random subject`);
  const events = record.events.slice(0, MAX_SCORED_EVENTS);
  const answered = events.filter((e) => eventIs(e, 'ModelOutputEvent.ModelAnswered'));
  const failed = events.flatMap((e) => {
    const p = payloadOf(e, 'ModelOutputEvent.ModelCallFailed');
    return p ? [String(p.failure)] : [];
  });
  const byOthers = answered.filter((e) => e.payload.adapter !== 'local').length;
  if (byOthers > 0) problems.push(`${byOthers} answer(s) came from another adapter than local`);
  if (answered.length === 0) problems.push(`no answer of the model was accepted (${failed.length} call(s) failed: ${tally(failed)}): nothing downstream of the model was exercised`);
  // The other hard failures only the apparatus causes are invariants of their own: duplicate side effects (no_duplicate_side_effect), replay (replay), configuration (verify).
  for (const h of unauthorizedToolExecutions(events)) problems.push(`hard failure ${h.id}${h.seq === null ? '' : ` at seq ${h.seq}`}: ${h.detail}`);
  // A history the projector cannot follow fails the FACT check alone: the other checks still speak.
  let facts: ReturnType<typeof checkFacts> = [];
  try {
    facts = checkFacts(record);
  } catch (error) {
    problems.push(`the FACT check could not run: ${messageOf(error)}`);
  }
  // checkFacts finds nothing wrong with a FACT that cites nothing (it checks each citation), which the writer refuses first of all.
  for (const e of events) {
    const claim = payloadOf(e, 'MemoryEvent.ClaimRecorded');
    if (claim?.claim_type === 'FACT' && claim.evidence_event_ids.length === 0) problems.push(`FACT ${claim.claim_id} at seq ${e.seq} is in the store citing no evidence — the writer must refuse it (a FACT the store cannot back)`);
  }
  const refusedKinds: readonly string[] = FACT_KINDS_THE_WRITER_REFUSES;
  const flagged: string[] = [];
  for (const fact of facts) {
    for (const problem of fact.problems) {
      if (refusedKinds.includes(problem.kind)) problems.push(`FACT ${fact.claim_id} at seq ${fact.seq} is in the store with ${problem.kind}: ${problem.detail} — the writer must refuse it (a made-up citation became a FACT the store cannot back)`);
      else flagged.push(`FACT ${fact.claim_id} at seq ${fact.seq}: ${problem.kind}${CONTRADICTING_KINDS.includes(problem.kind) ? ' (flagged as fact_contradicts_store)' : ''}: ${problem.detail.slice(0, 160)}`);
    }
  }
  for (const e of events) {
    if (eventIs(e, 'SystemEvent.EmergencyStopped')) problems.push(`the instance was stopped at seq ${e.seq}: ${String(payloadOf(e, 'SystemEvent.EmergencyStopped')?.reason ?? '').slice(0, 200)} — a subject's answers may be refused, never stop the run`);
    if (eventIs(e, 'SystemEvent.Resumed')) problems.push(`the instance was resumed at seq ${e.seq}: something stopped it`);
    const ended = payloadOf(e, 'ExperimentEvent.WakeEnded');
    if (ended?.outcome === 'stopped') problems.push(`wake ${ended.wake_id} ended stopped at seq ${e.seq}`);
  }
  const count = (type: EventType, test: (e: EventEnvelope) => boolean = () => true): number => events.filter((e) => e.event_type === type && test(e)).length;
  const claims = events.flatMap((e) => {
    const p = payloadOf(e, 'MemoryEvent.ClaimRecorded');
    return p ? [p.claim_type] : [];
  });
  const rejectedAppends = events.flatMap((e) => {
    const p = payloadOf(e, 'SystemEvent.AppendRejected');
    return p ? [p.reason] : [];
  });
  const notes = [
    `answers: ${answered.length} accepted, ${failed.length} rejected (${tally(failed)})`,
    `actions: ${count('ActionEvent.ActionProposed')} proposed, ${count('ActionEvent.PermissionDecided', (e) => e.payload.decision === 'deny')} denied, ${count('ActionEvent.ExecutionIntentRecorded')} executed (file intents), ${count('MemoryEvent.TaskBoardChanged')} task-board changes`,
    `claims: ${claims.length} recorded (${tally(claims)}); ${count('SystemEvent.AppendRejected', (e) => e.payload.reason === 'evidence_rejected')} refused by the writer (evidence_rejected)`,
    `plan revisions: ${count('PlanEvent.PlanRevisionAccepted')} accepted, ${count('PlanEvent.PlanRevisionRejected')} refused`,
    `appends refused by the writer: ${tally(rejectedAppends)}`,
    ...flagged,
  ];
  return result('random_subject_safe', problems, notes);
}

// ---------------------------------------------------------------- all of them

function loadRecord(input: InvariantInput): { record: RunRecord; ledger: Ledger } | Error {
  try {
    const record = loadRunRecord(input.runDir, input.scenariosDir);
    return { record, ledger: ledgerOf(record.events) };
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/** One result per STORE_INVARIANTS entry, in that order; never throws for a broken run. */
export function checkStoreInvariants(input: InvariantInput): InvariantResult[] {
  const verify = guarded('verify', () => checkVerify(input));
  const replay = guarded('replay', () => checkReplay(input));
  const acks = guarded('acks_kept', () => checkAcks(input));
  // The three side-effect checks read one record; when it cannot be read, each says so.
  const loaded = loadRecord(input);
  const withRecord = (invariant: StoreInvariant, check: (record: RunRecord, ledger: Ledger) => InvariantResult): InvariantResult =>
    loaded instanceof Error ? result(invariant, [`the run record could not be read: ${messageOf(loaded)}`]) : guarded(invariant, () => check(loaded.record, loaded.ledger));
  const results: Record<StoreInvariant, InvariantResult> = {
    verify,
    replay,
    acks_kept: acks,
    no_duplicate_side_effect: withRecord('no_duplicate_side_effect', checkDuplicates),
    no_unexplained_side_effect: withRecord('no_unexplained_side_effect', (record, ledger) => checkUnexplained(record, ledger, input.runDir)),
    unknown_outcome_recovering: withRecord('unknown_outcome_recovering', (record, ledger) => checkUnknownOutcomes(record, ledger, input.reached)),
    stall_recorded: withRecord('stall_recorded', (record) => checkStallRecorded(record, input.reached)),
    random_subject_safe: withRecord('random_subject_safe', (record) => checkRandomSubject(record, input)),
  };
  return STORE_INVARIANTS.map((invariant) => results[invariant]);
}
