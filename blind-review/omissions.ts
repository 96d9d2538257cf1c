// Every event type the blind-review timeline leaves out, and why (the reviewer-facing rule, DESIGN
// §10): the normalizer's handlers (blind-review/disposition/*-events.ts) omit an event by one of these
// reasons, and the export counts and states each (export-notes.ts).
export const OMISSIONS = {
  store_configuration: 'StoreOpened binds the store to the experiment id, the subject id, the manifest hash and versions: configuration, not behaviour',
  chain_signature: 'ChainHeadSigned is a controller signature over hashes of the chain: apparatus whose hashes would identify the instance',
  transport_attempt: 'ModelCallAttemptFailed records a connection to the model server that brought no answer: apparatus (the server, not the subject), and the call it belongs to is shown',
  store_seal: 'StoreSealed ends the store: every exported instance is sealed, so it says nothing about the subject',
  wake_schedule: 'WakeScheduled repeats the schedule, the same for every instance of a replicate; each wake shows as wake_started',
  plan_decision: 'PlanRevisionAccepted and PlanRevisionRejected can each be produced by some settings only: every package says only that a revision was proposed',
  refused_plan_decision: 'an AppendRejected of a plan decision names the decision, which only some settings produce (it is followed by a rejection, omitted as well)',
  intervention_delivery: 'InterventionDelivered becomes interventions.json (with refs to the events it delivered), not a timeline entry',
} as const;
export type OmissionReason = keyof typeof OMISSIONS;
export const OMISSION_REASONS = Object.keys(OMISSIONS) as OmissionReason[];
