// The compact record of one instance for the study report (issue 34 item 4): everything
// buildStudyReport (study-report-builder.ts) and the expansion rule read of an instance, reduced
// from its evaluation once — in a batch merge on the worker thread that verified the folder — so
// the report of thousands of instances never holds the events of more than one. Its home is here
// and only here: a figure the report needs from an instance's events is added to this schema and
// to instanceReportRecordOf, and nowhere else.
import { costCapNotesOf } from '../design/cost-cap.js';
import { z } from 'zod';
import { modelCallRulesOf, type PreRegistration } from '../design/prereg.js';
import { InstanceScore, WakeScore } from '../oracle/continuity-score.js';
import { FairnessFacts, fairnessFactsOf } from '../oracle/fairness.js';
import { HardFailure, type RunChecks } from '../oracle/hard-failures.js';
import { evaluateInstance, type InstanceEvaluation } from '../oracle/instance-evaluation.js';
import { HashString } from '../schema/hash.js';
import { currentPayloadOf } from '../schema/current-payload.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { PromptReuseSummary, summarizeCallsReuse } from '../schema/prompt-reuse-summary.js';
import { CostSummary, summarizeCosts } from '../schema/cost-summary.js';
import { recordedAdapterOf } from '../runtime/model-adapters/adapter-list.js';
import { eventIs } from '../schema/typed-event.js';
import { judgeUsableData, SubstantiveRule, UsableData } from '../schema/usable-data.js';

/** The pre-registered usable-data rule (rule 8) an instance's model calls were judged by. */
export const UsableRule = z.strictObject({ min_accepted_share: z.number().min(0).max(1).nullable(), substantive: SubstantiveRule.nullable() });
export type UsableRule = z.infer<typeof UsableRule>;

export function usableRuleOf(prereg: PreRegistration): UsableRule {
  const rules = modelCallRulesOf(prereg);
  return { min_accepted_share: rules?.usable_data.min_accepted_share ?? null, substantive: rules?.usable_data.substantive ?? null };
}

/** At most this many scored wakes per instance (a 72-hour schedule has a few hundred at most). */
const MAX_WAKES = 100_000;
/** At most this many notes and hard failures per instance (hard-failures.ts lists at most 1,001). */
const MAX_LISTED = 10_000;

export const InstanceReportRecord = z.strictObject({
  seed: z.string(),
  prereg_sha256: HashString,
  score: InstanceScore.pick({ score: true, score_unrounded: true, dimensions: true, dimensions_unrounded: true, notes: true }).extend({
    per_wake: z.array(WakeScore.pick({ wake_id: true, at_minute: true, value: true, value_unrounded: true })).max(MAX_WAKES),
  }),
  hardFailures: z.array(HardFailure).max(MAX_LISTED),
  /** What the checks could not look at (evaluation notes). */
  notes: z.array(z.string()).max(MAX_LISTED),
  /** Events in the store that was scored. */
  events: z.number().int().min(0),
  /** Rule 8's judgement of its model calls, under `usable_rule`. */
  usable: UsableData,
  usable_rule: UsableRule,
  fairness: FairnessFacts,
  /** What the servers said they reused of its calls' prompts (issue 34 item 1). */
  prompt_reuse: PromptReuseSummary,
  /** What its model calls cost, summed from their records' cost_nano_usd (issue 36 item 4). */
  cost: CostSummary,
});
export type InstanceReportRecord = z.infer<typeof InstanceReportRecord>;

/**
 * Reduces an evaluation to its InstanceReportRecord; `rule` is the study's usable-data rule
 * (the pre-registration the report is built under). The only place a record is made.
 */
export function instanceReportRecordOf(evaluation: InstanceEvaluation, rule: UsableRule): InstanceReportRecord {
  const { record, score } = evaluation;
  return {
    seed: record.plan.seed,
    prereg_sha256: record.preregSha256,
    score: {
      score: score.score,
      score_unrounded: score.score_unrounded,
      dimensions: { ...score.dimensions },
      dimensions_unrounded: { ...score.dimensions_unrounded },
      notes: [...score.notes],
      per_wake: score.per_wake.map((w) => ({ wake_id: w.wake_id, at_minute: w.at_minute, value: w.value, value_unrounded: w.value_unrounded })),
    },
    hardFailures: evaluation.hardFailures.map((h) => ({ id: h.id, seq: h.seq, detail: h.detail })),
    // The cost cap's stops and raises (a raise departs from the pre-registration): said with the instance, in the report's notes.
    notes: [...evaluation.notes, ...costCapNotesOf(record.events, record.prereg.model_calls?.cost_cap_usd_per_instance, record.manifest?.model.prices ?? null)],
    events: record.events.length,
    usable: judgeUsableData(record.events, rule.min_accepted_share, undefined, rule.substantive),
    usable_rule: rule,
    fairness: fairnessFactsOf(record),
    prompt_reuse: promptReuseOfEvents(record.events),
    cost: costOfEvents(record.events),
  };
}

/** The instance's calls' costs as the run summary sums them (schema/cost-summary.ts); a call of a version before costs reads as not priced. */
function costOfEvents(events: InstanceEvaluation['record']['events']): CostSummary {
  return summarizeCosts(
    events.flatMap((e) => {
      const typed = currentPayloadOf(e);
      if (!typed.ok) return [];
      const t = typed.event;
      return t.event_type === 'ModelOutputEvent.ModelAnswered' || t.event_type === 'ModelOutputEvent.ModelCallFailed' ? [t.payload.cost_nano_usd] : [];
    }),
  );
}

/** The instance's calls as the run summary counts them (schema/prompt-reuse-summary.ts summarizeCallsReuse). */
function promptReuseOfEvents(events: InstanceEvaluation['record']['events']): PromptReuseSummary {
  const calls = events.flatMap((e) => {
    const typed = currentPayloadOf(e);
    if (!typed.ok) return [];
    const t = typed.event;
    if (t.event_type !== 'ModelOutputEvent.ModelAnswered' && t.event_type !== 'ModelOutputEvent.ModelCallFailed') return [];
    return [{ prompt_reuse: t.payload.prompt_reuse, reached: t.payload.usage !== null, adapterCallsModel: recordedAdapterOf(t.payload.adapter)?.callsModel === true }];
  });
  return summarizeCallsReuse(calls);
}

/** One instance folder as the report sees it: scored (sealed), stopped (not sealed), or failed (not readable as a run). */
export const ScoredFolder = z.strictObject({
  status: z.enum(['finished', 'stopped', 'failed']),
  statusDetail: z.string().nullable(),
  record: InstanceReportRecord.nullable(),
});
export type ScoredFolder = z.infer<typeof ScoredFolder>;

export interface FolderScoring {
  readonly scenariosDir: string;
  /** The study's locked pre-registration: an instance under another one is a configuration change. */
  readonly expectedPreregSha256: HashString;
  /** The folder's verify and plan-check results, made just now on this folder (not made again). */
  readonly checks?: RunChecks;
  /** The store's events as the verify behind `checks` read them (writer/verified-events.ts): not read again. */
  readonly verifiedEvents?: readonly EventEnvelope[];
  /** The study's usable-data rule; 'own': the instance's own pre-registration's (a merge's worker, which has no other). */
  readonly rule: UsableRule | 'own';
}

/**
 * Scores one instance folder and reduces it to its record; the evaluation (every event) is
 * dropped on return. `prereg`: the instance's own pre-registration, for the caller that still
 * needs the study's (null when it was not read).
 */
export function scoreInstanceFolder(dir: string, scoring: FolderScoring): { readonly scored: ScoredFolder; readonly prereg: PreRegistration | null } {
  try {
    const evaluation = evaluateInstance(dir, { scenariosDir: scoring.scenariosDir, expectedPreregSha256: scoring.expectedPreregSha256, ...(scoring.checks ? { checks: scoring.checks } : {}), ...(scoring.verifiedEvents ? { verifiedEvents: scoring.verifiedEvents } : {}) });
    const sealed = evaluation.record.events.some((e) => eventIs(e, 'SystemEvent.StoreSealed'));
    const rule = scoring.rule === 'own' ? usableRuleOf(evaluation.record.prereg) : scoring.rule;
    const scored: ScoredFolder = sealed ? { status: 'finished', statusDetail: null, record: instanceReportRecordOf(evaluation, rule) } : { status: 'stopped', statusDetail: 'not sealed', record: null };
    return { scored, prereg: evaluation.record.prereg };
  } catch (e) {
    return { scored: { status: 'failed', statusDetail: e instanceof Error ? e.message : String(e), record: null }, prereg: null };
  }
}
