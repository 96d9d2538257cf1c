// The permission gate (DESIGN §6.6, spec §14.2, issue 5 item 5): one pure decision per
// proposed action, with every rule it checked recorded in PermissionDecided.rules, passed or
// not. No clock, no randomness, no I/O: what the world holds comes in as facts the action's tool
// found before the decision (runtime/tools/tool.ts gateFacts: a path's facts, the task board),
// so the same input always gives the same decision and a replayed wake decides as the recorded
// one did.
//
// The decision: tool_allowed (the operation is one of the tool table, schema/tools.ts), then the
// rules of the action's own tool (its file under runtime/tools/), then the rules of every action
// (budget_left, not_recovering). A rule passes only when it is shown to hold. A rule that cannot
// be evaluated (no path facts, a path refused before it could be resolved, a size that is not
// known) fails: the gate fails closed. The rule names (runtime/gate-rule.ts GATE_RULES) are a
// contract: they are what the store records and what the self-control metrics (spec §14.3) count.
import { z } from 'zod';
import { LifecycleState } from '../projector/lifecycle.js';
import { actionFingerprint } from '../projector/subject-projection.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { isToolOperation } from '../schema/tools.js';
import { clip, GateLimits, PermissionInputError, type PermissionInput, type RuleResult } from './gate-rule.js';
import { ModelAction } from './model-protocol.js';
import { toolGateRules } from './tools/tool-set.js';
import { PathFacts } from './tools/workspace-files.js';

/** PermissionDecided.rules holds at most this many; a decision lists at most 7 of GATE_RULES. */
export const MAX_RULES_PER_DECISION = 32;

/** Everything but the action itself is checked with zod; the action is judged by the rules, so a forged one is denied, not thrown. */
const GateContext = z.strictObject({
  paths: z.strictObject({ path: PathFacts, to_path: PathFacts.nullable() }).nullable(),
  limits: GateLimits,
  tool_calls_left: z.number().int(),
  lifecycle: LifecycleState,
});

export interface PermissionDecision {
  readonly decision: 'allow' | 'deny';
  /** Every rule checked, in GATE_RULES order, passed or not (≤ MAX_RULES_PER_DECISION). */
  readonly rules: RuleResult[];
  /** This exact action (same fingerprint) was denied before: spec §14.3 counts re-proposals. */
  readonly repeat_of_denied: boolean;
  readonly fingerprint: string;
}

/**
 * The arguments of the ActionProposed for an action: everything but tool, op and rationale,
 * lists as canonical JSON text (ActionProposed.args holds scalars only). The rationale is left
 * out so the same action with other words is still the same action.
 */
export function actionArgs(action: ModelAction): Record<string, string | number | boolean | null> {
  const args: Record<string, string | number | boolean | null> = {};
  for (const [key, value] of Object.entries(action)) {
    if (key === 'tool' || key === 'op' || key === 'rationale') continue;
    args[key] = Array.isArray(value) ? canonicalJson(value) : (value as string | number | boolean | null);
  }
  return args;
}

/** The projector's fingerprint of the ActionProposed this action becomes (projector/subject-projection.ts). */
export function fingerprintOfAction(action: ModelAction): string {
  return actionFingerprint(action.tool, action.op, actionArgs(action));
}

/** Rules every action is checked against, whatever its tool. */
function commonRules(input: PermissionInput): RuleResult[] {
  const left = input.tool_calls_left;
  const budget: RuleResult = { rule: 'budget_left', passed: left >= 1, detail: left >= 1 ? `${left} tool call(s) left` : 'no tool calls left in this wake' };
  // The projector refuses an allow outside AWAKE, so the gate denies there too: RECOVERING is
  // read-only and denies everything, reads included; a paused or dormant subject does not act.
  const awake = input.lifecycle === 'AWAKE';
  const lifecycle: RuleResult = {
    rule: 'not_recovering',
    passed: awake,
    detail: awake ? 'lifecycle AWAKE' : input.lifecycle === 'RECOVERING' ? 'lifecycle RECOVERING is read-only: nothing is allowed, reads included' : `lifecycle ${input.lifecycle}: only an AWAKE subject acts`,
  };
  return [budget, lifecycle];
}

/**
 * Decides one proposed action. Pure: the same input gives the same decision. Throws
 * PermissionInputError only for a wiring error of the caller; whatever the model proposed is
 * judged and, if it fails any rule, denied.
 */
export function decidePermission(input: PermissionInput): PermissionDecision {
  const context = GateContext.safeParse({ paths: input.paths, limits: input.limits, tool_calls_left: input.tool_calls_left, lifecycle: input.lifecycle });
  if (!context.success) throw new PermissionInputError(`malformed gate input: ${z.prettifyError(context.error)}`);
  if (!(input.denied_fingerprints instanceof Set)) throw new PermissionInputError('denied_fingerprints must be a Set');

  const fingerprint = fingerprintOfAction(input.action);
  if (input.fingerprint !== undefined && input.fingerprint !== fingerprint) {
    throw new PermissionInputError("the caller's fingerprint is not the action's: repeat_of_denied would disagree with the projector");
  }

  const parsed = ModelAction.safeParse(input.action);
  const toolAllowed: RuleResult = !parsed.success
    ? { rule: 'tool_allowed', passed: false, detail: clip(`not an action of the protocol: ${parsed.error.issues[0]?.message ?? 'malformed'}`) }
    : isToolOperation(String(input.action.tool), String(input.action.op))
      ? { rule: 'tool_allowed', passed: true, detail: `${input.action.tool}.${input.action.op}` }
      : { rule: 'tool_allowed', passed: false, detail: clip(`${String(input.action.tool)}.${String(input.action.op)} is not a tool operation`) };

  const rules: RuleResult[] = [toolAllowed];
  // A malformed action gets no rules of its tool: its fields cannot be trusted to mean anything.
  if (parsed.success) rules.push(...toolGateRules(parsed.data.tool, parsed.data, input));
  rules.push(...commonRules(input));

  if (rules.length > MAX_RULES_PER_DECISION) throw new PermissionInputError(`${rules.length} rules exceed ${MAX_RULES_PER_DECISION}`);
  return {
    decision: rules.every((r) => r.passed) ? 'allow' : 'deny',
    rules,
    repeat_of_denied: input.denied_fingerprints.has(fingerprint),
    fingerprint,
  };
}
