import { z } from 'zod';
import { HashString } from '../hash.js';
import { defineEvent, EventId, Identifier, LongText, ShortText } from '../event-definition.js';
import { FileIntentOp, ToolName } from '../tools.js';
import { RecordedWorkspacePath } from '../workspace-path.js';

const WorkspacePath = RecordedWorkspacePath;
const Args = z.record(z.string().max(64), z.union([z.string().max(65_536), z.number(), z.boolean(), z.null()]));

export const ActionProposed = defineEvent('ActionEvent', 'ActionProposed', '1.0.0', z.strictObject({
  proposal_id: Identifier,
  tool: ToolName,
  op: Identifier,
  args: Args,
  rationale: LongText,
}));

/** Every rule checked is recorded with the decision, passed or not (spec §14.2). */
export const PermissionDecided = defineEvent('ActionEvent', 'PermissionDecided', '1.0.0', z.strictObject({
  proposal_id: Identifier,
  decision: z.enum(['allow', 'deny']),
  rules: z.array(z.strictObject({ rule: Identifier, passed: z.boolean(), detail: ShortText })).min(1).max(32),
  repeat_of_denied: z.boolean(),
}));

/** The most text a ToolSucceeded of a read carries (the model protocol's file-content bound). */
export const MAX_READ_CONTENT_CHARS = 32_768;

/**
 * 1.1.0: op gains 'read'. A read goes intent → execute → outcome like every file operation,
 * so that what was read is a succeeded tool result a FACT can cite (DESIGN §6.7). A read
 * changes nothing: pre_hash is the file's hash at intent time (null when absent) and
 * intended_post_hash equals it.
 */
export const ExecutionIntentRecorded = defineEvent('ActionEvent', 'ExecutionIntentRecorded', '1.1.0', z.strictObject({
  proposal_id: Identifier,
  permission_event_id: EventId,
  op: FileIntentOp,
  path: WorkspacePath,
  to_path: WorkspacePath.nullable(),
  pre_hash: HashString.nullable(),
  intended_post_hash: HashString.nullable(),
}));

/**
 * 1.1.0: `content` added: the text a read returned (its hash is observed_post_hash), so the
 * event is evidence of what the file said; null for every other op.
 */
export const ToolSucceeded = defineEvent('ActionEvent', 'ToolSucceeded', '1.1.0', z.strictObject({
  intent_event_id: EventId,
  observed_post_hash: HashString.nullable(),
  content: z.string().max(MAX_READ_CONTENT_CHARS).nullable(),
}));

export const ToolFailed = defineEvent('ActionEvent', 'ToolFailed', '1.0.0', z.strictObject({
  intent_event_id: EventId,
  error: ShortText,
  observed_hash: HashString.nullable(),
}));

export const ToolOutcomeUnknown = defineEvent('ActionEvent', 'ToolOutcomeUnknown', '1.0.0', z.strictObject({
  intent_event_id: EventId,
  observed_hash: HashString.nullable(),
  detail: ShortText,
}));

export const ToolReconciled = defineEvent('ActionEvent', 'ToolReconciled', '1.0.0', z.strictObject({
  intent_event_id: EventId,
  outcome: z.enum(['happened', 'did_not_happen']),
  observed_hash: HashString.nullable(),
}));
