// One HTTP request of the `openai` adapter on a connection of its own, and the gate that lets an
// adapter have one such request at a time (issue 31 item 8, docs/model-protocol.md "Cancellation").
//
// Why not fetch: fetch hides its connection. A request aborted at its timeout is cancelled
// "eventually" (undici destroys the socket on its own schedule), and a pooled keep-alive socket
// may carry the next request while the server still holds the last one — so the server could see
// two requests of one subject at once, the second queued behind the first. Here every request has
// a connection of its own (`agent: false`, `Connection: close`), and `close()` destroys it and
// resolves only once the socket has closed: when an exchange is over, its connection is closed
// on our side (the server is told; it notices when it next reads or writes the connection —
// llama.cpp b4748 at its next batch). The adapter awaits that before its next request
// (ExchangeGate), so no two requests of one adapter are outstanding at once on our side — by
// construction, not by timing.
//
// Why not fetch, second: a timeout must tell "the server may be working on it" from "the server
// never got it". `delivered` is true once the whole request was handed to the connection (the
// ClientRequest's 'finish': connected, headers and body written); before that no server can have
// evaluated the prompt (docs/model-protocol.md "What every outcome records").
//
// Redirects are never followed (node:http does not), no body is decompressed (none is asked for:
// no Accept-Encoding), and one timer bounds connecting, sending, waiting and reading; a second,
// shorter one bounds connecting alone (undici's connect timeout played that part before).
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { InternalError } from '../../foundation/typed-error.js';

/** What a response is to its readers (a fetch Response has these too). */
export interface HttpResponseLike {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly body: ReadableStream<Uint8Array> | null;
}

export interface ExchangeRequest {
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Bounds the whole exchange: connecting, sending, waiting for the response and reading it. */
  readonly timeoutMs: number;
  /** Bounds connecting alone (at most timeoutMs). */
  readonly connectTimeoutMs: number;
}

/** How the wait for a response ended. */
export type Opened =
  | { readonly kind: 'response'; readonly response: HttpResponseLike }
  /** The request failed before any response: `error` as node raised it (ECONNREFUSED, ECONNRESET, a TLS error, …). */
  | { readonly kind: 'failed'; readonly error: unknown }
  /** No response within timeoutMs (`connected` false: not even a connection within connectTimeoutMs or timeoutMs). */
  | { readonly kind: 'timed_out'; readonly connected: boolean };

export const HTTP_EXCHANGE_LIMITS = {
  /** A destroyed socket closes in the next turn of the event loop; this long without it is a bug. */
  closeWithinMs: 2_000,
  /** Requests waiting for the gate: an adapter makes one at a time, so more than this is a bug. */
  maxWaiting: 4,
} as const;

/** A bound of this file that should never be reached was: a bug, never a model failure. */
export class HttpExchangeInvariantError extends InternalError {
  override readonly name = 'HttpExchangeInvariantError';
}

export class HttpExchange {
  /** Aborted when timeoutMs passed (readers of the body tell a timeout from a broken stream by it). */
  readonly signal: AbortSignal;
  /** Resolves once: a response, a failure before one, or the timeout. */
  readonly opened: Promise<Opened>;
  private readonly controller = new AbortController();
  private readonly request: http.ClientRequest;
  private socket: Socket | null = null;
  private connected = false;
  private sent = false;
  private readonly timers: NodeJS.Timeout[] = [];
  private closing: Promise<void> | null = null;

  constructor(r: ExchangeRequest) {
    this.signal = this.controller.signal;
    const url = new URL(r.url);
    const client = url.protocol === 'https:' ? https : http;
    const body = r.body === undefined ? undefined : Buffer.from(r.body, 'utf8');
    const headers: Record<string, string> = { ...r.headers, connection: 'close', ...(body === undefined ? {} : { 'content-length': String(body.length) }) };
    this.request = client.request(url, { method: r.method, headers, agent: false });
    this.opened = new Promise<Opened>((resolve) => {
      this.request.once('response', (res) => resolve({ kind: 'response', response: responseOf(res) }));
      this.request.on('error', (error) => resolve(this.signal.aborted ? { kind: 'timed_out', connected: this.connected } : { kind: 'failed', error }));
    });
    this.request.on('socket', (socket) => {
      this.socket = socket;
      // A socket handed over already connected has no 'connect' to wait for (not so with agent: false, but cheap to say).
      if (!socket.connecting) this.connected = true;
      socket.once('connect', () => (this.connected = true));
    });
    // 'finish': the request's last byte was handed to the connection (written, hence connected).
    this.request.once('finish', () => (this.sent = true));
    this.timers.push(setTimeout(() => this.abort(), r.timeoutMs));
    this.timers.push(setTimeout(() => (this.connected ? undefined : this.abort()), Math.min(r.connectTimeoutMs, r.timeoutMs)));
    this.request.end(body);
  }

  /** The whole request reached the connection: from here on a server may be working on it. */
  get delivered(): boolean {
    return this.sent;
  }

  /** Whether a connection was made (false: the connect itself failed or timed out). */
  get wasConnected(): boolean {
    return this.connected;
  }

  private abort(): void {
    if (this.signal.aborted) return;
    this.controller.abort();
    this.request.destroy(new Error('the exchange timed out'));
  }

  /**
   * Ends the exchange: its timers cleared, its connection destroyed if still open; resolves once
   * the socket has closed. Always called (finally), whatever happened; idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  private async closeOnce(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    const socket = this.socket ?? this.request.socket;
    this.request.destroy();
    if (socket === null || socket === undefined) {
      // No socket was ever assigned (the request failed while being set up): nothing can be open.
      if (!this.request.destroyed) throw new HttpExchangeInvariantError('bug: a request without a socket is not destroyed');
      return;
    }
    if (socket.closed) return;
    socket.destroy();
    await new Promise<void>((resolve, reject) => {
      const bound = setTimeout(() => reject(new HttpExchangeInvariantError(`bug: a destroyed connection did not close within ${HTTP_EXCHANGE_LIMITS.closeWithinMs} ms`)), HTTP_EXCHANGE_LIMITS.closeWithinMs);
      socket.once('close', () => {
        clearTimeout(bound);
        resolve();
      });
      if (socket.closed) {
        clearTimeout(bound);
        resolve();
      }
    });
  }
}

function responseOf(res: http.IncomingMessage): HttpResponseLike {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return { status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers, body: Readable.toWeb(res) as ReadableStream<Uint8Array> };
}

/**
 * One request at a time for one adapter (issue 31 item 8): `run` waits until the exchange
 * before it is closed — its connection seen closed — then starts the next. The adapter's own
 * calls are sequential already; the gate makes it hold by construction, also for a caller that
 * gave up on a call and made another while the first was still ending (the fault harness's
 * abandoned call). Its wait is bounded: every exchange ends at its own timeout.
 */
export class ExchangeGate {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;
  /** Exchanges open through this gate: at most one at any time. */
  private open = 0;
  private startedCount = 0;

  /** Exchanges started through this gate so far. */
  get started(): number {
    return this.startedCount;
  }

  /**
   * Runs `use` on a new exchange once every earlier one is closed; closes it when `use` ends,
   * however it ends. The next in line is let go on every path, a broken invariant included: a
   * bug is thrown to its caller, never left as a gate that waits for ever.
   */
  async run<T>(r: ExchangeRequest, use: (exchange: HttpExchange) => Promise<T>): Promise<T> {
    if (this.waiting >= HTTP_EXCHANGE_LIMITS.maxWaiting) throw new HttpExchangeInvariantError(`bug: ${this.waiting} requests already wait for one adapter's connection (one at a time is the rule)`);
    const before = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    this.waiting += 1;
    try {
      await before;
    } finally {
      this.waiting -= 1;
    }
    try {
      if (this.open !== 0) throw new HttpExchangeInvariantError(`bug: ${this.open} exchange(s) still open when the next starts`);
      this.open += 1;
      this.startedCount += 1;
      let exchange: HttpExchange | null = null;
      try {
        exchange = new HttpExchange(r);
        return await use(exchange);
      } finally {
        try {
          await exchange?.close();
        } finally {
          this.open -= 1;
        }
      }
    } finally {
      release();
    }
  }
}
