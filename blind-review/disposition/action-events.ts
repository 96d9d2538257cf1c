// How each ActionEvent reads in a blind-review package (blind-review/event-normalizer.ts): the
// proposal, the decision with every rule checked, the intent and its outcome, linked by refs.
// Proposal ids are dropped (the refs of the proposal stand in); file hashes are behaviour and kept.
import { targetOf } from '../../schema/tools.js';
import { keep, type DispositionHandlers } from './disposition.js';

export const disposeActionEvents: DispositionHandlers<'ActionEvent'> = {
  'ActionEvent.ActionProposed': (p) => {
    const target = targetOf(p.tool, p.args);
    return keep('action_proposed', 'subject', (c) => ({
      summary: `proposed ${p.tool}.${p.op}${target === null ? '' : ` ${target}`}`,
      detail: {
        tool: p.tool,
        op: p.op,
        target: target === null ? null : c.text(target),
        args: Object.keys(p.args)
          .sort()
          .map((name) => {
            const value = p.args[name] ?? null;
            return { name, value: typeof value === 'string' ? c.text(value) : value };
          }),
        rationale: c.text(p.rationale),
      },
      refs: [],
    }));
  },
  'ActionEvent.PermissionDecided': (p) =>
    keep('permission_decided', 'apparatus', (c) => {
      const proposal = c.proposalOf();
      const what = c.proposalInfo();
      const failed = p.rules.filter((r) => !r.passed).map((r) => r.rule);
      return {
        summary: `${p.decision === 'allow' ? 'allowed' : 'denied'}${what ? ` ${what.tool}.${what.op}${what.target === null ? '' : ` ${what.target}`}` : ''}${failed.length > 0 ? ` (failed: ${failed.join(', ')})` : ''}${p.repeat_of_denied ? ' (repeats a denied proposal)' : ''}`,
        detail: { proposal, decision: p.decision, rules: p.rules.map((r) => ({ rule: r.rule, passed: r.passed, detail: c.text(r.detail) })), repeat_of_denied: p.repeat_of_denied },
        refs: [proposal],
      };
    }),
  'ActionEvent.ExecutionIntentRecorded': (p) =>
    keep('execution_intent', 'apparatus', (c) => {
      const proposal = c.proposalOf();
      const permission = c.ref(p.permission_event_id);
      return {
        summary: `intent to ${p.op} ${p.path}${p.to_path === null ? '' : ` → ${p.to_path}`}`,
        detail: { proposal, permission, op: p.op, path: c.text(p.path), to_path: p.to_path === null ? null : c.text(p.to_path), pre_hash: p.pre_hash, intended_post_hash: p.intended_post_hash },
        refs: [permission, proposal],
      };
    }),
  'ActionEvent.ToolSucceeded': (p) =>
    keep('tool_succeeded', 'tool', (c) => {
      const intent = c.ref(p.intent_event_id);
      const info = c.intentInfo(p.intent_event_id);
      return { summary: `${info ? `${info.op} ${info.path}` : 'the tool call'} succeeded`, detail: { intent, observed_post_hash: p.observed_post_hash, content: p.content === null ? null : c.text(p.content) }, refs: [intent] };
    }),
  'ActionEvent.ToolFailed': (p) =>
    keep('tool_failed', 'tool', (c) => {
      const intent = c.ref(p.intent_event_id);
      const info = c.intentInfo(p.intent_event_id);
      return { summary: `${info ? `${info.op} ${info.path}` : 'the tool call'} failed: ${p.error}`, detail: { intent, error: c.text(p.error), observed_hash: p.observed_hash }, refs: [intent] };
    }),
  'ActionEvent.ToolOutcomeUnknown': (p) =>
    keep('tool_outcome_unknown', 'tool', (c) => {
      const intent = c.ref(p.intent_event_id);
      const info = c.intentInfo(p.intent_event_id);
      return { summary: `outcome of ${info ? `${info.op} ${info.path}` : 'the tool call'} unknown`, detail: { intent, observed_hash: p.observed_hash, detail: c.text(p.detail) }, refs: [intent] };
    }),
  'ActionEvent.ToolReconciled': (p) =>
    keep('tool_reconciled', 'tool', (c) => {
      const intent = c.ref(p.intent_event_id);
      const info = c.intentInfo(p.intent_event_id);
      return { summary: `${info ? `${info.op} ${info.path}` : 'the tool call'} reconciled: ${p.outcome === 'happened' ? 'it happened' : 'it did not happen'}`, detail: { intent, outcome: p.outcome, observed_hash: p.observed_hash }, refs: [intent] };
    }),
};
