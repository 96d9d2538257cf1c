// The gemini adapter's side requests (issue 36), each bounded and through the adapter's gate:
// GET models/{model} (https://ai.google.dev/api/models#method:-models.get) — is the model served,
// its inputTokenLimit and outputTokenLimit, whether it takes generateContent — and
// POST models/{model}:countTokens (https://ai.google.dev/api/tokens#method:-models.counttokens)
// with the very request a call sends (`generateContentRequest`), so the count covers the system
// instruction too.
import { z } from 'zod';
import { exchangeJson } from './bounded-http.js';
import { GEMINI_ADAPTER_LIMITS, type GeminiUrls } from './gemini-options.js';
import { geminiPromptOf } from './gemini-request.js';
import { googleErrorText } from './gemini-stream.js';
import type { ExchangeGate } from './http-exchange.js';
import type { NoAnswer } from './transport-retry.js';

const TokenLimit = z.number().int().min(1);
const GeminiModel = z.object({
  name: z.string(),
  version: z.string().optional(),
  inputTokenLimit: TokenLimit.optional(),
  outputTokenLimit: TokenLimit.optional(),
  supportedGenerationMethods: z.array(z.string()).optional(),
});
const CountTokensResponse = z.object({ totalTokens: z.number().int().min(0) });

export type ModelLookup =
  | { readonly kind: 'served'; readonly name: string; readonly version: string | null; readonly inputTokenLimit: number | null; readonly outputTokenLimit: number | null; readonly generates: boolean | null; readonly detail: string }
  /** The API answered, but not with the model: 404 (no such model), 401/403 (the key), another status, or not a Model. */
  | { readonly kind: 'refused'; readonly status: number; readonly detail: string }
  | { readonly kind: 'no_answer'; readonly noAnswer: NoAnswer }
  | { readonly kind: 'timeout'; readonly detail: string };

export type TokenCount = { readonly kind: 'counted'; readonly tokens: number } | { readonly kind: 'failed'; readonly detail: string };

export class GeminiModelsApi {
  constructor(
    private readonly urls: GeminiUrls,
    private readonly modelId: string,
    private readonly headers: Readonly<Record<string, string>>,
    private readonly gate: ExchangeGate,
  ) {}

  private request(method: 'GET' | 'POST', url: string, timeoutMs: number, body?: unknown) {
    return exchangeJson(this.gate, { method, url, headers: this.headers, ...(body === undefined ? {} : { body }), timeoutMs, maxBytes: GEMINI_ADAPTER_LIMITS.sideResponseBytes, quotedBodyChars: GEMINI_ADAPTER_LIMITS.quotedBodyChars });
  }

  async model(timeoutMs: number): Promise<ModelLookup> {
    const r = await this.request('GET', this.urls.model, timeoutMs);
    if (r.kind !== 'answered') return r;
    const what = `GET ${this.urls.model}`;
    if (r.status !== 200) {
      const google = (r.json as { error?: unknown } | undefined)?.error;
      return { kind: 'refused', status: r.status, detail: `${r.detail}${google === undefined ? '' : `: ${googleErrorText(google)}`}` };
    }
    const m = GeminiModel.safeParse(r.json);
    if (!m.success) return { kind: 'refused', status: r.status, detail: `${what} answered 200, but not with a Model (${m.error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')})` };
    const methods = m.data.supportedGenerationMethods;
    return {
      kind: 'served',
      name: m.data.name,
      version: m.data.version ?? null,
      inputTokenLimit: m.data.inputTokenLimit ?? null,
      outputTokenLimit: m.data.outputTokenLimit ?? null,
      generates: methods === undefined ? null : methods.includes('generateContent'),
      detail: what,
    };
  }

  async countTokens(system: string, user: string, timeoutMs: number): Promise<TokenCount> {
    const body = { generateContentRequest: { model: `models/${this.modelId}`, ...geminiPromptOf(system, user) } };
    const r = await this.request('POST', this.urls.countTokens, timeoutMs, body);
    if (r.kind === 'no_answer') return { kind: 'failed', detail: r.noAnswer.detail };
    if (r.kind === 'timeout') return { kind: 'failed', detail: r.detail };
    const counted = CountTokensResponse.safeParse(r.json);
    if (r.status !== 200 || !counted.success) {
      const google = (r.json as { error?: unknown } | undefined)?.error;
      return { kind: 'failed', detail: `${r.detail}${google === undefined ? ': not a token count' : `: ${googleErrorText(google)}`}` };
    }
    return { kind: 'counted', tokens: counted.data.totalTokens };
  }
}
