// What the openai adapter is configured with: its options (zod: the base URL, the model id, the
// API key's environment variable, the dialect, limits), the bounds of its exchanges, and the
// error a configuration it cannot use gets.
import { z } from 'zod';
import { InternalError } from '../../foundation/typed-error.js';
import { StructuredOutputDialect, TransportRetryPolicy } from '../../schema/model-call-policy.js';
import { ServerBaseUrl } from '../protocol.js';

export const OPENAI_ADAPTER_LIMITS = {
  /** A chat completion is a few KiB; more is a misbehaving server, and the store could not keep it anyway. */
  maxResponseBytes: 1024 * 1024,
  /** One event per token or so; an answer of the largest cap (4,096) streams ~4,100. */
  maxStreamEvents: 100_000,
  /** How much of a failed response's body a detail quotes. */
  quotedBodyChars: 500,
  /** GET /models, GET /props and POST /tokenize answer at once on a live server (they do not queue behind decoding). */
  sideRequestTimeoutMs: 10_000,
  /** /props carries the chat template, /tokenize a token list as long as the prompt (~7 bytes per token). */
  sideResponseBytes: 8 * 1024 * 1024,
  /** Tokens kept free for the probe's own prompt and a chat template's (b4748 adds 61) when its cap is sized to the context. */
  probePromptReserveTokens: 256,
  /** How much of the probe's raw answer preflight.jsonl keeps. */
  probeRawChars: 2_000,
} as const;

export class OpenAiAdapterConfigError extends InternalError {
  override readonly name = 'OpenAiAdapterConfigError';
}

export const OpenAiAdapterOptions = z.strictObject({
  /** e.g. http://127.0.0.1:8080/v1; the adapter posts to `${baseUrl}/chat/completions`. */
  baseUrl: ServerBaseUrl,
  modelId: z.string().min(1).max(200),
  /** From the environment, by the caller; null for a local server that wants none. */
  apiKey: z.string().min(1).max(4_096).nullable(),
  /** null leaves a parameter to the server's default and is not sent. */
  params: z.strictObject({
    temperature: z.number().min(0).max(2).nullable(),
    top_p: z.number().gt(0).max(1).nullable(),
    seed: z.number().int().nullable(),
    max_tokens: z.number().int().min(1).nullable(),
  }),
  /** How the answer's JSON Schema is sent (structured-output.ts). */
  dialect: StructuredOutputDialect,
  /** The pre-registered transport retry policy. */
  retry: TransportRetryPolicy,
  /** The model's context in tokens as configured; used when the server does not report its own. */
  contextSize: z.number().int().min(1).max(100_000_000).nullable(),
  /** Stream the answer (needed for a timeout to cancel the decoding); a server that ignores it and answers plain JSON is read as such. */
  stream: z.boolean().default(true),
  maxResponseBytes: z.number().int().min(1_024).max(64 * 1024 * 1024).optional(),
});

export type OpenAiAdapterOptions = z.input<typeof OpenAiAdapterOptions>;
