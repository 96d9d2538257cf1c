// A loopback server that speaks Anthropic's Messages API as its documentation describes it
// (issue 36 item 5) — no hosted API is reachable from here, so this is what the anthropic adapter
// is checked against. Real HTTP (node:http, 127.0.0.1, port 0). Written from:
//   Messages:        https://platform.claude.com/docs/en/api/messages (POST /v1/messages)
//   Streaming:       https://platform.claude.com/docs/en/build-with-claude/streaming (typed SSE events)
//   Errors:          https://platform.claude.com/docs/en/api/errors ({type: "error", error: {type, message}};
//                    400 invalid_request_error, 401 authentication_error, 404 not_found_error,
//                    429 rate_limit_error with retry-after, 529 overloaded_error; an `event: error` mid-stream)
//   Models:          https://platform.claude.com/docs/en/api/models (GET /v1/models, GET /v1/models/{model_id})
//   Token counting:  POST /v1/messages/count_tokens → {input_tokens}
//   Structured outputs: https://platform.claude.com/docs/en/build-with-claude/structured-outputs
//                    (output_config.format json_schema; strict tool use; the JSON Schema subset:
//                    no numeric bounds, no string lengths, additionalProperties false on objects)
//
// What it does: checks x-api-key (401) and anthropic-version (400); refuses unknown top-level
// fields as the API does (a `seed` is "Extra inputs are not permitted"); answers in the dialect
// the request asks — output_config → a text block holding the JSON answer (stop_reason end_turn),
// a forced tool → a tool_use block whose input is the answer (input_json_delta when streamed,
// stop_reason tool_use) — and prose when neither is asked. Usage: input_tokens, output_tokens and
// the cache's two. The adapter sends no cache_control, so the real API would report 0 for both;
// `simulateSystemCache` instead serves a system prompt seen before from a simulated cache (read)
// and writes a new one (creation), to check the record's arithmetic with figures that are not 0.
// Tokens are counted as ceil(chars / TOKEN_CHARS) — not the adapter's ceil(chars / 4) estimate, so a
// count from count_tokens can be told from an estimate.
//
// Scripted faults, taken one per POST /v1/messages in order: 429 rate_limit_error with
// retry-after, 529 overloaded_error, a max_tokens cut-off, stop_reason refusal, a stream cut
// mid-event, an `event: error` (overloaded_error) mid-stream, a hang. The check of the schema
// subset (a 400 "For 'integer' type, property 'minimum' is not supported") is switchable
// (`schemaSubsetCheck`): the runtime sends the full answer schema until the dialect-subset branch
// (issue 36 item 2) strips or refuses keywords before hour 0, so an end-to-end run needs it off.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EMPTY_ANSWER } from '../../faults/scripted-model-server.js';

export const TOKEN_CHARS = 3;
export const ANTHROPIC_LIKE_VERSION = '2023-06-01';
const PROSE = 'Here is what I think about the situation, in my own words. ';
/** The Messages API's top-level request fields (the documented ones this server knows); any other is refused. */
const KNOWN_FIELDS = new Set(['model', 'messages', 'system', 'max_tokens', 'temperature', 'top_p', 'top_k', 'stream', 'stop_sequences', 'metadata', 'tools', 'tool_choice', 'output_config', 'thinking', 'service_tier']);

export type AnthropicFault = 'rate_limit' | 'overloaded' | 'max_tokens' | 'refusal' | 'cut_stream' | 'error_event' | 'hang';

export interface AnthropicLikeOptions {
  readonly apiKey: string;
  readonly models?: readonly string[];
  /** The Models API's max_input_tokens for each model; null: not reported. */
  readonly maxInputTokens?: number | null;
  readonly schemaSubsetCheck?: boolean;
  readonly simulateSystemCache?: boolean;
  /** The answer object of a constrained answer (default: the smallest valid ds-model-output/2 answer). */
  readonly answer?: (body: Record<string, unknown>, headers: IncomingMessage['headers']) => unknown;
  /** 404 for count_tokens (a proxy without it). */
  readonly noCountTokens?: boolean;
}

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Record<string, unknown> | null;
  /** For POST /v1/messages: the fault it met (null: answered normally). */
  readonly fault: AnthropicFault | null;
}

export interface AnthropicLikeServer {
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  /** POST /v1/messages requests only. */
  messages(): RecordedRequest[];
  /** The API's message for every request it refused (a 400 for a schema outside the subset, a wrong model, …), in order. */
  refusedSchemas(): string[];
  /** Faults for the next POST /v1/messages requests, one each, in order. */
  script(...faults: AnthropicFault[]): void;
  setSchemaSubsetCheck(on: boolean): void;
  close(): Promise<void>;
}

export function tokensOf(text: string): number {
  return Math.ceil(text.length / TOKEN_CHARS);
}

function apiError(res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_loopback', ...headers });
  res.end(JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_loopback' }));
}

function json(res: ServerResponse, value: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_loopback' });
  res.end(JSON.stringify(value));
}

/** The first keyword of `schema` outside the documented subset, as the API's message words it; null when all are inside. */
export function subsetViolation(schema: unknown): string | null {
  if (schema === null || typeof schema !== 'object') return null;
  if (Array.isArray(schema)) {
    for (const s of schema) {
      const v = subsetViolation(s);
      if (v !== null) return v;
    }
    return null;
  }
  const s = schema as Record<string, unknown>;
  const types = Array.isArray(s['type']) ? (s['type'] as unknown[]) : [s['type']];
  const unsupported: Record<string, readonly string[]> = { integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'], number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'], string: ['minLength', 'maxLength'], array: ['maxItems', 'uniqueItems'] };
  for (const t of types) {
    for (const keyword of typeof t === 'string' ? (unsupported[t] ?? []) : []) if (keyword in s) return `For '${t}' type, property '${keyword}' is not supported`;
    if (t === 'array' && typeof s['minItems'] === 'number' && s['minItems'] > 1) return `For 'array' type, 'minItems' values other than 0 or 1 are not supported`;
    if (t === 'object' && s['additionalProperties'] !== false) return `For 'object' type, 'additionalProperties' must be explicitly set to false`;
  }
  for (const [k, v] of Object.entries(s)) {
    if (k === 'const' || k === 'enum' || k === 'default') continue;
    const inner = subsetViolation(v);
    if (inner !== null) return inner;
  }
  return null;
}

type Dialect = { readonly kind: 'json'; readonly schema: unknown } | { readonly kind: 'tool'; readonly name: string; readonly schema: unknown } | { readonly kind: 'none' };

function dialectOf(body: Record<string, unknown>): Dialect {
  const format = (body['output_config'] as { format?: { type?: unknown; schema?: unknown } } | undefined)?.format;
  if (format?.type === 'json_schema') return { kind: 'json', schema: format.schema };
  const choice = body['tool_choice'] as { type?: unknown; name?: unknown } | undefined;
  const tools = Array.isArray(body['tools']) ? (body['tools'] as { name?: unknown; input_schema?: unknown }[]) : [];
  if (choice?.type === 'tool' && typeof choice.name === 'string') {
    const tool = tools.find((t) => t.name === choice.name);
    if (tool !== undefined) return { kind: 'tool', name: choice.name, schema: tool.input_schema };
  }
  return { kind: 'none' };
}

/** A request the API would refuse (400), as its message; null when it would take it. */
function invalidRequest(body: Record<string, unknown>, models: readonly string[], subsetCheck: boolean): { status: number; type: string; message: string } | null {
  const extra = Object.keys(body).filter((k) => !KNOWN_FIELDS.has(k));
  if (extra.length > 0) return { status: 400, type: 'invalid_request_error', message: `${extra[0]}: Extra inputs are not permitted` };
  if (typeof body['model'] !== 'string' || !models.includes(body['model'])) return { status: 404, type: 'not_found_error', message: `model: ${String(body['model'])}` };
  if (!Number.isInteger(body['max_tokens']) || (body['max_tokens'] as number) < 1) return { status: 400, type: 'invalid_request_error', message: 'max_tokens: Field required' };
  if (typeof body['temperature'] === 'number' && (body['temperature'] < 0 || body['temperature'] > 1)) return { status: 400, type: 'invalid_request_error', message: 'temperature: range: 0..1' };
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0 || (messages[0] as { role?: unknown }).role !== 'user') return { status: 400, type: 'invalid_request_error', message: 'messages: the first message must use the "user" role' };
  const dialect = dialectOf(body);
  if (subsetCheck && dialect.kind !== 'none') {
    const violation = subsetViolation(dialect.schema);
    if (violation !== null) return { status: 400, type: 'invalid_request_error', message: `${dialect.kind === 'json' ? 'output_config.format.schema' : 'tools.0.custom.input_schema'}: ${violation}` };
  }
  return null;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((b) => (typeof (b as { text?: unknown }).text === 'string' ? (b as { text: string }).text : '')).join('');
  return '';
}

export async function startAnthropicLikeServer(options: AnthropicLikeOptions): Promise<AnthropicLikeServer> {
  const models = options.models ?? ['claude-loopback-1'];
  const requests: RecordedRequest[] = [];
  const faults: AnthropicFault[] = [];
  const refused: string[] = [];
  let subsetCheck = options.schemaSubsetCheck ?? true;
  const cachedSystems = new Set<string>();
  const open = new Set<ServerResponse>();

  const promptTokens = (body: Record<string, unknown>): { system: number; rest: number } => {
    const system = typeof body['system'] === 'string' ? body['system'] : textOf(body['system']);
    const user = (body['messages'] as { content?: unknown }[]).map((m) => textOf(m.content)).join('\n');
    const d = dialectOf(body);
    const schemaTokens = d.kind === 'none' ? 0 : tokensOf(JSON.stringify(d.schema)) + 16;
    return { system: tokensOf(system), rest: tokensOf(user) + schemaTokens + 4 };
  };

  const messages = (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>, record: (fault: AnthropicFault | null) => void): void => {
    const invalid = invalidRequest(body, models, subsetCheck);
    if (invalid !== null) {
      record(null);
      refused.push(invalid.message);
      return apiError(res, invalid.status, invalid.type, invalid.message);
    }
    const fault = faults.shift() ?? null;
    record(fault);
    if (fault === 'rate_limit') return apiError(res, 429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', { 'retry-after': '7' });
    if (fault === 'overloaded') return apiError(res, 529, 'overloaded_error', 'Overloaded');
    if (fault === 'hang') return void open.add(res);

    const dialect = dialectOf(body);
    const system = typeof body['system'] === 'string' ? body['system'] : '';
    const counted = promptTokens(body);
    const cacheHit = options.simulateSystemCache === true && cachedSystems.has(system);
    if (options.simulateSystemCache === true) cachedSystems.add(system);
    const cache = options.simulateSystemCache === true ? (cacheHit ? { read: counted.system, write: 0 } : { read: 0, write: counted.system }) : { read: 0, write: 0 };
    const inputTokens = counted.system + counted.rest - cache.read - cache.write;
    let answerText = dialect.kind === 'none' ? PROSE.repeat(4) : JSON.stringify(options.answer?.(body, req.headers) ?? EMPTY_ANSWER);
    let stopReason = dialect.kind === 'tool' ? 'tool_use' : 'end_turn';
    if (fault === 'max_tokens') {
      answerText = answerText.slice(0, Math.max(1, Math.floor(answerText.length / 2)));
      stopReason = 'max_tokens';
    } else if (fault === 'refusal') {
      answerText = dialect.kind === 'tool' ? '' : 'I';
      stopReason = 'refusal';
    }
    const outputTokens = Math.max(1, tokensOf(answerText));
    const usage = { input_tokens: inputTokens, cache_creation_input_tokens: cache.write, cache_read_input_tokens: cache.read, output_tokens: outputTokens };
    const model = body['model'] as string;
    const id = `msg_loopback_${requests.length}`;
    const block = dialect.kind === 'tool' ? { type: 'tool_use', id: `toolu_${requests.length}`, name: dialect.name, input: answerText === '' ? {} : (JSON.parse(answerText) as unknown) } : { type: 'text', text: answerText };

    if (body['stream'] !== true) {
      // A cut-off tool input is not JSON: the non-streamed API would not return it whole either; the text form keeps the cut.
      const content = fault === 'max_tokens' && dialect.kind === 'tool' ? [] : [block];
      return json(res, { id, type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req_loopback' });
    const send = (type: string, data: Record<string, unknown>): void => void res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    send('message_start', { message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
    send('ping', {});
    send('content_block_start', { index: 0, content_block: dialect.kind === 'tool' ? { type: 'tool_use', id: `toolu_${requests.length}`, name: dialect.name, input: {} } : { type: 'text', text: '' } });
    const pieces = answerText.match(/[\s\S]{1,24}/g) ?? [];
    const half = Math.ceil(pieces.length / 2);
    pieces.forEach((piece, i) => {
      if ((fault === 'cut_stream' || fault === 'error_event') && i >= half) return;
      send('content_block_delta', { index: 0, delta: dialect.kind === 'tool' ? { type: 'input_json_delta', partial_json: piece } : { type: 'text_delta', text: piece } });
    });
    if (fault === 'cut_stream') {
      // Half an event, then the connection goes: a stream cut mid-event.
      // Destroyed once what was written has left (else the client could see a reset before any response: no answer, not a cut stream).
      res.write('event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_', () => setTimeout(() => res.socket?.destroy(), 50));
      return;
    }
    if (fault === 'error_event') {
      res.write(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`);
      return void res.end();
    }
    send('content_block_stop', { index: 0 });
    send('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } });
    send('message_stop', {});
    res.end();
  };

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string): void => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    let body: Record<string, unknown> | null = null;
    if (raw !== '') {
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        requests.push({ method: req.method ?? '', url: url.pathname, headers: req.headers, body: null, fault: null });
        return apiError(res, 400, 'invalid_request_error', 'The request body is not valid JSON.');
      }
    }
    let recorded = false;
    const record = (fault: AnthropicFault | null): void => {
      if (!recorded) requests.push({ method: req.method ?? '', url: url.pathname + url.search, headers: req.headers, body, fault });
      recorded = true;
    };
    if (req.headers['x-api-key'] !== options.apiKey) {
      record(null);
      return apiError(res, 401, 'authentication_error', 'invalid x-api-key');
    }
    if (req.headers['anthropic-version'] === undefined) {
      record(null);
      return apiError(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    }
    const modelInfo = (m: string) => ({ type: 'model', id: m, display_name: `Loopback ${m}`, created_at: '2026-01-01T00:00:00Z', ...(options.maxInputTokens === undefined || options.maxInputTokens === null ? {} : { max_input_tokens: options.maxInputTokens }) });
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      record(null);
      return json(res, { data: models.map(modelInfo), has_more: false, first_id: models[0] ?? null, last_id: models.at(-1) ?? null });
    }
    if (req.method === 'GET' && url.pathname.startsWith('/v1/models/')) {
      record(null);
      const id = decodeURIComponent(url.pathname.slice('/v1/models/'.length));
      return models.includes(id) ? json(res, modelInfo(id)) : apiError(res, 404, 'not_found_error', `model: ${id}`);
    }
    if (req.method === 'POST' && url.pathname === '/v1/messages/count_tokens' && body !== null) {
      record(null);
      if (options.noCountTokens === true) return apiError(res, 404, 'not_found_error', 'Not Found');
      const { max_tokens: _m, ...rest } = body;
      const invalid = invalidRequest({ ...rest, max_tokens: 1 }, models, subsetCheck);
      if (invalid !== null) return apiError(res, invalid.status, invalid.type, invalid.message);
      const counted = promptTokens(body);
      return json(res, { input_tokens: counted.system + counted.rest });
    }
    if (req.method === 'POST' && url.pathname === '/v1/messages' && body !== null) return messages(req, res, body, record);
    record(null);
    apiError(res, 404, 'not_found_error', 'Not Found');
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
    res.on('close', () => open.delete(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    messages: () => requests.filter((r) => r.method === 'POST' && r.url === '/v1/messages'),
    script: (...more) => void faults.push(...more),
    setSchemaSubsetCheck: (on) => void (subsetCheck = on),
    refusedSchemas: () => [...refused],
    close: async () => {
      for (const res of open) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
