// A chat completion's answer as the openai adapter reads it: the response schema, its usage,
// what one attempt's reply can be (an answer, a refusal, a failure with what was delivered), and
// the words a call that did not deliver in time is recorded with (call-delivery.ts).
import { z } from 'zod';
import type { ChatStreamState } from './chat-stream.js';
import { serverTimingsOf, type ServerTimings } from './server-timings.js';

/** The part of a non-streamed chat completion this adapter reads; servers add fields, which are ignored. */
export const ChatCompletion = z.object({
  model: z.string().nullish(),
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: z.unknown().optional(),
  /** llama.cpp's own account of the work (server-timings.ts). */
  timings: z.unknown().optional(),
  system_fingerprint: z.string().nullish(),
});

export const Usage = z.object({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) });

/** What one attempt that reached an answer (or a timeout) brought back. */
export type ChatReply =
  | {
      readonly kind: 'completion';
      /** null: no content at all (a non-streamed completion without message.content). */
      readonly content: string | null;
      readonly refusal: string | null;
      readonly finish_reason: string | null;
      readonly usage: unknown;
      readonly timings: unknown;
      readonly model: string | null;
      readonly system_fingerprint: string | null;
    }
  /** The request was aborted at timeoutMs; `state` holds what had streamed in (null before any streamed byte or when not streaming). */
  | { readonly kind: 'timeout'; readonly detail: string; readonly state: ChatStreamState | null }
  /** A 2xx answer whose stream or body stopped halfway. */
  | { readonly kind: 'stream_broken'; readonly detail: string; readonly state: ChatStreamState | null }
  /** Any other status, or a 2xx that is not a chat completion; `state` for a stream that went wrong after it started. */
  | { readonly kind: 'http_error'; readonly detail: string; readonly state: ChatStreamState | null; readonly answered2xx: boolean };

export interface ContextSize {
  readonly size: number;
  readonly source: string;
}

/** The outcome's server_timings when the server gave some (absent otherwise, so a record without them reads as before). */
export function timingsField(value: unknown): { readonly server_timings?: ServerTimings } {
  const timings = serverTimingsOf(value);
  return timings === null ? {} : { server_timings: timings };
}

