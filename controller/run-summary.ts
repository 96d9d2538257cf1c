// What an instance did, counted from its store after the run (issue 5 item 9's summary), and
// whether its model calls gave usable data (issue 15 item 8: oracle/usable-data.ts).
// Read-only: it opens events.db read-only once the writer has stopped.
import path from 'node:path';
import { z } from 'zod';
import { CHECKPOINT_RECORDED, isEmptyCheckpoint, judgeUsableData, MODEL_ANSWERED, MODEL_CALL_FAILED, NO_RULE_REASON, UsableData, type SubstantiveRule } from '../schema/usable-data.js';
import type { EventType } from '../schema/event-catalog.js';
import { PermissionDecided } from '../schema/events/action-events.js';
import { RUN_FILES } from '../schema/run-files.js';
import { PromptReuse } from '../schema/events/model-output-events.js';
import { PromptReuseSummary, summarizeCallsReuse } from '../schema/prompt-reuse-summary.js';
import { CostSummary, summarizeCosts } from '../schema/cost-summary.js';
import { describeIssues, modelCallRulesOf, PreregInputError, PreRegistration, readPreregJson } from '../design/prereg.js';
import { openStoreReadOnly } from '../writer/store-reader.js';
import { recordedAdapterOf } from '../runtime/model-adapters/adapter-list.js';

export const RunSummary = z.strictObject({
  events: z.number().int(),
  wakes_started: z.number().int(),
  wakes_ended: z.number().int(),
  /** ModelAnswered + ModelCallFailed events, budget_exhausted included (usable_data.calls leaves those out). */
  model_calls: z.number().int(),
  model_failures: z.number().int(),
  proposals: z.number().int(),
  executions: z.number().int(),
  denials: z.number().int(),
  tool_failures: z.number().int(),
  claims: z.number().int(),
  refused_appends: z.number().int(),
  plan_revisions: z.strictObject({ proposed: z.number().int(), accepted: z.number().int(), rejected: z.number().int() }),
  /** CheckpointRecorded with at least one content field non-null. */
  checkpoints: z.number().int(),
  /** CheckpointRecorded with every content field null (schema/usable-data.ts CHECKPOINT_FIELDS). */
  empty_checkpoints: z.number().int(),
  process_restarts: z.number().int(),
  unknown_outcomes: z.number().int(),
  /** Accepted answers k of n model calls made, the failures by kind, and whether the instance counts as data. */
  usable_data: UsableData,
  /** What the servers said they reused of the prompts of the calls that reached a model (issue 34 item 1). */
  prompt_reuse: PromptReuseSummary,
  /** What its model calls cost, summed from their records' cost_nano_usd, and how many were priced (issue 36 item 4). */
  cost: CostSummary,
});
export type RunSummary = z.infer<typeof RunSummary>;

export interface UsableDataRule {
  /** model_calls.usable_data.min_accepted_share of the run's prereg.json; null when it has none. */
  readonly minAcceptedShare: number | null;
  /** Why there is none (a pre-registration recorded before the rule, or a prereg.json that cannot be read). */
  readonly noRuleReason: string;
  /** model_calls.usable_data.substantive; null when it has none (accepted answers count as they are). */
  readonly substantive: SubstantiveRule | null;
}

/** The usable-data rule the run was started under: its own copy of the pre-registration. */
export function recordedUsableDataRule(runDir: string): UsableDataRule {
  const file = path.join(runDir, RUN_FILES.prereg);
  let content: unknown;
  try {
    content = readPreregJson(file);
  } catch (error) {
    if (error instanceof PreregInputError) return { minAcceptedShare: null, noRuleReason: `the run's pre-registration cannot be read (${error.message})`, substantive: null };
    throw error;
  }
  const parsed = PreRegistration.safeParse(content);
  if (!parsed.success) return { minAcceptedShare: null, noRuleReason: `${file} is not a pre-registration (${describeIssues(parsed.error).join('; ')})`, substantive: null };
  const rules = modelCallRulesOf(parsed.data);
  return rules === null ? { minAcceptedShare: null, noRuleReason: NO_RULE_REASON, substantive: null } : { minAcceptedShare: rules.usable_data.min_accepted_share, noRuleReason: NO_RULE_REASON, substantive: rules.usable_data.substantive ?? null };
}

/**
 * `rule`: the run's pre-registered minimum share of accepted answers (recordedUsableDataRule);
 * without one, usable_data says the instance cannot count as data, and why.
 */
export function summarizeRun(runDir: string, rule: UsableDataRule): RunSummary {
  const db = openStoreReadOnly(path.join(runDir, RUN_FILES.store));
  try {
    const rows = db.prepare('select event_type, count(*) as n from events group by event_type').all() as { event_type: string; n: number }[];
    const count = (type: EventType): number => rows.find((r) => r.event_type === type)?.n ?? 0;
    const decisions = db.prepare("select json_extract(envelope, '$.payload.decision') as d, count(*) as n from events where event_type = ? group by d").all(PermissionDecided.type) as { d: string; n: number }[];
    const executions = count('ActionEvent.ToolSucceeded') + count('MemoryEvent.TaskBoardChanged') + count('MemoryEvent.JournalEntryWritten');
    // What the judgement reads: the model-call events' type, failure and wake, and the checkpoints.
    const calls = db.prepare(`select event_type, json_extract(envelope, '$.payload.failure') as failure, json_extract(envelope, '$.payload.wake_id') as wake_id from events where event_type in (?, ?) order by seq`).all(MODEL_ANSWERED, MODEL_CALL_FAILED) as { event_type: string; failure: unknown; wake_id: unknown }[];
    const checkpoints = db.prepare(`select json_extract(envelope, '$.payload') as payload from events where event_type = ? order by seq`).all(CHECKPOINT_RECORDED) as { payload: string }[];
    const judged = [...calls.map((c) => ({ event_type: c.event_type, payload: { failure: c.failure ?? undefined, wake_id: c.wake_id ?? undefined } })), ...checkpoints.map((c) => ({ event_type: CHECKPOINT_RECORDED, payload: JSON.parse(c.payload) as unknown }))];
    const usableData = judgeUsableData(judged, rule.minAcceptedShare, rule.noRuleReason, rule.substantive);
    // Calls that reached a model (budget_exhausted asked for nothing; a call refused before it was sent has no usage), of an
    // adapter that calls one — or that report reuse anyway (a replay serves its source's records).
    const reachedCalls = db.prepare(`select json_extract(envelope, '$.payload.prompt_reuse') as r, json_extract(envelope, '$.payload.adapter') as adapter from events where event_type in (?, ?) and json_extract(envelope, '$.payload.usage') is not null order by seq`).all(MODEL_ANSWERED, MODEL_CALL_FAILED) as { r: string | null; adapter: string }[];
    const reuse = summarizeCallsReuse(reachedCalls.map((row) => ({ prompt_reuse: row.r === null ? null : PromptReuse.parse(JSON.parse(row.r)), reached: true, adapterCallsModel: recordedAdapterOf(row.adapter)?.callsModel === true })));
    const costs = db.prepare(`select json_extract(envelope, '$.payload.cost_nano_usd') as c from events where event_type in (?, ?) order by seq`).all(MODEL_ANSWERED, MODEL_CALL_FAILED) as { c: number | null }[];
    const emptyCheckpoints = checkpoints.filter((c) => isEmptyCheckpoint(JSON.parse(c.payload))).length;
    return RunSummary.parse({
      events: rows.reduce((sum, r) => sum + r.n, 0),
      wakes_started: count('ExperimentEvent.WakeStarted'),
      wakes_ended: count('ExperimentEvent.WakeEnded'),
      model_calls: count('ModelOutputEvent.ModelAnswered') + count('ModelOutputEvent.ModelCallFailed'),
      model_failures: count('ModelOutputEvent.ModelCallFailed'),
      proposals: count('ActionEvent.ActionProposed'),
      executions,
      denials: decisions.find((d) => d.d === 'deny')?.n ?? 0,
      tool_failures: count('ActionEvent.ToolFailed'),
      claims: count('MemoryEvent.ClaimRecorded'),
      refused_appends: count('SystemEvent.AppendRejected'),
      plan_revisions: { proposed: count('PlanEvent.PlanRevisionProposed'), accepted: count('PlanEvent.PlanRevisionAccepted'), rejected: count('PlanEvent.PlanRevisionRejected') },
      // Only checkpoints that say something: an all-null one is counted apart (issue 32 item 6).
      checkpoints: checkpoints.length - emptyCheckpoints,
      empty_checkpoints: emptyCheckpoints,
      process_restarts: count('SystemEvent.ProcessRestarted'),
      unknown_outcomes: count('ActionEvent.ToolOutcomeUnknown'),
      usable_data: usableData,
      prompt_reuse: reuse,
      cost: summarizeCosts(costs.map((row) => row.c)),
    });
  } finally {
    db.close();
  }
}
