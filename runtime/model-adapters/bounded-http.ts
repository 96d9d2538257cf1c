// The bounds of every response the `openai` adapter reads: the body is read up to a byte limit
// and no further (a server that sends without end costs that much memory, no more), redirects
// are never followed (a redirect would be a second request, possibly to another host, carrying
// the key), and one timer bounds connecting, waiting and reading. `exchangeJson` is the small
// side requests (GET /models, GET /props, POST /tokenize); the chat request itself streams
// (chat-stream.ts) but reads non-streamed bodies with `readBounded` too. Every request goes
// through the adapter's ExchangeGate (http-exchange.ts): one at a time, its connection closed
// before the next starts.
import type { ExchangeGate, HttpResponseLike } from './http-exchange.js';
import { classifyFetchError, RETRYABLE_STATUSES, type NoAnswer } from './transport-retry.js';

export type BodyRead =
  | { readonly ok: true; readonly bytes: Uint8Array; readonly overLimit: boolean }
  | { readonly ok: false; readonly error: unknown };

/**
 * Reads at most maxBytes of the body (plus one chunk's worth of evidence that there is more),
 * then cancels the stream.
 */
export async function readBounded(response: Pick<HttpResponseLike, 'headers' | 'body'>, maxBytes: number): Promise<BodyRead> {
  const declared = Number(response.headers.get('content-length'));
  if (response.body === null) return { ok: true, bytes: new Uint8Array(0), overLimit: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    if (Number.isFinite(declared) && declared > maxBytes) {
      await reader.cancel('declared body over the limit').catch(() => undefined);
      return { ok: true, bytes: new Uint8Array(0), overLimit: true };
    }
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - total;
      if (value.length > room) {
        chunks.push(value.subarray(0, room));
        total += room;
        // The cancel's own failure changes nothing: the body is already refused.
        await reader.cancel('body over the limit').catch(() => undefined);
        return { ok: true, bytes: concat(chunks, total), overLimit: true };
      }
      chunks.push(value);
      total += value.length;
    }
  } catch (error) {
    return { ok: false, error };
  }
  return { ok: true, bytes: concat(chunks, total), overLimit: false };
}

function concat(chunks: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A transport error with its code and cause (undici wraps ECONNREFUSED & co. as `fetch failed` + cause; node:http raises them with a code). */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const own = (error as { code?: unknown }).code;
  if (typeof own === 'string' && !error.message.includes(own)) return `${own} ${error.message}`;
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${error.message}: ${typeof code === 'string' ? `${code} ` : ''}${cause.message}`;
  }
  return error.message;
}

/** The start of a body, for a detail. */
export function quoteBody(bytes: Uint8Array, maxChars: number): string {
  return JSON.stringify(new TextDecoder('utf-8').decode(bytes).slice(0, maxChars));
}

export interface JsonRequest {
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: unknown;
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly quotedBodyChars: number;
}

export type JsonExchange =
  /** The server answered: its status, and the body as JSON (undefined when it is not JSON, over the bound, or not UTF-8). */
  | { readonly kind: 'answered'; readonly status: number; readonly json: unknown; readonly detail: string }
  /** No answer reached us: refused, reset, or a retryable status (transport-retry.ts RETRYABLE_STATUSES). */
  | { readonly kind: 'no_answer'; readonly noAnswer: NoAnswer }
  | { readonly kind: 'timeout'; readonly detail: string };

/** One bounded request whose answer is a small JSON document (the side requests), through the adapter's gate. */
export async function exchangeJson(gate: ExchangeGate, r: JsonRequest): Promise<JsonExchange> {
  const what = `${r.method} ${r.url}`;
  const request = {
    method: r.method,
    url: r.url,
    headers: { accept: 'application/json', ...(r.body === undefined ? {} : { 'content-type': 'application/json' }), ...r.headers },
    ...(r.body === undefined ? {} : { body: JSON.stringify(r.body) }),
    timeoutMs: r.timeoutMs,
    connectTimeoutMs: r.timeoutMs,
  };
  return gate.run(request, async (exchange): Promise<JsonExchange> => {
    const opened = await exchange.opened;
    if (opened.kind === 'timed_out') return { kind: 'timeout', detail: `no answer from ${what} within ${r.timeoutMs} ms` };
    if (opened.kind === 'failed') return { kind: 'no_answer', noAnswer: classifyFetchError(opened.error, `${what} failed before a response: ${describeError(opened.error)}`) };
    const response = opened.response;
    const read = await readBounded(response, r.maxBytes);
    if (!read.ok) {
      if (exchange.signal.aborted) return { kind: 'timeout', detail: `the body of ${what} did not arrive within ${r.timeoutMs} ms` };
      return { kind: 'no_answer', noAnswer: classifyFetchError(read.error, `${what}: HTTP ${response.status}, then the body broke off: ${describeError(read.error)}`) };
    }
    if (RETRYABLE_STATUSES.has(response.status)) {
      return { kind: 'no_answer', noAnswer: { kind: `http_${response.status}`, detail: `HTTP ${response.status} ${response.statusText} from ${what}; body: ${quoteBody(read.bytes, r.quotedBodyChars)}`, retryable: true } };
    }
    const status = `HTTP ${response.status}${response.statusText === '' ? '' : ` ${response.statusText}`} from ${what}`;
    if (read.overLimit) return { kind: 'answered', status: response.status, json: undefined, detail: `${status}: the body exceeds ${r.maxBytes} bytes; reading stopped there` };
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(read.bytes);
    } catch {
      return { kind: 'answered', status: response.status, json: undefined, detail: `${status}: the body is not valid UTF-8` };
    }
    try {
      return { kind: 'answered', status: response.status, json: JSON.parse(text) as unknown, detail: status };
    } catch {
      return { kind: 'answered', status: response.status, json: undefined, detail: `${status}: the body is not JSON; it begins ${JSON.stringify(text.slice(0, r.quotedBodyChars))}` };
    }
  });
}
