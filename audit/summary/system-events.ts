// The audit desk's one-line summary of each SystemEvent (audit/event-summary.ts).
import type { CategoryHandlers } from '../../schema/category-handlers.js';
import { short } from './short-text.js';

export const summarizeSystemEvents: CategoryHandlers<'SystemEvent', void, string> = {
  'SystemEvent.StoreOpened': (p) => `store opened for experiment ${p.experiment_id}, subject ${p.subject_id}, projection ${p.projection.name}@${p.projection.version}`,
  'SystemEvent.AppendRejected': (p) => `refused append (${p.reason}) from ${p.role ?? 'unauthenticated'}: ${short(p.message)}`,
  'SystemEvent.StoreSealed': (p) => `store sealed by ${p.sealed_by}: ${short(p.reason)}`,
  'SystemEvent.SubjectInitialized': (p) => `subject ${p.identity.name} initialised: goal ${p.goal.goal_id}, ${p.tasks.length} task(s)`,
  'SystemEvent.Paused': (p) => `paused by ${p.operator}: ${short(p.reason)}`,
  'SystemEvent.Resumed': (p) => `resumed by ${p.operator}: ${short(p.reason)}`,
  'SystemEvent.ChainHeadSigned': (p) => `${p.head.kind} head signed at seq ${p.head.seq}`,
  'SystemEvent.ProcessRestarted': (p) => `${p.process} restarted (exit ${p.previous_exit.signal ?? p.previous_exit.code ?? '?'}): ${short(p.reason)}`,
  'SystemEvent.EmergencyStopped': (p) => `emergency stop by ${p.operator}: ${short(p.reason)}`,
  'SystemEvent.OperatorResolved': (p) => `operator ${p.operator} resolved an unknown outcome: ${p.resolution} — ${short(p.note)}`,
};
