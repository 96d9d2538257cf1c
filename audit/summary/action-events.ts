// The audit desk's one-line summary of each ActionEvent (audit/event-summary.ts).
import type { CategoryHandlers } from '../../schema/category-handlers.js';
import { short } from './short-text.js';

export const summarizeActionEvents: CategoryHandlers<'ActionEvent', void, string> = {
  'ActionEvent.ActionProposed': (p) => `proposes ${p.tool}.${p.op} (${p.proposal_id})${typeof p.args.path === 'string' ? ` ${p.args.path}` : ''}`,
  'ActionEvent.PermissionDecided': (p) => {
    const failed = p.rules.filter((r) => !r.passed).map((r) => r.rule);
    return `${p.decision} ${p.proposal_id}${failed.length > 0 ? ` (failed: ${failed.join(', ')})` : ''}${p.repeat_of_denied ? ' — repeat of a denied action' : ''}`;
  },
  'ActionEvent.ExecutionIntentRecorded': (p) => `intent: ${p.op} ${p.path}${p.to_path ? ` → ${p.to_path}` : ''} (${p.proposal_id})`,
  'ActionEvent.ToolSucceeded': (p) => `succeeded${p.content !== null ? `, read ${p.content.length} characters` : ''}`,
  'ActionEvent.ToolFailed': (p) => `failed: ${short(p.error)}`,
  'ActionEvent.ToolOutcomeUnknown': (p) => `outcome UNKNOWN: ${short(p.detail)}`,
  'ActionEvent.ToolReconciled': (p) => `reconciled after a restart: ${p.outcome === 'happened' ? 'it happened' : 'it did not happen'}`,
};
