// The anthropic adapter's small requests beside the message itself (issue 36 item 1): which
// models the key may use (GET /v1/models/{model_id}, else the list GET /v1/models), and how many
// tokens a prompt is (POST /v1/messages/count_tokens). Each one bounded, through the adapter's
// gate (bounded-http.ts exchangeJson), never retried here: the preflight puts the model lookup
// under the retry policy, and a count that fails falls back to the estimate, said so.
import { z } from 'zod';
import { exchangeJson } from './bounded-http.js';
import type { ExchangeGate } from './http-exchange.js';
import { anthropicErrorText } from './anthropic-stream.js';
import { ANTHROPIC_ADAPTER_LIMITS } from './anthropic-options.js';
import type { NoAnswer } from './transport-retry.js';

const ModelInfo = z.object({ id: z.string().min(1), display_name: z.string().nullish(), max_input_tokens: z.number().int().min(1).nullish() });
const ModelPage = z.object({ data: z.array(ModelInfo) });
const TokenCount = z.object({ input_tokens: z.number().int().min(0) });
const ErrorBody = z.object({ type: z.literal('error'), error: z.unknown() });

export interface SideRequestContext {
  readonly gate: ExchangeGate;
  readonly baseUrl: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

export type ModelLookup =
  | { readonly kind: 'served'; readonly id: string; readonly maxInputTokens: number | null; readonly url: string }
  /** The API answered that the model is not there; `served` lists what the key may use (when the list answered). */
  | { readonly kind: 'not_served'; readonly detail: string; readonly served: readonly string[] | null }
  /** The API refused the request itself (401, 403, …) or answered something that is not a model. */
  | { readonly kind: 'refused'; readonly detail: string }
  | { readonly kind: 'no_answer'; readonly noAnswer: NoAnswer }
  | { readonly kind: 'timeout'; readonly detail: string };

/** An error body's `{type, message}` as words, else what the exchange said. */
function errorDetail(json: unknown, detail: string): string {
  const e = ErrorBody.safeParse(json);
  return e.success ? `${detail}: ${anthropicErrorText(e.data.error)}` : detail;
}

function json(r: SideRequestContext, method: 'GET' | 'POST', path: string, body?: unknown): ReturnType<typeof exchangeJson> {
  return exchangeJson(r.gate, { method, url: `${r.baseUrl}${path}`, headers: r.headers, ...(body === undefined ? {} : { body }), timeoutMs: r.timeoutMs, maxBytes: ANTHROPIC_ADAPTER_LIMITS.sideResponseBytes, quotedBodyChars: ANTHROPIC_ADAPTER_LIMITS.quotedBodyChars });
}

/** Whether the API serves `modelId` to this key: GET /v1/models/{id}; on a 404, the list names what it serves. */
export async function lookUpModel(r: SideRequestContext, modelId: string): Promise<ModelLookup> {
  const path = `/v1/models/${encodeURIComponent(modelId)}`;
  const one = await json(r, 'GET', path);
  if (one.kind !== 'answered') return one;
  if (one.status === 200) {
    const info = ModelInfo.safeParse(one.json);
    if (!info.success) return { kind: 'refused', detail: `${one.detail}: the body is not a model description (id, display_name)` };
    return { kind: 'served', id: info.data.id, maxInputTokens: info.data.max_input_tokens ?? null, url: `${r.baseUrl}${path}` };
  }
  if (one.status !== 404) return { kind: 'refused', detail: errorDetail(one.json, one.detail) };
  const list = await json(r, 'GET', '/v1/models?limit=1000');
  const page = list.kind === 'answered' && list.status === 200 ? ModelPage.safeParse(list.json) : null;
  return { kind: 'not_served', detail: errorDetail(one.json, one.detail), served: page?.success ? page.data.data.map((m) => m.id) : null };
}

export type TokenCountResult = { readonly kind: 'counted'; readonly tokens: number } | { readonly kind: 'failed'; readonly detail: string };

/** The prompt counted by POST /v1/messages/count_tokens. */
export async function countTokens(r: SideRequestContext, body: Record<string, unknown>): Promise<TokenCountResult> {
  const answer = await json(r, 'POST', '/v1/messages/count_tokens', body);
  if (answer.kind === 'no_answer') return { kind: 'failed', detail: answer.noAnswer.detail };
  if (answer.kind === 'timeout') return { kind: 'failed', detail: answer.detail };
  if (answer.status !== 200) return { kind: 'failed', detail: errorDetail(answer.json, answer.detail) };
  const count = TokenCount.safeParse(answer.json);
  return count.success ? { kind: 'counted', tokens: count.data.input_tokens } : { kind: 'failed', detail: `${answer.detail}: the body has no input_tokens count` };
}
