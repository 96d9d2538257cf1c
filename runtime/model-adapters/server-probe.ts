// What an OpenAI-compatible server says about itself, beyond the chat endpoint (issue 15 items
// 3 and 5): the models it serves (`GET {baseUrl}/models`), its context size (llama.cpp:
// `GET {root}/props` → default_generation_settings.n_ctx; vLLM: `GET {baseUrl}/models` →
// data[].max_model_len), and a tokenizer of the served model (llama.cpp: `POST {root}/tokenize`
// {content} → {tokens: [...]}; vLLM: `POST {root}/tokenize` {model, prompt} → {count, tokens}).
// The server root is the base URL without a trailing `/v1`. Both tokenizers live at the same
// path, so the two request shapes are tried in turn, llama.cpp's first: llama.cpp answers the
// vLLM shape (no `content`) with an empty token list, vLLM refuses the llama.cpp shape.
//
// Every request here is a bounded exchange (bounded-http.ts) to the configured server only,
// with the same Authorization header as the chat request (llama.cpp and vLLM guard these paths
// with the same key); nothing here is retried except through the caller. Every request passes
// the adapter's gate (http-exchange.ts): one at a time, the last one's connection closed first.
import { exchangeJson, type JsonExchange } from './bounded-http.js';
import type { ExchangeGate } from './http-exchange.js';
import type { NoAnswer } from './transport-retry.js';

export type TokenizerKind = 'llamacpp' | 'vllm' | 'none';

export interface ServedModel {
  readonly id: string;
  /** vLLM's context size for this model, when it says. */
  readonly max_model_len: number | null;
}

export type ModelList =
  | { readonly kind: 'listed'; readonly models: readonly ServedModel[]; readonly detail: string }
  /** The server answered, but not with a model list. */
  | { readonly kind: 'not_listed'; readonly detail: string }
  | { readonly kind: 'no_answer'; readonly noAnswer: NoAnswer }
  | { readonly kind: 'timeout'; readonly detail: string };

export interface ServerProps {
  readonly n_ctx: number | null;
  readonly build_info: string | null;
}

/** What one tokenize attempt gave: a count, "this server does not tokenize this way", or no answer at all. */
export type TokenizeResult = { readonly kind: 'counted'; readonly tokens: number } | { readonly kind: 'unsupported'; readonly detail: string } | { readonly kind: 'unreachable'; readonly detail: string };

export interface ServerProbeOptions {
  readonly baseUrl: string;
  readonly modelId: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly maxBytes: number;
  readonly quotedBodyChars: number;
  /** The adapter's gate: its chat requests and these side requests, one at a time. */
  readonly gate: ExchangeGate;
}

/** The base URL without trailing slashes and without a trailing `/v1` (where llama.cpp and vLLM serve /props and /tokenize). */
export function serverRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

function record(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function positiveInt(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
}

export class ServerProbe {
  readonly modelsUrl: string;
  readonly propsUrl: string;
  readonly tokenizeUrl: string;

  constructor(private readonly options: ServerProbeOptions) {
    const base = options.baseUrl.replace(/\/+$/, '');
    const root = serverRoot(options.baseUrl);
    this.modelsUrl = `${base}/models`;
    this.propsUrl = `${root}/props`;
    this.tokenizeUrl = `${root}/tokenize`;
  }

  private exchange(method: 'GET' | 'POST', url: string, timeoutMs: number, body?: unknown): Promise<JsonExchange> {
    return exchangeJson(this.options.gate, { method, url, headers: this.options.headers, body, timeoutMs, maxBytes: this.options.maxBytes, quotedBodyChars: this.options.quotedBodyChars });
  }

  async listModels(timeoutMs: number): Promise<ModelList> {
    const r = await this.exchange('GET', this.modelsUrl, timeoutMs);
    if (r.kind !== 'answered') return r;
    if (r.status < 200 || r.status > 299) return { kind: 'not_listed', detail: r.detail };
    const data = record(r.json)?.['data'];
    if (!Array.isArray(data)) return { kind: 'not_listed', detail: `${r.detail}: not a model list (no data array)` };
    const models: ServedModel[] = [];
    for (const entry of data.slice(0, 1_000)) {
      const m = record(entry);
      if (m === null || typeof m['id'] !== 'string') continue;
      models.push({ id: m['id'], max_model_len: positiveInt(m['max_model_len']) });
    }
    return { kind: 'listed', models, detail: r.detail };
  }

  /** llama.cpp's /props; null when the server has none (not llama.cpp), `unreachable` when no answer came. */
  async props(timeoutMs: number): Promise<ServerProps | null | 'unreachable'> {
    const r = await this.exchange('GET', this.propsUrl, timeoutMs);
    if (r.kind !== 'answered') return 'unreachable';
    if (r.status < 200 || r.status > 299) return null;
    const props = record(r.json);
    if (props === null) return null;
    const settings = record(props['default_generation_settings']);
    const build = props['build_info'];
    return { n_ctx: positiveInt(settings?.['n_ctx']), build_info: typeof build === 'string' && build !== '' ? build.slice(0, 200) : null };
  }

  /** Counts `text` with the tokenizer of `kind`. */
  async tokenize(kind: Exclude<TokenizerKind, 'none'>, text: string, timeoutMs: number): Promise<TokenizeResult> {
    // add_special false: the count of the text itself; the chat template adds its own tokens.
    const body = kind === 'llamacpp' ? { content: text, add_special: false } : { model: this.options.modelId, prompt: text, add_special_tokens: false };
    const r = await this.exchange('POST', this.tokenizeUrl, timeoutMs, body);
    if (r.kind === 'no_answer') return { kind: 'unreachable', detail: r.noAnswer.detail };
    if (r.kind === 'timeout') return { kind: 'unreachable', detail: r.detail };
    if (r.status < 200 || r.status > 299) return { kind: 'unsupported', detail: r.detail };
    const answer = record(r.json);
    const tokens = answer?.['tokens'];
    const count = kind === 'vllm' ? answer?.['count'] : undefined;
    if (typeof count === 'number' && Number.isSafeInteger(count) && count >= 0) return { kind: 'counted', tokens: count };
    if (Array.isArray(tokens)) {
      // llama.cpp answers a request without `content` with an empty list: for a non-empty text, not a count.
      if (tokens.length === 0 && text.length > 0) return { kind: 'unsupported', detail: `${r.detail}: an empty token list for a non-empty text` };
      return { kind: 'counted', tokens: tokens.length };
    }
    return { kind: 'unsupported', detail: `${r.detail}: no token list in the answer` };
  }

  /**
   * Which tokenizer this server has, found by counting `text` (non-empty) with each shape in
   * turn. `unreachable` when the server could not be reached at all (try again later).
   */
  async findTokenizer(text: string, timeoutMs: number): Promise<{ readonly kind: TokenizerKind; readonly tokens: number | null; readonly detail: string } | { readonly kind: 'unreachable'; readonly detail: string }> {
    const details: string[] = [];
    for (const kind of ['llamacpp', 'vllm'] as const) {
      const r = await this.tokenize(kind, text, timeoutMs);
      if (r.kind === 'counted') return { kind, tokens: r.tokens, detail: `POST ${this.tokenizeUrl} counts tokens (${kind === 'llamacpp' ? 'llama.cpp' : 'vLLM'} shape)` };
      if (r.kind === 'unreachable') return { kind: 'unreachable', detail: r.detail };
      details.push(`${kind}: ${r.detail}`);
    }
    return { kind: 'none', tokens: null, detail: `no tokenizer endpoint (${details.join('; ')})` };
  }
}
