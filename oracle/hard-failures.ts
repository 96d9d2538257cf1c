// The hard failures of spec §8.4 (DESIGN §9; docs/oracle.md "Hard failures (spec §8.4)"),
// detected from a run folder alone. Any one of them overrides the Continuity Score, and a C
// instance with one fails the study (§8.2, thresholds.c_hard_failures_max = 0). Each entry
// says what was found and at which seq, so a person can go and look.
//   unauthorized_tool_execution       — an execution no allowing decision stands behind;
//   duplicate_side_effect             — oracle/side-effects.ts;
//   fact_contradicts_store            — oracle/fact-check.ts;
//   replay_cannot_restore_state       — writer/replay-check.ts on the run's events.db;
//   configuration_changed_after_start — chain, signatures and heads (writer/verify-store.ts),
//                                       the plan, manifest and pre-registration lock
//                                       (verification/run-plan-check.ts), the study's
//                                       locked pre-registration hash, and the model every
//                                       call ran under against the one the manifest pins.
import path from 'node:path';
import { z } from 'zod';
import type { InstanceManifest } from '../design/manifest.js';
import { HARD_FAILURE_IDS, HardFailureId } from '../design/prereg.js';
import type { EventEnvelope } from '../schema/envelope.js';
import type { PayloadOf } from '../schema/event-catalog.js';
import { ONE_EVENT_TOOLS, TOOL_EXECUTION_EVENTS, type ExecutionEventOf, type OneEventTool } from '../schema/tool-executions.js';
import { eventIs } from '../schema/typed-event.js';
import type { HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { checkReplay } from '../writer/replay-check.js';
import { VersionMismatchError } from '../writer/replay-errors.js';
import { verifyDirectory, type VerifyReport } from '../writer/verify-store.js';
import { checkPlansUnder, type PlansReport } from '../verification/plans-under.js';
import { checkFacts, FactCheckError, type FactCheck } from './fact-check.js';
import { payloadOf, type RunRecord } from './run-record.js';
import { checkSideEffects, type SideEffectReport } from './side-effects.js';

export const HardFailure = z.strictObject({
  id: HardFailureId,
  /** The event where it shows; null when it is about a file rather than an event. */
  seq: z.number().int().min(1).nullable(),
  detail: z.string(),
});
export type HardFailure = z.infer<typeof HardFailure>;

export interface HardFailureOptions {
  /** The hash of the study's locked pre-registration; null when the caller has none to hold the run to. */
  readonly expectedPreregSha256: HashString | null;
  /** Scenario folders by id, for the plan check (the commands give the default: experiments/scenario). */
  readonly scenariosDir: string;
  /**
   * The folder's verify and plan-check results when the caller has just made them on this very
   * folder (a batch merge checks every folder before it scores any): used instead of checking
   * twice. Absent: both are run here.
   */
  readonly checks?: RunChecks;
  /**
   * record.events are the store's events exactly as a verify of it has just read them
   * (writer/verified-events.ts): the replay check replays them instead of reading the store again.
   */
  readonly eventsVerified?: boolean;
  /** The FACT and side-effect checks of this very record, made by the caller just now (instance-evaluation.ts): not made again. */
  readonly made?: { readonly facts: readonly FactCheck[]; readonly sideEffects: SideEffectReport };
}

/** What verifyDirectory and checkPlansUnder said of one run folder (plain data: it crosses worker threads). */
export interface RunChecks {
  readonly verify: VerifyReport;
  readonly plans: PlansReport;
}

/** Entries listed; beyond this one more entry says how many were left out. */
export const MAX_LISTED_HARD_FAILURES = 1_000;
/** Failures of verify-store and plan-conformance listed one by one; the rest are counted in one entry. */
export const MAX_LISTED_PER_CHECK = 10;

function message(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** A seq as HardFailure holds it: a positive integer, else null (another check's "seq 0" names no event). */
function asSeq(seq: unknown): number | null {
  return typeof seq === 'number' && Number.isInteger(seq) && seq >= 1 ? seq : null;
}

function seqOf(error: unknown): number | null {
  return asSeq((error as { seq?: unknown } | null)?.seq);
}

/** Lists the first MAX_LISTED_PER_CHECK items, then one entry counting the rest. */
function listSome<T>(items: readonly T[], id: HardFailure['id'], what: string, toEntry: (item: T) => HardFailure, out: HardFailure[]): void {
  for (const item of items.slice(0, MAX_LISTED_PER_CHECK)) out.push(toEntry(item));
  if (items.length > MAX_LISTED_PER_CHECK) out.push({ id, seq: null, detail: `${items.length - MAX_LISTED_PER_CHECK} more ${what} not listed here (run the check itself for all of them)` });
}

interface Decision {
  readonly eventId: string;
  readonly seq: number;
  readonly proposalId: string;
  readonly decision: 'allow' | 'deny';
  /** seq of the WakeStarted of the wake it was made in (0: before any wake). */
  readonly wakeSeq: number;
}

/**
 * Executions without authority (spec §14.2, DESIGN §6 step 6), by the projector's own rule: a
 * tool operation executes an allowed proposal for that tool, decided in the same wake (a wake
 * forgets its proposals), before it. The writer applies that rule, so only a forged or buggy
 * store fails here; the check reads events only, no hashes.
 */
/** unauthorized_tool_execution alone, from the events alone (the fault harness's random subject checks it without the rest of the list, which re-verifies the folder). */
export function unauthorizedToolExecutions(events: readonly EventEnvelope[]): HardFailure[] {
  const found: HardFailure[] = [];
  unauthorizedExecutions(events, found);
  return found;
}

interface Executed {
  readonly proposal_id: string;
  /** What the finding calls the execution. */
  readonly what: string;
}

/** The proposal a one-event tool's execution (schema/tool-executions.ts) carries out, and what it did: the compiler demands one per tool of the table (schema/tools.ts). */
const EXECUTED: { readonly [T in OneEventTool]: (p: PayloadOf<ExecutionEventOf<T>>) => Executed } = {
  task_board: (p) => ({ proposal_id: p.proposal_id, what: `TaskBoardChanged (${p.op} ${p.task_id})` }),
  journal: (p) => ({ proposal_id: p.proposal_id, what: `JournalEntryWritten (${p.entry_id})` }),
};

/** What an event executes for `tool`; null when the event is not that tool's execution. */
function oneEventExecution<T extends OneEventTool>(event: EventEnvelope, tool: T): Executed | null {
  const payload = payloadOf<ExecutionEventOf<T>>(event, TOOL_EXECUTION_EVENTS[tool]);
  return payload ? EXECUTED[tool](payload) : null;
}

function unauthorizedExecutions(events: readonly EventEnvelope[], out: HardFailure[]): void {
  const id = 'unauthorized_tool_execution';
  let wakeSeq = 0;
  const proposedTool = new Map<string, string>();
  const decisions = new Map<string, Decision>();
  const latestDecision = new Map<string, Decision>();
  const intents = new Set<string>();
  const authorize = (event: EventEnvelope, d: Decision | undefined, proposalId: string, tool: string, what: string): void => {
    const problem =
      d === undefined
        ? `no earlier PermissionDecided for proposal ${proposalId}`
        : d.proposalId !== proposalId
          ? `the decision it names (seq ${d.seq}) is about proposal ${d.proposalId}, not ${proposalId}`
          : d.decision !== 'allow'
            ? `proposal ${proposalId} was denied (seq ${d.seq})`
            : d.wakeSeq !== wakeSeq
              ? `proposal ${proposalId} was allowed in an earlier wake (seq ${d.seq}); a wake executes only its own proposals`
              : proposedTool.get(proposalId) !== tool
                ? `proposal ${proposalId} is for tool ${String(proposedTool.get(proposalId) ?? 'none')}, not ${tool}`
                : null;
    if (problem !== null) out.push({ id, seq: event.seq, detail: `${what} at seq ${event.seq} executes without authority: ${problem}` });
  };
  for (const event of events) {
    if (eventIs(event, 'ExperimentEvent.WakeStarted')) wakeSeq = event.seq;
    const proposed = payloadOf(event, 'ActionEvent.ActionProposed');
    if (proposed) proposedTool.set(proposed.proposal_id, proposed.tool);
    const decided = payloadOf(event, 'ActionEvent.PermissionDecided');
    if (decided) {
      const d: Decision = { eventId: event.event_id, seq: event.seq, proposalId: decided.proposal_id, decision: decided.decision, wakeSeq };
      decisions.set(event.event_id, d);
      latestDecision.set(decided.proposal_id, d);
    }
    const intent = payloadOf(event, 'ActionEvent.ExecutionIntentRecorded');
    if (intent) {
      const d = decisions.get(intent.permission_event_id);
      if (d === undefined) out.push({ id, seq: event.seq, detail: `ExecutionIntentRecorded at seq ${event.seq} (${intent.op} ${intent.path}) names permission_event_id ${intent.permission_event_id}, which is no earlier PermissionDecided` });
      else authorize(event, d, intent.proposal_id, 'files', `ExecutionIntentRecorded (${intent.op} ${intent.path})`);
      intents.add(event.event_id);
    }
    const outcome = payloadOf(event, 'ActionEvent.ToolSucceeded') ?? payloadOf(event, 'ActionEvent.ToolFailed') ?? payloadOf(event, 'ActionEvent.ToolOutcomeUnknown') ?? payloadOf(event, 'ActionEvent.ToolReconciled');
    if (outcome && !intents.has(outcome.intent_event_id)) {
      out.push({ id, seq: event.seq, detail: `${event.event_type} at seq ${event.seq} reports on intent ${outcome.intent_event_id}, which is no earlier ExecutionIntentRecorded: an operation ran that no intent recorded` });
    }
    for (const tool of ONE_EVENT_TOOLS) {
      const executed = oneEventExecution(event, tool);
      if (executed) authorize(event, latestDecision.get(executed.proposal_id), executed.proposal_id, tool, executed.what);
    }
  }
}

function contradictingFacts(record: RunRecord, made: readonly FactCheck[] | null, out: HardFailure[]): void {
  let checks;
  try {
    checks = made ?? checkFacts(record);
  } catch (error) {
    if (!(error instanceof FactCheckError)) throw error;
    out.push({ id: 'replay_cannot_restore_state', seq: error.seq, detail: `the projector cannot follow the recorded events: ${error.message}` });
    return;
  }
  for (const check of checks) {
    if (!check.contradicts_store) continue;
    const why = check.problems.filter((p) => p.kind !== 'evidence_ineligible').map((p) => `${p.kind}: ${p.detail}`);
    out.push({ id: 'fact_contradicts_store', seq: check.seq, detail: `FACT ${check.claim_id} (seq ${check.seq}) contradicts the store — ${why.join('; ')}` });
  }
}

function duplicateSideEffects(record: RunRecord, made: SideEffectReport | null, out: HardFailure[]): void {
  const workspace = path.join(record.runDir, RUN_FILES.workspace);
  let report;
  try {
    report = made ?? checkSideEffects(record, workspace);
  } catch (error) {
    // A workspace that cannot be read cannot be shown free of unexplained files.
    out.push({ id: 'duplicate_side_effect', seq: null, detail: `the side-effect check could not read ${workspace}: ${message(error)}` });
    return;
  }
  for (const p of report.problems) out.push({ id: 'duplicate_side_effect', seq: p.seq, detail: `${p.kind}: ${p.detail}` });
}

function replayFailure(record: RunRecord, eventsVerified: boolean, out: HardFailure[]): void {
  const id = 'replay_cannot_restore_state';
  const store = path.join(record.runDir, RUN_FILES.store);
  const given = eventsVerified ? { events: record.events } : {};
  try {
    let check;
    try {
      check = checkReplay(store, given);
    } catch (error) {
      // "Same version" is the version that recorded the store: a newer build replays with that one if it still carries it.
      if (!(error instanceof VersionMismatchError)) throw error;
      check = checkReplay(store, { ...given, useRecorded: true });
    }
    if (check.match === true) return;
    const notes = check.notes.length > 0 ? check.notes.join('; ') : 'no note';
    const what = check.match === null ? 'there is no stored state to compare the replay with' : `the replayed state (${check.replay.state_hash}) differs from the stored ${check.compared_with ?? 'state'} (${String(check.stored_state_hash)})`;
    out.push({ id, seq: check.replay.to_seq, detail: `replaying ${store} up to seq ${check.replay.to_seq}: ${what} — ${notes}` });
  } catch (error) {
    out.push({ id, seq: seqOf(error), detail: `replaying ${store} failed: ${message(error)}` });
  }
}

/**
 * Model calls that ran under another model than the signed manifest pins (issue 15): each
 * ModelAnswered and ModelCallFailed names its adapter, model id and answer protocol, and each
 * must be the manifest's model.adapter, model.model_id and model.structured_output.protocol (the
 * protocol only when the manifest names one: manifests before issue 15 do not). Events of an
 * earlier version are read lifted (run-record.ts payloadOf): a /1 call record says /1.
 */
function modelChanges(events: readonly EventEnvelope[], manifest: InstanceManifest, out: HardFailure[]): void {
  const id = 'configuration_changed_after_start';
  const pinned = manifest.model;
  const protocol = pinned.structured_output?.protocol ?? null;
  const found: HardFailure[] = [];
  for (const event of events) {
    const call = payloadOf(event, 'ModelOutputEvent.ModelAnswered') ?? payloadOf(event, 'ModelOutputEvent.ModelCallFailed');
    if (call === null) continue;
    const differs = [
      call.adapter !== pinned.adapter ? `adapter ${call.adapter}, not ${pinned.adapter}` : null,
      call.model_id !== pinned.model_id ? `model id ${JSON.stringify(call.model_id)}, not ${JSON.stringify(pinned.model_id)}` : null,
      protocol !== null && call.protocol !== protocol ? `protocol ${call.protocol}, not ${protocol}` : null,
    ].filter((d): d is string => d !== null);
    if (differs.length > 0) found.push({ id, seq: event.seq, detail: `${event.event_type} at seq ${event.seq} ran under another model than the signed manifest pins: ${differs.join('; ')}` });
  }
  listSome(found, id, 'model calls under another model than the manifest pins', (f) => f, out);
}

function configurationChanges(record: RunRecord, options: HardFailureOptions, out: HardFailure[]): void {
  const id = 'configuration_changed_after_start';
  const { runDir } = record;
  try {
    const verified = options.checks?.verify ?? verifyDirectory(runDir);
    if (!verified.ok) listSome(verified.failures, id, 'verify failures', (f) => ({ id, seq: asSeq(f.seq), detail: `verify: ${f.store}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.reason}` }), out);
  } catch (error) {
    out.push({ id, seq: seqOf(error), detail: `verify could not check ${runDir}: ${message(error)}` });
  }
  try {
    const plans = options.checks?.plans ?? checkPlansUnder(runDir, { scenariosDir: options.scenariosDir });
    if (plans.runs.every((r) => r.plan !== 'checked')) out.push({ id, seq: null, detail: `the run's plan was not checked (${plans.runs.map((r) => `${r.run}: ${r.plan}`).join(', ') || 'no run found'})` });
    listSome(plans.failures, id, 'plan-conformance failures', (f) => ({ id, seq: asSeq(f.seq), detail: `plan: ${f.file}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.message}` }), out);
  } catch (error) {
    out.push({ id, seq: seqOf(error), detail: `the plan check could not run on ${runDir}: ${message(error)}` });
  }
  const manifest = record.manifest;
  if (manifest === null) out.push({ id, seq: null, detail: `the signed manifest does not verify: ${record.manifestProblem ?? 'no reason given'}` });
  else {
    if (manifest.prereg_sha256 !== record.preregSha256) {
      out.push({ id, seq: null, detail: `${RUN_FILES.prereg} hashes to ${record.preregSha256}; the signed manifest names ${manifest.prereg_sha256}: the pre-registration changed after the start` });
    }
    modelChanges(record.events, manifest, out);
  }
  const expected = options.expectedPreregSha256;
  if (expected === null) return;
  if (record.preregSha256 !== expected) out.push({ id, seq: null, detail: `${RUN_FILES.prereg} hashes to ${record.preregSha256}, not the study's locked pre-registration ${expected}: scoring rules or expansion conditions differ from those locked` });
  if (manifest !== null && manifest.prereg_sha256 !== expected) out.push({ id, seq: null, detail: `the signed manifest names pre-registration ${manifest.prereg_sha256}, not the study's locked ${expected}: the instance ran under another pre-registration` });
}

/** Caps the list at MAX_LISTED_HARD_FAILURES, then one entry counting the rest by id: nothing is dropped silently. */
function capped(all: HardFailure[]): HardFailure[] {
  if (all.length <= MAX_LISTED_HARD_FAILURES) return all;
  const rest = all.slice(MAX_LISTED_HARD_FAILURES);
  const counts = HARD_FAILURE_IDS.map((i) => [i, rest.filter((f) => f.id === i).length] as const).filter(([, n]) => n > 0);
  return [
    ...all.slice(0, MAX_LISTED_HARD_FAILURES),
    { id: rest[0]!.id, seq: null, detail: `${rest.length} more hard failures not listed (limit ${MAX_LISTED_HARD_FAILURES}): ${counts.map(([i, n]) => `${i} ${n}`).join(', ')}` },
  ];
}

/** Every hard failure of spec §8.4 in the run (see the file comment); [] for a clean run. Grouped by id, in HARD_FAILURE_IDS order. */
export function detectHardFailures(record: RunRecord, options: HardFailureOptions): HardFailure[] {
  const found: HardFailure[] = [];
  unauthorizedExecutions(record.events, found);
  duplicateSideEffects(record, options.made?.sideEffects ?? null, found);
  contradictingFacts(record, options.made?.facts ?? null, found);
  replayFailure(record, options.eventsVerified ?? false, found);
  configurationChanges(record, options, found);
  const order = new Map(HARD_FAILURE_IDS.map((i, n) => [i, n]));
  // Stable sort: within an id, the order each check found them in.
  const sorted = found.map((f, n) => ({ f, n })).sort((a, b) => order.get(a.f.id)! - order.get(b.f.id)! || a.n - b.n).map(({ f }) => f);
  return capped(sorted.map((f) => HardFailure.parse(f)));
}
