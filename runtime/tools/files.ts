// The files tool (DESIGN §7, spec §14.1; schema/tools.ts row `files`): read, write, modify and
// move in the subject's workspace.
//
// Its gate rules judge the path facts it found before the decision (inspectPath), never the raw
// path alone: path_inside_workspace and no_symlink_escape for every path of the action, then
// size_within_limit, or for a move target_free_or_same. The gate normalises each path again
// itself, so facts that disagree with the path are not trusted, and facts missing fail the rule.
//
// An allowed action goes intent → execute → outcome: ExecutionIntentRecorded with the hashes
// planned before anything happens, the operation (runtime/tools/workspace-files.ts), then
// ToolSucceeded or ToolFailed. An intent a crash left open is settled at the next wake's start
// (the wake loop's reconciliation, reconcileIntent).
import { MAX_READ_CONTENT_CHARS } from '../../schema/events/action-events.js';
import { clip, FILE_LIMITS, PermissionInputError, type GateLimits, type GateRule, type PermissionInput, type RuleResult } from '../gate-rule.js';
import type { ActionOf, AllowedAction, SubjectTool, ToolWake } from './tool.js';
import { executeFileAction, inspectPath, normalizeWorkspacePath, plannedHashes, type PathFacts } from './workspace-files.js';

type FileAction = ActionOf<'files'>;

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

function sizeWithinLimit(action: FileAction, facts: PathFacts | null, limits: GateLimits): RuleResult {
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

function gateRules(action: FileAction, input: PermissionInput): RuleResult[] {
  const facts = input.paths;
  const named: NamedPath[] = [{ label: 'path', raw: action.path, facts: facts?.path ?? null }];
  if (action.op === 'move') named.push({ label: 'to_path', raw: action.to_path, facts: facts?.to_path ?? null });
  return [
    combine('path_inside_workspace', named.map(insideWorkspace)),
    combine('no_symlink_escape', named.map(noSymlinkEscape)),
    action.op === 'move' ? targetFreeOrSame(facts?.path ?? null, facts?.to_path ?? null) : sizeWithinLimit(action, facts?.path ?? null, input.limits),
  ];
}

/** The path as the gate normalised it (the gate allowed it, so it normalises). */
function normalized(raw: string): string {
  const result = normalizeWorkspacePath(raw);
  if (!result.ok) throw new Error(`bug: an allowed path does not normalise: ${result.reason}`);
  return result.normalized;
}

/** Intent → execute → outcome (DESIGN §7): the intent is committed before the file is touched. */
async function carryOut(wake: ToolWake, action: FileAction, allowed: AllowedAction): Promise<void> {
  const root = wake.workspaceRoot;
  const planned = plannedHashes(root, action);
  const target = { op: action.op, path: normalized(action.path), to_path: action.op === 'move' ? normalized(action.to_path) : null };
  const intent = await wake.append(
    'ActionEvent.ExecutionIntentRecorded',
    'runtime',
    { proposal_id: allowed.proposal_id, permission_event_id: allowed.permission_event_id, ...target, pre_hash: planned.pre_hash, intended_post_hash: planned.intended_post_hash },
    allowed.permission_event_id,
    allowed.keyOf('intent'),
  );
  wake.faults.hit('runtime.intent.before_file_op', () => ({ intent_event_id: intent.event_id, ...target }));
  const executed = executeFileAction(root, action, FILE_LIMITS);
  wake.faults.hit('runtime.file_op.before_outcome', () => ({ intent_event_id: intent.event_id, ...target, ok: executed.ok ? 1 : 0 }));
  if (executed.ok) {
    await wake.append('ActionEvent.ToolSucceeded', 'tool', { intent_event_id: intent.event_id, observed_post_hash: executed.post_hash, content: executed.content }, intent.event_id, null);
    wake.counted('executions');
  } else {
    await wake.append('ActionEvent.ToolFailed', 'tool', { intent_event_id: intent.event_id, error: executed.error.slice(0, 200), observed_hash: executed.observed_hash }, intent.event_id, null);
    wake.counted('failures');
  }
}

export const FILES_TOOL: SubjectTool<'files'> = {
  gateRules,
  open: (wake) => ({
    gateFacts: (action) => ({ paths: { path: inspectPath(wake.workspaceRoot, action.path), to_path: action.op === 'move' ? inspectPath(wake.workspaceRoot, action.to_path) : null }, task_ids: null }),
    carryOut: (action, allowed) => carryOut(wake, action, allowed),
  }),
};
