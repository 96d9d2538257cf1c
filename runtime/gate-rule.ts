// What a rule of the permission gate is (DESIGN §6.6, spec §14.2): its name, the result it
// records in PermissionDecided.rules, and the input it judges. The gate (runtime/permission-gate.ts)
// checks tool_allowed (an operation of the tool table, schema/tools.ts) and the rules of every
// action itself; each tool's own rules are in its file under runtime/tools/, written against this
// vocabulary, so the gate and the tools share it without importing each other.
//
// The rule names are a contract: they are what the store records and what the self-control
// metrics (spec §14.3) count. A rule passes only when it is shown to hold; one that cannot be
// evaluated fails: the gate fails closed.
import { z } from 'zod';
import { InternalError } from '../foundation/typed-error.js';
import type { LifecycleState } from '../projector/lifecycle.js';
import type { ModelAction } from './model-protocol.js';
import type { PathFacts } from './tools/workspace-files.js';

/** Every rule, in the order a decision lists them: tool_allowed, the tool's own, then the rules of every action. */
export const GATE_RULES = ['tool_allowed', 'path_inside_workspace', 'no_symlink_escape', 'size_within_limit', 'target_free_or_same', 'task_board_consistent', 'budget_left', 'not_recovering'] as const;
export const GateRule = z.enum(GATE_RULES);
export type GateRule = z.infer<typeof GateRule>;

/** PermissionDecided rule details are ShortText (schema/event-definition.ts). */
export const MAX_DETAIL_CHARS = 200;

export const RuleResult = z.strictObject({ rule: GateRule, passed: z.boolean(), detail: z.string().min(1).max(MAX_DETAIL_CHARS) });
export type RuleResult = z.infer<typeof RuleResult>;

export const GateLimits = z.strictObject({
  maxWriteBytes: z.number().int().min(0),
  maxReadBytes: z.number().int().min(0),
});
export type GateLimits = z.infer<typeof GateLimits>;

/** The limits a wake's file actions are judged (and executed) with. */
export const FILE_LIMITS = { maxWriteBytes: 64 * 1024, maxReadBytes: 32 * 1024 } as const satisfies GateLimits;

export interface PermissionInput {
  readonly action: ModelAction;
  /** Facts for a files action's path and (for a move) to_path; null for task board and journal. */
  readonly paths: { readonly path: PathFacts; readonly to_path: PathFacts | null } | null;
  readonly limits: GateLimits;
  readonly tool_calls_left: number;
  readonly lifecycle: LifecycleState;
  /** Fingerprints of actions denied before (SubjectState.denied_actions keys, plus this wake's). */
  readonly denied_fingerprints: ReadonlySet<string>;
  /** The caller's fingerprint of the action, if it computed one: must equal the gate's. */
  readonly fingerprint?: string;
  /** Task ids on the board now (SubjectState.task_board), for task board actions; null when unknown (then such actions are denied). */
  readonly task_ids?: ReadonlySet<string> | null;
}

/** What a tool tells the gate of the world before it decides (runtime/tools/tool.ts gateFacts): the rest of the input is the wake's. */
export type GateFacts = Pick<PermissionInput, 'paths' | 'task_ids'>;

/** A wiring error of the caller (malformed limits or facts, a fingerprint that is not the action's): never a model's doing. */
export class PermissionInputError extends InternalError {
  override readonly name = 'PermissionInputError';
}

/** A detail cut to what PermissionDecided keeps, the cut marked. */
export function clip(detail: string): string {
  return detail.length <= MAX_DETAIL_CHARS ? detail : `${detail.slice(0, MAX_DETAIL_CHARS - 1)}…`;
}
