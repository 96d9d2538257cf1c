import { z } from 'zod';
import { ChainHead } from '../chain-head.js';
import { DsseEnvelope } from '../dsse.js';
import { HashString } from '../hash.js';
import { CostCapUsd } from '../model-prices.js';
import { defineEvent, Identifier, LongText, SemVer, ShortText, WriterRole } from '../event-definition.js';

/** First event of every store: binds the chain to one experiment instance and manifest. */
export const StoreOpened = defineEvent('SystemEvent', 'StoreOpened', '1.0.0', z.strictObject({
  experiment_id: Identifier,
  subject_id: Identifier,
  manifest_sha256: HashString,
  store_format_version: z.number().int().min(1),
  event_schema_version: SemVer,
  writer_version: SemVer,
  projection: z.strictObject({ name: Identifier, version: SemVer }),
}), []);

export const APPEND_REJECTION_REASONS = [
  'bad_message',
  'schema',
  'unknown_method',
  'unauthenticated',
  'role_forbidden',
  'limit_exceeded',
  'head_conflict',
  'idempotency_conflict',
  'projection_rejected',
  /** A FACT that cites no event, an event not in the store, or one that is not evidence. */
  'evidence_rejected',
  /** The writer failed on the request (a bug or a broken disk); nothing was written. */
  'internal',
] as const;
export const AppendRejectionReason = z.enum(APPEND_REJECTION_REASONS);
export type AppendRejectionReason = z.infer<typeof AppendRejectionReason>;

/**
 * The last event of a finished store (issue 4 item 6). Only the writer writes it, in
 * answer to the controller's `seal` request; from then on it refuses every append (and
 * a SQL trigger refuses every insert), so the final signed head — which must name this
 * event — really is the end of the chain.
 */
export const StoreSealed = defineEvent('SystemEvent', 'StoreSealed', '1.0.0', z.strictObject({
  reason: ShortText,
  /** The role whose `seal` request this answers (only `experiment` may ask). */
  sealed_by: WriterRole,
}), []);

/** A refused request: the reason and a hash of the request, never its content. */
export const AppendRejected = defineEvent('SystemEvent', 'AppendRejected', '1.0.0', z.strictObject({
  reason: AppendRejectionReason,
  message: z.string().max(2_000),
  role: WriterRole.nullable(),
  method: z.string().max(64).nullable(),
  request_id: z.string().max(128).nullable(),
  request_sha256: HashString,
  request_bytes: z.number().int().min(0),
  connection_id: z.number().int().min(1),
}), []);

const InitialTask = z.strictObject({
  task_id: Identifier,
  title: ShortText,
  priority: z.number().int().min(0).max(9),
  depends_on: z.array(Identifier).max(32),
});

/** The scenario's initial conditions (spec §6.3), identical for every group. */
export const SubjectInitialized = defineEvent('SystemEvent', 'SubjectInitialized', '1.0.0', z.strictObject({
  identity: z.strictObject({ name: ShortText, description: LongText }),
  identity_schema_version: SemVer,
  goal: z.strictObject({ goal_id: Identifier, description: LongText, deadline_at: z.iso.datetime().nullable() }),
  tasks: z.array(InitialTask).max(64),
  journal_first_page: z.strictObject({ entry_id: Identifier, text: LongText }),
}));

/** An operator pause (spec §16.2): recorded, never an experimental effect. */
export const Paused = defineEvent('SystemEvent', 'Paused', '1.0.0', z.strictObject({ operator: ShortText, reason: LongText }));
/**
 * 1.1.0 (issue 36): `cost_cap_raised_to_usd` — the cost cap this instance holds from this resume
 * on, raised by the operator above the pre-registered one (a departure from the pre-registration,
 * said by the study's report; design/cost-cap.ts); null: the cap stays as it was.
 */
export const Resumed = defineEvent('SystemEvent', 'Resumed', '1.1.0', z.strictObject({ operator: ShortText, reason: LongText, cost_cap_raised_to_usd: CostCapUsd.nullable() }), undefined, {
  '1.0.0': z.strictObject({ operator: ShortText, reason: LongText }),
});

/** A periodic head signed by the controller, kept in the chain it attests. */
export const ChainHeadSigned = defineEvent('SystemEvent', 'ChainHeadSigned', '1.0.0', z.strictObject({
  head: ChainHead,
  envelope: DsseEnvelope,
}));

export const ProcessRestarted = defineEvent('SystemEvent', 'ProcessRestarted', '1.0.0', z.strictObject({
  process: z.enum(['writer', 'runtime']),
  reason: ShortText,
  previous_exit: z.strictObject({ code: z.number().int().nullable(), signal: z.string().max(32).nullable() }),
}));

export const EmergencyStopped = defineEvent('SystemEvent', 'EmergencyStopped', '1.0.0', z.strictObject({
  operator: ShortText,
  reason: LongText,
}));

/** The only way an unknown tool outcome is resolved (DESIGN §7): an operator's statement. */
export const OperatorResolved = defineEvent('SystemEvent', 'OperatorResolved', '1.0.0', z.strictObject({
  operator: ShortText,
  intent_event_id: z.uuid(),
  resolution: z.enum(['happened', 'did_not_happen']),
  note: LongText,
}));
