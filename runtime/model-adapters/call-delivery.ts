// The words a call that did not deliver is recorded with, shared by the adapters that call a
// server over HTTP (openai, gemini): a request that never reached a server (no answer, retried),
// and the timeout of one that did (the fault harness's stall_model invariant looks for them).
import type { TransportRetryPolicy } from '../../schema/model-call-policy.js';
import { describeError } from './bounded-http.js';
import type { HttpExchange, HttpResponseLike } from './http-exchange.js';
import { classifyFetchError, type NoAnswer, type RetryResult } from './transport-retry.js';

/**
 * A request that timed out before all of it reached a connection (issue 31 item 7): never
 * connected within the connect bound, or connected but not written out. No server can be working
 * on it, so it is no answer — retried under the policy like a refused connection, and recorded
 * with no tokens — not a `timeout`, which means the server may still be busy with it.
 */
export function notDelivered(what: string, connected: boolean, timeoutMs: number, connectBoundMs: number): NoAnswer {
  return connected
    ? { kind: 'send_timeout', retryable: true, detail: `${what}: connected, but the request was not all written within ${timeoutMs} ms (the server did not read it): it never reached a server that could evaluate it` }
    : { kind: 'connect_timeout', retryable: true, detail: `${what}: no connection within the connect bound (${Math.min(timeoutMs, connectBoundMs)} ms): the request never reached a server` };
}

/** The words of a call's timeout in its detail, with the timeout waited (the fault harness's stall_model invariant looks for them). */
export function answerNotWithin(timeoutMs: number): string {
  return `within timeoutMs ${timeoutMs}`;
}

/** How a call's request opened: a response (with its status words), no answer (retried), or a timeout after the whole request was delivered. */
export type OpenedCall =
  | { readonly kind: 'response'; readonly response: HttpResponseLike; readonly status: string }
  | { readonly kind: 'no_answer'; readonly noAnswer: NoAnswer }
  | { readonly kind: 'timed_out' };

/**
 * Waits for the response of a call's exchange. A timeout before all of the request reached a
 * connection is no answer (no server can be working on it: retried, no tokens); after it, a
 * timeout the caller words (the server may be working on it).
 */
export async function openCall(exchange: HttpExchange, what: string, timeoutMs: number, connectBoundMs: number): Promise<OpenedCall> {
  const opened = await exchange.opened;
  if (opened.kind === 'timed_out') return exchange.delivered ? { kind: 'timed_out' } : { kind: 'no_answer', noAnswer: notDelivered(what, exchange.wasConnected, timeoutMs, connectBoundMs) };
  if (opened.kind === 'failed') return { kind: 'no_answer', noAnswer: classifyFetchError(opened.error, `${what} failed before a response: ${describeError(opened.error)}`) };
  const r = opened.response;
  return { kind: 'response', response: r, status: `HTTP ${r.status}${r.statusText === '' ? '' : ` ${r.statusText}`} from ${what}` };
}

/** The detail of a call no attempt of the policy brought an answer to. */
export function noAnswerDetail(what: string, result: Extract<RetryResult<unknown>, { kind: 'no_answer' }>, policy: TransportRetryPolicy): string {
  const kinds = result.failures.map((f) => f.kind).join(', ');
  const why = result.attempts < policy.max_attempts ? 'the failure is not transient, so it was not retried' : `every attempt of the retry policy (max_attempts ${policy.max_attempts}, backoff_ms [${policy.backoff_ms.join(', ')}]) failed`;
  return `no answer from ${what} in ${result.attempts} attempt(s) (${kinds}): ${why}; last: ${result.last.detail}`;
}
