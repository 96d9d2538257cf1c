// The executable definition of spec §8.3's "a FACT contradicting the store" (docs/oracle.md,
// "Hard failures (spec §8.4)"). Every FACT claim of a run is checked against the store it
// was written into, at the moment it was written:
//   evidence_missing    — it cites an event the store does not hold before the claim;
//   evidence_ineligible — it cites an event that cannot establish a fact (the writer's own
//                         rule, projector/evidence.ts, reused so there is one rule, not two);
//   evidence_refuted    — its evidence was refuted when the claim was made: by the projector's
//                         justification index, or by the plan's refutation intervention (the
//                         scenario writes refutes_event_ids empty, see intervention-plan.ts);
//   hash_mismatch       — it quotes a sha256 that none of its evidence carries.
// The writer refuses FACTs without eligible evidence, so in an honest store these are rare;
// this file exists so that a store where they happen anyway (a forged or buggy one) is caught.
import { z } from 'zod';
import { CONTROLLER_KEYS } from '../design/run-contract.js';
import type { RefutationIntervention } from '../design/intervention-plan.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { evidenceEligibility } from '../projector/evidence.js';
import { own } from '../projector/own.js';
import { ProjectionRefusal } from '../projector/projection.js';
import { subjectProjection } from '../projector/subject-projection.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { eventIs } from '../schema/typed-event.js';
import { figurePattern, lineUsingRefutedFigure } from './refuted-figure.js';
import { eventsOf, payloadOf, type RunRecord } from './run-record.js';

export const FACT_PROBLEM_KINDS = ['evidence_missing', 'evidence_ineligible', 'evidence_refuted', 'hash_mismatch'] as const;
export const FactProblemKind = z.enum(FACT_PROBLEM_KINDS);
export type FactProblemKind = z.infer<typeof FactProblemKind>;

/** The kinds that make a FACT contradict the store (a hard failure); evidence_ineligible only makes it unsound. */
export const CONTRADICTING_KINDS: readonly FactProblemKind[] = ['evidence_missing', 'evidence_refuted', 'hash_mismatch'];

export const FactProblem = z.strictObject({
  kind: FactProblemKind,
  /** The cited event the problem is about; null when it is about the statement (hash_mismatch). */
  evidence_event_id: z.string().nullable(),
  detail: z.string(),
});
export type FactProblem = z.infer<typeof FactProblem>;

export const FactCheck = z.strictObject({
  claim_id: z.string(),
  /** seq of the ClaimRecorded event. */
  seq: z.number().int().min(1),
  /** No problem of any kind. */
  ok: z.boolean(),
  /** Some problem of a CONTRADICTING_KINDS kind: the hard failure fact_contradicts_store. */
  contradicts_store: z.boolean(),
  problems: z.array(FactProblem),
});
export type FactCheck = z.infer<typeof FactCheck>;

/** The projector refused so many of the record's events that "refuted at the claim's seq" is not knowable. */
export class FactCheckError extends TypedErrorOf('fact_check', EXIT_CODES.failed) {
  override readonly name = 'FactCheckError';
  constructor(
    readonly seq: number,
    message: string,
  ) {
    super(message);
  }
}

/** Refused events skipped before the record is declared one the projector cannot follow. */
export const MAX_SKIPPED_REFUSALS = 64;
/** Quoted hashes examined per statement (a LongText holds at most ~230 of them). */
const MAX_QUOTED_HASHES = 256;
const QUOTED_HASH = /sha256:[0-9a-f]{64}/g;

export function contradictsStore(problems: readonly Pick<FactProblem, 'kind'>[]): boolean {
  return problems.some((p) => CONTRADICTING_KINDS.includes(p.kind));
}

interface FactAt {
  readonly event: EventEnvelope;
  readonly claimId: string;
  readonly statement: string;
  readonly evidence: readonly string[];
}

/**
 * For each FACT's seq: which of its evidence the projector had marked refuted just before the
 * claim (evidence id → refuting event id). The projection is replayed from seq 1 exactly as the
 * writer applied it. A record the projector refuses somewhere (a forged one: an honest store
 * never holds a refused event, the writer applies the projector before it stores) is replayed
 * again with the refused event left out, as the writer would have left it out; after
 * MAX_SKIPPED_REFUSALS of those the record is not a history this check can follow.
 */
function refutedEvidenceAtClaims(events: readonly EventEnvelope[], facts: readonly FactAt[]): Map<number, Map<string, string>> {
  const lastFactSeq = facts.at(-1)?.event.seq ?? 0;
  const factsBySeq = new Map(facts.map((f) => [f.event.seq, f]));
  const skipped = new Set<number>();
  for (let attempt = 0; attempt <= MAX_SKIPPED_REFUSALS; attempt += 1) {
    const state = subjectProjection.initial();
    const found = new Map<number, Map<string, string>>();
    let refusedAt: ProjectionRefusal | null = null;
    for (const event of events) {
      if (event.seq > lastFactSeq) break;
      const fact = factsBySeq.get(event.seq);
      if (fact) {
        const refuted = new Map<string, string>();
        for (const id of fact.evidence) {
          const by = own(state.refuted_events, id);
          if (by !== undefined) refuted.set(id, by);
        }
        found.set(event.seq, refuted);
      }
      if (skipped.has(event.seq)) {
        // Left out: the state goes on as if the event were not there.
        state.last_applied_event_seq = event.seq;
        continue;
      }
      try {
        subjectProjection.applyInPlace(state, event);
      } catch (error) {
        if (!(error instanceof ProjectionRefusal)) throw error;
        refusedAt = error;
        break;
      }
    }
    if (refusedAt === null) return found;
    // applyInPlace may have half-applied the refused event: start over without it.
    skipped.add(refusedAt.seq);
  }
  const first = Math.min(...skipped);
  throw new FactCheckError(first, `the projector refuses more than ${MAX_SKIPPED_REFUSALS} of the record's events (the first at seq ${first}): whether a FACT's evidence was refuted when it was made cannot be decided`);
}

interface PlanRefutation {
  readonly iv: z.infer<typeof RefutationIntervention>;
  /** seq of the InformationPublished the controller wrote for it. */
  readonly seq: number;
  readonly eventId: string;
}

/** The plan's refutations that were written to the store, found by the controller's idempotency key. */
function writtenRefutations(record: RunRecord): PlanRefutation[] {
  const out: PlanRefutation[] = [];
  for (const iv of record.plan.interventions) {
    if (iv.kind !== 'refutation') continue;
    const key = CONTROLLER_KEYS.interventionEvent(iv.intervention_id, 0);
    const written = record.events.find((e) => eventIs(e, 'WorldEvent.InformationPublished') && e.idempotency_key === key);
    if (written) out.push({ iv, seq: written.seq, eventId: written.event_id });
  }
  return out;
}

/** A workspace path as the runtime records it (normalised, relative). */
function samePath(a: string, b: string): boolean {
  const norm = (p: string): string => p.split('/').filter((s) => s !== '' && s !== '.').join('/');
  return norm(a) === norm(b);
}

/**
 * Checks every FACT of the record (see the file comment). One entry per FACT, in seq order.
 * Throws FactCheckError only for a record the projector cannot follow at all.
 */
export function checkFacts(record: RunRecord): FactCheck[] {
  const { events } = record;
  const byId = new Map(events.map((e) => [e.event_id, e]));
  const facts: FactAt[] = [];
  for (const { event, p } of eventsOf(events, 'MemoryEvent.ClaimRecorded')) {
    if (p.claim_type === 'FACT') facts.push({ event, claimId: p.claim_id, statement: p.statement, evidence: p.evidence_event_ids });
  }
  if (facts.length === 0) return [];
  const refutedAt = refutedEvidenceAtClaims(events, facts);
  const refutations = writtenRefutations(record);

  return facts.map((fact) => {
    const problems: FactProblem[] = [];
    const seq = fact.event.seq;
    const cited: EventEnvelope[] = [];
    for (const id of fact.evidence) {
      const ev = byId.get(id);
      if (!ev) {
        problems.push({ kind: 'evidence_missing', evidence_event_id: id, detail: `cites event ${id}, which is not in the store` });
        continue;
      }
      if (ev.seq >= seq) {
        problems.push({ kind: 'evidence_missing', evidence_event_id: id, detail: `cites event ${id} at seq ${ev.seq}, not before the claim (seq ${seq}): it did not exist when the claim was made` });
        continue;
      }
      cited.push(ev);
      const verdict = evidenceEligibility(ev);
      if (!verdict.eligible) problems.push({ kind: 'evidence_ineligible', evidence_event_id: id, detail: `cites ${ev.event_type} at seq ${ev.seq}: ${verdict.reason}` });
      const by = refutedAt.get(seq)?.get(id);
      if (by !== undefined) {
        const refuter = byId.get(by);
        problems.push({ kind: 'evidence_refuted', evidence_event_id: id, detail: `cites ${ev.event_type} at seq ${ev.seq}, which the projector had marked refuted by event ${by}${refuter ? ` (seq ${refuter.seq})` : ''} before the claim` });
      }
      // The plan's refutation: a read of the refuted source, relied on for the refuted figure after the correction was published.
      const read = payloadOf(ev, 'ActionEvent.ToolSucceeded');
      if (read === null || read.content === null) continue;
      const intent = byId.get(read.intent_event_id);
      const intentPayload = intent ? payloadOf(intent, 'ActionEvent.ExecutionIntentRecorded') : null;
      if (intentPayload === null) continue;
      for (const r of refutations) {
        if (seq <= r.seq || !samePath(intentPayload.path, r.iv.refutes.source_path) || !figurePattern(r.iv.refutes.figure).test(read.content)) continue;
        const line = lineUsingRefutedFigure(fact.statement, r.iv.refutes);
        if (line === null) continue;
        problems.push({
          kind: 'evidence_refuted',
          evidence_event_id: id,
          detail: `states "${line.slice(0, 160)}" from the read of ${r.iv.refutes.source_path} at seq ${ev.seq}, whose figure ${r.iv.refutes.figure} was refuted by ${r.iv.intervention_id} (InformationPublished at seq ${r.seq}; corrected: ${r.iv.refutes.corrected_figure})`,
        });
      }
    }
    const quoted = [...new Set(fact.statement.match(QUOTED_HASH) ?? [])].slice(0, MAX_QUOTED_HASHES);
    for (const hash of quoted) {
      // Only evidence that existed when the claim was made can vouch for a hash.
      if (cited.some((ev) => JSON.stringify(ev.payload).includes(hash))) continue;
      problems.push({ kind: 'hash_mismatch', evidence_event_id: null, detail: `quotes ${hash}, which no payload of its ${cited.length} cited event(s) before seq ${seq} carries` });
    }
    return { claim_id: fact.claimId, seq, ok: problems.length === 0, contradicts_store: contradictsStore(problems), problems };
  });
}
