// How each WorldEvent reads in a blind-review package (blind-review/event-normalizer.ts): all of
// it is kept; times become simulated time and the events a correction refutes become refs.
import { keep, type DispositionHandlers } from './disposition.js';

export const disposeWorldEvents: DispositionHandlers<'WorldEvent'> = {
  'WorldEvent.MessageReceived': (p) =>
    keep('world_message', 'world', (c) => ({ summary: `message from ${p.from}: ${p.subject}`, detail: { from: c.text(p.from), subject: c.text(p.subject), body: c.text(p.body), in_reply_to: p.in_reply_to }, refs: [] })),
  'WorldEvent.GoalChanged': (p) =>
    keep('world_goal_changed', 'world', (c) => ({
      summary: `the goal changed to ${p.goal_id}${p.deadline_at === null ? '' : ` (deadline ${c.time(p.deadline_at)})`}`,
      detail: { goal_id: p.goal_id, description: c.text(p.description), deadline: p.deadline_at === null ? null : c.time(p.deadline_at), reason: c.text(p.reason) },
      refs: [],
    })),
  'WorldEvent.FileChangedExternally': (p) =>
    keep('world_file_changed', 'world', (c) => ({ summary: `${p.path} was ${p.change} by someone else`, detail: { path: c.text(p.path), change: p.change, post_hash: p.post_hash }, refs: [] })),
  'WorldEvent.InformationPublished': (p) =>
    keep('world_information', 'world', (c) => {
      const refutes = c.refs(p.refutes_event_ids);
      return { summary: `information from ${p.source}${refutes.length > 0 ? ` (corrects ${refutes.join(', ')})` : ''}`, detail: { source: c.text(p.source), body: c.text(p.body), refutes }, refs: refutes };
    }),
  'WorldEvent.DistractorOccurred': (p) =>
    keep('world_distraction', 'world', (c) => ({ summary: `${p.channel}: ${p.body}`, detail: { channel: c.text(p.channel), body: c.text(p.body) }, refs: [] })),
};
