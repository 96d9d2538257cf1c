// The `openai` model adapter (issue 5 item 3, docs/model-protocol.md): one OpenAI-compatible
// chat-completions request per call (vLLM, llama.cpp server, Ollama, OpenAI).
//
// One call is exactly one HTTP request: no retry (a retry would be a model call outside the
// shared budget, §5.2, and would differ between groups by luck), no redirect followed (a
// redirect would be a second request, possibly to another host, carrying the key). Every way
// a call can go wrong comes back as an outcome with a detail; `call` throws only for a
// caller's bug (a timeout or token cap that is not a positive integer).
//
// The API key is read from the environment by the caller and only ever sent in the
// Authorization header. Every detail this adapter writes passes through `redact`, because a
// server may echo the header back in an error body, and details go into the event store.
import { z } from 'zod';
import type { ModelAdapter, ModelCallOutcome, ModelParams, ModelRequest } from '../model-adapter.js';
import { estimateTokens } from '../prompt.js';

export const OPENAI_ADAPTER_LIMITS = {
  /** A chat completion is a few KiB; more is a misbehaving server, and the store could not keep it anyway. */
  maxResponseBytes: 1024 * 1024,
  /** How much of a failed response's body a detail quotes. */
  quotedBodyChars: 500,
} as const;

const REDACTED = '[redacted API key]';

export class OpenAiAdapterConfigError extends Error {
  override readonly name = 'OpenAiAdapterConfigError';
}

export const OpenAiAdapterOptions = z.strictObject({
  /** e.g. http://127.0.0.1:8080/v1; the adapter posts to `${baseUrl}/chat/completions`. */
  baseUrl: z
    .url({ protocol: /^https?$/ })
    .refine((u) => { const url = new URL(u); return url.username === '' && url.password === ''; }, { message: 'baseUrl must not carry credentials; pass the key as apiKey' })
    .refine((u) => { const url = new URL(u); return url.search === '' && url.hash === ''; }, { message: 'baseUrl must not carry a query or fragment' }),
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
  /** Sends response_format {type: "json_object"}. Off by default: llama.cpp and Ollama treat it differently or not at all. */
  jsonMode: z.boolean().optional(),
  maxResponseBytes: z.number().int().min(1_024).max(64 * 1024 * 1024).optional(),
});
export type OpenAiAdapterOptions = z.input<typeof OpenAiAdapterOptions>;

/** The part of a chat completion this adapter reads; servers add fields, which are ignored. */
const ChatCompletion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: z.unknown().optional(),
  system_fingerprint: z.string().nullish(),
});

const Usage = z.object({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) });

type BodyRead =
  | { readonly ok: true; readonly bytes: Uint8Array; readonly overLimit: boolean }
  | { readonly ok: false; readonly error: unknown };

export class OpenAiAdapter implements ModelAdapter {
  readonly name = 'openai' as const;
  readonly model_id: string;
  readonly params: ModelParams;
  /** Unknown before a call; each answer carries the server's system_fingerprint. */
  readonly build = null;
  private readonly url: string;
  private readonly apiKey: string | null;
  private readonly jsonMode: boolean;
  private readonly maxResponseBytes: number;

  constructor(options: OpenAiAdapterOptions) {
    const parsed = OpenAiAdapterOptions.safeParse(options);
    if (!parsed.success) {
      // Issue paths and messages only: zod does not quote values, so the key cannot leak here.
      throw new OpenAiAdapterConfigError(`openai adapter options: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
    }
    const o = parsed.data;
    this.model_id = o.modelId;
    this.params = { ...o.params };
    this.url = `${o.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.apiKey = o.apiKey;
    this.jsonMode = o.jsonMode ?? false;
    this.maxResponseBytes = o.maxResponseBytes ?? OPENAI_ADAPTER_LIMITS.maxResponseBytes;
  }

  async call(request: ModelRequest, timeoutMs: number): Promise<ModelCallOutcome> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new OpenAiAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    if (!Number.isSafeInteger(request.max_tokens) || request.max_tokens < 1) throw new OpenAiAdapterConfigError(`request.max_tokens must be a positive integer, got ${request.max_tokens}`);

    const p = this.params;
    const body = {
      model: this.model_id,
      messages: [
        { role: 'system', content: request.system },
        { role: 'user', content: request.user },
      ],
      // The wake's remaining budget caps the answer even when the configured cap is higher.
      max_tokens: p.max_tokens === null ? request.max_tokens : Math.min(p.max_tokens, request.max_tokens),
      ...(p.temperature === null ? {} : { temperature: p.temperature }),
      ...(p.top_p === null ? {} : { top_p: p.top_p }),
      ...(p.seed === null ? {} : { seed: p.seed }),
      ...(this.jsonMode ? { response_format: { type: 'json_object' } } : {}),
    };
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.apiKey !== null) headers.authorization = `Bearer ${this.apiKey}`;

    // One signal bounds the whole call: connecting, waiting for headers and reading the body.
    const signal = AbortSignal.timeout(timeoutMs);
    const started = performance.now();
    const elapsedMs = (): number => Math.max(0, Math.round(performance.now() - started));
    const failed = (failure: 'timeout' | 'http_error' | 'refusal', detail: string, rawOutput: string | null = null): ModelCallOutcome => ({
      kind: 'failed',
      failure,
      detail: this.redact(detail),
      raw_output: rawOutput,
      latency_ms: elapsedMs(),
    });
    const timedOut = (): ModelCallOutcome => failed('timeout', `no complete answer from POST ${this.url} within timeoutMs ${timeoutMs}; the request was aborted and not retried`);

    let response: Response;
    try {
      response = await fetch(this.url, { method: 'POST', headers, body: JSON.stringify(body), signal, redirect: 'manual' });
    } catch (error) {
      if (signal.aborted) return timedOut();
      return failed('http_error', `POST ${this.url} failed before a response: ${describeError(error)}`);
    }

    const read = await readBounded(response, this.maxResponseBytes);
    if (!read.ok) {
      if (signal.aborted) return timedOut();
      return failed('http_error', `HTTP ${response.status} from POST ${this.url}: the body could not be read: ${describeError(read.error)}`);
    }

    if (response.status < 200 || response.status > 299) {
      const quoted = new TextDecoder('utf-8').decode(read.bytes).slice(0, OPENAI_ADAPTER_LIMITS.quotedBodyChars);
      const redirect = response.status >= 300 && response.status < 400 ? ` (a redirect to ${response.headers.get('location') ?? 'nowhere'}; redirects are not followed: one call is one request)` : '';
      return failed('http_error', `HTTP ${response.status} ${response.statusText} from POST ${this.url}${redirect}; body: ${JSON.stringify(quoted)}`);
    }
    if (read.overLimit) return failed('http_error', `HTTP ${response.status} from POST ${this.url}: the response body exceeds maxResponseBytes ${this.maxResponseBytes}; reading stopped there and nothing of it is used`);

    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(read.bytes);
    } catch {
      return failed('http_error', `HTTP ${response.status} from POST ${this.url}: the body (${read.bytes.length} bytes) is not valid UTF-8`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      return failed('http_error', `HTTP ${response.status} from POST ${this.url}: the body is not JSON (${describeError(error)}); it begins ${JSON.stringify(text.slice(0, OPENAI_ADAPTER_LIMITS.quotedBodyChars))}`);
    }
    const completion = ChatCompletion.safeParse(json);
    if (!completion.success) {
      const issues = completion.error.issues.slice(0, 4).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
      return failed('http_error', `HTTP ${response.status} from POST ${this.url}: not a chat completion (${issues}); it begins ${JSON.stringify(text.slice(0, OPENAI_ADAPTER_LIMITS.quotedBodyChars))}`);
    }
    const choice = completion.data.choices[0]!;
    const content = choice.message.content ?? null;
    const refusal = choice.message.refusal ?? null;
    if (refusal !== null && refusal.trim() !== '') {
      return failed('refusal', `the model refused: ${JSON.stringify(refusal.slice(0, OPENAI_ADAPTER_LIMITS.quotedBodyChars))}`, content ?? refusal);
    }
    if (choice.finish_reason === 'content_filter') {
      return failed('refusal', `the server's content filter stopped the answer (finish_reason content_filter)${content === null ? '' : ` after ${content.length} chars`}`, content);
    }
    if (content === null) {
      return failed('http_error', `HTTP ${response.status} from POST ${this.url}: the completion has no choices[0].message.content (finish_reason ${choice.finish_reason ?? 'none'})`);
    }

    const usage = Usage.safeParse(completion.data.usage);
    const latencyMs = elapsedMs();
    return {
      kind: 'answered',
      raw_output: content,
      // A server that does not count (or counts in another shape) still spent tokens: the
      // budget gets the shared estimate, flagged as such.
      usage: usage.success
        ? { prompt_tokens: usage.data.prompt_tokens, completion_tokens: usage.data.completion_tokens }
        : { prompt_tokens: estimateTokens(request.system) + estimateTokens(request.user), completion_tokens: estimateTokens(content) },
      usage_estimated: !usage.success,
      latency_ms: latencyMs,
      system_fingerprint: completion.data.system_fingerprint ?? null,
    };
  }

  private redact(text: string): string {
    return this.apiKey === null ? text : text.split(this.apiKey).join(REDACTED);
  }
}

/**
 * Reads at most maxBytes of the body (plus one chunk's worth of evidence that there is more),
 * then cancels the stream: a server that sends without end costs this much memory, no more.
 */
async function readBounded(response: Response, maxBytes: number): Promise<BodyRead> {
  const declared = Number(response.headers.get('content-length'));
  if (response.body === null) return { ok: true, bytes: new Uint8Array(0), overLimit: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    if (Number.isFinite(declared) && declared > maxBytes) {
      await reader.cancel('declared body over the limit').catch(() => undefined);
      return { ok: true, bytes: new Uint8Array(0), overLimit: true };
    }
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - total;
      if (value.length > room) {
        chunks.push(value.subarray(0, room));
        total += room;
        // The cancel's own failure changes nothing: the body is already refused.
        await reader.cancel('body over the limit').catch(() => undefined);
        return { ok: true, bytes: concat(chunks, total), overLimit: true };
      }
      chunks.push(value);
      total += value.length;
    }
  } catch (error) {
    return { ok: false, error };
  }
  return { ok: true, bytes: concat(chunks, total), overLimit: false };
}

function concat(chunks: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A transport error with its cause (undici wraps ECONNREFUSED & co. as `fetch failed` + cause). */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${error.message}: ${typeof code === 'string' ? `${code} ` : ''}${cause.message}`;
  }
  return error.message;
}
