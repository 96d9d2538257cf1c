// The words a call that did not deliver is recorded with, shared by the adapters that call a
// server over HTTP (openai, gemini): a request that never reached a server (no answer, retried),
// and the timeout of one that did (the fault harness's stall_model invariant looks for them).
import type { NoAnswer } from './transport-retry.js';

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
