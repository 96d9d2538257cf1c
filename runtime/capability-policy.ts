// The Capability Policy (DESIGN §1, §6 step 5, issue 5 item 4): what the group switches mean
// for a wake. Pure functions of their arguments (no clock: the wake's time comes in as data).
//
// - persistent_state: B and C see the persistent projection at every wake; A's state is
//   rebuilt from the retrieval window at each wake and discarded afterwards
//   (keepsStateAcrossWakes; runtime/context-bundle.ts is the only observer of it).
// - autonomous_replanning: every group may output a PlanRevisionProposal, but only C's can be
//   accepted. judgePlanRevision answers once, from its arguments alone: it has no way to call
//   the model again, to retry, or to prompt for a better plan, so a rejection in A/B is the
//   whole answer (spec §5.2).
import { z } from 'zod';
import type { Capabilities } from '../schema/capabilities.js';
import { Identifier, ShortText, Timestamp } from '../schema/event-definition.js';
import { PlanRevisionRejected } from '../schema/events/plan-events.js';
import { MODEL_OUTPUT_LIMITS } from './model-protocol.js';

export const RejectionReason = PlanRevisionRejected.payload.shape.reason_code;
export type RejectionReason = z.infer<typeof RejectionReason>;

export const PlanVerdict = z.discriminatedUnion('verdict', [
  z.strictObject({ verdict: z.literal('accept') }),
  z.strictObject({ verdict: z.literal('reject'), reason_code: RejectionReason, detail: z.string().min(1) }),
]);
export type PlanVerdict = z.infer<typeof PlanVerdict>;

/** What a revision must say to be judged: a model's ModelPlanRevision and a PlanRevisionProposed payload both are one. */
export interface PlanRevisionInput {
  readonly goal_id: string;
  readonly goal_description: string;
  readonly deadline_at: string | null;
  readonly steps: ReadonlyArray<{ readonly task_id: string; readonly title: string }>;
}

/** The wake the revision is judged in (a ContextBundle is one): only its time is used. */
export interface PlanJudgementContext {
  readonly wake: { readonly wake_at: string };
}

/** At most this many problems are named in a rejection's detail. */
const MAX_PROBLEMS_NAMED = 8;

/** True for B and C: the Subject State is the persistent projection, kept across wakes. */
export function keepsStateAcrossWakes(capabilities: Capabilities): boolean {
  return capabilities.persistent_state;
}

/** What is wrong with a revision, for C (empty when it is valid). */
export function planProblems(revision: PlanRevisionInput, context: PlanJudgementContext): string[] {
  const problems: string[] = [];
  if (!Identifier.safeParse(revision.goal_id).success) problems.push(`goal_id ${JSON.stringify(revision.goal_id.slice(0, 64))} is not a non-empty identifier`);
  if (revision.goal_description.trim().length === 0) problems.push('goal_description is empty');
  if (revision.steps.length === 0) problems.push('the plan has no step');
  if (revision.steps.length > MODEL_OUTPUT_LIMITS.maxPlanSteps) problems.push(`${revision.steps.length} steps, more than ${MODEL_OUTPUT_LIMITS.maxPlanSteps}`);
  const seen = new Set<string>();
  // Bounded: a list over the step limit was already named above and is judged only up to it.
  for (const [i, step] of revision.steps.slice(0, MODEL_OUTPUT_LIMITS.maxPlanSteps).entries()) {
    if (!Identifier.safeParse(step.task_id).success) problems.push(`step ${i + 1}: task_id is not an identifier`);
    else if (seen.has(step.task_id)) problems.push(`step ${i + 1}: task_id ${step.task_id} appears twice`);
    seen.add(step.task_id);
    if (!ShortText.safeParse(step.title).success) problems.push(`step ${i + 1}: title must be 1-200 characters`);
  }
  if (revision.deadline_at !== null) {
    const wakeMs = Date.parse(context.wake.wake_at);
    if (!Timestamp.safeParse(revision.deadline_at).success) problems.push(`deadline_at ${JSON.stringify(revision.deadline_at.slice(0, 64))} is not an ISO-8601 UTC timestamp`);
    else if (!Number.isFinite(wakeMs)) problems.push(`the wake time ${JSON.stringify(context.wake.wake_at)} is not a timestamp: the deadline cannot be judged`);
    else if (Date.parse(revision.deadline_at) < wakeMs) problems.push(`deadline_at ${revision.deadline_at} is before the wake (${context.wake.wake_at})`);
  }
  return problems;
}

/**
 * A/B: always 'capability_disabled', whatever the revision says (it is not even looked at:
 * judging it would tell the subject something a group without re-planning does not get).
 * C: accepted when valid, else 'invalid_plan' naming the problems.
 */
export function judgePlanRevision(capabilities: Capabilities, revision: PlanRevisionInput, context: PlanJudgementContext): PlanVerdict {
  if (!capabilities.autonomous_replanning) {
    return { verdict: 'reject', reason_code: 'capability_disabled', detail: 'autonomous re-planning is switched off: the plan stays as it is' };
  }
  const problems = planProblems(revision, context);
  if (problems.length === 0) return { verdict: 'accept' };
  const named = problems.slice(0, MAX_PROBLEMS_NAMED).join('; ');
  return { verdict: 'reject', reason_code: 'invalid_plan', detail: problems.length > MAX_PROBLEMS_NAMED ? `${named} (+${problems.length - MAX_PROBLEMS_NAMED} more)` : named };
}
