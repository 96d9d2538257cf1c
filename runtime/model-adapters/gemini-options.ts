// What the gemini adapter is configured with (issue 36, docs/model-protocol.md "gemini"): its
// options (zod), the bounds of its exchanges, the error a configuration it cannot use gets, and
// the URLs of the Gemini API's methods it calls (the REST reference:
// https://ai.google.dev/api/generate-content, https://ai.google.dev/api/tokens,
// https://ai.google.dev/api/models).
import { z } from 'zod';
import { InternalError } from '../../foundation/typed-error.js';
import { GeminiDialect, TransportRetryPolicy } from '../../schema/model-call-policy.js';
import { GeminiModelConfig, ServerBaseUrl } from '../protocol.js';

export const GEMINI_ADAPTER_LIMITS = {
  /** A GenerateContentResponse of one JSON answer is a few KiB (with safety ratings, citations); more is a misbehaving server. */
  maxResponseBytes: 1024 * 1024,
  /** Gemini streams a chunk per few dozen tokens; an answer of the largest cap is a few hundred. */
  maxStreamEvents: 20_000,
  /** How much of a failed response's body a detail quotes. */
  quotedBodyChars: 500,
  /** GET models/{model} and :countTokens answer at once. */
  sideRequestTimeoutMs: 10_000,
  sideResponseBytes: 256 * 1024,
  /** How much of the probe's raw answer preflight.jsonl keeps. */
  probeRawChars: 2_000,
} as const;

export class GeminiAdapterConfigError extends InternalError {
  override readonly name = 'GeminiAdapterConfigError';
}

export const GeminiAdapterOptions = z.strictObject({
  /** e.g. https://generativelanguage.googleapis.com; the adapter calls `${baseUrl}/v1beta/models/${modelId}:…`. */
  baseUrl: ServerBaseUrl,
  modelId: GeminiModelConfig.shape.model_id,
  /** From the environment, by the caller; sent only in the x-goog-api-key header. */
  apiKey: z.string().min(1).max(4_096),
  params: GeminiModelConfig.shape.params,
  dialect: GeminiDialect,
  retry: TransportRetryPolicy,
  /** The input token limit as configured; used when the Models API reports none. */
  contextSize: z.number().int().min(1).max(100_000_000).nullable(),
  stream: z.boolean().default(true),
  countTokens: z.boolean().default(false),
  maxResponseBytes: z.number().int().min(1_024).max(64 * 1024 * 1024).optional(),
});
export type GeminiAdapterOptions = z.input<typeof GeminiAdapterOptions>;

/** The URLs of one model's methods. */
export interface GeminiUrls {
  readonly model: string;
  readonly generate: string;
  readonly stream: string;
  readonly countTokens: string;
}

export function geminiUrlsOf(baseUrl: string, modelId: string): GeminiUrls {
  const model = `${baseUrl.replace(/\/+$/, '')}/v1beta/models/${encodeURIComponent(modelId)}`;
  return { model, generate: `${model}:generateContent`, stream: `${model}:streamGenerateContent?alt=sse`, countTokens: `${model}:countTokens` };
}
