// The permission gate (DESIGN §6.6, spec §14.2, issue 5 item 5): one pure decision per
// proposed action, with every rule it checked recorded in PermissionDecided.rules, passed or
// not. No clock, no randomness, no I/O: what the file system says comes in as path facts
// (runtime/files-tool.ts inspectPath), so the same input always gives the same decision and a
// replayed wake decides as the recorded one did.
//
// A rule passes only when it is shown to hold. A rule that cannot be evaluated (no path
// facts, a path refused before it could be resolved, a size that is not known) fails: the
// gate fails closed. The rule names are a contract: they are what the store records and what
// the self-control metrics (spec §14.3) count.
import { z } from 'zod';
import { InternalError } from '../foundation/typed-error.js';
import { LifecycleState } from '../projector/lifecycle.js';
import { actionFingerprint } from '../projector/subject-projection.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { checkWorkspacePath } from '../schema/workspace-path.js';
import { MAX_READ_CONTENT_CHARS } from '../schema/events/action-events.js';
import { ModelAction } from './model-protocol.js';

export const GATE_RULES = ['tool_allowed', 'path_inside_workspace', 'no_symlink_escape', 'size_within_limit', 'target_free_or_same', 'task_board_consistent', 'budget_left', 'not_recovering'] as const;
export const GateRule = z.enum(GATE_RULES);
export type GateRule = z.infer<typeof GateRule>;

/** PermissionDecided.rules holds at most this many; a decision lists at most 7 of GATE_RULES. */
export const MAX_RULES_PER_DECISION = 32;
/** PermissionDecided rule details are ShortText (schema/event-definition.ts). */
const MAX_DETAIL_CHARS = 200;

/** The only tools and operations the subject has (DESIGN §7); anything else is denied by tool_allowed. */
export const TOOL_OPS: Readonly<Record<string, readonly string[]>> = {
  files: ['read', 'write', 'modify', 'move'],
  task_board: ['add', 'update', 'complete', 'remove'],
  journal: ['write'],
};

/** What the files tool found for one workspace-relative path (runtime/files-tool.ts inspectPath). */
export const PathFacts = z.strictObject({
  /** The path after normalisation, relative to the workspace; null when it was refused. */
  normalized: z.string().nullable(),
  /** Lexically inside the workspace after normalisation (no `..`, not absolute, no NUL or backslash). */
  inside_workspace: z.boolean(),
  /** Resolving symlinks (of the deepest existing ancestor) leaves the workspace, or cannot be shown to stay in it. */
  symlink_escape: z.boolean(),
  exists: z.boolean(),
  /** Size of the regular file there; null when absent, not a regular file, or outside. */
  size_bytes: z.number().int().min(0).nullable(),
});
export type PathFacts = z.infer<typeof PathFacts>;

export const GateLimits = z.strictObject({
  maxWriteBytes: z.number().int().min(0),
  maxReadBytes: z.number().int().min(0),
});
export type GateLimits = z.infer<typeof GateLimits>;

/** Everything but the action itself is checked with zod; the action is judged by the rules, so a forged one is denied, not thrown. */
const GateContext = z.strictObject({
  paths: z.strictObject({ path: PathFacts, to_path: PathFacts.nullable() }).nullable(),
  limits: GateLimits,
  tool_calls_left: z.number().int(),
  lifecycle: LifecycleState,
});

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

/** The board holds at most this many tasks (projector/subject-state.ts SUBJECT_LIMITS.maxTasks). */
const MAX_TASKS = 256;

/**
 * What the projector would refuse for a task board change, judged before it is allowed: an
 * allowed action must be executable, or the allow would stand with no outcome.
 */
function taskBoardConsistent(action: Extract<ModelAction, { tool: 'task_board' }>, taskIds: ReadonlySet<string> | null | undefined): RuleResult {
  const rule = 'task_board_consistent';
  if (!taskIds) return { rule, passed: false, detail: 'the task board is not known: cannot be judged' };
  const exists = taskIds.has(action.task_id);
  if (action.op === 'add') {
    if (exists) return { rule, passed: false, detail: clip(`task ${action.task_id} exists: add a new id or update it`) };
    if (action.title === null) return { rule, passed: false, detail: 'a new task needs a title' };
    if (taskIds.size >= MAX_TASKS) return { rule, passed: false, detail: `the board holds ${MAX_TASKS} tasks, its limit` };
    return { rule, passed: true, detail: clip(`task ${action.task_id} is new`) };
  }
  return exists ? { rule, passed: true, detail: clip(`task ${action.task_id} is on the board`) } : { rule, passed: false, detail: clip(`no task ${action.task_id} on the board to ${action.op}`) };
}

export const RuleResult = z.strictObject({ rule: GateRule, passed: z.boolean(), detail: z.string().min(1).max(MAX_DETAIL_CHARS) });
export type RuleResult = z.infer<typeof RuleResult>;

export interface PermissionDecision {
  readonly decision: 'allow' | 'deny';
  /** Every rule checked, in GATE_RULES order, passed or not (≤ MAX_RULES_PER_DECISION). */
  readonly rules: RuleResult[];
  /** This exact action (same fingerprint) was denied before: spec §14.3 counts re-proposals. */
  readonly repeat_of_denied: boolean;
  readonly fingerprint: string;
}

/** A wiring error of the caller (malformed limits or facts, a fingerprint that is not the action's): never a model's doing. */
export class PermissionInputError extends InternalError {
  override readonly name = 'PermissionInputError';
}

export type NormalizedPath = { readonly ok: true; readonly normalized: string } | { readonly ok: false; readonly reason: string };

/**
 * The workspace-relative form of a path as the model wrote it, or why it is refused: the one
 * workspace path rule (schema/workspace-path.ts), its clause named in the reason. Pure.
 */
export function normalizeWorkspacePath(raw: string): NormalizedPath {
  const checked = checkWorkspacePath(raw);
  return checked.ok ? { ok: true, normalized: checked.normalized } : { ok: false, reason: `${checked.reason} (workspace path rule, ${checked.clause})` };
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

function clip(detail: string): string {
  return detail.length <= MAX_DETAIL_CHARS ? detail : `${detail.slice(0, MAX_DETAIL_CHARS - 1)}…`;
}

/** A path for a detail: quoted, and cut so the detail stays within ShortText. */
function shown(raw: string): string {
  return JSON.stringify(raw.length <= 60 ? raw : `${raw.slice(0, 57)}...`);
}

function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

interface NamedPath {
  readonly label: 'path' | 'to_path';
  readonly raw: string;
  readonly facts: PathFacts | null;
}

/** Lexical containment: the gate normalises again itself, so facts that disagree with the raw path are not trusted. */
function insideWorkspace(p: NamedPath): { passed: boolean; detail: string } {
  const normalized = normalizeWorkspacePath(p.raw);
  if (!normalized.ok) return { passed: false, detail: `${p.label} ${shown(p.raw)}: ${normalized.reason}` };
  if (p.facts === null) return { passed: false, detail: `${p.label}: no path facts to judge` };
  if (p.facts.normalized !== normalized.normalized) return { passed: false, detail: `${p.label}: the path facts are for another path` };
  if (!p.facts.inside_workspace) return { passed: false, detail: `${p.label} ${shown(normalized.normalized)} is outside the workspace` };
  return { passed: true, detail: `${p.label} ${shown(normalized.normalized)} inside` };
}

function noSymlinkEscape(p: NamedPath): { passed: boolean; detail: string } {
  if (p.facts === null || p.facts.normalized === null) return { passed: false, detail: `${p.label}: not resolved (refused before resolution)` };
  if (p.facts.symlink_escape) return { passed: false, detail: `${p.label} ${shown(p.facts.normalized)}: a symlink leads outside the workspace` };
  return { passed: true, detail: `${p.label}: resolves inside` };
}

/** Several paths judged by one rule: it passes only if it passes for each; the detail names each. */
function combine(rule: GateRule, results: readonly { passed: boolean; detail: string }[]): RuleResult {
  return { rule, passed: results.every((r) => r.passed), detail: clip(results.map((r) => r.detail).join('; ')) };
}

function sizeWithinLimit(action: Extract<ModelAction, { tool: 'files' }>, facts: PathFacts | null, limits: GateLimits): RuleResult {
  const rule = 'size_within_limit';
  switch (action.op) {
    case 'write': {
      const bytes = utf8Bytes(action.content);
      return { rule, passed: bytes <= limits.maxWriteBytes, detail: `write of ${bytes} bytes; limit ${limits.maxWriteBytes}` };
    }
    case 'modify': {
      if (facts === null || facts.size_bytes === null) return { rule, passed: false, detail: 'no file to modify: the result size is unknown' };
      // Exact when `find` occurs (and if it does not, the tool writes nothing).
      const bytes = Math.max(0, facts.size_bytes - utf8Bytes(action.find) + utf8Bytes(action.replace));
      return { rule, passed: bytes <= limits.maxWriteBytes, detail: `modify result of ${bytes} bytes; limit ${limits.maxWriteBytes}` };
    }
    case 'read': {
      // What a read returns is stored in ToolSucceeded.content; UTF-8 never decodes to more
      // UTF-16 units than it has bytes, so a byte bound at the content bound keeps it storable.
      const limit = Math.min(limits.maxReadBytes, MAX_READ_CONTENT_CHARS);
      if (facts === null || facts.size_bytes === null) return { rule, passed: false, detail: 'no file to read: its size is unknown' };
      return { rule, passed: facts.size_bytes <= limit, detail: `read of ${facts.size_bytes} bytes; limit ${limit}` };
    }
    case 'move':
      throw new PermissionInputError('size_within_limit is not a rule of a move');
    default: {
      const unhandled: never = action;
      throw new PermissionInputError(`no size rule for ${JSON.stringify(unhandled)}`);
    }
  }
}

function targetFreeOrSame(from: PathFacts | null, to: PathFacts | null): RuleResult {
  const rule = 'target_free_or_same';
  if (from === null || to === null || from.normalized === null || to.normalized === null) return { rule, passed: false, detail: 'not resolved: the target cannot be judged' };
  if (from.normalized === to.normalized) return { rule, passed: true, detail: 'to_path is the path itself: nothing moves' };
  if (to.exists) return { rule, passed: false, detail: `to_path ${shown(to.normalized)} exists: a move never overwrites` };
  return { rule, passed: true, detail: `to_path ${shown(to.normalized)} is free` };
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
  const ops = Object.hasOwn(TOOL_OPS, String(input.action.tool)) ? TOOL_OPS[String(input.action.tool)]! : [];
  const toolAllowed: RuleResult = !parsed.success
    ? { rule: 'tool_allowed', passed: false, detail: clip(`not an action of the protocol: ${parsed.error.issues[0]?.message ?? 'malformed'}`) }
    : ops.includes(String(input.action.op))
      ? { rule: 'tool_allowed', passed: true, detail: `${input.action.tool}.${input.action.op}` }
      : { rule: 'tool_allowed', passed: false, detail: clip(`${String(input.action.tool)}.${String(input.action.op)} is not a tool operation`) };

  const rules: RuleResult[] = [toolAllowed];
  // A malformed action gets no file rules: its fields cannot be trusted to mean anything.
  if (parsed.success && parsed.data.tool === 'files') {
    const action = parsed.data;
    const facts = input.paths;
    const named: NamedPath[] = [{ label: 'path', raw: action.path, facts: facts?.path ?? null }];
    if (action.op === 'move') named.push({ label: 'to_path', raw: action.to_path, facts: facts?.to_path ?? null });
    rules.push(combine('path_inside_workspace', named.map(insideWorkspace)));
    rules.push(combine('no_symlink_escape', named.map(noSymlinkEscape)));
    if (action.op === 'move') rules.push(targetFreeOrSame(facts?.path ?? null, facts?.to_path ?? null));
    else rules.push(sizeWithinLimit(action, facts?.path ?? null, input.limits));
  }
  if (parsed.success && parsed.data.tool === 'task_board') rules.push(taskBoardConsistent(parsed.data, input.task_ids));
  rules.push(...commonRules(input));

  if (rules.length > MAX_RULES_PER_DECISION) throw new PermissionInputError(`${rules.length} rules exceed ${MAX_RULES_PER_DECISION}`);
  return {
    decision: rules.every((r) => r.passed) ? 'allow' : 'deny',
    rules,
    repeat_of_denied: input.denied_fingerprints.has(fingerprint),
    fingerprint,
  };
}
