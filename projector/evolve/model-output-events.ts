// How each ModelOutputEvent evolves the Subject (docs/projector.md §5, §6): a model call belongs to
// the wake in progress and is charged to its budget; a transport attempt only has to belong to it.
import type { PayloadOf } from '../../schema/event-catalog.js';
import { callWasMade } from '../../schema/events/model-output-events.js';
import type { CognitiveTrigger } from '../cognition.js';
import { spend } from './budget-spending.js';
import type { EvolveHandlers, EvolveStep } from './evolve-step.js';
import { moveCognition, requireWake } from './transitions.js';

type ModelCall = PayloadOf<'ModelOutputEvent.ModelAnswered'> | PayloadOf<'ModelOutputEvent.ModelCallFailed'>;

/** `called`: whether a call was made (budget_exhausted and cost_cap record one that was not). */
function recordModelCall(trigger: CognitiveTrigger, p: ModelCall, called: boolean, { state, refuse }: EvolveStep): boolean {
  const wake = requireWake(state, refuse, { sideEffect: false });
  if (p.wake_id !== wake) throw refuse('other_wake', `model call for wake ${p.wake_id} during wake ${wake}`);
  moveCognition(state, trigger, refuse);
  if (called) spend(state, 'model_calls', 1);
  const usage = p.usage;
  if (usage !== null) spend(state, 'tokens', usage.prompt_tokens + usage.completion_tokens);
  return true;
}

export const evolveModelOutputEvents: EvolveHandlers<'ModelOutputEvent'> = {
  'ModelOutputEvent.ModelAnswered': (p, step) => recordModelCall('ModelOutputEvent.ModelAnswered', p, true, step),
  // budget_exhausted and cost_cap record a call the runtime did not make: nothing was spent.
  'ModelOutputEvent.ModelCallFailed': (p, step) => recordModelCall('ModelOutputEvent.ModelCallFailed', p, callWasMade(p.failure), step),
  'ModelOutputEvent.ModelCallAttemptFailed': (p, { state, refuse }) => {
    const wake = requireWake(state, refuse, { sideEffect: false });
    if (p.wake_id !== wake) throw refuse('other_wake', `model call attempt for wake ${p.wake_id} during wake ${wake}`);
    return true;
  },
};
