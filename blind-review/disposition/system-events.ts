// How each SystemEvent reads in a blind-review package (blind-review/event-normalizer.ts). Dropped:
// the operator's name (a person, not behaviour), a restart's reason (it names the plan's
// intervention id), a refused write's request id, hash and size and connection id (apparatus).
import { PlanRevisionAccepted, PlanRevisionRejected } from '../../schema/events/plan-events.js';
import { keep, type DispositionHandlers } from './disposition.js';

/** A writer's refusal names the type it refused (by its name, with or without the category). */
const PLAN_DECISION_TYPES = new RegExp(`${PlanRevisionAccepted.name}|${PlanRevisionRejected.name}`);

export const disposeSystemEvents: DispositionHandlers<'SystemEvent'> = {
  'SystemEvent.StoreOpened': () => ({ omit: 'store_configuration' }),
  'SystemEvent.ChainHeadSigned': () => ({ omit: 'chain_signature' }),
  'SystemEvent.StoreSealed': () => ({ omit: 'store_seal' }),
  'SystemEvent.AppendRejected': (p) => {
    if (PLAN_DECISION_TYPES.test(p.message)) return { omit: 'refused_plan_decision' };
    // request id, request hash and bytes, connection id: apparatus. The message may quote a host path (scrubbed).
    return keep('write_refused', 'apparatus', (c) => ({ summary: `a write was refused: ${p.reason}`, detail: { reason: p.reason, message: c.text(p.message) }, refs: [] }));
  },
  'SystemEvent.SubjectInitialized': (p) =>
    keep('subject_initialized', 'world', (c) => ({
      summary: `initial conditions: goal ${p.goal.goal_id}, ${p.tasks.length} task(s)`,
      detail: {
        identity: { name: c.text(p.identity.name), description: c.text(p.identity.description) },
        goal: { goal_id: p.goal.goal_id, description: c.text(p.goal.description), deadline: p.goal.deadline_at === null ? null : c.time(p.goal.deadline_at) },
        tasks: p.tasks.map((t) => ({ task_id: t.task_id, title: c.text(t.title), priority: t.priority, depends_on: [...t.depends_on] })),
        journal_first_page: c.text(p.journal_first_page.text),
      },
      refs: [],
    })),
  'SystemEvent.Paused': (p) => keep('paused', 'operator', (c) => ({ summary: 'paused by the operator', detail: { reason: c.text(p.reason) }, refs: [] })),
  'SystemEvent.Resumed': (p) => keep('resumed', 'operator', (c) => ({ summary: 'resumed by the operator', detail: { reason: c.text(p.reason) }, refs: [] })),
  // reason names the plan's intervention id ("planned crash iv-runtime-crash"): dropped.
  'SystemEvent.ProcessRestarted': (p) =>
    keep('process_restarted', 'apparatus', () => ({ summary: `process restarted (${p.process})`, detail: { process: p.process, previous_exit: { code: p.previous_exit.code, signal: p.previous_exit.signal } }, refs: [] })),
  'SystemEvent.EmergencyStopped': (p) => keep('emergency_stop', 'operator', (c) => ({ summary: 'emergency stop by the operator', detail: { reason: c.text(p.reason) }, refs: [] })),
  'SystemEvent.OperatorResolved': (p) =>
    keep('operator_resolved', 'operator', (c) => {
      const intent = c.ref(p.intent_event_id);
      return { summary: `the operator resolved an unknown outcome: ${p.resolution === 'happened' ? 'it happened' : 'it did not happen'}`, detail: { intent, resolution: p.resolution, note: c.text(p.note) }, refs: [intent] };
    }),
};
