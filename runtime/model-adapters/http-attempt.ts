// The parts of one model-call attempt every HTTP adapter (openai, anthropic) shares, before what
// its answer means: how the wait for a response ended — no answer (retried under the policy), a
// delivered request with no response in time (a timeout, never retried), or a response — and what
// a status outside 2xx is: a retryable one (transport-retry.ts RETRYABLE_STATUSES, its
// Retry-After reported, not followed) or the server's answer to this request (an http_error).
// And the words of a call whose every attempt brought no answer.
import type { TransportRetryPolicy } from '../../schema/model-call-policy.js';
import type { TransportFailure } from '../model-adapter.js';
import { describeError, readBounded } from './bounded-http.js';
import { notDelivered } from './call-delivery.js';
import type { HttpExchange, HttpResponseLike } from './http-exchange.js';
import { classifyFetchError, RETRYABLE_STATUSES, retryableStatus, type NoAnswer } from './transport-retry.js';

export type OpenedAttempt =
  | { readonly kind: 'response'; readonly response: HttpResponseLike; readonly status: string }
  | { readonly kind: 'no_answer'; readonly noAnswer: NoAnswer }
  /** The whole request reached the server, and no response headers came in time. */
  | { readonly kind: 'timed_out' };

/** How the wait for `exchange`'s response ended; `status` names the response for details ("HTTP 200 OK from POST …"). */
export async function openAttempt(exchange: HttpExchange, what: string, timeoutMs: number, connectBoundMs: number): Promise<OpenedAttempt> {
  const opened = await exchange.opened;
  if (opened.kind === 'timed_out') {
    // Not all of it reached a connection: no server can be working on it. No answer, like a refused connection: retried, no tokens.
    if (!exchange.delivered) return { kind: 'no_answer', noAnswer: notDelivered(what, exchange.wasConnected, timeoutMs, connectBoundMs) };
    return { kind: 'timed_out' };
  }
  if (opened.kind === 'failed') return { kind: 'no_answer', noAnswer: classifyFetchError(opened.error, `${what} failed before a response: ${describeError(opened.error)}`) };
  const r = opened.response;
  return { kind: 'response', response: r, status: `HTTP ${r.status}${r.statusText === '' ? '' : ` ${r.statusText}`} from ${what}` };
}

/**
 * A response outside 2xx, its body read bounded and put in words by `bodyWords` (given the bytes,
 * or null when the body could not be read, with why): no answer when the status is retryable,
 * else the server's answer to this request, in a detail. A redirect is never followed.
 */
export async function errorStatusOf(response: HttpResponseLike, status: string, maxBytes: number, bodyWords: (bytes: Uint8Array | null, unreadable: string) => string): Promise<{ readonly kind: 'no_answer'; readonly noAnswer: NoAnswer } | { readonly kind: 'answer'; readonly detail: string }> {
  const read = await readBounded(response, maxBytes);
  const said = read.ok ? bodyWords(read.bytes, '') : bodyWords(null, `(unreadable: ${describeError(read.error)})`);
  if (RETRYABLE_STATUSES.has(response.status)) return { kind: 'no_answer', noAnswer: retryableStatus(response, `${status}${said}`) };
  const redirect = response.status >= 300 && response.status < 400 ? ` (a redirect to ${response.headers.get('location') ?? 'nowhere'}; redirects are not followed: it would send the request, and the key, wherever it points)` : '';
  return { kind: 'answer', detail: `${status}${redirect}${said}` };
}

/** The detail of a call whose attempts all brought no answer (or one that was not transient). */
export function noAnswerDetail(what: string, result: { readonly attempts: number; readonly failures: readonly TransportFailure[]; readonly last: TransportFailure }, retry: TransportRetryPolicy): string {
  const kinds = result.failures.map((f) => f.kind).join(', ');
  const why = result.attempts < retry.max_attempts ? 'the failure is not transient, so it was not retried' : `every attempt of the retry policy (max_attempts ${retry.max_attempts}, backoff_ms [${retry.backoff_ms.join(', ')}]) failed`;
  return `no answer from ${what} in ${result.attempts} attempt(s) (${kinds}): ${why}; last: ${result.last.detail}`;
}

export type WholeBody =
  | { readonly kind: 'text'; readonly text: string; readonly bytes: Uint8Array }
  /** The call's timeout passed while the body was arriving. */
  | { readonly kind: 'timeout' }
  /** The body broke off (the connection went) before it was complete. */
  | { readonly kind: 'broken'; readonly detail: string }
  /** Over the byte bound, or not UTF-8: nothing of it is used. */
  | { readonly kind: 'bad'; readonly detail: string };

/** A 2xx body that is not a stream, read bounded and decoded as UTF-8 (`signal`: the exchange's, to tell a timeout from a break). */
export async function readWholeBody(response: HttpResponseLike, signal: AbortSignal, maxBytes: number, status: string): Promise<WholeBody> {
  const read = await readBounded(response, maxBytes);
  if (!read.ok) return signal.aborted ? { kind: 'timeout' } : { kind: 'broken', detail: `${status}: the body broke off before it was complete: ${describeError(read.error)}` };
  if (read.overLimit) return { kind: 'bad', detail: `${status}: the response body exceeds maxResponseBytes ${maxBytes}; reading stopped there and nothing of it is used` };
  try {
    return { kind: 'text', text: new TextDecoder('utf-8', { fatal: true }).decode(read.bytes), bytes: read.bytes };
  } catch {
    return { kind: 'bad', detail: `${status}: the body (${read.bytes.length} bytes) is not valid UTF-8` };
  }
}
