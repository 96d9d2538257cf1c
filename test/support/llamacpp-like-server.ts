// A scripted llama.cpp-like server on loopback (issue 31): what the suite needs of llama-server
// b4748 without llama.cpp — real HTTP (node:http, 127.0.0.1, port 0) and these behaviours:
//   GET  /v1/models        lists its alias
//   GET  /props            default_generation_settings.n_ctx, total_slots, build_info
//   POST /tokenize         {content} → {tokens: [...]}: one token per TOKEN_CHARS characters
//   POST /v1/chat/completions, streamed (SSE, usage and `timings` in the last chunk) or not:
//        usage.prompt_tokens = the messages' tokens + TEMPLATE_TOKENS (b4748 counts 61 template
//        tokens beyond /tokenize); `timings` from a simulated speed — it really sleeps prompt
//        tokens / promptTokensPerS, then generated / generatedTokensPerS;
//        a single slot that queues: one request evaluated at a time, the others wait FIFO;
//        b4748's cancellation: the request being evaluated is freed at its next tick when its
//        client goes away; a queued one is still evaluated to the end when its turn comes;
//        `ignoresOpenAiJsonSchema`: OpenAI's `response_format: {type: json_schema}` is ignored and
//        the answer is prose until max_tokens (finish_reason length), while llama.cpp's own fields
//        (`json_schema`, `response_format: {type: json_object, schema}`) are honoured.
// Every chat request is recorded (arrival, start, end, whether its client left, whether it was
// freed) so a test can assert on queueing and overlap; every request of any route is observed by
// test/support/request-overlap.ts (how many it held at once). `answer` decides the JSON content of a
// constrained answer (default: the smallest valid ds-model-output/2 answer).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EMPTY_ANSWER } from '../../faults/scripted-model-server.js';
import { observeOverlap, type OverlapObserver } from './request-overlap.js';

export const TOKEN_CHARS = 3;

function sharedChars(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i += 1;
  return i;
}
export const TEMPLATE_TOKENS = 61;
/** What a server that ignores the constraint writes, over and over until its cap. */
const PROSE = 'Once upon a time there was a little cat who liked to play. ';
/** How often a running evaluation looks whether its client left (llama.cpp's batch boundary). */
const TICK_MS = 10;

export interface LlamaLikeOptions {
  readonly alias?: string;
  readonly nCtx?: number;
  readonly promptTokensPerS?: number;
  readonly generatedTokensPerS?: number;
  readonly ignoresOpenAiJsonSchema?: boolean;
  /**
   * b4748's prompt cache (issue 34): the slot keeps the last prompt, and a request evaluates only
   * what follows the part it shares with it (whole tokens of TOKEN_CHARS); `timings.prompt_n` is
   * then the evaluated count (no `cache_n`, as in b4748), `usage.prompt_tokens` the whole prompt.
   */
  readonly prefixCache?: boolean;
  /** Also say the reused part in `usage.prompt_tokens_details.cached_tokens`, as vLLM and OpenAI do (issue 36: billed at the cache-read price). */
  readonly reportsCachedTokens?: boolean;
  /** The content of a constrained answer to a request (its parsed body). */
  readonly answer?: (body: Record<string, unknown>) => string;
}

export interface ChatRecord {
  readonly index: number;
  readonly system: string;
  readonly user: string;
  readonly arrivedAt: number;
  startedAt: number | null;
  endedAt: number | null;
  clientLeft: boolean;
  freed: boolean;
}

export interface LlamaLikeServer {
  readonly baseUrl: string;
  readonly alias: string;
  readonly chats: ChatRecord[];
  /** The most chat requests being evaluated at once (1 by construction: one slot) and waiting at once. */
  maxQueued(): number;
  /** Every request (side requests too) as it arrived and closed, and how many it held at once. */
  readonly overlap: OverlapObserver;
  close(): Promise<void>;
}

export function tokensOf(text: string): number {
  return Math.ceil(text.length / TOKEN_CHARS);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
      } catch {
        resolve({});
      }
    });
  });
}

/** Whether the request asks for the constraint in a form this server honours. */
function constrained(body: Record<string, unknown>, ignoresOpenAi: boolean): boolean {
  const format = body['response_format'] as { type?: string; schema?: unknown } | undefined;
  if (body['json_schema'] !== undefined) return true;
  if (format?.type === 'json_object' && format.schema !== undefined) return true;
  if (format?.type === 'json_schema') return !ignoresOpenAi;
  return false;
}

/** Evaluates for `ms`, a tick at a time; false when the client left meanwhile (the slot is freed). */
async function evaluate(ms: number, left: () => boolean): Promise<boolean> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (left()) return false;
    await sleep(Math.min(TICK_MS, Math.max(0, end - performance.now())));
  }
  return !left();
}

export async function startLlamaLikeServer(options: LlamaLikeOptions = {}): Promise<LlamaLikeServer> {
  const alias = options.alias ?? 'stories260K';
  const nCtx = options.nCtx ?? 16_384;
  const promptRate = options.promptTokensPerS ?? 50_000;
  const generatedRate = options.generatedTokensPerS ?? 50_000;
  const chats: ChatRecord[] = [];
  let slot: Promise<void> = Promise.resolve();
  let queued = 0;
  let maxQueued = 0;

  const chat = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    const messages = Array.isArray(body['messages']) ? (body['messages'] as { content?: unknown }[]) : [];
    const text = (i: number): string => (typeof messages[i]?.content === 'string' ? (messages[i]!.content as string) : '');
    const record: ChatRecord = { index: chats.length, system: text(0), user: text(1), arrivedAt: performance.now(), startedAt: null, endedAt: null, clientLeft: false, freed: false };
    chats.push(record);
    res.on('close', () => {
      if (!res.writableFinished) record.clientLeft = true;
    });
    queued += 1;
    maxQueued = Math.max(maxQueued, queued);
    // One slot: FIFO behind whatever is being evaluated.
    const turn = slot.then(() => serve(body, text(0), text(1), record, res));
    slot = turn.catch(() => undefined);
    await turn;
  };

  /** The slot's last prompt (prefixCache). */
  let cached = '';
  const serve = async (body: Record<string, unknown>, system: string, user: string, record: ChatRecord, res: ServerResponse): Promise<void> => {
    queued -= 1;
    record.startedAt = performance.now();
    const promptTokens = tokensOf(system) + tokensOf(user) + TEMPLATE_TOKENS;
    const whole = `${system}\u0000${user}`;
    const reused = options.prefixCache === true ? Math.min(Math.floor(sharedChars(cached, whole) / TOKEN_CHARS), promptTokens - 1) : 0;
    cached = whole;
    const evaluatedTokens = promptTokens - reused;
    const maxTokens = typeof body['max_tokens'] === 'number' ? body['max_tokens'] : 512;
    const isConstrained = constrained(body, options.ignoresOpenAiJsonSchema ?? false);
    let content = isConstrained ? (options.answer?.(body) ?? JSON.stringify(EMPTY_ANSWER)) : PROSE.repeat(Math.ceil((maxTokens * TOKEN_CHARS) / PROSE.length) + 1);
    let finish = 'stop';
    if (tokensOf(content) > maxTokens) {
      content = content.slice(0, maxTokens * TOKEN_CHARS);
      finish = 'length';
    }
    const generated = tokensOf(content);
    const promptMs = (evaluatedTokens / promptRate) * 1000;
    const generatedMs = (generated / generatedRate) * 1000;
    // A running request is freed when its client leaves (at the next tick); a queued one ran anyway.
    const done = (await evaluate(promptMs, () => record.clientLeft)) && (await evaluate(generatedMs, () => record.clientLeft));
    record.endedAt = performance.now();
    if (!done) {
      record.freed = true;
      return;
    }
    const usage = { prompt_tokens: promptTokens, completion_tokens: generated, total_tokens: promptTokens + generated, ...(options.reportsCachedTokens === true ? { prompt_tokens_details: { cached_tokens: reused } } : {}) };
    const timings = { prompt_n: evaluatedTokens, prompt_ms: promptMs, prompt_per_token_ms: promptMs / evaluatedTokens, prompt_per_second: promptRate, predicted_n: generated, predicted_ms: generatedMs, predicted_per_token_ms: generated === 0 ? 0 : generatedMs / generated, predicted_per_second: generatedRate };
    if (record.clientLeft) return;
    if (body['stream'] === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}, finishReason: string | null = null): string => `data: ${JSON.stringify({ id: 'chatcmpl-llama-like', object: 'chat.completion.chunk', created: 1_767_225_600, model: alias, system_fingerprint: 'b4748-llama-like', choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`;
      const half = Math.ceil(content.length / 2);
      res.write(chunk({ role: 'assistant', content: content.slice(0, half) }));
      res.write(chunk({ content: content.slice(half) }));
      res.write(chunk({}, { usage, timings }, finish));
      res.end('data: [DONE]\n\n');
      return;
    }
    send(res, 200, { id: 'chatcmpl-llama-like', object: 'chat.completion', created: 1_767_225_600, model: alias, system_fingerprint: 'b4748-llama-like', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finish }], usage, timings });
  };

  const server: Server = createServer((req, res) => {
    res.on('error', () => undefined);
    const url = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && url === '/v1/models') return send(res, 200, { object: 'list', data: [{ id: alias, object: 'model', created: 1_767_225_600, owned_by: 'llamacpp' }] });
    if (req.method === 'GET' && url === '/props') return send(res, 200, { default_generation_settings: { n_ctx: nCtx }, total_slots: 1, model_path: `/models/${alias}.gguf`, build_info: 'b4748-llama-like' });
    if (req.method === 'POST' && url === '/tokenize') {
      void readBody(req).then((body) => {
        const content = typeof body['content'] === 'string' ? body['content'] : '';
        send(res, 200, { tokens: Array.from({ length: content === '' ? 0 : tokensOf(content) }, (_v, i) => i % 512) });
      });
      return;
    }
    if (req.method === 'POST' && url === '/v1/chat/completions') return void chat(req, res).catch(() => send(res, 500, { error: { message: 'llama-like server failed' } }));
    req.resume();
    send(res, 404, { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } });
  });
  const overlap = observeOverlap(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    overlap,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    alias,
    chats,
    maxQueued: () => maxQueued,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
