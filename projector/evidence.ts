// Which events may support a FACT (DESIGN §6.7, spec §10.3, §12.1): things that happened
// in the world, side effects that were confirmed, and other FACTs (which carry their own
// justification, so refutation can travel through them). Never model output, plans,
// proposals or permission decisions: those are intentions, not evidence.
import type { EventEnvelope } from '../schema/envelope.js';
import { eventIs, eventIsOneOf } from '../schema/typed-event.js';

export type EvidenceVerdict = { readonly eligible: true } | { readonly eligible: false; readonly reason: string };

export function evidenceEligibility(cited: Pick<EventEnvelope, 'event_type' | 'payload'>): EvidenceVerdict {
  const [category] = cited.event_type.split('.');
  if (category === 'WorldEvent') return { eligible: true };
  if (eventIsOneOf(cited, ['ActionEvent.ToolSucceeded', 'ActionEvent.ToolReconciled'])) return { eligible: true };
  if (eventIs(cited, 'MemoryEvent.ClaimRecorded')) {
    return cited.payload.claim_type === 'FACT' ? { eligible: true } : { eligible: false, reason: `a ${String(cited.payload.claim_type)} claim is not evidence` };
  }
  return { eligible: false, reason: `${cited.event_type} is not evidence (eligible: WorldEvent.*, ActionEvent.ToolSucceeded, ActionEvent.ToolReconciled, FACT claims)` };
}
