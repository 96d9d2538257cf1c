// A connection to the writer, for the runtime and the controller. Requests may be
// pipelined (bounded by maxInFlight); answers are matched by id and validated with zod.
// A request that times out or loses its connection has an UNKNOWN outcome, and the
// error says so: for an append, retrying with the same idempotency keys tells which.
import net from 'node:net';
import { z } from 'zod';
import { InternalError } from '../foundation/typed-error.js';
import type { WriterRole } from '../schema/event-definition.js';
import type { EventEnvelope } from '../schema/envelope.js';
import {
  AppendResult,
  Head,
  HelloResult,
  ReadResult,
  SealResult,
  WriterError,
  WriterResponse,
  WRITER_LIMITS,
  WriterRequestTimeoutMs,
  DEFAULT_WRITER_REQUEST_TIMEOUT_MS,
  type EventDraft,
  type WriterRequest,
} from './protocol.js';

/** How a request timeout is worded, wherever it is recorded (a stop's reason): the fault harness looks for these words (faults/invariants.ts). */
export function unansweredWithin(timeoutMs: number): string {
  return `within ${timeoutMs} ms; its outcome is unknown`;
}

export interface WriterClientOptions {
  readonly requestTimeoutMs?: number;
  readonly maxInFlight?: number;
  readonly maxResponseBytes?: number;
  /** Told of every event an append acknowledged (the fault harness logs them to check none is lost). */
  readonly onAck?: (events: AppendResult['events']) => void;
  /** Told of an answer to a request that was already answered (a message the writer received twice). */
  readonly onStray?: (text: string) => void;
}

/** The request may or may not have taken effect. */
export class WriterUnavailableError extends InternalError {
  override readonly name = 'WriterUnavailableError';
  constructor(readonly reason: 'timeout' | 'disconnected' | 'protocol', message: string) {
    super(message);
  }
}

interface Pending {
  readonly method: string;
  readonly resolve: (result: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

type Params<M extends WriterRequest['method']> = Extract<WriterRequest, { method: M }>['params'];

export class WriterClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly waitingForSlot: (() => void)[] = [];
  private buffer = '';
  private failure: WriterUnavailableError | null = null;
  private readonly requestTimeoutMs: number;
  private readonly maxInFlight: number;
  private readonly maxResponseBytes: number;
  hello: HelloResult | null = null;
  /** Answers to requests that were already settled (see onStray). */
  strayAnswers = 0;

  private constructor(private readonly socket: net.Socket, private readonly options: WriterClientOptions) {
    this.requestTimeoutMs = WriterRequestTimeoutMs.parse(options.requestTimeoutMs ?? DEFAULT_WRITER_REQUEST_TIMEOUT_MS);
    this.maxInFlight = options.maxInFlight ?? 64;
    this.maxResponseBytes = options.maxResponseBytes ?? 64 * 1024 * 1024;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('close', () => this.failAll(new WriterUnavailableError('disconnected', 'connection to the writer closed')));
    socket.on('error', (error) => this.failAll(new WriterUnavailableError('disconnected', `connection to the writer failed: ${error.message}`)));
  }

  static async connect(socketPath: string, role: WriterRole, token: string, options: WriterClientOptions = {}): Promise<WriterClient> {
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.createConnection(socketPath);
      s.once('connect', () => resolve(s));
      s.once('error', (error) => reject(new WriterUnavailableError('disconnected', `cannot connect to the writer at ${socketPath}: ${error.message}`)));
    });
    const client = new WriterClient(socket, options);
    client.hello = HelloResult.parse(await client.request('hello', { role, token }));
    return client;
  }

  async append(events: EventDraft[], expectHead: Head | null = null): Promise<AppendResult> {
    const result = AppendResult.parse(await this.request('append', { events, expect_head: expectHead }));
    this.options.onAck?.(result.events);
    return result;
  }

  async read(params: Params<'read'>): Promise<ReadResult> {
    return ReadResult.parse(await this.request('read', params));
  }

  /**
   * Seqs fromSeq..toSeq (inclusive; empty when toSeq < fromSeq), in pages of at most the
   * writer's page size. Bounded by the span; a page that is short or not contiguous means the
   * writer is not the store the caller thinks, and fails as a protocol error, never a gap.
   */
  async readRange(fromSeq: number, toSeq: number): Promise<EventEnvelope[]> {
    const events: EventEnvelope[] = [];
    const maxPages = Math.max(0, Math.ceil((toSeq - fromSeq + 1) / WRITER_LIMITS.maxReadPage));
    for (let page = 0, from = fromSeq; page < maxPages && from <= toSeq; page += 1) {
      const limit = Math.min(WRITER_LIMITS.maxReadPage, toSeq - from + 1);
      const result = await this.read({ from_seq: from, limit });
      if (result.events.length !== limit) throw new WriterUnavailableError('protocol', `asked for ${limit} events from seq ${from}, the writer returned ${result.events.length}`);
      for (const [i, event] of result.events.entries()) {
        if (event.seq !== from + i) throw new WriterUnavailableError('protocol', `expected seq ${from + i}, the writer returned seq ${event.seq}`);
      }
      events.push(...result.events);
      from += limit;
    }
    return events;
  }

  async head(): Promise<Head> {
    return Head.parse(await this.request('head', {}));
  }

  /**
   * Seals the store if it is still at `expectHead` (else `head_conflict`; `sealed` if it
   * already is) and returns the head at SystemEvent.StoreSealed. Role `experiment` only.
   */
  async seal(expectHead: Head, reason: string): Promise<SealResult> {
    return SealResult.parse(await this.request('seal', { expect_head: expectHead, reason }));
  }

  /** Sends any line as-is; for tests of how the writer treats malformed input. */
  async rawRequest(line: string, id: number): Promise<unknown> {
    return this.send(line, id, 'raw');
  }

  close(): void {
    this.socket.end();
  }

  private async request<M extends WriterRequest['method']>(method: M, params: Params<M>): Promise<unknown> {
    while (this.pending.size >= this.maxInFlight) await new Promise<void>((resolve) => this.waitingForSlot.push(resolve));
    const id = this.nextId++;
    return this.send(JSON.stringify({ id, method, params }), id, method);
  }

  private send(line: string, id: number, method: string): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        this.releaseSlot();
        reject(new WriterUnavailableError('timeout', `writer did not answer ${method} #${id} ${unansweredWithin(this.requestTimeoutMs)}`));
      }, this.requestTimeoutMs);
      this.pending.set(id, { method, resolve, reject, timer });
      this.socket.write(`${line}\n`);
    });
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    if (this.buffer.length > this.maxResponseBytes) {
      this.failAll(new WriterUnavailableError('protocol', `writer sent a message over ${this.maxResponseBytes} bytes`));
      this.socket.destroy();
      return;
    }
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) !== -1) {
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      this.onResponse(line);
    }
  }

  private onResponse(line: string): void {
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      this.failAll(new WriterUnavailableError('protocol', 'writer sent a line that is not JSON'));
      this.socket.destroy();
      return;
    }
    const parsed = WriterResponse.safeParse(raw);
    if (!parsed.success) {
      this.failAll(new WriterUnavailableError('protocol', `writer sent a malformed response: ${z.prettifyError(parsed.error)}`));
      this.socket.destroy();
      return;
    }
    const response = parsed.data;
    const id = typeof response.id === 'number' ? response.id : Number.NaN;
    const pending = this.pending.get(id);
    if (!pending) {
      // A second answer to a request already settled (the writer got it twice): it belongs to
      // nobody waiting now, so it must not be handed to another request; it is reported.
      if (Number.isSafeInteger(id) && id >= 1 && id < this.nextId) {
        this.strayAnswers += 1;
        this.options.onStray?.(`the writer answered request #${id} again (${response.ok ? 'ok' : `error ${response.error.code}`}) after it was settled; this answer was set aside`);
        return;
      }
      // An answer to a request we could not name (e.g. unparseable input): surface it
      // to the oldest waiter rather than dropping it.
      const oldest = this.pending.entries().next();
      if (oldest.done || response.ok) return;
      return this.settle(oldest.value[0], oldest.value[1], response);
    }
    this.settle(id, pending, response);
  }

  private settle(id: number, pending: Pending, response: WriterResponse): void {
    this.pending.delete(id);
    clearTimeout(pending.timer);
    this.releaseSlot();
    if (response.ok) pending.resolve(response.result);
    else pending.reject(new WriterError(response.error.code, response.error.message, response.error.details, { rejectionSeq: response.error.rejection_seq }));
  }

  private releaseSlot(): void {
    this.waitingForSlot.shift()?.();
  }

  private failAll(error: WriterUnavailableError): void {
    this.failure ??= error;
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(new WriterUnavailableError(error.reason, `${error.message}; ${pending.method} #${id} has an unknown outcome`));
    }
    this.pending.clear();
    for (const wake of this.waitingForSlot.splice(0)) wake();
  }
}
