// The journal tool (schema/tools.ts row `journal`): the subject writes an entry. It has no gate
// rule of its own (the rules of every action apply) and needs no fact of the world to be judged.
// An allowed entry is one JournalEntryWritten, its entry id the wake's, never the model's.
import type { SubjectTool } from './tool.js';

export const JOURNAL_TOOL: SubjectTool<'journal'> = {
  gateRules: () => [],
  open: (wake) => ({
    gateFacts: () => ({ paths: null, task_ids: null }),
    carryOut: async (action, allowed) => {
      await wake.append('MemoryEvent.JournalEntryWritten', 'tool', { proposal_id: allowed.proposal_id, entry_id: `${wake.wakeId}-j${allowed.index + 1}`, text: action.text }, allowed.permission_event_id, allowed.keyOf('journal'));
      wake.counted('executions');
    },
  }),
};
