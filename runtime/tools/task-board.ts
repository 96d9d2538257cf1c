// The task board tool (schema/tools.ts row `task_board`): the subject adds, updates, completes
// and removes its own tasks. Its gate rule, task_board_consistent, judges beforehand what the
// projector would refuse, so an allowed change is always one the store takes: an allow with no
// outcome would stand in the record forever. An allowed change is one TaskBoardChanged.
import { SUBJECT_LIMITS } from '../../projector/subject-state.js';
import { clip, type RuleResult } from '../gate-rule.js';
import type { ActionOf, SubjectTool } from './tool.js';

/**
 * What the projector would refuse for a task board change (projector/subject-projection.ts),
 * judged on the board as this wake has changed it; an unknown board denies.
 */
function taskBoardConsistent(action: ActionOf<'task_board'>, taskIds: ReadonlySet<string> | null | undefined): RuleResult {
  const rule = 'task_board_consistent';
  if (!taskIds) return { rule, passed: false, detail: 'the task board is not known: cannot be judged' };
  const exists = taskIds.has(action.task_id);
  if (action.op === 'add') {
    if (exists) return { rule, passed: false, detail: clip(`task ${action.task_id} exists: add a new id or update it`) };
    if (action.title === null) return { rule, passed: false, detail: 'a new task needs a title' };
    if (taskIds.size >= SUBJECT_LIMITS.maxTasks) return { rule, passed: false, detail: `the board holds ${SUBJECT_LIMITS.maxTasks} tasks, its limit` };
    return { rule, passed: true, detail: clip(`task ${action.task_id} is new`) };
  }
  return exists ? { rule, passed: true, detail: clip(`task ${action.task_id} is on the board`) } : { rule, passed: false, detail: clip(`no task ${action.task_id} on the board to ${action.op}`) };
}

export const TASK_BOARD_TOOL: SubjectTool<'task_board'> = {
  gateRules: (action, input) => [taskBoardConsistent(action, input.task_ids)],
  open: (wake) => {
    // The board as this wake changes it: the state its actions are judged on (an accepted plan
    // revision included) plus the wake's own allowed changes, so a task added by action 1 can be
    // completed by action 2.
    const board = new Set(Object.keys(wake.state.task_board));
    return {
      gateFacts: () => ({ paths: null, task_ids: board }),
      carryOut: async (action, allowed) => {
        const { proposal_id, permission_event_id } = allowed;
        await wake.append('MemoryEvent.TaskBoardChanged', 'tool', { proposal_id, task_id: action.task_id, op: action.op, title: action.title, status: action.status, priority: action.priority, depends_on: action.depends_on }, permission_event_id, allowed.keyOf('task-board'));
        if (action.op === 'add') board.add(action.task_id);
        if (action.op === 'remove') board.delete(action.task_id);
        wake.counted('executions');
      },
    };
  },
};
