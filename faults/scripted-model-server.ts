// A scripted OpenAI-compatible chat-completions server on loopback, for end-to-end tests of
// the wake loop with the real `openai` adapter (test/runtime/wake-loop-e2e.test.ts), the benches,
// and the fault harness's stalled model server (faults/model-server-main.ts).
//
// node:http on 127.0.0.1, port 0. Every chat POST is counted the moment it arrives (so a
// request the script never answers is counted too), its wake id is read from the user message
// the prompt renders ("WAKE <wake_id> at …", runtime/prompt.ts), and the script decides the
// answer: a chat completion carrying some content, any raw status/body, or no answer at all.
// The adapter's preflight (GET /v1/models, then a probe call without a wake) and its side
// requests are answered here and kept apart (`probes`, `sideRequests`), never in `requests`.
// A script that throws is answered with HTTP 599 and the error is kept in `errors`, so a test
// can tell a broken script from a behaviour of the system under test.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ModelChoice } from '../design/model-choice.js';
import { DEFAULT_MODEL_TIMEOUT_MS } from '../controller/model-config-file.js';

export interface ScriptedRequest {
  /** 0-based position among all requests this server received. */
  readonly index: number;
  readonly method: string;
  readonly url: string;
  /** The wake id the prompt names, or null when the request carried none (or no JSON). */
  readonly wakeId: string | null;
  /** The parsed request body (null when it was not JSON). */
  readonly body: Record<string, unknown> | null;
  /** messages[1].content: the rendered context bundle. */
  readonly user: string;
  readonly receivedAt: number;
}

export type ScriptedReply =
  /** 200 with a chat completion whose choices[0].message.content is `content`. */
  | { readonly kind: 'content'; readonly content: string; readonly usage?: { prompt_tokens: number; completion_tokens: number } | null }
  /** Exactly this status, content type and body. */
  | { readonly kind: 'raw'; readonly status: number; readonly body: string; readonly contentType?: string }
  /** Never answer: the connection stays open until the client gives up or the server closes. */
  | { readonly kind: 'hang' };

export type Script = (request: ScriptedRequest) => ScriptedReply | Promise<ScriptedReply>;

export interface ScriptedModelServer {
  /** e.g. http://127.0.0.1:41234/v1 */
  readonly baseUrl: string;
  readonly requests: ScriptedRequest[];
  /** Errors thrown by the script (answered with HTTP 599). */
  readonly errors: string[];
  /** Calls of no wake: the preflight's probe calls and the check's speed call (answered with EMPTY_ANSWER, not in `requests`). */
  readonly probes: ScriptedRequest[];
  /** Side requests answered 404 (the adapter's tokenizer and props look-ups). */
  readonly sideRequests: string[];
  /** The most chat requests (probes included) this server held open at once: 1 when calls never overlapped. */
  readonly maxOpenChats: () => number;
  /** How many requests named this wake. */
  requestsFor(wakeId: string): number;
  /** The `openai` model choice pointing at this server; `timeoutMs`: how long a call may take (default the CLI's). */
  modelChoice(timeoutMs?: number): ModelChoice;
  close(): Promise<void>;
}

export const SCRIPTED_MODEL_ID = 'scripted-e2e-model';
export const SCRIPTED_FINGERPRINT = 'fp_scripted_e2e';

/** The smallest answer ds-model-output/2 accepts: nothing done, nothing claimed. */
export const EMPTY_ANSWER = {
  protocol: 'ds-model-output/2',
  focus: { attention_target: null, waiting_condition: null },
  actions: [],
  claims: [],
  plan_revision: null,
  checkpoint: { current_goal_id: null, goal_status: null, attention_target: null, waiting_condition: null, next_action: null, evidence_seqs: [] },
} as const;

/**
 * The smallest answer that counts toward usable data under the default pre-registration's
 * substantive rule (model_calls.usable_data.substantive: a goal and its status): EMPTY_ANSWER
 * with the checkpoint saying which goal and where it stands.
 */
export const SUBSTANTIVE_ANSWER = {
  ...EMPTY_ANSWER,
  checkpoint: { ...EMPTY_ANSWER.checkpoint, current_goal_id: 'goal-1', goal_status: 'active' },
} as const;

/** The wake id in a rendered user message (runtime/prompt.ts renderUser's first line). */
export function wakeIdOf(user: string): string | null {
  return /^WAKE (\S+) at /m.exec(user)?.[1] ?? null;
}

// The events a prompt shows, read back by the renderer's own reader (runtime/prompt.ts), so a script can only cite what a model could.
export { promptEvents, type PromptEvent } from '../runtime/prompt.js';

/**
 * The speed this server claims in llama.cpp's `timings` (its answers are instant): what the
 * controller's check before hour 0 times the model by (controller/model-check.ts), fast enough that
 * no call timeout a test sets is predicted to be too short.
 */
export const SCRIPTED_SPEED = { promptTokensPerS: 1_000_000, generatedTokensPerS: 100_000 } as const;

/** llama.cpp's `timings` for a call of `usage` at SCRIPTED_SPEED: what the model check times a speed call by. */
export function scriptedTimingsOf(usage: { prompt_tokens: number; completion_tokens: number }): Record<string, number> {
  return { prompt_n: usage.prompt_tokens, prompt_ms: (usage.prompt_tokens / SCRIPTED_SPEED.promptTokensPerS) * 1000, predicted_n: usage.completion_tokens, predicted_ms: (usage.completion_tokens / SCRIPTED_SPEED.generatedTokensPerS) * 1000 };
}

export function chatCompletion(content: string, usage: { prompt_tokens: number; completion_tokens: number } | null = { prompt_tokens: 100, completion_tokens: 20 }): string {
  return JSON.stringify({
    id: 'chatcmpl-scripted',
    object: 'chat.completion',
    created: 1_767_225_600,
    model: SCRIPTED_MODEL_ID,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    ...(usage === null ? {} : { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens }, timings: scriptedTimingsOf(usage) }),
    system_fingerprint: SCRIPTED_FINGERPRINT,
  });
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body, 'utf8') });
  res.end(body);
}

/**
 * `port`: listen on this port instead of a free one (a test that stops a server and starts it again where its clients point).
 * `build`: answer GET /props with this `build_info` (and no context size), as llama.cpp does; without it /props is not found.
 */
export async function startScriptedModelServer(script: Script, options: { readonly port?: number; readonly build?: string } = {}): Promise<ScriptedModelServer> {
  const requests: ScriptedRequest[] = [];
  const probes: ScriptedRequest[] = [];
  const sideRequests: string[] = [];
  const errors: string[] = [];
  let openChats = 0;
  let maxOpen = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = (req.url ?? '').split('?')[0];
    // The adapter's preflight asks which models are served; its other side requests (GET /props,
    // POST /tokenize) find nothing here, like on a bare OpenAI-compatible server. None is counted.
    if (req.method === 'GET' && url === '/v1/models') {
      req.resume();
      return send(res, 200, 'application/json', JSON.stringify({ object: 'list', data: [{ id: SCRIPTED_MODEL_ID, object: 'model' }] }));
    }
    if (req.method === 'GET' && url === '/props' && options.build !== undefined) {
      req.resume();
      sideRequests.push(`${req.method} ${url}`);
      return send(res, 200, 'application/json', JSON.stringify({ build_info: options.build }));
    }
    if (url !== '/v1/chat/completions') {
      req.resume();
      sideRequests.push(`${req.method ?? ''} ${url}`);
      return send(res, 404, 'application/json', '{"error":"not found"}');
    }
    const index = requests.length;
    const receivedAt = Date.now();
    openChats += 1;
    maxOpen = Math.max(maxOpen, openChats);
    res.on('close', () => {
      openChats -= 1;
    });
    // A placeholder counted on arrival; replaced once the body is in.
    requests.push({ index, method: req.method ?? '', url: req.url ?? '', wakeId: null, body: null, user: '', receivedAt });
    res.on('error', () => undefined);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> | null = null;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        body = null;
      }
      const messages = Array.isArray(body?.['messages']) ? (body['messages'] as { content?: unknown }[]) : [];
      const user = typeof messages[1]?.content === 'string' ? messages[1].content : '';
      const request: ScriptedRequest = { index, method: req.method ?? '', url: req.url ?? '', wakeId: wakeIdOf(user), body, user, receivedAt };
      if (request.wakeId === null && body !== null && !user.includes('WAKE ')) {
        // A call of no wake — the preflight's probe, or the check's speed call before hour 0: answered with the smallest valid answer, not counted among the wakes' requests.
        requests.splice(index, 1);
        probes.push(request);
        return send(res, 200, 'application/json', chatCompletion(JSON.stringify(EMPTY_ANSWER)));
      }
      requests[index] = request;
      Promise.resolve()
        .then(() => script(request))
        .then(
          (reply) => {
            switch (reply.kind) {
              case 'content':
                return send(res, 200, 'application/json', chatCompletion(reply.content, reply.usage === undefined ? undefined : reply.usage));
              case 'raw':
                return send(res, reply.status, reply.contentType ?? 'application/json', reply.body);
              case 'hang':
                return undefined;
            }
          },
          (error: unknown) => {
            errors.push(`request ${index} (${request.wakeId ?? 'no wake id'}): ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
            send(res, 599, 'text/plain', 'the test script failed');
          },
        );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  return {
    baseUrl,
    requests,
    errors,
    requestsFor: (wakeId) => requests.filter((r) => r.wakeId === wakeId).length,
    modelChoice: (timeoutMs = DEFAULT_MODEL_TIMEOUT_MS) => ({
      adapter: 'openai',
      base_url: baseUrl,
      model_id: SCRIPTED_MODEL_ID,
      api_key_env: null,
      params: { temperature: 0, top_p: null, seed: 7, max_tokens: null },
      // vLLM's form (OpenAI's without strict): its documented subset holds the answer schema, so a refuse pre-registration starts (issue 36); this server enforces no schema either way.
      dialect: 'vllm',
      stream: false,
      context_size: null,
      timeout_ms: timeoutMs,
      config_file: null,
      config_sha256: null,
    }),
    probes,
    sideRequests,
    maxOpenChats: () => maxOpen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
