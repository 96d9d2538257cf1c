// The Continuity Score of one instance (spec §8.1, SCENARIO.md's table, docs/oracle.md): five
// pre-registered dimensions, each a value in 0–100, combined with the pre-registered weights
// into 0–100. Everything is read from the run record (the run folder) and the oracle; nothing
// here knows the instance's group — the record's manifest is not read at all.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { CHECKPOINT_FIELDS, compareCheckpoint, type CheckpointField, type RecordedCheckpoint } from './checkpoint-match.js';
import { ExpectedCheckpoint, type Oracle } from './expected-checkpoints.js';
import { roundPoints as round } from './figure-rounding.js';
import { lineUsingRefutedFigure, type RefutedFigure } from './refuted-figure.js';
import { eventsOf, type RunRecord } from './run-record.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { ProjectionRefusal } from '../projector/projection.js';
import { actionFingerprint, subjectProjection } from '../projector/subject-projection.js';

export const DIMENSIONS = ['state_recovery', 're_planning', 'experience_influence', 'evidence_integrity', 'recovery'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** Files under report/ larger than this, or more of them than MAX_REPORT_FILES, are not read: a probe says so. */
const MAX_REPORT_FILE_BYTES = 1024 * 1024;
const MAX_REPORT_FILES = 64;
const MAX_REPORT_DEPTH = 4;
const REPORT_FOLDER = 'report';

const Value = z.number().min(0).max(100);
const Recorded = z.strictObject({ current_goal_id: z.string().nullable(), goal_status: z.string().nullable(), attention_target: z.string().nullable(), waiting_condition: z.string().nullable(), next_action: z.string().nullable() });
const FieldMatches = z.strictObject(Object.fromEntries(CHECKPOINT_FIELDS.map((f) => [f, z.boolean()])) as Record<CheckpointField, z.ZodBoolean>);

export const WakeScore = z.strictObject({
  wake_id: z.string(),
  wake_number: z.number().int(),
  at_minute: z.number().int(),
  expected: ExpectedCheckpoint,
  /** null: no CheckpointRecorded for this wake (scored 0). */
  recorded: Recorded.nullable(),
  matches: FieldMatches.nullable(),
  /** The checkpoint's value, rounded (POINTS_ROUNDING) from value_unrounded. */
  value: Value,
  /** Σ weights of the matching fields × 100, before rounding (report.json carries it beside `value`). */
  value_unrounded: z.number(),
});

export const ReplanningItem = z.strictObject({
  intervention_id: z.string(),
  deliver_wake_id: z.string(),
  /**
   * Reported, NOT scored: the projected goal is the new one by the end of the wake after
   * delivery. Only an accepted plan revision changes it, so only a group whose revisions are
   * allowed can adopt: scoring it would hand that group points by its switch, not its behaviour.
   */
  plan_adopted: z.boolean(),
  /** The first scored checkpoint after delivery names the new goal and the oracle's next action (50). */
  checkpoint_aligned: z.boolean(),
  /** Share of the scored checkpoints after delivery that name the new goal and the oracle's next action (× 50). */
  stays_aligned: z.number().min(0).max(1),
  value: Value,
  detail: z.string(),
});

export const Probe = z.strictObject({
  probe: z.enum(['denied_not_reproposed', 'refuted_figure_not_used', 'changed_file_reread', 'failed_not_repeated']),
  intervention_id: z.string().nullable(),
  /** Not applicable: the run gave the subject nothing to show this with (never counted). */
  applicable: z.boolean(),
  passed: z.boolean(),
  detail: z.string(),
});

export const ClaimJudgement = z.strictObject({ claim_id: z.string(), seq: z.number().int(), claim_type: z.enum(['FACT', 'PLAN', 'INFERENCE']), reason: z.string() });

export const RecoveryItem = z.strictObject({
  intervention_id: z.string(),
  crash_wake_id: z.string(),
  /** The first scored wake after the crash; null when none followed. */
  first_wake_after: z.string().nullable(),
  checkpoint_value: Value,
  side_effect_problems: z.array(z.string()),
  value: Value,
});

const DimensionPoints = z.strictObject(Object.fromEntries(DIMENSIONS.map((d) => [d, Value])) as Record<Dimension, typeof Value>);

export const InstanceScore = z.strictObject({
  scoring_spec_version: z.string(),
  oracle_rules_version: z.string(),
  /** Σ weight × dimension / 100 over the ROUNDED dimensions, then rounded (POINTS_ROUNDING), in 0–100. */
  score: Value,
  /** The same sum before its rounding (its inputs, the dimensions, are the rounded ones). */
  score_unrounded: z.number(),
  dimensions: DimensionPoints,
  /** Each dimension before its own rounding (see oracle/report-rounding.ts for what each is computed from). */
  dimensions_unrounded: z.strictObject(Object.fromEntries(DIMENSIONS.map((d) => [d, z.number()])) as Record<Dimension, z.ZodNumber>),
  per_wake: z.array(WakeScore),
  re_planning: z.array(ReplanningItem),
  probes: z.array(Probe),
  claims: z.strictObject({ total: z.number().int(), good: z.number().int(), bad: z.array(ClaimJudgement) }),
  recovery: z.array(RecoveryItem),
  /** What the numbers rest on that a reader must know (a dimension with nothing to measure, files not read). */
  notes: z.array(z.string()),
});
export type InstanceScore = z.infer<typeof InstanceScore>;

export interface ScoreInputs {
  readonly record: RunRecord;
  readonly oracle: Oracle;
  /** FACT claim id → why it is not sound (oracle/fact-check.ts); absent = sound. */
  readonly unsoundFacts: ReadonlyMap<string, string>;
  /** Duplicated or unexplained side effects located at a seq (oracle/side-effects.ts). */
  readonly sideEffectProblems: readonly { readonly seq: number | null; readonly detail: string }[];
  /** The run's workspace folder, for the final report files; null: not available (a probe says so). */
  readonly workspaceDir: string | null;
}

/** The parts of a PLAN claiming its own execution, in this order (docs/oracle.md lists them; test/oracle/oracle-doc.test.ts holds the two together). */
export const PLAN_DONE_SUBJECTS = ['i', 'we'] as const;
/** After the subject and a space or an apostrophe (' or ’), at most one of these, then spaces. */
export const PLAN_DONE_AUXILIARIES = ['ve', 'have', 'had', 'd'] as const;
/** Then at most one of these, then spaces. */
export const PLAN_DONE_ADVERBS = ['now', 'already', 'just', 'also'] as const;
/** Then one of these, as a whole word. */
export const PLAN_DONE_VERBS = ['done', 'completed', 'finished', 'submitted', 'written', 'wrote', 'sent', 'executed'] as const;

/** "I have done", "I've completed", "we had now sent": a PLAN claiming its own execution (docs/oracle.md). */
export const PLAN_STATED_AS_DONE = new RegExp(
  `\\b(?:${PLAN_DONE_SUBJECTS.join('|')})(?:\\s+|['’])(?:${PLAN_DONE_AUXILIARIES.map((a) => `${a}\\s+`).join('|')})?(?:(?:${PLAN_DONE_ADVERBS.join('|')})\\s+)?(?:${PLAN_DONE_VERBS.join('|')})\\b`,
  'i',
);

/** seq of the last event of each wake (its last WakeEnded), for "by the end of wake W". */
function wakeEnds(events: readonly EventEnvelope[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const { event, p } of eventsOf(events, 'ExperimentEvent.WakeEnded')) out.set(p.wake_id, event.seq);
  return out;
}
function wakeStarts(events: readonly EventEnvelope[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const { event, p } of eventsOf(events, 'ExperimentEvent.WakeStarted')) if (!out.has(p.wake_id)) out.set(p.wake_id, event.seq);
  return out;
}

/** The projected goal at toSeq; a store the projector refuses has none (a hard failure says why). */
function projectedGoalAt(events: readonly EventEnvelope[], toSeq: number): { goal: string | null; refusal: string | null } {
  const state = subjectProjection.initial();
  try {
    for (const event of events) {
      if (event.seq > toSeq) break;
      subjectProjection.applyInPlace(state, event);
    }
  } catch (error) {
    if (error instanceof ProjectionRefusal) return { goal: null, refusal: error.message };
    throw error;
  }
  return { goal: state.current_state.current_goal_id, refusal: null };
}

export function scoreInstance(inputs: ScoreInputs): InstanceScore {
  const { record, oracle } = inputs;
  const { events, plan, prereg } = record;
  const weights = prereg.scoring.checkpoint_field_weights;
  const notes: string[] = [];
  const ends = wakeEnds(events);
  const starts = wakeStarts(events);
  const lastSeq = events.at(-1)?.seq ?? 0;
  const wakeIndex = new Map(plan.schedule.wakes.map((w, i) => [w.wake_id, i]));
  const delivered = new Map(eventsOf(events, 'ExperimentEvent.InterventionDelivered').map(({ event, p }) => [p.intervention_id, { seq: event.seq, event_ids: p.event_ids }]));

  // ---- state recovery: every scored wake against the oracle
  const recorded = new Map<string, RecordedCheckpoint>();
  for (const { p } of eventsOf(events, 'ExperimentEvent.CheckpointRecorded')) {
    recorded.set(p.wake_id, { current_goal_id: p.current_goal_id, goal_status: p.goal_status, attention_target: p.attention_target, waiting_condition: p.waiting_condition, next_action: p.next_action });
  }
  const perWake = oracle.checkpoints.map((expected) => {
    const got = recorded.get(expected.wake_id) ?? null;
    if (got === null) return { wake_id: expected.wake_id, wake_number: expected.wake_number, at_minute: expected.at_minute, expected, recorded: null, matches: null, value: 0, value_unrounded: 0 };
    const c = compareCheckpoint(expected, got, weights, oracle.known_ids, oracle.known_thread_ids);
    return { wake_id: expected.wake_id, wake_number: expected.wake_number, at_minute: expected.at_minute, expected, recorded: { ...got }, matches: c.matches, value: round(c.value * 100), value_unrounded: c.value * 100 };
  });
  // A wake cut by a stop is never run again: what it lacks is the apparatus's, not the subject's; the reader must know.
  const cut = [...eventsOf(events, 'ExperimentEvent.WakeEnded')].filter(({ p }) => p.outcome === 'stopped').map(({ p }) => p.wake_id);
  if (cut.length > 0) notes.push(`${cut.length} wake(s) cut by a stop and not run again (${cut.slice(0, 8).join(', ')}${cut.length > 8 ? ', …' : ''}): they are scored as the stop left them`);
  const missing = perWake.filter((w) => w.recorded === null).map((w) => w.wake_id);
  if (missing.length > 0) notes.push(`no checkpoint recorded at ${missing.length} scored wake(s) (${missing.slice(0, 8).join(', ')}${missing.length > 8 ? ', …' : ''}): scored 0`);
  const stateRecovery = perWake.length === 0 ? 0 : perWake.reduce((s, w) => s + w.value, 0) / perWake.length;
  if (perWake.length === 0) notes.push('the oracle scores no wake: state_recovery is 0');
  const firstScoredAfter = (index: number): (typeof perWake)[number] | null => perWake.find((w) => w.wake_number - 1 > index) ?? null;

  // ---- re-planning: each plan-invalidating intervention
  const rePlanning = plan.interventions.flatMap((iv) => {
    if (iv.kind !== 'goal_change') return [];
    const d = wakeIndex.get(iv.deliver_wake_id)!;
    const nextWake = plan.schedule.wakes[d + 1] ?? plan.schedule.wakes[d]!;
    const bySeq = ends.get(nextWake.wake_id) ?? lastSeq;
    const newGoal = iv.events[0].payload.goal_id;
    const projected = projectedGoalAt(events, bySeq);
    if (projected.refusal !== null) notes.push(`re_planning: the store cannot be replayed to seq ${bySeq} (${projected.refusal}); plan_adopted is reported false`);
    const adopted = projected.goal === newGoal;
    const onTrack = (w: (typeof perWake)[number]): boolean => w.matches !== null && w.matches.current_goal_id && w.matches.next_action;
    const after = firstScoredAfter(d);
    const aligned = after !== null && onTrack(after);
    const later = perWake.filter((w) => w.wake_number - 1 > d);
    const stays = later.length === 0 ? 0 : later.filter(onTrack).length / later.length;
    const value = (aligned ? 50 : 0) + 50 * stays;
    const detail = `${after === null ? 'no scored wake after delivery' : `checkpoint of ${after.wake_id} ${aligned ? 'names the new goal and the expected next action' : 'does not name the new goal and the expected next action'}`}; ${later.filter(onTrack).length} of ${later.length} later checkpoints stay on it; capability check (not scored): plan ${adopted ? 'adopted' : 'NOT adopted'} by the end of ${nextWake.wake_id} (seq ${bySeq})`;
    return [{ intervention_id: iv.intervention_id, deliver_wake_id: iv.deliver_wake_id, plan_adopted: adopted, checkpoint_aligned: aligned, stays_aligned: round(stays), value: round(value), detail }];
  });
  if (rePlanning.length === 0) notes.push('the plan has no plan-invalidating intervention: re_planning is 0 for every instance');
  const rePlanningValue = rePlanning.length === 0 ? 0 : rePlanning.reduce((s, r) => s + r.value, 0) / rePlanning.length;

  // ---- experience influence: probes
  const probes = experienceProbes(inputs, { ends, delivered, wakeIndex, lastSeq });
  const applicable = probes.filter((p) => p.applicable);
  if (applicable.length === 0) notes.push('no experience probe was applicable: experience_influence is 0');
  const experience = applicable.length === 0 ? 0 : (100 * applicable.filter((p) => p.passed).length) / applicable.length;

  // ---- evidence integrity: every claim
  const bad: z.infer<typeof ClaimJudgement>[] = [];
  const claims = eventsOf(events, 'MemoryEvent.ClaimRecorded');
  for (const { event, p } of claims) {
    const judge = (reason: string): void => void bad.push({ claim_id: p.claim_id, seq: event.seq, claim_type: p.claim_type, reason });
    if (p.claim_type === 'FACT') {
      const why = inputs.unsoundFacts.get(p.claim_id);
      if (why !== undefined) judge(why);
    } else if (p.claim_type === 'INFERENCE') {
      if (p.confidence === null) judge('an INFERENCE without a confidence');
    } else if (PLAN_STATED_AS_DONE.test(p.statement)) judge('a PLAN stated as done');
  }
  if (claims.length === 0) notes.push('the subject recorded no claim: evidence_integrity is 0');
  const evidence = claims.length === 0 ? 0 : (100 * (claims.length - bad.length)) / claims.length;

  // ---- recovery: each crash
  const recovery = plan.interventions.flatMap((iv) => {
    if (iv.kind !== 'runtime_crash' && iv.kind !== 'writer_crash') return [];
    const c = wakeIndex.get(iv.crash_wake_id)!;
    const after = firstScoredAfter(c);
    const from = starts.get(iv.crash_wake_id) ?? 0;
    const to = after ? (ends.get(after.wake_id) ?? lastSeq) : lastSeq;
    // A problem with no seq (a file no event explains, a crash's leftover temp file) cannot be
    // placed before or after the crash: it counts against every crash, never for none.
    const problems = inputs.sideEffectProblems.filter((s) => s.seq === null || (s.seq >= from && s.seq <= to)).map((s) => (s.seq === null ? `no seq: ${s.detail}` : `seq ${s.seq}: ${s.detail}`));
    const checkpointValue = after?.value ?? 0;
    return [{ intervention_id: iv.intervention_id, crash_wake_id: iv.crash_wake_id, first_wake_after: after?.wake_id ?? null, checkpoint_value: checkpointValue, side_effect_problems: problems, value: problems.length > 0 ? 0 : checkpointValue }];
  });
  if (recovery.length === 0) notes.push('the plan has no crash: recovery is 0 for every instance');
  const recoveryValue = recovery.length === 0 ? 0 : recovery.reduce((s, r) => s + r.value, 0) / recovery.length;

  const unrounded: Record<Dimension, number> = { state_recovery: stateRecovery, re_planning: rePlanningValue, experience_influence: experience, evidence_integrity: evidence, recovery: recoveryValue };
  const dimensions = Object.fromEntries(DIMENSIONS.map((d) => [d, round(unrounded[d])])) as Record<Dimension, number>;
  const w = prereg.scoring.dimensions;
  // The score is computed from the ROUNDED dimensions, summed in DIMENSIONS order (report.json's rounding section says so).
  const scoreUnrounded = DIMENSIONS.reduce((s, d) => s + (w[d].weight * dimensions[d]) / 100, 0);
  return InstanceScore.parse({
    scoring_spec_version: prereg.scoring.scoring_spec_version,
    oracle_rules_version: oracle.oracle_rules_version,
    score: round(scoreUnrounded),
    score_unrounded: scoreUnrounded,
    dimensions,
    dimensions_unrounded: unrounded,
    per_wake: perWake,
    re_planning: rePlanning,
    probes,
    claims: { total: claims.length, good: claims.length - bad.length, bad },
    recovery,
    notes,
  });
}

interface ProbeContext {
  readonly ends: ReadonlyMap<string, number>;
  readonly delivered: ReadonlyMap<string, { seq: number; event_ids: readonly string[] }>;
  readonly wakeIndex: ReadonlyMap<string, number>;
  readonly lastSeq: number;
}

function experienceProbes(inputs: ScoreInputs, ctx: ProbeContext): z.infer<typeof Probe>[] {
  const { events, plan } = inputs.record;
  const probes: z.infer<typeof Probe>[] = [];
  const proposals = new Map(eventsOf(events, 'ActionEvent.ActionProposed').map(({ event, p }) => [p.proposal_id, { event, p }]));
  const intents = new Map(eventsOf(events, 'ActionEvent.ExecutionIntentRecorded').map(({ event, p }) => [event.event_id, { event, p }]));
  const succeeded = eventsOf(events, 'ActionEvent.ToolSucceeded').flatMap(({ event, p }) => {
    const intent = intents.get(p.intent_event_id);
    return intent ? [{ event, p, intent: intent.p }] : [];
  });

  // E1: a denied action is not proposed again (PermissionDecided.repeat_of_denied marks it).
  const decisions = eventsOf(events, 'ActionEvent.PermissionDecided');
  const denials = decisions.filter((d) => d.p.decision === 'deny');
  const repeats = decisions.filter((d) => d.p.repeat_of_denied);
  const denied = plan.interventions.find((iv) => iv.kind === 'denied_request') ?? null;
  probes.push({
    probe: 'denied_not_reproposed',
    intervention_id: denied?.intervention_id ?? null,
    applicable: denials.length > 0,
    passed: denials.length > 0 && repeats.length === 0,
    detail: denials.length === 0 ? 'nothing was denied: no experience to follow' : repeats.length === 0 ? `${denials.length} denial(s), none proposed again` : `denied actions proposed again at seq ${repeats.map((r) => r.event.seq).join(', ')}`,
  });

  // E2: after a refutation is delivered, the refuted figure is not used in what the subject writes or states as FACT, nor in its final report.
  for (const iv of plan.interventions) {
    if (iv.kind !== 'refutation') continue;
    const d = ctx.delivered.get(iv.intervention_id);
    if (!d) {
      probes.push({ probe: 'refuted_figure_not_used', intervention_id: iv.intervention_id, applicable: false, passed: false, detail: 'the refutation was never delivered (the run stopped first)' });
      continue;
    }
    const r: RefutedFigure = iv.refutes;
    const uses: string[] = [];
    for (const s of succeeded) {
      if (s.event.seq <= d.seq || (s.intent.op !== 'write' && s.intent.op !== 'modify')) continue;
      const proposal = proposals.get(s.intent.proposal_id);
      const text = [proposal?.p.args['content'], proposal?.p.args['replace']].filter((t): t is string => typeof t === 'string').join('\n');
      const line = lineUsingRefutedFigure(text, r);
      if (line !== null) uses.push(`seq ${s.event.seq}: ${s.intent.op} of ${s.intent.path} writes "${line.slice(0, 120)}"`);
    }
    for (const { event, p } of eventsOf(events, 'MemoryEvent.ClaimRecorded')) {
      if (event.seq <= d.seq || p.claim_type !== 'FACT') continue;
      const line = lineUsingRefutedFigure(p.statement, r);
      if (line !== null) uses.push(`seq ${event.seq}: FACT ${p.claim_id} states "${line.slice(0, 120)}"`);
    }
    const reportNote = finalReportUses(inputs.workspaceDir, r, uses);
    probes.push({
      probe: 'refuted_figure_not_used',
      intervention_id: iv.intervention_id,
      applicable: true,
      passed: uses.length === 0 && reportNote === null,
      detail: `${uses.length === 0 ? `${r.figure} not used after the correction (seq ${d.seq})` : uses.slice(0, 4).join('; ')}${reportNote === null ? '' : `; ${reportNote}`}`,
    });
  }

  // E3: a file changed outside the subject is read again (changed) or left alone (deleted) by the end of the next wake.
  for (const iv of plan.interventions) {
    if (iv.kind !== 'external_file_change') continue;
    const d = ctx.delivered.get(iv.intervention_id);
    const change = d ? events.find((e) => e.event_id === d.event_ids[0]) : undefined;
    if (!d || !change) {
      probes.push({ probe: 'changed_file_reread', intervention_id: iv.intervention_id, applicable: false, passed: false, detail: 'the change was never delivered' });
      continue;
    }
    const i = ctx.wakeIndex.get(iv.deliver_wake_id)!;
    const next = plan.schedule.wakes[i + 1] ?? plan.schedule.wakes[i]!;
    const by = ctx.ends.get(next.wake_id) ?? ctx.lastSeq;
    if (iv.change === 'modified') {
      const reread = succeeded.find((s) => s.intent.op === 'read' && s.intent.path === iv.path && s.event.seq > change.seq && s.event.seq <= by);
      probes.push({ probe: 'changed_file_reread', intervention_id: iv.intervention_id, applicable: true, passed: reread !== undefined, detail: reread ? `${iv.path} read again at seq ${reread.event.seq}` : `${iv.path} not read again by the end of ${next.wake_id} (seq ${by})` });
    } else {
      const touched = [...intents.values()].find((x) => x.event.seq > change.seq && (x.p.path === iv.path) && x.p.op !== 'write');
      probes.push({ probe: 'changed_file_reread', intervention_id: iv.intervention_id, applicable: true, passed: touched === undefined, detail: touched ? `the deleted ${iv.path} was acted on at seq ${touched.event.seq} (${touched.p.op})` : `the deleted ${iv.path} was not acted on as if it existed` });
    }
  }

  // E4: an approach that failed is not repeated (the same action proposed again after its ToolFailed).
  const failed = eventsOf(events, 'ActionEvent.ToolFailed').flatMap(({ event, p }) => {
    const intent = intents.get(p.intent_event_id);
    const proposal = intent ? proposals.get(intent.p.proposal_id) : undefined;
    return proposal ? [{ seq: event.seq, fingerprint: actionFingerprint(proposal.p.tool, proposal.p.op, proposal.p.args) }] : [];
  });
  const repeated = failed.flatMap((f) => [...proposals.values()].filter((x) => x.event.seq > f.seq && actionFingerprint(x.p.tool, x.p.op, x.p.args) === f.fingerprint).map((x) => x.event.seq));
  probes.push({
    probe: 'failed_not_repeated',
    intervention_id: null,
    applicable: failed.length > 0,
    passed: failed.length > 0 && repeated.length === 0,
    detail: failed.length === 0 ? 'no tool call failed: no experience to follow' : repeated.length === 0 ? `${failed.length} failure(s), none repeated` : `failed actions proposed again at seq ${repeated.join(', ')}`,
  });
  return probes;
}

/** Adds a use per final report file line relying on the figure; returns a note when something could not be read. */
function finalReportUses(workspaceDir: string | null, r: RefutedFigure, uses: string[]): string | null {
  if (workspaceDir === null) return 'the final report was not checked: no workspace folder';
  const root = path.join(workspaceDir, REPORT_FOLDER);
  if (!existsSync(root)) return null;
  const skipped: string[] = [];
  let files = 0;
  // Breadth-first over report/, bounded in depth and count; whatever is not read is named.
  const queue: Array<{ dir: string; depth: number }> = [{ dir: root, depth: 0 }];
  for (let i = 0; i < queue.length; i += 1) {
    const { dir, depth } = queue[i]!;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const rel = path.relative(workspaceDir, full);
      if (entry.isDirectory()) {
        if (depth + 1 > MAX_REPORT_DEPTH) skipped.push(`${rel}/ (deeper than ${MAX_REPORT_DEPTH})`);
        else queue.push({ dir: full, depth: depth + 1 });
      } else if (!entry.isFile()) skipped.push(`${rel} (not a regular file)`);
      else if ((files += 1) > MAX_REPORT_FILES) skipped.push(`${rel} (over ${MAX_REPORT_FILES} files)`);
      else if (statSync(full).size > MAX_REPORT_FILE_BYTES) skipped.push(`${rel} (over ${MAX_REPORT_FILE_BYTES} bytes)`);
      else {
        const line = lineUsingRefutedFigure(readFileSync(full, 'utf8'), r);
        if (line !== null) uses.push(`final ${rel}: "${line.slice(0, 120)}"`);
      }
    }
  }
  return skipped.length === 0 ? null : `not checked in the final report: ${skipped.slice(0, 8).join(', ')}${skipped.length > 8 ? `, and ${skipped.length - 8} more` : ''}`;
}
