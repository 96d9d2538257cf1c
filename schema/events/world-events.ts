import { z } from 'zod';
import { HashString } from '../hash.js';
import { defineEvent, EventId, Identifier, LongText, ShortText, Timestamp } from '../event-definition.js';
import { RecordedWorkspacePath } from '../workspace-path.js';

export const MessageReceived = defineEvent('WorldEvent', 'MessageReceived', '1.0.0', z.strictObject({
  from: ShortText,
  subject: ShortText,
  body: LongText,
  in_reply_to: Identifier.nullable(),
}));

export const GoalChanged = defineEvent('WorldEvent', 'GoalChanged', '1.0.0', z.strictObject({
  goal_id: Identifier,
  description: LongText,
  deadline_at: Timestamp.nullable(),
  reason: LongText,
}));

export const FileChangedExternally = defineEvent('WorldEvent', 'FileChangedExternally', '1.0.0', z.strictObject({
  path: RecordedWorkspacePath,
  change: z.enum(['created', 'modified', 'deleted']),
  post_hash: HashString.nullable(),
}));

/** New information; `refutes_event_ids` names earlier events it shows to be wrong. */
export const InformationPublished = defineEvent('WorldEvent', 'InformationPublished', '1.0.0', z.strictObject({
  source: ShortText,
  body: LongText,
  refutes_event_ids: z.array(EventId).max(64),
}));

export const DistractorOccurred = defineEvent('WorldEvent', 'DistractorOccurred', '1.0.0', z.strictObject({
  channel: ShortText,
  body: LongText,
}));
