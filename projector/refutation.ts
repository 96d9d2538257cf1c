// Refutation as a first-class operation (RFC-0000 §12.5, after Doyle's JTMS): every FACT
// records the events that justify it, indexed by event; when an event is refuted, every
// FACT resting on it is downgraded, and so, through their ClaimRecorded events, is every
// FACT that rests on those. Nobody has to remember to update anything.
import { own } from './own.js';
import { SUBJECT_LIMITS, type SubjectState } from './subject-state.js';
import { ProjectionRefusal } from './projection.js';

interface At {
  readonly seq: number;
  readonly event_type: string;
}

/** Marks `eventId` refuted by `refutingEventId` and propagates to dependent FACTs, in place. */
export function refuteEvent(state: SubjectState, eventId: string, refutingEventId: string, at: At): void {
  // Breadth-first over the justification index; each claim is refuted at most once, so
  // the walk is bounded by the number of claims.
  const queue: string[] = [eventId];
  let steps = 0;
  while (queue.length > 0) {
    steps += 1;
    if (steps > SUBJECT_LIMITS.maxClaims + 1) throw new Error('refutation walk exceeded the claim bound: the justification index has a cycle');
    const refuted = queue.shift()!;
    if (own(state.refuted_events, refuted) !== undefined) continue;
    if (Object.keys(state.refuted_events).length >= SUBJECT_LIMITS.maxRefutedEvents) {
      throw new ProjectionRefusal(at.seq, at.event_type, 'limit_exceeded', `more than ${SUBJECT_LIMITS.maxRefutedEvents} refuted events`);
    }
    state.refuted_events[refuted] = refutingEventId;
    // The refuted event may be a FACT's own ClaimRecorded event: that FACT goes too.
    const factItself = own(state.fact_claim_events, refuted);
    const direct = factItself === undefined ? [] : [factItself];
    for (const claimId of [...direct, ...(own(state.evidence_dependents, refuted) ?? [])]) {
      const claim = own(state.claims, claimId);
      if (!claim || claim.status === 'refuted') continue;
      claim.status = 'refuted';
      claim.refuted_by = { refuting_event_id: refutingEventId, via_event_id: refuted };
      queue.push(claim.claim_event_id);
    }
  }
}

/** Indexes a new FACT under its evidence and its own event; returns the refutation it is born with, if any. */
export function indexFact(state: SubjectState, claimId: string, claimEventId: string, evidenceEventIds: readonly string[]): { refuting_event_id: string; via_event_id: string } | null {
  state.fact_claim_events[claimEventId] = claimId;
  let bornRefuted: { refuting_event_id: string; via_event_id: string } | null = null;
  for (const eventId of evidenceEventIds) {
    const dependents = own(state.evidence_dependents, eventId);
    if (dependents) dependents.push(claimId);
    else state.evidence_dependents[eventId] = [claimId];
    const refuter = own(state.refuted_events, eventId);
    if (refuter !== undefined && bornRefuted === null) bornRefuted = { refuting_event_id: refuter, via_event_id: eventId };
  }
  return bornRefuted;
}
