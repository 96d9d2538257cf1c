// Reading Gemini's answer (issue 36): `:streamGenerateContent?alt=sse` sends Server-Sent Events
// whose every `data:` is a GenerateContentResponse chunk (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent);
// `:generateContent` sends one GenerateContentResponse. Both are read into one state, chunk by
// chunk: the text of candidates[0].content.parts (thought parts left out: they are not the
// answer), the last finishReason, promptFeedback.blockReason (a prompt blocked before any
// candidate), the last usageMetadata (each chunk carries the running total), and modelVersion.
// The stream has no end marker: it ends when the server closes it, complete only if a
// finishReason (or a blocked prompt) arrived. An `{"error": …}` chunk ends it as the server's error.
// Bounded like chat-stream.ts (bytes, events); never throws.
import { readSseEvents, type SseEnd } from './sse-events.js';

export interface GeminiReplyState {
  /** candidates[0].content.parts[].text (not thoughts), concatenated. */
  text: string;
  sawContent: boolean;
  /** The provider's own word: STOP, MAX_TOKENS, SAFETY, …; null until one arrives. */
  finishReason: string | null;
  /** promptFeedback.blockReason: the prompt itself was blocked (SAFETY, OTHER, BLOCKLIST, PROHIBITED_CONTENT, …). */
  blockReason: string | null;
  /** The last usageMetadata seen (validated by gemini-reply.ts). */
  usage: unknown;
  modelVersion: string | null;
  responseId: string | null;
  events: number;
  bytes: number;
}

export function emptyGeminiState(): GeminiReplyState {
  return { text: '', sawContent: false, finishReason: null, blockReason: null, usage: undefined, modelVersion: null, responseId: null, events: 0, bytes: 0 };
}

export type GeminiStreamEnd = SseEnd | { readonly kind: 'server_error'; readonly detail: string } | { readonly kind: 'malformed'; readonly detail: string } | { readonly kind: 'over_limit'; readonly detail: string };

const QUOTED_CHARS = 300;

function recordOf(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** The API's error object as words: `403 PERMISSION_DENIED: message`. */
export function googleErrorText(error: unknown): string {
  const e = recordOf(error);
  if (e === null) return JSON.stringify(error)?.slice(0, QUOTED_CHARS) ?? String(error);
  const parts = [typeof e['code'] === 'number' ? String(e['code']) : null, typeof e['status'] === 'string' ? e['status'] : null].filter((p) => p !== null);
  const message = typeof e['message'] === 'string' ? e['message'].slice(0, QUOTED_CHARS) : JSON.stringify(e).slice(0, QUOTED_CHARS);
  return `${parts.join(' ')}${parts.length > 0 ? ': ' : ''}${message}`;
}

/** Applies one GenerateContentResponse (a chunk, or the whole non-streamed answer); returns an end when it is an error or not one. */
export function applyGeminiChunk(state: GeminiReplyState, json: unknown): { readonly kind: 'server_error' | 'malformed'; readonly detail: string } | null {
  const chunk = recordOf(json);
  if (chunk === null) return { kind: 'malformed', detail: `chunk ${state.events} is not a JSON object` };
  if (chunk['error'] !== undefined) return { kind: 'server_error', detail: `the server sent an error: ${googleErrorText(chunk['error'])}` };
  if (typeof chunk['modelVersion'] === 'string' && chunk['modelVersion'] !== '' && state.modelVersion === null) state.modelVersion = chunk['modelVersion'];
  if (typeof chunk['responseId'] === 'string' && state.responseId === null) state.responseId = chunk['responseId'];
  if (chunk['usageMetadata'] !== undefined && chunk['usageMetadata'] !== null) state.usage = chunk['usageMetadata'];
  const blockReason = recordOf(chunk['promptFeedback'])?.['blockReason'];
  if (typeof blockReason === 'string' && blockReason !== '') state.blockReason = blockReason;
  const candidates = chunk['candidates'];
  if (candidates === undefined || candidates === null) return null;
  if (!Array.isArray(candidates)) return { kind: 'malformed', detail: `chunk ${state.events}: candidates is not an array` };
  // candidateCount is 1: candidate 0 (its index may be omitted, being the default).
  const candidate = recordOf(candidates.find((c) => (recordOf(c)?.['index'] ?? 0) === 0) ?? null);
  if (candidate === null) return null;
  const parts = recordOf(candidate['content'])?.['parts'];
  if (Array.isArray(parts)) {
    for (const part of parts) {
      const p = recordOf(part);
      if (p === null || p['thought'] === true || typeof p['text'] !== 'string') continue;
      state.text += p['text'];
      state.sawContent = true;
    }
  }
  if (typeof candidate['finishReason'] === 'string' && candidate['finishReason'] !== '') state.finishReason = candidate['finishReason'];
  return null;
}

/** Reads the SSE body into `state` (mutated as chunks arrive) until the stream ends one way or another. */
export async function readGeminiStream(body: ReadableStream<Uint8Array>, limits: { readonly maxBytes: number; readonly maxEvents: number }, state: GeminiReplyState): Promise<GeminiStreamEnd> {
  return readSseEvents<GeminiStreamEnd>(body, limits.maxBytes, state, ({ name, data, errorField }) => {
    const isErrorEvent = errorField || name === 'error';
    state.events += 1;
    if (state.events > limits.maxEvents) return { kind: 'over_limit', detail: `the stream exceeded ${limits.maxEvents} events; reading stopped there` };
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      const quoted = JSON.stringify(data.slice(0, QUOTED_CHARS));
      return isErrorEvent ? { kind: 'server_error', detail: `the server sent an error event: ${quoted}` } : { kind: 'malformed', detail: `stream event ${state.events} is not JSON: ${quoted}` };
    }
    return applyGeminiChunk(state, isErrorEvent && recordOf(json)?.['error'] === undefined ? { error: json } : json);
  });
}
