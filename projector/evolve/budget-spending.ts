// What a wake's budget is charged (DESIGN §6.2, docs/projector.md §6): model calls already happened
// when they are recorded, so spending past the budget is counted as an overrun, never refused.
import type { SubjectState } from '../subject-state.js';

export function spend(state: SubjectState, kind: 'model_calls' | 'tokens' | 'tool_calls', amount: number): void {
  const budget = state.resource_budget;
  const left = budget.remaining[kind] - amount;
  budget.remaining[kind] = Math.max(left, 0);
  if (left < 0) budget.overruns[kind] += -left;
}
