// The audit desk's one-line summary of each MemoryEvent (audit/event-summary.ts).
import type { CategoryHandlers } from '../../schema/category-handlers.js';
import { short } from './short-text.js';

export const summarizeMemoryEvents: CategoryHandlers<'MemoryEvent', void, string> = {
  'MemoryEvent.ClaimRecorded': (p) => `${p.claim_type} ${p.claim_id} (${p.evidence_event_ids.length} evidence): ${short(p.statement)}`,
  'MemoryEvent.FocusUpdated': (p) => `attends to ${p.attention_target ?? '—'}; waits for ${p.waiting_condition ?? '—'}`,
  'MemoryEvent.JournalEntryWritten': (p) => `journal ${p.entry_id}: ${short(p.text)}`,
  'MemoryEvent.TaskBoardChanged': (p) => `task ${p.task_id} ${p.op}${p.status ? ` → ${p.status}` : ''}`,
};
