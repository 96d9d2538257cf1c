// The pre-registered transport retry policy (issue 15 item 4, issue 31 item 6, DESIGN §12): a
// model call whose attempt brought no answer the subject could have given — the connection was
// refused or reset, or the server said 408, 409, 429 or any 5xx (RETRYABLE_STATUSES) — is tried
// again, up to `max_attempts`, waiting `backoff_ms[attempt - 1]` between
// attempts. The policy is part of the model configuration, hence of the manifest: identical for
// every group, so no group gets more tries by luck. Every attempt that brought no answer is
// reported (awaited) before the wait, so the wake loop records it as an event first.
//
// What is never retried, because an answer reached the runtime or may still be in the making:
// any other HTTP status, any 2xx with a body however bad, a stream that broke after it started,
// and a timeout (the server may be decoding the request, and a second one would queue behind it).
import type { TransportRetryPolicy } from '../../schema/model-call-policy.js';
import type { TransportFailure } from '../model-adapter.js';
import type { HttpResponseLike } from './http-exchange.js';

// The policy's schema is defined once, with the facts the manifest and the pre-registration
// share: max_attempts 1..10 (the first included), backoff_ms[n - 1] the wait before attempt
// n + 1, exactly max_attempts - 1 entries of 0..60,000 ms.

/**
 * The HTTP statuses that mean "no answer the subject could have given": the conventional
 * retryable set (the one OpenAI's own client retries: openai-python `_base_client.py`
 * `_should_retry`). Defined here once; the chat attempt and the side requests (bounded-http.ts)
 * both read it, docs/model-protocol.md "Transport retries" lists it. Every other status (400,
 * 401, 403, 404, 422, …) is the server's answer to this request and would be the same again:
 * never retried, `http_error`.
 */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([
  // 408 Request Timeout: the server gave up waiting for the request; it never looked at it.
  408,
  // 409 Conflict: a lock or a concurrent-request conflict on the server (OpenAI answers it for
  // lock timeouts); nothing of the request was evaluated, and a later attempt may pass.
  409,
  // 429 Too Many Requests: rate limited or every slot busy (vLLM, hosted APIs) — try later.
  429,
  // Every 5xx, 500–599: the server failed, not the request. A server that answers 500 to every
  // call is as dead for the study as one that refuses connections (issue 31: all 31 wakes spent
  // on such a server), so it is retried under the policy and counted by the pause rule; 502, 503
  // and 504 are gateways and backends not there (llama.cpp answers 503 while loading a model).
  ...Array.from({ length: 100 }, (_unused, i) => 500 + i),
]);

/**
 * undici's and the OS's codes for a connection that never carried an answer: refused, reset,
 * closed by the other side, or a network that cannot be reached for now. Anything else before
 * a response (a TLS or DNS name error, a malformed HTTP reply) is a transport failure too, but
 * trying again would meet the same wall, so it ends the call at once.
 */
const TRANSIENT_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection_refused',
  ECONNRESET: 'connection_reset',
  EPIPE: 'connection_reset',
  ECONNABORTED: 'connection_reset',
  UND_ERR_SOCKET: 'connection_reset',
  UND_ERR_CLOSED: 'connection_reset',
  UND_ERR_CONNECT_TIMEOUT: 'connect_timeout',
  ETIMEDOUT: 'connect_timeout',
  EHOSTUNREACH: 'network_unreachable',
  ENETUNREACH: 'network_unreachable',
  ENETDOWN: 'network_unreachable',
  EAI_AGAIN: 'dns_unavailable',
};

/** An attempt that brought no answer, as the attempt saw it. */
export interface NoAnswer {
  readonly kind: string;
  readonly detail: string;
  readonly retryable: boolean;
}

/** The error code of a fetch failure (undici wraps ECONNREFUSED & co. as `fetch failed` + cause). */
export function errorCode(error: unknown): string | null {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return null;
}

/** What a fetch that threw before any response was (not a timeout: the caller tells those apart by its own signal). */
export function classifyFetchError(error: unknown, describe: string): NoAnswer {
  const code = errorCode(error);
  const kind = code === null ? undefined : TRANSIENT_CODES[code];
  if (kind !== undefined) return { kind, detail: describe, retryable: true };
  return { kind: code === null ? 'transport_error' : `transport_${code.toLowerCase()}`.slice(0, 64), detail: `${describe} (not a transient failure: not retried)`, retryable: false };
}

export type RetryResult<T> =
  | { readonly kind: 'answered'; readonly value: T; readonly attempts: number }
  | { readonly kind: 'no_answer'; readonly last: TransportFailure; readonly failures: readonly TransportFailure[]; readonly attempts: number };

export type AttemptResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly noAnswer: NoAnswer };

function sleepMs(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs `attempt` under `policy`. `onFailure` hears every attempt that brought no answer (the
 * last one with `backoff_ms: null`) and is awaited before the wait; if it throws (the record of
 * the attempt could not be kept), the call stops there and the error propagates: an attempt
 * that cannot be recorded must not be followed by another.
 */
export async function withTransportRetry<T>(
  policy: TransportRetryPolicy,
  attempt: (n: number) => Promise<AttemptResult<T>>,
  onFailure: ((failure: TransportFailure) => Promise<void>) | undefined,
  sleep: (ms: number) => Promise<void> = sleepMs,
): Promise<RetryResult<T>> {
  const failures: TransportFailure[] = [];
  for (let n = 1; ; n++) {
    const started = performance.now();
    const result = await attempt(n);
    if (result.ok) return { kind: 'answered', value: result.value, attempts: n };
    const last = n >= policy.max_attempts || !result.noAnswer.retryable;
    const failure: TransportFailure = {
      attempt: n,
      kind: result.noAnswer.kind,
      detail: result.noAnswer.detail,
      latency_ms: Math.max(0, Math.round(performance.now() - started)),
      backoff_ms: last ? null : (policy.backoff_ms[n - 1] ?? 0),
    };
    failures.push(failure);
    await onFailure?.(failure);
    if (last) return { kind: 'no_answer', last: failure, failures, attempts: n };
    await sleep(failure.backoff_ms ?? 0);
  }
}

/**
 * A retryable status (RETRYABLE_STATUSES) as the no-answer it is. A `Retry-After` the server sent
 * is reported, not followed: the waits are the pre-registered policy's, the same for every group,
 * so no group's calls wait by what a server said to another.
 */
export function retryableStatus(response: Pick<HttpResponseLike, 'status' | 'headers'>, detail: string): NoAnswer {
  const retryAfter = response.headers.get('retry-after');
  return { kind: `http_${response.status}`, retryable: true, detail: `${detail}${retryAfter === null ? '' : `; Retry-After ${JSON.stringify(retryAfter.slice(0, 40))} not followed: the backoff is pre-registered`}` };
}
