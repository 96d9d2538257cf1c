// The moves every handler of the fold makes through the two state machines (projector/lifecycle.ts,
// projector/cognition.ts), and the precondition of everything the subject does: a wake.
import { cognitiveNext, type CognitiveTrigger } from '../cognition.js';
import { lifecycleAllows, type LifecycleState, type LifecycleTrigger } from '../lifecycle.js';
import type { SubjectState } from '../subject-state.js';
import type { Refuse } from './evolve-step.js';

export function moveLifecycle(state: SubjectState, trigger: LifecycleTrigger, to: LifecycleState, refuse: Refuse): void {
  if (!lifecycleAllows(state.lifecycle_state, trigger, to)) throw refuse('illegal_lifecycle_transition', `illegal lifecycle transition ${state.lifecycle_state} → ${to}`);
  state.lifecycle_state = to;
}

export function moveCognition(state: SubjectState, trigger: CognitiveTrigger, refuse: Refuse): void {
  const next = cognitiveNext(state.cognitive_state, trigger);
  if (next === null) throw refuse('illegal_cognitive_transition', `illegal cognitive transition from ${state.cognitive_state} on ${trigger}`);
  state.cognitive_state = next;
}

/** Runtime events belong to a wake: the subject acts only while awake (or observes while recovering), never while paused. */
export function requireWake(state: SubjectState, refuse: Refuse, options: { sideEffect: boolean }): string {
  if (state.current_wake_id === null) throw refuse('no_wake', `no wake is in progress (lifecycle ${state.lifecycle_state})`);
  if (state.lifecycle_state !== 'AWAKE' && state.lifecycle_state !== 'RECOVERING') throw refuse('subject_not_acting', `lifecycle ${state.lifecycle_state}: the subject does not act`);
  if (options.sideEffect && state.lifecycle_state !== 'AWAKE') throw refuse('read_only', `lifecycle ${state.lifecycle_state} is read-only: no side effects`);
  return state.current_wake_id;
}

export function hasUnknownOutcome(state: SubjectState): boolean {
  return Object.values(state.open_intents).some((intent) => intent.outcome === 'unknown');
}

/** Where the lifecycle returns once nothing holds it: RECOVERING while an unknown outcome is open, else the wake's state. */
export function unheldLifecycle(state: SubjectState): LifecycleState {
  return hasUnknownOutcome(state) ? 'RECOVERING' : state.current_wake_id !== null ? 'AWAKE' : 'DORMANT';
}
