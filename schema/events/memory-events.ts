import { z } from 'zod';
import { defineEvent, EventId, Identifier, LongText, ShortText } from '../event-definition.js';
import { TaskBoardOp } from '../tools.js';

export const ClaimType = z.enum(['FACT', 'PLAN', 'INFERENCE']);

/** A MemoryClaim (spec §10.3). FACT needs eligible evidence; INFERENCE carries confidence. */
export const ClaimRecorded = defineEvent('MemoryEvent', 'ClaimRecorded', '1.0.0', z.strictObject({
  claim_id: Identifier,
  claim_type: ClaimType,
  statement: LongText,
  evidence_event_ids: z.array(EventId).max(64),
  confidence: z.number().min(0).max(1).nullable(),
  alternatives: z.array(ShortText).max(16),
}));

/** What the subject attends to and waits for (spec §9.1 current_state), as it decides. */
export const FocusUpdated = defineEvent('MemoryEvent', 'FocusUpdated', '1.0.0', z.strictObject({
  attention_target: ShortText.nullable(),
  waiting_condition: ShortText.nullable(),
}));

/** Journal and task board are tools: each change executes an allowed ActionProposed. */
export const JournalEntryWritten = defineEvent('MemoryEvent', 'JournalEntryWritten', '1.0.0', z.strictObject({
  proposal_id: Identifier,
  entry_id: Identifier,
  text: LongText,
}));

export const TaskBoardChanged = defineEvent('MemoryEvent', 'TaskBoardChanged', '1.0.0', z.strictObject({
  proposal_id: Identifier,
  task_id: Identifier,
  op: TaskBoardOp,
  title: ShortText.nullable(),
  status: z.enum(['todo', 'doing', 'blocked', 'done']).nullable(),
  priority: z.number().int().min(0).max(9).nullable(),
  depends_on: z.array(Identifier).max(32),
}));
