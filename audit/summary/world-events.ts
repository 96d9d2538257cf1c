// The audit desk's one-line summary of each WorldEvent (audit/event-summary.ts).
import type { CategoryHandlers } from '../../schema/category-handlers.js';
import { short } from './short-text.js';

export const summarizeWorldEvents: CategoryHandlers<'WorldEvent', void, string> = {
  'WorldEvent.MessageReceived': (p) => `message from ${p.from}: ${short(p.subject)}`,
  'WorldEvent.GoalChanged': (p) => `goal changed to ${p.goal_id}${p.deadline_at ? ` (deadline ${p.deadline_at})` : ''}: ${short(p.description)}`,
  'WorldEvent.FileChangedExternally': (p) => `${p.path} ${p.change} by someone else`,
  'WorldEvent.InformationPublished': (p) => `information from ${p.source}${p.refutes_event_ids.length > 0 ? ` (refutes ${p.refutes_event_ids.length} event(s))` : ''}: ${short(p.body)}`,
  'WorldEvent.DistractorOccurred': (p) => `distractor on ${p.channel}: ${short(p.body)}`,
};
