// Gemini's answer as the call record says it (issue 36, docs/model-protocol.md "gemini"): its
// finishReason in the record's words with the original kept, its usageMetadata as the record's
// usage, and what one attempt's reply can be.
//
// finishReason (https://ai.google.dev/api/generate-content#FinishReason): STOP → `stop`,
// MAX_TOKENS → `length`; SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII (and
// IMAGE_SAFETY) stop the answer for the provider's filters: a `refusal` failure; every other
// word (OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL, …) is kept, lower-cased, and the original is in
// provider_finish_reason in every case.
//
// usageMetadata (https://ai.google.dev/api/generate-content#UsageMetadata): prompt_tokens =
// promptTokenCount; completion_tokens = candidatesTokenCount + thoughtsTokenCount, because a
// thinking model's thoughts are billed as output though they are not in the answer;
// cache_read_tokens = cachedContentTokenCount (part of promptTokenCount). The API writes JSON
// by proto3's mapping, which leaves out a count that is 0, so a count missing from a
// usageMetadata that has promptTokenCount is 0, not unknown.
import { z } from 'zod';
import type { PromptReuse } from '../../schema/events/model-output-events.js';
import type { TokenCountSource, TokenUsage } from '../model-adapter.js';
import { estimateTokens } from '../prompt.js';
import type { GeminiReplyState } from './gemini-stream.js';

/** The finish reasons that are the provider's filters stopping the answer. */
export const REFUSAL_FINISH_REASONS: ReadonlySet<string> = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY']);

/** The record's finish_reason for Gemini's word (null: none arrived). */
export function finishReasonOf(provider: string | null): string | null {
  if (provider === null) return null;
  if (provider === 'STOP') return 'stop';
  if (provider === 'MAX_TOKENS') return 'length';
  return provider.toLowerCase();
}

const Count = z.number().int().min(0);
export const GeminiUsage = z.object({
  promptTokenCount: Count,
  candidatesTokenCount: Count.default(0),
  thoughtsTokenCount: Count.default(0),
  cachedContentTokenCount: Count.default(0),
});

export interface GeminiUsageFacts {
  readonly usage: TokenUsage;
  readonly usage_source: TokenCountSource;
  readonly cache_read_tokens: number | null;
  readonly prompt_reuse: PromptReuse | null;
}

/** The server's usage when it sent one, else the estimate (the prompt as counted, the text as ceil(chars / 4)), said to be one. */
export function geminiUsageOf(usageMetadata: unknown, promptCounted: number, text: string): GeminiUsageFacts {
  const u = GeminiUsage.safeParse(usageMetadata);
  if (!u.success) return { usage: { prompt_tokens: promptCounted, completion_tokens: estimateTokens(text) }, usage_source: 'estimate', cache_read_tokens: null, prompt_reuse: null };
  const cached = Math.min(u.data.cachedContentTokenCount, u.data.promptTokenCount);
  return {
    usage: { prompt_tokens: u.data.promptTokenCount, completion_tokens: u.data.candidatesTokenCount + u.data.thoughtsTokenCount },
    usage_source: 'server',
    cache_read_tokens: cached,
    prompt_reuse: { reused_tokens: cached, evaluated_tokens: u.data.promptTokenCount - cached, source: 'server_usage' },
  };
}

/** What one attempt that reached an answer (or a timeout) brought back. */
export type GeminiReply =
  /** A complete answer: a finishReason or a blocked prompt arrived (streamed), or the whole body was read. */
  | { readonly kind: 'completion'; readonly state: GeminiReplyState }
  | { readonly kind: 'timeout'; readonly detail: string; readonly state: GeminiReplyState | null }
  | { readonly kind: 'stream_broken'; readonly detail: string; readonly state: GeminiReplyState | null }
  /** An error status (`google` holds the API's error words, e.g. `400 INVALID_ARGUMENT: …`), or a 2xx that is not a GenerateContentResponse. */
  | { readonly kind: 'http_error'; readonly detail: string; readonly state: GeminiReplyState | null; readonly answered2xx: boolean; readonly status: number | null; readonly google: string | null };
