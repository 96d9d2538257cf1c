// Reading a streamed chat completion (issue 15 item 4): Server-Sent Events whose `data:` lines
// carry chat.completion.chunk objects, ending with `data: [DONE]`. Streaming is what lets a
// timeout free the server: closing the connection cancels the decoding in llama.cpp and vLLM,
// where a non-streamed request keeps a slot busy until it finishes, and the next calls queue
// behind it. It also means a timeout or a broken connection still leaves what had arrived, to
// be recorded.
//
// Read bounded: at most `maxBytes` of the stream and `maxEvents` events; past either the
// reading stops (a server that streams without end is a misbehaving server, and the store could
// not keep the text anyway). What is accumulated: choices[0].delta.content (and .refusal), the
// last non-null finish_reason, the usage (sent in the final chunk when `stream_options.
// include_usage` is asked, or by llama.cpp with its last chunk), the chunks' `model` and
// `system_fingerprint`. Error events end the stream: llama.cpp writes `error: {…}` lines, vLLM
// and OpenAI `data: {"error": {…}}`.
//
// The SSE framing is sse-events.ts's. This module never throws: every way a stream ends comes back as a `ChatStreamEnd`, with what
// arrived before it.
import { readSseEvents } from './sse-events.js';

export interface ChatStreamLimits {
  readonly maxBytes: number;
  readonly maxEvents: number;
}

export interface ChatStreamState {
  /** choices[0].delta.content, concatenated. */
  content: string;
  /** Whether any content delta arrived (an empty string is still "something arrived"). */
  sawContent: boolean;
  refusal: string;
  finish_reason: string | null;
  /** The last `usage` object seen (validated by the caller). */
  usage: unknown;
  /** The last `timings` object seen (llama.cpp's, in its last chunk; read by server-timings.ts). */
  timings: unknown;
  /** The first `model` a chunk named. */
  model: string | null;
  system_fingerprint: string | null;
  /** Events dispatched (data payloads, [DONE] included). */
  events: number;
  bytes: number;
}

export type ChatStreamEnd =
  /** `data: [DONE]` arrived. */
  | { readonly kind: 'done' }
  /** The body ended without [DONE] (complete when a finish_reason arrived). */
  | { readonly kind: 'eof' }
  | { readonly kind: 'over_limit'; readonly detail: string }
  /** Reading failed: the connection broke, or the caller's signal aborted it. */
  | { readonly kind: 'broken'; readonly error: unknown }
  /** The server sent an error event. */
  | { readonly kind: 'server_error'; readonly detail: string }
  /** Not UTF-8, an event that is not JSON, or a chunk of the wrong shape. */
  | { readonly kind: 'malformed'; readonly detail: string };

/** How much of a bad event a detail quotes. */
const QUOTED_CHARS = 300;

function asRecord(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function errorText(error: unknown): string {
  const record = asRecord(error);
  const message = record?.['message'];
  return typeof message === 'string' ? message : JSON.stringify(error)?.slice(0, QUOTED_CHARS) ?? String(error);
}

/** Applies one event's data to the state; returns an end when this event ends the stream. */
function applyEvent(state: ChatStreamState, data: string, isErrorEvent: boolean, limits: ChatStreamLimits): ChatStreamEnd | null {
  state.events += 1;
  if (state.events > limits.maxEvents) return { kind: 'over_limit', detail: `the stream exceeded ${limits.maxEvents} events; reading stopped there` };
  if (data.trim() === '[DONE]') return { kind: 'done' };
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    if (isErrorEvent) return { kind: 'server_error', detail: `the server sent an error event: ${JSON.stringify(data.slice(0, QUOTED_CHARS))}` };
    return { kind: 'malformed', detail: `stream event ${state.events} is not JSON: ${JSON.stringify(data.slice(0, QUOTED_CHARS))}` };
  }
  const chunk = asRecord(json);
  if (chunk === null) return { kind: 'malformed', detail: `stream event ${state.events} is not a JSON object: ${JSON.stringify(data.slice(0, QUOTED_CHARS))}` };
  if (isErrorEvent || chunk['error'] !== undefined) {
    return { kind: 'server_error', detail: `the server sent an error event: ${errorText(isErrorEvent && chunk['error'] === undefined ? chunk : chunk['error'])}` };
  }
  if (typeof chunk['model'] === 'string' && chunk['model'] !== '' && state.model === null) state.model = chunk['model'];
  if (typeof chunk['system_fingerprint'] === 'string' && chunk['system_fingerprint'] !== '') state.system_fingerprint = chunk['system_fingerprint'];
  if (chunk['usage'] !== undefined && chunk['usage'] !== null) state.usage = chunk['usage'];
  if (chunk['timings'] !== undefined && chunk['timings'] !== null) state.timings = chunk['timings'];
  const choices = chunk['choices'];
  if (choices === undefined || choices === null) return null;
  if (!Array.isArray(choices)) return { kind: 'malformed', detail: `stream event ${state.events}: choices is not an array` };
  // The final usage chunk of vLLM/OpenAI has no choices; every other chunk has choice 0.
  const choice = asRecord(choices.find((c) => asRecord(c)?.['index'] === 0) ?? choices[0]);
  if (choice === null) return null;
  const delta = asRecord(choice['delta']);
  if (delta !== null) {
    if (typeof delta['content'] === 'string') {
      state.content += delta['content'];
      state.sawContent = true;
    }
    if (typeof delta['refusal'] === 'string') state.refusal += delta['refusal'];
  }
  if (typeof choice['finish_reason'] === 'string' && choice['finish_reason'] !== '') state.finish_reason = choice['finish_reason'];
  return null;
}

export function emptyChatStreamState(): ChatStreamState {
  return { content: '', sawContent: false, refusal: '', finish_reason: null, usage: undefined, timings: undefined, model: null, system_fingerprint: null, events: 0, bytes: 0 };
}

/**
 * Reads the SSE body into `state` (mutated as events arrive, so a caller that gives up still
 * holds what arrived) until the stream ends one way or another (the framing: sse-events.ts).
 */
export async function readChatStream(body: ReadableStream<Uint8Array>, limits: ChatStreamLimits, state: ChatStreamState = emptyChatStreamState()): Promise<{ readonly state: ChatStreamState; readonly end: ChatStreamEnd }> {
  const end = await readSseEvents<ChatStreamEnd>(body, limits.maxBytes, state, (data, isError) => applyEvent(state, data, isError, limits));
  return { state, end };
}
