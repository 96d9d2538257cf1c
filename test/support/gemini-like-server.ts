// A Gemini-API-like server on loopback (issue 36 item 5), written from Google's documentation of
// the Gemini API (https://ai.google.dev/api), not from a recording — no hosted API is reachable
// from this machine. Real HTTP (node:http, 127.0.0.1, port 0):
//   GET  /v1beta/models/{model}                          a Model: name, version, inputTokenLimit, outputTokenLimit, supportedGenerationMethods
//   POST /v1beta/models/{model}:countTokens              {contents} or {generateContentRequest} → {totalTokens}
//   POST /v1beta/models/{model}:generateContent          one GenerateContentResponse
//   POST /v1beta/models/{model}:streamGenerateContent?alt=sse   SSE, each `data:` a GenerateContentResponse chunk, the last with finishReason
// Every request must carry the key in x-goog-api-key: none → 403 PERMISSION_DENIED, a wrong one →
// 400 INVALID_ARGUMENT (reason API_KEY_INVALID), as the troubleshooting page documents; errors are
// `{error: {code, message, status, details?}}`. Tokens: one per TOKEN_CHARS characters.
// Scripted faults, one per generate request in order (`faults`): 429 RESOURCE_EXHAUSTED (with
// Retry-After and RetryInfo.retryDelay), 503 UNAVAILABLE, a MAX_TOKENS cut-off, a SAFETY stop, a
// prompt blocked (promptFeedback.blockReason), a stream cut mid-chunk, a hang (for a timeout).
// The schema: Gemini documents that responseJsonSchema keywords outside its subset are ignored,
// so by default any schema is accepted and the answer is the valid JSON `answer` makes;
// `refuseSchemaKeywords` switches on a 400 INVALID_ARGUMENT for a schema using one of them.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EMPTY_ANSWER } from '../../faults/scripted-model-server.js';

export const TOKEN_CHARS = 3;
export const GEMINI_TEST_MODEL = 'gemini-loopback-flash';
const tokensOf = (text: string): number => Math.ceil(text.length / TOKEN_CHARS);

export type GeminiFault = 'ok' | 'rate_limited' | 'unavailable' | 'max_tokens' | 'safety' | 'prompt_blocked' | 'cut_stream' | 'hang';

export interface GeminiLikeOptions {
  readonly key: string;
  readonly modelId?: string;
  readonly inputTokenLimit?: number;
  readonly outputTokenLimit?: number;
  readonly modelVersion?: string;
  /** Thinking tokens reported in usageMetadata.thoughtsTokenCount (billed as output). */
  readonly thoughtsTokens?: number;
  /** Tokens reported as served from the implicit cache (usageMetadata.cachedContentTokenCount). */
  readonly cachedTokens?: number;
  /** One per generate request, in order; past the list, `ok`. */
  readonly faults?: readonly GeminiFault[];
  /** Decides a generate request's fault from its body (before `faults`; null: not this one). */
  readonly faultFor?: (body: Record<string, unknown>) => GeminiFault | null;
  /** A schema using any of these keywords is answered 400 INVALID_ARGUMENT. */
  readonly refuseSchemaKeywords?: readonly string[];
  readonly answer?: (body: Record<string, unknown>) => string;
}

export interface GeminiRequestRecord {
  readonly method: string;
  readonly path: string;
  readonly apiKey: string | null;
  readonly body: Record<string, unknown> | null;
  readonly fault: GeminiFault | null;
}

export interface GeminiLikeServer {
  readonly baseUrl: string;
  readonly requests: GeminiRequestRecord[];
  /** Generate requests whose client went away before they were answered (a hang, aborted). */
  readonly abandoned: () => number;
  close(): Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, code: number, status: string, message: string, details?: unknown[], headers: Record<string, string> = {}): void {
  sendJson(res, code, { error: { code, message, status, ...(details === undefined ? {} : { details }) } }, headers);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

function promptTextOf(body: Record<string, unknown>): string {
  const texts: string[] = [];
  JSON.stringify({ s: body['systemInstruction'], c: body['contents'] }, (k, v: unknown) => {
    if (k === 'text' && typeof v === 'string') texts.push(v);
    return v;
  });
  return texts.join('');
}

function usesKeyword(schema: unknown, keywords: readonly string[]): string | null {
  if (schema === null || typeof schema !== 'object') return null;
  for (const [k, v] of Object.entries(schema)) {
    if (keywords.includes(k)) return k;
    const inner = usesKeyword(v, keywords);
    if (inner !== null) return inner;
  }
  return null;
}

export async function startGeminiLikeServer(options: GeminiLikeOptions): Promise<GeminiLikeServer> {
  const modelId = options.modelId ?? GEMINI_TEST_MODEL;
  const modelVersion = options.modelVersion ?? `${modelId}-001`;
  const requests: GeminiRequestRecord[] = [];
  let generated = 0;
  let abandoned = 0;
  const sockets = new Set<import('node:net').Socket>();
  const answerOf = options.answer ?? (() => JSON.stringify(EMPTY_ANSWER));

  const usageOf = (prompt: number, answerText: string) => ({
    promptTokenCount: prompt,
    candidatesTokenCount: tokensOf(answerText),
    totalTokenCount: prompt + tokensOf(answerText) + (options.thoughtsTokens ?? 0),
    ...(options.thoughtsTokens ? { thoughtsTokenCount: options.thoughtsTokens } : {}),
    ...(options.cachedTokens ? { cachedContentTokenCount: Math.min(options.cachedTokens, prompt) } : {}),
  });
  const chunkOf = (text: string | null, finishReason: string | null, usage: unknown) => ({
    candidates: [{ ...(text === null ? {} : { content: { parts: [{ text }], role: 'model' } }), ...(finishReason === null ? {} : { finishReason }), index: 0 }],
    usageMetadata: usage,
    modelVersion,
    responseId: `loopback-${generated}`,
  });

  const generate = async (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>, streamed: boolean): Promise<void> => {
    const fault = options.faultFor?.(body) ?? options.faults?.[generated] ?? 'ok';
    generated += 1;
    requests[requests.length - 1] = { ...requests[requests.length - 1]!, fault };
    const config = (body['generationConfig'] ?? {}) as Record<string, unknown>;
    const refused = options.refuseSchemaKeywords === undefined ? null : usesKeyword(config['responseJsonSchema'], options.refuseSchemaKeywords);
    if (refused !== null) return sendError(res, 400, 'INVALID_ARGUMENT', `Invalid JSON payload received. generation_config.response_json_schema: the keyword "${refused}" is not supported.`);
    const prompt = tokensOf(promptTextOf(body));
    const maxOut = typeof config['maxOutputTokens'] === 'number' ? config['maxOutputTokens'] : 8_192;
    let text = answerOf(body);
    let finish = 'STOP';
    switch (fault) {
      case 'rate_limited':
        return sendError(res, 429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.', [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '37s' }], { 'retry-after': '37' });
      case 'unavailable':
        return sendError(res, 503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.');
      case 'hang':
        req.socket.once('close', () => (abandoned += 1));
        return;
      case 'prompt_blocked':
        return sendJson(res, 200, { promptFeedback: { blockReason: 'SAFETY', safetyRatings: [] }, usageMetadata: { promptTokenCount: prompt, totalTokenCount: prompt }, modelVersion });
      case 'safety':
        text = '';
        finish = 'SAFETY';
        break;
      case 'max_tokens':
        text = text.slice(0, Math.floor(text.length / 2));
        finish = 'MAX_TOKENS';
        break;
      default:
        if (tokensOf(text) > maxOut) {
          text = text.slice(0, maxOut * TOKEN_CHARS);
          finish = 'MAX_TOKENS';
        }
    }
    const usage = usageOf(prompt, text);
    if (!streamed) return sendJson(res, 200, chunkOf(text === '' ? null : text, finish, usage));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const pieces = text === '' ? [] : [text.slice(0, Math.ceil(text.length / 3)), text.slice(Math.ceil(text.length / 3), Math.ceil((2 * text.length) / 3)), text.slice(Math.ceil((2 * text.length) / 3))];
    const events = pieces.map((p, i) => chunkOf(p, i === pieces.length - 1 ? finish : null, usageOf(prompt, pieces.slice(0, i + 1).join(''))));
    if (events.length === 0) events.push(chunkOf(null, finish, usage));
    for (const [i, e] of events.entries()) {
      const line = `data: ${JSON.stringify(e)}\r\n\r\n`;
      if (fault === 'cut_stream' && i === events.length - 1) {
        res.write(line.slice(0, Math.floor(line.length / 2)));
        await new Promise((r) => setTimeout(r, 20));
        res.socket?.destroy();
        return;
      }
      res.write(line);
      await new Promise((r) => setTimeout(r, 2));
    }
    res.end();
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const text = await readBody(req);
      let body: Record<string, unknown> | null = null;
      if (text !== '') {
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          return sendError(res, 400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
        }
      }
      const apiKey = typeof req.headers['x-goog-api-key'] === 'string' ? req.headers['x-goog-api-key'] : null;
      requests.push({ method: req.method ?? '', path: `${url.pathname}${url.search}`, apiKey, body, fault: null });
      if (apiKey === null) return sendError(res, 403, 'PERMISSION_DENIED', "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.");
      if (apiKey !== options.key) return sendError(res, 400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }]);
      const m = /^\/v1beta\/models\/([^/:]+)(?::(generateContent|streamGenerateContent|countTokens))?$/.exec(url.pathname);
      if (m === null) return sendError(res, 404, 'NOT_FOUND', `${url.pathname} is not a method of this API.`);
      if (m[1] !== modelId) return sendError(res, 404, 'NOT_FOUND', `models/${m[1]} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.`);
      const method = m[2];
      if (method === undefined && req.method === 'GET') {
        return sendJson(res, 200, { name: `models/${modelId}`, version: '001', displayName: 'Loopback Flash', inputTokenLimit: options.inputTokenLimit ?? 1_048_576, outputTokenLimit: options.outputTokenLimit ?? 65_536, supportedGenerationMethods: ['generateContent', 'countTokens'] });
      }
      if (req.method !== 'POST' || body === null) return sendError(res, 400, 'INVALID_ARGUMENT', 'Expected a POST with a JSON body.');
      if (method === 'countTokens') {
        const inner = (body['generateContentRequest'] ?? body) as Record<string, unknown>;
        return sendJson(res, 200, { totalTokens: tokensOf(promptTextOf(inner)) });
      }
      if (method === 'streamGenerateContent' && url.searchParams.get('alt') !== 'sse') return sendError(res, 400, 'INVALID_ARGUMENT', 'this loopback server streams Server-Sent Events only: add ?alt=sse');
      return generate(req, res, body, method === 'streamGenerateContent');
    })().catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'INTERNAL', String(error));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    abandoned: () => abandoned,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
