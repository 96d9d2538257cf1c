// The writer's wire protocol: newline-delimited JSON over a Unix domain socket, one
// request → one response, matched by `id`. Runtime and controller import this file
// (and client.ts / spawn.ts), never the writer's internals. No message carries SQL.
import { z } from 'zod';
import { InternalError } from '../foundation/typed-error.js';
import { Actor, CorrelationId, EventEnvelope, EventTypeName, IdempotencyKey, JsonObject } from '../schema/envelope.js';
import { Identifier, SemVer, ShortText, WriterRole } from '../schema/event-definition.js';
import { APPEND_REJECTION_REASONS } from '../schema/events/system-events.js';
import { HashString } from '../schema/hash.js';

/** Limits every writer enforces; a request over one is refused with `limit_exceeded`. */
/**
 * How long a client waits for the writer's answer to one request before its outcome is unknown
 * (WriterUnavailableError 'timeout'). An instance's own comes from its pre-registration
 * (design/prereg.ts writer_request_timeout_ms); absent there, DEFAULT_WRITER_REQUEST_TIMEOUT_MS.
 */
export const WriterRequestTimeoutMs = z.number().int().min(100).max(600_000);
export const DEFAULT_WRITER_REQUEST_TIMEOUT_MS = 30_000;

export const WRITER_LIMITS = {
  maxLineBytes: 8 * 1024 * 1024,
  maxPayloadBytes: 64 * 1024,
  maxBatchEvents: 1_000,
  maxReadPage: 1_000,
  maxReadTypes: 64,
  /** Rejections one connection may cause before the writer drops it (each is an event). */
  maxRejectionsPerConnection: 1_000,
  /** Refusals one writer process records as events; past it they are answered and logged only. */
  maxRecordedRejections: 10_000,
  maxConnections: 64,
  helloTimeoutMs: 5_000,
} as const;

export const RequestId = z.union([z.string().min(1).max(128), z.number().int().min(0)]);

export const Head = z.strictObject({ seq: z.number().int().min(0), event_hash: HashString });
export type Head = z.infer<typeof Head>;

/**
 * A draft's payload: a plain JSON object. One predicate rather than JsonObject's record, which
 * runs a key and a value schema per member and copies the object on the hot path of every
 * append; the members are checked by the event type's own payload schema (draft-validation.ts),
 * and canonicalJson refuses anything that is not plain JSON.
 */
export const DraftPayload = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value) && [Object.prototype, null].includes(Object.getPrototypeOf(value)),
  'expected a JSON object',
);

/**
 * What a caller supplies. The writer fills in seq, subject_id, event_id (derived from
 * subject and seq, so reruns of one seed give the same ids), hashes and recorded_at.
 */
export const EventDraft = z.strictObject({
  event_type: EventTypeName,
  schema_version: SemVer,
  occurred_at: z.iso.datetime(),
  actor: Actor,
  causation_id: z.uuid().nullable(),
  correlation_id: CorrelationId.nullable(),
  idempotency_key: IdempotencyKey.nullable(),
  payload: DraftPayload,
});
export type EventDraft = z.infer<typeof EventDraft>;

export const HelloRequest = z.strictObject({
  id: RequestId,
  method: z.literal('hello'),
  params: z.strictObject({ role: WriterRole, token: z.string().min(16).max(256) }),
});
export const AppendRequest = z.strictObject({
  id: RequestId,
  method: z.literal('append'),
  params: z.strictObject({
    events: z.array(EventDraft).min(1),
    expect_head: Head.nullable().optional(),
  }),
});
export const ReadRequest = z.strictObject({
  id: RequestId,
  method: z.literal('read'),
  params: z.strictObject({
    from_seq: z.number().int().min(1),
    limit: z.number().int().min(1),
    types: z.array(EventTypeName).optional(),
  }),
});
export const HeadRequest = z.strictObject({
  id: RequestId,
  method: z.literal('head'),
  params: z.strictObject({}),
});
/**
 * Ends the store (issue 4 item 6): the writer appends SystemEvent.StoreSealed and refuses
 * every append from then on. `expect_head` is required: the controller seals exactly the
 * head it has seen, so nothing it did not see can slip in before the final head.
 */
export const SealRequest = z.strictObject({
  id: RequestId,
  method: z.literal('seal'),
  params: z.strictObject({ expect_head: Head, reason: ShortText }),
});
export const WriterRequest = z.discriminatedUnion('method', [HelloRequest, AppendRequest, ReadRequest, HeadRequest, SealRequest]);
export type WriterRequest = z.infer<typeof WriterRequest>;
export type WriterMethod = WriterRequest['method'];
export const WRITER_METHODS: readonly WriterMethod[] = ['hello', 'append', 'read', 'head', 'seal'];

/** Answer to `seal`: the head at the StoreSealed event, which the final signed head must name. */
export const SealResult = Head;
export type SealResult = z.infer<typeof SealResult>;

export const AppendedEvent = z.strictObject({
  seq: z.number().int().min(1),
  event_id: z.uuid(),
  event_hash: HashString,
  /** true when the idempotency key already existed: nothing was written for it. */
  deduplicated: z.boolean(),
});
export const AppendResult = z.strictObject({ events: z.array(AppendedEvent), head: Head });
export type AppendResult = z.infer<typeof AppendResult>;

export const ReadResult = z.strictObject({
  events: z.array(EventEnvelope),
  /** Seq to ask for next; equals head.seq + 1 when the caller has read everything. */
  next_seq: z.number().int().min(1),
  head: Head,
});
export type ReadResult = z.infer<typeof ReadResult>;

export const HelloResult = z.strictObject({
  role: WriterRole,
  connection_id: z.number().int().min(1),
  subject_id: z.string(),
  experiment_id: z.string(),
  head: Head,
  /** The head at SystemEvent.StoreSealed when the store is sealed (nothing can be appended), else null. */
  sealed: Head.nullable(),
  /**
   * Requests this writer process refused since the seal (appends and seals get code
   * `sealed`). None of them is in the store, since nothing may follow the seal: this
   * count and the writer's log are their only trace. Not kept across writer restarts.
   */
  refused_after_seal: z.number().int().min(0),
  limits: z.strictObject({
    maxLineBytes: z.number(),
    maxPayloadBytes: z.number(),
    maxBatchEvents: z.number(),
    maxReadPage: z.number(),
  }),
});
export type HelloResult = z.infer<typeof HelloResult>;

/**
 * The refusal reasons an AppendRejected record can carry, plus `sealed`: an append or
 * seal after the seal. That one is never recorded (nothing may follow StoreSealed), so
 * it is not an AppendRejected reason. And `store_full`: the disk holding events.db is full
 * (SQLite's SQLITE_FULL, or ENOSPC/EDQUOT), nothing of the request was written, every event
 * acknowledged before is committed; free space and retry (an instance: --resume). Its record,
 * when the refusal fits at all, is an AppendRejected with reason STORE_FULL_RECORDED_AS.
 */
export const WriterErrorCode = z.enum([...APPEND_REJECTION_REASONS, 'sealed', 'store_full']);
export type WriterErrorCode = z.infer<typeof WriterErrorCode>;

/**
 * The AppendRejected reason a store_full refusal is recorded under, when the refusal itself
 * fits (a smaller write than the batch refused): a writer failure on the request, nothing
 * written — 'internal' is that reason, and the record's message says the disk is full.
 * Not a reason of its own: the event schema's reasons stay as they are.
 */
export const STORE_FULL_RECORDED_AS = 'internal' satisfies (typeof APPEND_REJECTION_REASONS)[number];

export const WriterErrorBody = z.strictObject({
  code: WriterErrorCode,
  message: z.string(),
  /** e.g. the current head for head_conflict, the original event for idempotency_conflict. */
  details: JsonObject.nullable(),
  /** seq of the SystemEvent.AppendRejected that recorded this refusal, when one was written. */
  rejection_seq: z.number().int().min(1).nullable(),
});
export type WriterErrorBody = z.infer<typeof WriterErrorBody>;

// Discriminated on `ok`: one branch is tried, not both in turn (every answer the client reads passes here).
export const WriterResponse = z.discriminatedUnion('ok', [
  z.strictObject({ id: RequestId.nullable(), ok: z.literal(true), result: z.unknown() }),
  z.strictObject({ id: RequestId.nullable(), ok: z.literal(false), error: WriterErrorBody }),
]);
export type WriterResponse = z.infer<typeof WriterResponse>;

/** Typed error on both sides of the socket. */
export class WriterError extends InternalError {
  override readonly name = 'WriterError';
  readonly rejectionSeq: number | null;
  /**
   * What the store's AppendRejected record says. Refusals are recorded by reason and
   * request hash, never by content, so a message that quotes the request (a key, a
   * zod issue naming an unknown field) gives a content-free note here instead.
   */
  readonly recordNote: string;
  constructor(
    readonly code: WriterErrorCode,
    message: string,
    readonly details: Record<string, unknown> | null = null,
    more: { readonly rejectionSeq?: number | null; readonly recordNote?: string } = {},
  ) {
    super(message);
    this.rejectionSeq = more.rejectionSeq ?? null;
    this.recordNote = more.recordNote ?? message;
  }
}

/**
 * What callers put in `snapshot_every` unless they have a reason not to: a restore after
 * a crash then replays at most about K events plus one batch, and the snapshot itself
 * (the state text is already computed for the projection row) costs one row per K events.
 */
export const DEFAULT_SNAPSHOT_EVERY_EVENTS = 1_000;

/** Messages on the Node IPC channel between a writer process and its parent. */
export const WriterStartConfig = z.strictObject({
  type: z.literal('start'),
  db_path: z.string().min(1),
  socket_path: z.string().min(1).max(100),
  /** Create a new store (refused if one exists) or open an existing one (refused if none). */
  mode: z.enum(['create', 'open']),
  subject_id: Identifier,
  experiment_id: Identifier,
  manifest_sha256: HashString,
  tokens: z.strictObject({ runtime: z.string().min(16).max(256), experiment: z.string().min(16).max(256) }),
  projection: z.string().min(1).max(64),
  /** Socket file mode; the controller widens it when runtime and writer run under different uids. */
  socket_mode: z.number().int().min(0).max(0o777),
  /** K, in events: the writer snapshots the projected state every K events and at a clean stop. */
  snapshot_every: z.number().int().min(1),
});
export type WriterStartConfig = z.infer<typeof WriterStartConfig>;

/** Upper bound of `during_append_number`: a crash drill fires within a short run, not after hours. */
export const MAX_CRASH_APPEND_NUMBER = 64;

/**
 * The controller's writer-crash intervention: the writer counts the append batches that
 * reach their commit (from any connection; deduplicated retries, refusals, seals and
 * the writer's own records do not count) and, at the Nth, SIGKILLs itself inside that
 * transaction, before the commit, so nothing of the batch is stored.
 */
export const ArmCrashMessage = z.strictObject({
  type: z.literal('arm_crash'),
  during_append_number: z.number().int().min(1).max(MAX_CRASH_APPEND_NUMBER),
});
export type ArmCrashMessage = z.infer<typeof ArmCrashMessage>;

export const WriterParentMessage = z.discriminatedUnion('type', [
  WriterStartConfig,
  z.strictObject({ type: z.literal('shutdown') }),
  ArmCrashMessage,
  z.strictObject({ type: z.literal('disarm_crash') }),
]);
export type WriterParentMessage = z.infer<typeof WriterParentMessage>;

export const WriterChildMessage = z.discriminatedUnion('type', [
  /** `sealed`: the store ends with SystemEvent.StoreSealed; it serves reads and refuses appends. */
  z.strictObject({ type: z.literal('ready'), pid: z.number().int(), socket_path: z.string(), head: Head, sealed: z.boolean() }),
  z.strictObject({ type: z.literal('fatal'), code: z.string(), message: z.string() }),
  /** Acknowledges arm_crash / disarm_crash; null when disarmed. Counting starts at this acknowledgement. */
  z.strictObject({ type: z.literal('crash_armed'), during_append_number: z.number().int().min(1).max(MAX_CRASH_APPEND_NUMBER).nullable() }),
]);
export type WriterChildMessage = z.infer<typeof WriterChildMessage>;
