// The writer's local socket: newline-delimited JSON, one response per request, in
// order. Requests are handled synchronously one at a time, so appends from all
// connections are serialised by construction. Every refusal is answered with a typed
// error and recorded as SystemEvent.AppendRejected (reason + hash of the request) —
// except after the seal, when nothing may be recorded: those refusals are answered,
// logged and counted (`refused_after_seal`), and appends and seals get code `sealed`.
import { timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { z } from 'zod';
import type { WriterRole } from '../schema/event-definition.js';
import type { AppendRejectionReason } from '../schema/events/system-events.js';
import { hashText } from '../schema/hash.js';
import { validateDrafts } from './draft-validation.js';
import type { FaultSwitch } from '../schema/fault-switch.js';
import type { EventStore, StoreIdentity } from './event-store.js';
import { STORE_FULL_RECORDED_AS, WRITER_LIMITS, WRITER_METHODS, WriterError, WriterRequest, type HelloResult, type WriterErrorCode, type WriterResponse } from './protocol.js';

export interface WriterServerOptions {
  readonly store: EventStore;
  readonly identity: StoreIdentity;
  readonly tokens: Readonly<Record<WriterRole, string>>;
  readonly socketPath: string;
  readonly socketMode: number;
  readonly log: (line: string) => void;
  /** The fault harness's socket and after-commit points (writer/main.ts); absent in tests. */
  readonly faults?: FaultSwitch;
}

export interface WriterServer {
  close(): Promise<void>;
  /** Requests refused since the seal (none of them recorded in the store). */
  refusedAfterSeal(): number;
}

const MAX_MESSAGE_CHARS = 2_000;

interface RequestContext {
  readonly line: Buffer | null;
  readonly method: string | null;
  /** The request's id when it had a usable one, echoed so the caller can match the answer. */
  readonly id: string | number | null;
}

const NO_REQUEST: RequestContext = { line: null, method: null, id: null };

/** Per writer process, shared by all connections: reconnecting resets neither. */
interface WriterCounters {
  /** Refusals recorded as AppendRejected (bounded by maxRecordedRejections). */
  recorded: number;
  /** Refusals answered after the seal, which nothing may record. */
  refusedAfterSeal: number;
}

function usableId(value: unknown): string | number | null {
  if (typeof value === 'string' && value.length > 0 && value.length <= 128 && value.isWellFormed()) return value;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  return null;
}

class Connection {
  role: WriterRole | null = null;
  rejections = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private closed = false;
  private readonly helloTimer: NodeJS.Timeout;

  constructor(
    readonly id: number,
    private readonly socket: net.Socket,
    private readonly options: WriterServerOptions,
    private readonly budget: WriterCounters,
  ) {
    this.helloTimer = setTimeout(() => {
      if (this.role === null) this.refuse(new WriterError('unauthenticated', `no hello within ${WRITER_LIMITS.helloTimeoutMs} ms`), NO_REQUEST, true);
    }, WRITER_LIMITS.helloTimeoutMs);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => socket.resume());
    socket.on('error', (error) => options.log(`connection ${id}: ${error.message}`));
    socket.on('close', () => {
      this.closed = true;
      clearTimeout(this.helloTimer);
    });
  }

  private onData(chunk: Buffer): void {
    let start = 0;
    while (!this.closed) {
      const newline = chunk.indexOf(10, start);
      if (newline === -1) {
        const rest = chunk.subarray(start);
        this.pendingBytes += rest.length;
        if (this.pendingBytes > WRITER_LIMITS.maxLineBytes) this.overflow(this.pendingBytes);
        else if (rest.length > 0) this.pending.push(rest);
        return;
      }
      const piece = chunk.subarray(start, newline);
      const line = this.pending.length > 0 ? Buffer.concat([...this.pending, piece]) : piece;
      this.pending = [];
      this.pendingBytes = 0;
      start = newline + 1;
      if (line.length > WRITER_LIMITS.maxLineBytes) return this.overflow(line.length);
      if (line.length > 0) this.handleLine(line);
    }
  }

  private overflow(bytes: number): void {
    // Past the limit we cannot find the next message boundary safely: refuse and hang up.
    this.pending = [];
    this.pendingBytes = 0;
    this.refuse(
      new WriterError('limit_exceeded', `message exceeds ${WRITER_LIMITS.maxLineBytes} bytes (at least ${bytes}); connection closed`, { limit: 'maxLineBytes' }),
      NO_REQUEST,
      true,
    );
  }

  private handleLine(line: Buffer): void {
    let raw: unknown;
    try {
      raw = JSON.parse(line.toString('utf8'));
    } catch {
      return this.refuse(new WriterError('bad_message', 'message is not JSON'), { line, method: null, id: null });
    }
    const envelope = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
    const method = typeof envelope.method === 'string' ? envelope.method.slice(0, 64) : null;
    const ctx: RequestContext = { line, method, id: usableId(envelope.id) };
    if (method === null || !(WRITER_METHODS as readonly string[]).includes(method)) {
      return this.refuse(
        new WriterError('unknown_method', `unknown method ${JSON.stringify(method)}; methods: ${WRITER_METHODS.join(', ')}`, null, { recordNote: 'unknown method' }),
        { ...ctx, method: null },
      );
    }
    const parsed = WriterRequest.safeParse(raw);
    if (!parsed.success) {
      const error = new WriterError('schema', `request does not match the ${method} schema: ${z.prettifyError(parsed.error)}`, null, { recordNote: `request does not match the ${method} schema` });
      return this.refuse(error, ctx);
    }
    const request = parsed.data;
    const fault = request.method === 'append' && this.role !== null ? (this.options.faults?.hit('writer.socket.append_request', () => ({ request_id: String(request.id), head_seq: this.options.store.head().seq })) ?? null) : null;
    if (fault === 'drop_message') {
      this.options.log(`connection ${this.id}: FAULT INJECTION drops append request ${String(request.id)}: not handled, not answered`);
      return;
    }
    this.handle(request, ctx);
    if (fault === 'duplicate_message') {
      this.options.log(`connection ${this.id}: FAULT INJECTION delivers append request ${String(request.id)} a second time`);
      this.handle(request, ctx);
    }
  }

  private handle(request: WriterRequest, ctx: RequestContext): void {
    try {
      if (request.method === 'hello') return this.hello(request.id, request.params.role, request.params.token, ctx);
      if (this.role === null) throw new WriterError('unauthenticated', `say hello before ${request.method}`);
      const { store } = this.options;
      switch (request.method) {
        case 'append': {
          // Before the drafts are looked at: after the seal every append gets `sealed`.
          store.assertNotSealed();
          const drafts = validateDrafts(request.params.events, this.role);
          const result = store.append(drafts, request.params.expect_head ?? null);
          this.options.faults?.hit('writer.append.after_commit', () => ({ request_id: String(request.id), head_seq: result.head.seq }));
          return this.send({ id: request.id, ok: true, result });
        }
        case 'read': {
          const { from_seq, limit, types } = request.params;
          if (limit > WRITER_LIMITS.maxReadPage) throw new WriterError('limit_exceeded', `read limit ${limit} exceeds the page limit ${WRITER_LIMITS.maxReadPage}`, { limit: 'maxReadPage' });
          if (types && types.length > WRITER_LIMITS.maxReadTypes) throw new WriterError('limit_exceeded', `at most ${WRITER_LIMITS.maxReadTypes} types per read`, { limit: 'maxReadTypes' });
          const page = store.readPage(from_seq, limit, types);
          // Envelopes are spliced in as stored: already canonical JSON, no re-serialising.
          const head = JSON.stringify(store.head());
          return this.sendText(`{"id":${JSON.stringify(request.id)},"ok":true,"result":{"events":[${page.texts.join(',')}],"next_seq":${page.nextSeq},"head":${head}}}`);
        }
        case 'head':
          return this.send({ id: request.id, ok: true, result: store.head() });
        case 'seal': {
          store.assertNotSealed();
          // Only the controller ends a run; the runtime must not be able to cut it short.
          if (this.role !== 'experiment') throw new WriterError('role_forbidden', `role ${this.role} may not seal the store`);
          const sealed = store.seal(request.params.expect_head, request.params.reason, this.role);
          this.options.log(`connection ${this.id}: store sealed at seq ${sealed.seq} (${sealed.event_hash}); appends are refused from now on`);
          return this.send({ id: request.id, ok: true, result: sealed });
        }
        default: {
          const unhandled: never = request;
          throw new Error(`unhandled method ${JSON.stringify(unhandled)}`);
        }
      }
    } catch (error) {
      if (error instanceof WriterError) return this.refuse(error, ctx);
      // A bug or a failing disk: the transaction rolled back. Say so to the caller, the
      // log and (if the store still takes writes) the store.
      const message = error instanceof Error ? error.message : String(error);
      this.options.log(`connection ${this.id}: internal error on ${request.method} ${String(request.id)}: ${message}`);
      return this.refuse(new WriterError('internal', `internal error, nothing was written: ${message}`, null, { recordNote: `internal error on ${request.method}; nothing was written` }), ctx);
    }
  }

  private hello(id: string | number, role: WriterRole, token: string, ctx: RequestContext): void {
    if (this.role !== null) return this.refuse(new WriterError('bad_message', `already authenticated as ${this.role}`), ctx);
    const expected = Buffer.from(this.options.tokens[role]);
    const given = Buffer.from(token);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      return this.refuse(new WriterError('unauthenticated', `wrong token for role ${role}`), ctx, true);
    }
    this.role = role;
    clearTimeout(this.helloTimer);
    const result: HelloResult = {
      role,
      connection_id: this.id,
      subject_id: this.options.identity.subject_id,
      experiment_id: this.options.identity.experiment_id,
      head: this.options.store.head(),
      sealed: this.options.store.sealed(),
      refused_after_seal: this.budget.refusedAfterSeal,
      limits: {
        maxLineBytes: WRITER_LIMITS.maxLineBytes,
        maxPayloadBytes: WRITER_LIMITS.maxPayloadBytes,
        maxBatchEvents: WRITER_LIMITS.maxBatchEvents,
        maxReadPage: WRITER_LIMITS.maxReadPage,
      },
    };
    this.send({ id, ok: true, result });
  }

  /**
   * Answers with a typed error and records the refusal as SystemEvent.AppendRejected, or,
   * once the store is sealed, logs and counts it instead (nothing may follow the seal).
   */
  refuse(error: WriterError, ctx: RequestContext, hangUp = false): void {
    this.rejections += 1;
    const dropping = hangUp || this.rejections >= WRITER_LIMITS.maxRejectionsPerConnection;
    const dropNote = !hangUp && dropping ? `; this connection reached ${WRITER_LIMITS.maxRejectionsPerConnection} refusals and is closed` : '';
    let message = error.message + dropNote;
    let details = error.details;
    const sealedAt = this.options.store.sealed();
    if (error.code === 'sealed' || sealedAt !== null) {
      this.budget.refusedAfterSeal += 1;
      const count = this.budget.refusedAfterSeal;
      if (error.code !== 'sealed') message += ` (not recorded in the store: it was sealed at seq ${String(sealedAt?.seq)})`;
      details = { ...details, refused_after_seal: count };
      this.options.log(`connection ${this.id}: refused ${ctx.method ?? 'request'} after the seal (${error.code}; ${count} refused since the seal, none recorded): ${message}`);
      return this.answerRefusal(ctx, error.code, message, details, null, dropping);
    }
    // A full disk is said on the writer's log whatever becomes of its record (which needs space too).
    if (error.code === 'store_full') this.options.log(`connection ${this.id}: refused ${ctx.method ?? 'request'} ${String(ctx.id)}: store_full: ${error.message}`);
    const note = error.recordNote + dropNote;
    let rejectionSeq: number | null = null;
    // `sealed` returned above, so what is left is a reason an AppendRejected can carry (store_full has none of its own).
    const reason: AppendRejectionReason = error.code === 'store_full' ? STORE_FULL_RECORDED_AS : error.code;
    const record = (recorded: AppendRejectionReason, text: string): number =>
      this.options.store.appendInternal('SystemEvent.AppendRejected', {
        reason: recorded,
        message: text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS - 40)}… (+${text.length - MAX_MESSAGE_CHARS + 40} chars)` : text,
        role: this.role,
        method: ctx.method,
        request_id: ctx.id === null ? null : String(ctx.id),
        request_sha256: hashText(ctx.line ?? Buffer.alloc(0)),
        request_bytes: ctx.line?.length ?? 0,
        connection_id: this.id,
      }).head.seq;
    try {
      if (this.budget.recorded < WRITER_LIMITS.maxRecordedRejections) {
        rejectionSeq = record(reason, note);
        this.budget.recorded += 1;
        if (this.budget.recorded === WRITER_LIMITS.maxRecordedRejections) {
          record('limit_exceeded', `this writer has recorded ${WRITER_LIMITS.maxRecordedRejections} refusals; until it restarts, further refusals are answered and logged but not recorded`);
        }
      } else {
        message += ` (not recorded in the store: this writer's limit of ${WRITER_LIMITS.maxRecordedRejections} recorded refusals is reached)`;
        this.options.log(`connection ${this.id}: refusal ${error.code} not recorded (limit reached): ${message}`);
      }
    } catch (recordError) {
      // A full disk refuses the record as it refused the request: said briefly, not the whole message twice.
      const why = recordError instanceof WriterError && recordError.code === 'store_full' ? 'no space left (store_full)' : recordError instanceof Error ? recordError.message : String(recordError);
      message += ` (the refusal could not be recorded in the store: ${why})`;
      this.options.log(`connection ${this.id}: could not record refusal ${error.code}: ${why}`);
    }
    // Recording the refusal moved the head: a conflict reports the head as it is now,
    // so a caller can retry with it.
    if (error.code === 'head_conflict') details = { ...details, current_head: this.options.store.head() };
    this.answerRefusal(ctx, error.code, message, details, rejectionSeq, dropping);
  }

  private answerRefusal(ctx: RequestContext, code: WriterErrorCode, message: string, details: Record<string, unknown> | null, rejectionSeq: number | null, dropping: boolean): void {
    this.send({ id: ctx.id, ok: false, error: { code, message, details, rejection_seq: rejectionSeq } });
    if (dropping) {
      this.options.log(`connection ${this.id}: closed after refusal (${code}): ${message}`);
      this.socket.end();
      this.closed = true;
    }
  }

  private send(response: WriterResponse): void {
    this.sendText(JSON.stringify(response));
  }

  private sendText(text: string): void {
    if (this.closed) return;
    if (!this.socket.write(`${text}\n`)) this.socket.pause();
  }
}

/** Whether a live process serves `socketPath`; checked before a store is created, so a refused start leaves nothing behind. */
export function someoneListens(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createConnection(socketPath);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

export async function startWriterServer(options: WriterServerOptions): Promise<WriterServer> {
  const connections = new Set<net.Socket>();
  const budget: WriterCounters = { recorded: 0, refusedAfterSeal: 0 };
  let nextId = 1;
  if (existsSync(options.socketPath)) {
    if (await someoneListens(options.socketPath)) {
      throw new Error(`socket ${options.socketPath} is served by a running process (another writer?); refusing to take it over`);
    }
    unlinkSync(options.socketPath); // left behind by a writer that died
  }
  const server = net.createServer((socket) => {
    const id = nextId++;
    if (connections.size >= WRITER_LIMITS.maxConnections) {
      options.log(`connection ${id} refused: ${WRITER_LIMITS.maxConnections} connections already open`);
      const refused = new Connection(id, socket, options, budget);
      refused.refuse(new WriterError('limit_exceeded', `the writer serves at most ${WRITER_LIMITS.maxConnections} connections`, { limit: 'maxConnections' }), NO_REQUEST, true);
      return;
    }
    connections.add(socket);
    socket.on('close', () => connections.delete(socket));
    new Connection(id, socket, options, budget);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.socketPath, () => resolve());
  });
  chmodSync(options.socketPath, options.socketMode);
  return {
    refusedAfterSeal: () => budget.refusedAfterSeal,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of connections) socket.end();
        server.close(() => resolve());
        setTimeout(() => {
          for (const socket of connections) socket.destroy();
        }, 1_000).unref();
      }),
  };
}
