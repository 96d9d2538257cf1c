// What the audit desk needs to link events to each other, built in one streaming pass over
// the store when the desk opens: the events are read one row at a time and dropped; only
// seqs and the ids that link them are kept (action chains, who cites an event, deliveries,
// recovery events, wakes). Pages then read the few events they show by seq.
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { isEventType, type EventType } from '../schema/event-catalog.js';
import type { StoreReader } from '../writer/store-reader.js';

/** The desk refuses a larger store rather than hold an index it cannot bound. */
export const MAX_INDEXED_EVENTS = 10_000_000;
/** Recovery rows (and orphan steps, unreadable rows) kept for the pages; more are counted, and the pages say how many. */
export const MAX_RECOVERY_ROWS = 10_000;

export interface ChainStep {
  readonly seq: number;
  readonly event_type: EventType;
}

/** One ActionProposed and what followed it (spec §16.1: proposal → permission → execution). */
export interface ActionChain {
  readonly proposed_seq: number;
  readonly proposal_id: string;
  readonly wake_id: string | null;
  readonly tool: string;
  readonly op: string;
  decision: 'allow' | 'deny' | null;
  decision_seq: number | null;
  intent_seq: number | null;
  /** ToolSucceeded / ToolFailed / ToolOutcomeUnknown / ToolReconciled / OperatorResolved, in seq order. */
  readonly outcomes: ChainStep[];
  /** JournalEntryWritten / TaskBoardChanged executing it. */
  readonly effects: ChainStep[];
}

export interface Citation {
  readonly seq: number;
  readonly kind: 'claim' | 'checkpoint';
}

export interface WakeSpan {
  readonly wake_id: string;
  readonly started_seq: number;
  ended_seq: number | null;
  outcome: string | null;
}

export interface Delivery {
  readonly seq: number;
  readonly intervention_id: string;
  readonly wake_id: string;
  readonly event_ids: readonly string[];
}

export interface UnknownOutcome {
  readonly intent_event_id: string;
  readonly unknown_seq: number;
  /** The OperatorResolved (the only event that may close it) or a later outcome event. */
  closed_seq: number | null;
  closed_by: EventType | null;
}

/** Asked of any row's type (a forged row's too), hence a set of strings; its members are checked against the catalogue. */
export const RECOVERY_EVENT_TYPES: ReadonlySet<string> = new Set<EventType>([
  'SystemEvent.ProcessRestarted',
  'ActionEvent.ToolReconciled',
  'ActionEvent.ToolOutcomeUnknown',
  'SystemEvent.OperatorResolved',
  'SystemEvent.EmergencyStopped',
  'SystemEvent.Paused',
  'SystemEvent.Resumed',
  'SystemEvent.AppendRejected',
]);

export interface StoreIndex {
  readonly head_seq: number;
  readonly type_counts: ReadonlyMap<string, number>;
  readonly wakes: readonly WakeSpan[];
  readonly chains: readonly ActionChain[];
  /** Any seq of a chain → the chain's proposed_seq. */
  readonly chain_of_seq: ReadonlyMap<number, number>;
  readonly chain_by_proposed_seq: ReadonlyMap<number, ActionChain>;
  /** event_id → the claims and checkpoints citing it as evidence. */
  readonly cited_by: ReadonlyMap<string, readonly Citation[]>;
  /** event_id → the InterventionDelivered that delivered it. */
  readonly delivered_by: ReadonlyMap<string, number>;
  readonly deliveries: readonly Delivery[];
  readonly recovery: readonly ChainStep[];
  readonly recovery_not_listed: number;
  readonly unknown_outcomes: readonly UnknownOutcome[];
  /**
   * Decisions, intents, outcomes and tool effects that name a proposal, permission decision or
   * intent no chain holds (an execution without its decision is an unauthorised execution).
   */
  readonly orphan_steps: readonly ChainStep[];
  readonly orphan_steps_not_listed: number;
  /** Rows whose stored text is not a JSON object: indexed by their column type only. */
  readonly unreadable_seqs: readonly number[];
  readonly unreadable_not_listed: number;
  readonly sealed_seq: number | null;
  readonly build_ms: number;
}

export class AuditIndexError extends TypedErrorOf('audit_index', EXIT_CODES.failed) {
  override readonly name = 'AuditIndexError';
}

const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const ids = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

/** Reads every event once, in seq order, keeping links only. */
export function buildStoreIndex(reader: StoreReader, nowMs: () => number): StoreIndex {
  const startedMs = nowMs();
  const headSeq = reader.headSeq();
  if (headSeq > MAX_INDEXED_EVENTS) throw new AuditIndexError(`${reader.path} holds ${headSeq} events; the desk indexes at most ${MAX_INDEXED_EVENTS}`);
  const typeCounts = new Map<string, number>();
  const wakes: WakeSpan[] = [];
  const chains: ActionChain[] = [];
  const chainOfSeq = new Map<number, number>();
  const chainByProposedSeq = new Map<number, ActionChain>();
  const chainByProposal = new Map<string, ActionChain>();
  const chainByPermission = new Map<string, ActionChain>();
  const chainByIntent = new Map<string, ActionChain>();
  const citedBy = new Map<string, Citation[]>();
  const deliveredBy = new Map<string, number>();
  const deliveries: Delivery[] = [];
  const recovery: ChainStep[] = [];
  let recoveryNotListed = 0;
  const unknown = new Map<string, UnknownOutcome>();
  let sealedSeq: number | null = null;
  let wake: WakeSpan | null = null;

  const step = (chain: ActionChain, list: 'outcomes' | 'effects', seq: number, type: EventType): void => {
    chain[list].push({ seq, event_type: type });
    chainOfSeq.set(seq, chain.proposed_seq);
  };
  const cite = (eventIds: string[], seq: number, kind: Citation['kind']): void => {
    for (const id of eventIds) {
      const list = citedBy.get(id);
      if (list) list.push({ seq, kind });
      else citedBy.set(id, [{ seq, kind }]);
    }
  };

  const orphans: ChainStep[] = [];
  const unreadable: number[] = [];
  let orphansNotListed = 0;
  let unreadableNotListed = 0;
  const orphan = (seq: number, type: EventType): void => {
    if (orphans.length < MAX_RECOVERY_ROWS) orphans.push({ seq, event_type: type });
    else orphansNotListed += 1;
  };
  // Plan steps reach the task board under the plan proposal's id, not an action proposal's.
  const planProposals = new Set<string>();

  // Bounded by the rows of the store (checked against MAX_INDEXED_EVENTS above).
  for (const row of reader.iterateEvents(0, headSeq)) {
    // The row's column says what it is filed as; a forged or rotten text must not take the desk
    // down: it is indexed by that column, and its own page says what is wrong (verify says why).
    let parsed: unknown;
    try {
      parsed = JSON.parse(row.envelope);
    } catch {
      parsed = null;
    }
    const readable = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
    if (!readable && unreadable.length < MAX_RECOVERY_ROWS) unreadable.push(row.seq);
    else if (!readable) unreadableNotListed += 1;
    const event = (readable ? parsed : {}) as Partial<EventEnvelope>;
    const type = row.event_type;
    // The column is any string (an old or forged store's too): a type the catalogue lacks is counted, never linked.
    const known: EventType | null = isEventType(type) ? type : null;
    const payload = event.payload;
    const p = (typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? payload : {}) as Record<string, unknown>;
    const eventId = str(event.event_id) ?? '';
    typeCounts.set(type, (typeCounts.get(type) ?? 0) + 1);
    if (known !== null && (RECOVERY_EVENT_TYPES.has(known) || (known === 'ExperimentEvent.WakeEnded' && p.outcome !== 'completed'))) {
      if (recovery.length < MAX_RECOVERY_ROWS) recovery.push({ seq: row.seq, event_type: known });
      else recoveryNotListed += 1;
    }
    switch (known) {
      case 'ExperimentEvent.WakeStarted':
        wake = { wake_id: str(p.wake_id) ?? '?', started_seq: row.seq, ended_seq: null, outcome: null };
        wakes.push(wake);
        break;
      case 'ExperimentEvent.WakeEnded':
        if (wake && wake.wake_id === p.wake_id) {
          wake.ended_seq = row.seq;
          wake.outcome = str(p.outcome);
        }
        wake = null;
        break;
      case 'ActionEvent.ActionProposed': {
        const chain: ActionChain = { proposed_seq: row.seq, proposal_id: str(p.proposal_id) ?? '?', wake_id: wake?.wake_id ?? null, tool: str(p.tool) ?? '?', op: str(p.op) ?? '?', decision: null, decision_seq: null, intent_seq: null, outcomes: [], effects: [] };
        chains.push(chain);
        chainByProposedSeq.set(row.seq, chain);
        chainOfSeq.set(row.seq, row.seq);
        // A proposal id names a proposal within its wake (the projector forgets proposals at the next wake).
        chainByProposal.set(`${chain.wake_id ?? ''}|${chain.proposal_id}`, chain);
        break;
      }
      case 'ActionEvent.PermissionDecided': {
        const chain = chainByProposal.get(`${wake?.wake_id ?? ''}|${str(p.proposal_id) ?? ''}`);
        if (chain) {
          chain.decision = p.decision === 'allow' || p.decision === 'deny' ? p.decision : null;
          chain.decision_seq = row.seq;
          chainOfSeq.set(row.seq, chain.proposed_seq);
          chainByPermission.set(eventId, chain);
        } else orphan(row.seq, known);
        break;
      }
      case 'ActionEvent.ExecutionIntentRecorded': {
        const chain = chainByPermission.get(str(p.permission_event_id) ?? '');
        if (chain) {
          chain.intent_seq = row.seq;
          chainOfSeq.set(row.seq, chain.proposed_seq);
          chainByIntent.set(eventId, chain);
        } else orphan(row.seq, known);
        break;
      }
      case 'ActionEvent.ToolSucceeded':
      case 'ActionEvent.ToolFailed':
      case 'ActionEvent.ToolReconciled':
      case 'ActionEvent.ToolOutcomeUnknown':
      case 'SystemEvent.OperatorResolved': {
        const intentId = str(p.intent_event_id) ?? '';
        const chain = chainByIntent.get(intentId);
        if (chain) step(chain, 'outcomes', row.seq, known);
        else orphan(row.seq, known);
        if (known === 'ActionEvent.ToolOutcomeUnknown') unknown.set(intentId, { intent_event_id: intentId, unknown_seq: row.seq, closed_seq: null, closed_by: null });
        else {
          const open = unknown.get(intentId);
          if (open && open.closed_seq === null) {
            open.closed_seq = row.seq;
            open.closed_by = known;
          }
        }
        break;
      }
      case 'MemoryEvent.JournalEntryWritten':
      case 'MemoryEvent.TaskBoardChanged': {
        const proposalId = str(p.proposal_id) ?? '';
        const chain = chainByProposal.get(`${wake?.wake_id ?? ''}|${proposalId}`);
        if (chain) step(chain, 'effects', row.seq, known);
        else if (!planProposals.has(proposalId)) orphan(row.seq, known);
        break;
      }
      case 'PlanEvent.PlanRevisionProposed':
        planProposals.add(str(p.proposal_id) ?? '');
        break;
      case 'MemoryEvent.ClaimRecorded':
        cite(ids(p.evidence_event_ids), row.seq, 'claim');
        break;
      case 'ExperimentEvent.CheckpointRecorded':
        cite(ids(p.evidence_event_ids), row.seq, 'checkpoint');
        break;
      case 'ExperimentEvent.InterventionDelivered': {
        const delivered = ids(p.event_ids);
        deliveries.push({ seq: row.seq, intervention_id: str(p.intervention_id) ?? '?', wake_id: str(p.wake_id) ?? '?', event_ids: delivered });
        for (const id of delivered) deliveredBy.set(id, row.seq);
        break;
      }
      case 'SystemEvent.StoreSealed':
        sealedSeq = row.seq;
        break;
      default:
        break;
    }
  }
  return {
    head_seq: headSeq,
    type_counts: typeCounts,
    wakes,
    chains,
    chain_of_seq: chainOfSeq,
    chain_by_proposed_seq: chainByProposedSeq,
    cited_by: citedBy,
    delivered_by: deliveredBy,
    deliveries,
    recovery,
    recovery_not_listed: recoveryNotListed,
    unknown_outcomes: [...unknown.values()],
    orphan_steps: orphans,
    orphan_steps_not_listed: orphansNotListed,
    unreadable_seqs: unreadable,
    unreadable_not_listed: unreadableNotListed,
    sealed_seq: sealedSeq,
    build_ms: nowMs() - startedMs,
  };
}
