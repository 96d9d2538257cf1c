// A real OpenAI-compatible server on loopback for the openai adapter's tests (node:http,
// 127.0.0.1, port 0), routed like llama.cpp's and vLLM's: `/v1/chat/completions`, `/v1/models`,
// `/props`, `/tokenize`. A route without a handler answers 404, as a server without that
// endpoint does. Every request is counted the moment it arrives (a request never answered is
// counted too), with its body once read, the moment it arrived, the moment its response closed and
// the moment its connection closed — how a test sees that a timeout cancelled the request on the
// server side, and that no two requests of one client overlapped.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { observeOverlap, type OverlapObserver } from '../support/request-overlap.js';

export interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  body: string | null;
  /** The body parsed, when it was JSON. */
  json: Record<string, unknown> | null;
  /** performance.now() when the response closed (finished or the client went away); null while open. */
  closedAt: number | null;
  /** Whether the server had ended its response when it closed (false: the client left first). */
  finished: boolean;
  /** performance.now() when the request's headers had arrived. */
  readonly arrivedAt: number;
  /** performance.now() when the request's connection closed; null while open. */
  socketClosedAt: number | null;
}

export type Handler = (seen: Seen, res: ServerResponse, req: IncomingMessage) => void | Promise<void>;

export interface Routes {
  readonly chat?: Handler;
  readonly models?: Handler;
  readonly props?: Handler;
  readonly tokenize?: Handler;
}

export interface LoopbackServer {
  readonly baseUrl: string;
  readonly seen: Seen[];
  /** The requests to one route, e.g. '/v1/chat/completions'. */
  to(path: string): Seen[];
  /** How many requests and connections it held at once (test/support/request-overlap.ts). */
  readonly overlap: OverlapObserver;
  /** A port that was just closed: connecting to it is refused. */
  close(): Promise<void>;
}

const open: LoopbackServer[] = [];

export async function startLoopback(routes: Routes): Promise<LoopbackServer> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const entry: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: null, json: null, closedAt: null, finished: false, arrivedAt: performance.now(), socketClosedAt: null };
    seen.push(entry);
    if (req.socket.closed) entry.socketClosedAt = performance.now();
    else req.socket.once('close', () => (entry.socketClosedAt = performance.now()));
    res.on('error', () => undefined);
    res.on('close', () => {
      entry.closedAt = performance.now();
      entry.finished = res.writableFinished;
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      entry.body = Buffer.concat(chunks).toString('utf8');
      try {
        const parsed: unknown = JSON.parse(entry.body);
        entry.json = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
      } catch {
        entry.json = null;
      }
      const path = entry.url.split('?')[0];
      const handler = path === '/v1/chat/completions' ? routes.chat : path === '/v1/models' ? routes.models : path === '/props' ? routes.props : path === '/tokenize' ? routes.tokenize : undefined;
      if (handler === undefined) return json(res, 404, { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } });
      void Promise.resolve(handler(entry, res, req)).catch((error: unknown) => json(res, 599, { error: String(error) }));
    });
  });
  const overlap = observeOverlap(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const s: LoopbackServer = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    seen,
    overlap,
    to: (path) => seen.filter((r) => r.url.split('?')[0] === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  open.push(s);
  return s;
}

/** Closes every server started since the last call (afterEach). */
export async function closeAllLoopbacks(): Promise<void> {
  await Promise.all(open.splice(0).map((s) => s.close()));
}

/** The base URL of a port nothing listens on (a server started and closed). */
export async function closedBaseUrl(): Promise<string> {
  const s = await startLoopback({});
  open.splice(open.indexOf(s), 1);
  await s.close();
  return s.baseUrl;
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

// ---------------------------------------------------------------------------------------
// what the servers say

export const MODEL = 'test-model';

/** The loopback tokenizer: one token per 3 chars (deliberately not the adapter's chars / 4 estimate, so a test tells them apart). */
export function loopbackTokens(text: string): number {
  return Math.ceil(text.length / 3);
}

/** llama.cpp's /tokenize: {content} → {tokens: [ids]}; without content an empty list (as llama.cpp). */
export const llamaTokenize: Handler = (seen, res) => {
  const content = seen.json?.['content'];
  json(res, 200, { tokens: typeof content === 'string' ? Array.from({ length: loopbackTokens(content) }, (_v, i) => i % 500) : [] });
};

/** vLLM's /tokenize: {model, prompt} → {count, max_model_len, tokens}; anything else a 400. */
export const vllmTokenize: Handler = (seen, res) => {
  const prompt = seen.json?.['prompt'];
  if (typeof prompt !== 'string') return json(res, 400, { object: 'error', message: 'prompt: field required', type: 'BadRequestError', code: 400 });
  const n = loopbackTokens(prompt);
  json(res, 200, { count: n, max_model_len: 8192, tokens: Array.from({ length: n }, (_v, i) => i) });
};

export function llamaProps(nCtx: number): Handler {
  return (_seen, res) => json(res, 200, { default_generation_settings: { n_ctx: nCtx, params: { n_predict: -1 } }, total_slots: 1, model_path: '/models/test.gguf', build_info: 'b4748-test', chat_template: '{{ messages }}' });
}

export function modelList(...ids: string[]): Handler {
  return (_seen, res) => json(res, 200, { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 1_767_225_600, owned_by: 'llamacpp' })) });
}

export function vllmModelList(id: string, maxModelLen: number): Handler {
  return (_seen, res) => json(res, 200, { object: 'list', data: [{ id, object: 'model', created: 1_767_225_600, owned_by: 'vllm', root: id, max_model_len: maxModelLen }] });
}

export interface CompletionFields {
  readonly finish_reason?: string | null;
  readonly usage?: { prompt_tokens: number; completion_tokens: number } | null;
  readonly model?: string;
  readonly system_fingerprint?: string | null;
  readonly refusal?: string;
}

/** A non-streamed chat completion. */
export function completion(content: string | null, f: CompletionFields = {}): Record<string, unknown> {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_767_225_600,
    model: f.model ?? MODEL,
    choices: [{ index: 0, message: { role: 'assistant', content, ...(f.refusal === undefined ? {} : { refusal: f.refusal }) }, finish_reason: f.finish_reason === undefined ? 'stop' : f.finish_reason }],
    ...(f.usage === null ? {} : { usage: { ...(f.usage ?? { prompt_tokens: 20_321, completion_tokens: 45 }), total_tokens: 0 } }),
    ...(f.system_fingerprint === null ? {} : { system_fingerprint: f.system_fingerprint ?? 'fp_test_1' }),
  };
}

/** The chunks of a streamed answer, as llama.cpp and vLLM send them: a role chunk, content pieces, the finish chunk, then usage. */
export function streamChunks(pieces: readonly string[], f: CompletionFields = {}): Record<string, unknown>[] {
  const base = { id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1_767_225_600, model: f.model ?? MODEL, ...(f.system_fingerprint === null ? {} : { system_fingerprint: f.system_fingerprint ?? 'fp_stream_1' }) };
  const chunks: Record<string, unknown>[] = [{ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: null }, finish_reason: null }] }];
  for (const piece of pieces) chunks.push({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
  if (f.refusal !== undefined) chunks.push({ ...base, choices: [{ index: 0, delta: { refusal: f.refusal }, finish_reason: null }] });
  chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: f.finish_reason === undefined ? 'stop' : f.finish_reason }] });
  if (f.usage !== null) chunks.push({ ...base, choices: [], usage: { ...(f.usage ?? { prompt_tokens: 20_321, completion_tokens: 45 }), total_tokens: 0 } });
  return chunks;
}

export function startSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

export function sseEvent(res: ServerResponse, data: unknown): void {
  res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}

/** A whole streamed answer, [DONE] included. */
export function sse(res: ServerResponse, chunks: readonly unknown[], done = true): void {
  startSse(res);
  for (const c of chunks) sseEvent(res, c);
  if (done) res.write('data: [DONE]\n\n');
  res.end();
}

/** Splits a text into pieces of `size` chars (stream deltas). */
export function pieces(text: string, size = 16): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}
