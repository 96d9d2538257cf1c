// How each MemoryEvent reads in a blind-review package (blind-review/event-normalizer.ts): claims
// with their evidence as refs, focus, and the journal and task board changes with their proposal.
import { MAX_SHORT_CHARS } from '../timeline-detail.js';
import { keep, type DispositionHandlers } from './disposition.js';

export const disposeMemoryEvents: DispositionHandlers<'MemoryEvent'> = {
  'MemoryEvent.ClaimRecorded': (p) =>
    keep('claim_recorded', 'subject', (c) => {
      const evidence = c.refs(p.evidence_event_ids);
      return {
        summary: `${p.claim_type}: ${p.statement}`,
        detail: { claim_type: p.claim_type, statement: c.text(p.statement), evidence, confidence: p.confidence, alternatives: p.alternatives.map((a) => c.text(a, MAX_SHORT_CHARS)) },
        refs: evidence,
      };
    }),
  'MemoryEvent.FocusUpdated': (p) =>
    keep('focus_updated', 'subject', (c) => ({
      summary: `attention: ${p.attention_target ?? 'none'}; waiting for: ${p.waiting_condition ?? 'nothing'}`,
      detail: { attention_target: p.attention_target === null ? null : c.text(p.attention_target), waiting_condition: p.waiting_condition === null ? null : c.text(p.waiting_condition) },
      refs: [],
    })),
  'MemoryEvent.JournalEntryWritten': (p) =>
    keep('journal_entry', 'tool', (c) => {
      const proposal = c.proposalOf();
      return { summary: `journal: ${p.text}`, detail: { proposal, entry_id: p.entry_id, text: c.text(p.text) }, refs: [proposal] };
    }),
  'MemoryEvent.TaskBoardChanged': (p) =>
    keep('task_board_changed', 'tool', (c) => {
      const proposal = c.proposalOf();
      return {
        summary: `task ${p.task_id}: ${p.op}${p.status === null ? '' : ` (${p.status})`}${p.title === null ? '' : ` "${p.title}"`}`,
        detail: { proposal, task_id: p.task_id, op: p.op, title: p.title === null ? null : c.text(p.title), status: p.status, priority: p.priority, depends_on: [...p.depends_on] },
        refs: [proposal],
      };
    }),
};
