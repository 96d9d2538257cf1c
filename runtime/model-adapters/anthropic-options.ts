// What the anthropic adapter is configured with (issue 36 item 1): its options (zod: the base
// URL, the model id, the API key as read from its variable, the dialect, the sampling parameters,
// limits), the constants of the Messages API it speaks, the bounds of its exchanges, and the
// error a configuration it cannot use gets.
import { z } from 'zod';
import { InternalError } from '../../foundation/typed-error.js';
import { AnthropicDialect, TransportRetryPolicy } from '../../schema/model-call-policy.js';
import { ANTHROPIC_NO_SEED, ServerBaseUrl } from '../protocol.js';

/** The API version every request names (the `anthropic-version` header); the one the Messages API documents. */
export const ANTHROPIC_VERSION = '2023-06-01';

export const ANTHROPIC_ADAPTER_LIMITS = {
  /** A message is a few KiB; more is a misbehaving server, and the store could not keep it anyway. */
  maxResponseBytes: 1024 * 1024,
  /** One delta per few tokens, plus start/stop/ping events; an answer of the largest cap (4,096) streams ~4,100. */
  maxStreamEvents: 100_000,
  /** How much of a failed response's body a detail quotes. */
  quotedBodyChars: 500,
  /** GET /v1/models/{id} and POST /v1/messages/count_tokens answer at once. */
  sideRequestTimeoutMs: 10_000,
  /** A model's description, or a list of them (one page). */
  sideResponseBytes: 1024 * 1024,
  /** Tokens kept free for the probe's own prompt when its cap is sized to the context. */
  probePromptReserveTokens: 256,
  /** How much of the probe's raw answer preflight.jsonl keeps. */
  probeRawChars: 2_000,
} as const;

export class AnthropicAdapterConfigError extends InternalError {
  override readonly name = 'AnthropicAdapterConfigError';
}

export const AnthropicAdapterOptions = z.strictObject({
  /** e.g. https://api.anthropic.com; the adapter posts to `${baseUrl}/v1/messages`. */
  baseUrl: ServerBaseUrl,
  modelId: z.string().min(1).max(200),
  /** From the environment, by the caller: the API always wants one. */
  apiKey: z.string().min(1).max(4_096),
  /** null leaves a parameter to the API's default and is not sent; a seed cannot be sent at all. */
  params: z
    .strictObject({
      temperature: z.number().min(0).max(1).nullable(),
      top_p: z.number().gt(0).max(1).nullable(),
      seed: z.number().int().nullable(),
      max_tokens: z.number().int().min(1).nullable(),
    })
    .refine((p) => p.seed === null, { message: ANTHROPIC_NO_SEED }),
  dialect: AnthropicDialect,
  retry: TransportRetryPolicy,
  /** The model's input window in tokens as configured; used when the Models API reports none. */
  contextSize: z.number().int().min(1).max(100_000_000).nullable(),
  stream: z.boolean().default(true),
  /** Count each prompt with POST /v1/messages/count_tokens before sending it. */
  countTokens: z.boolean().default(false),
  maxResponseBytes: z.number().int().min(1_024).max(64 * 1024 * 1024).optional(),
});
export type AnthropicAdapterOptions = z.input<typeof AnthropicAdapterOptions>;
