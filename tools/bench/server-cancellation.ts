// What a model server does with an abandoned request (docs/model-protocol.md "Cancellation"):
// the measurement behind that section's figures, to repeat on another build or server.
//
//   node --import tsx tools/bench/server-cancellation.ts --base-url http://127.0.0.1:PORT/v1 --model stories260K
//
// Against a running OpenAI-compatible server with one slot (llama-server -np 1), each request
// streamed on a connection of its own:
//   control: A (a large prompt), 600 ms later C (a small one); A's connection closed 2 s after A
//            was sent; how long after the close C answers (A freed at its next batch, or not);
//   queued:  the same with B (as large as A) sent between them and closed with A while it waits
//            for the slot; C answering much later than in the control means B ran for nobody;
//   prefix:  one prompt sent twice; the server's own `timings.prompt_n` of each (a cached prefix
//            is not evaluated again);
//   adapter: the real `openai` adapter (one request at a time through its gate): a call that
//            times out at 2 s in a large prompt, then a small call at once; how long the second
//            took (it waits for the server to free the slot of the first).
// Read the server's log beside it (llama.cpp: `cancel task`, `stop processing: n_past`,
// `prompt eval time`). Nothing here is part of a study; it prints figures and judges nothing.
import http from 'node:http';
import { parseArgs } from 'node:util';
import { reportFailure } from '../../cli/command-outcome.js';
import { specialisedAnswerSchema } from '../../runtime/answer-schema.js';
import { OpenAiAdapter } from '../../runtime/model-adapters/openai-adapter.js';
import { log, positiveInt, UsageError } from './bench-util.js';

const USAGE = 'usage: node --import tsx tools/bench/server-cancellation.ts --base-url URL --model ID [--repeats N]';
const STORY = 'Once upon a time there was a little girl named Lily who loved to play in the park with her dog. ';
/** One request's bound: a server slower than this is not one to measure cancellation on. */
const REQUEST_BOUND_MS = 300_000;

interface Ended {
  readonly name: string;
  readonly endedMs: number;
  readonly left: boolean;
  readonly promptN: number | null;
}

interface Sent {
  readonly ended: Promise<Ended>;
  leave(): void;
}

function chat(baseUrl: URL, model: string, t0: number, name: string, content: string, maxTokens: number): Sent {
  const body = JSON.stringify({ model, messages: [{ role: 'user', content }], max_tokens: maxTokens, stream: true, temperature: 0 });
  const since = (): number => Math.round(performance.now() - t0);
  let left = false;
  const request = http.request(new URL(`${baseUrl.pathname.replace(/\/+$/, '')}/chat/completions`, baseUrl), { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } });
  const ended = new Promise<Ended>((resolve) => {
    const bound = setTimeout(() => request.destroy(new Error(`no answer within ${REQUEST_BOUND_MS} ms`)), REQUEST_BOUND_MS);
    const done = (promptN: number | null): void => {
      clearTimeout(bound);
      resolve({ name, endedMs: since(), left, promptN });
    };
    request.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text = (text + chunk).slice(-4_096)));
      res.on('end', () => done(Number(/"prompt_n":(\d+)/.exec(text)?.[1] ?? NaN) || null));
      res.on('error', () => done(null));
    });
    request.on('error', () => done(null));
  });
  request.end(body);
  log(`${since()} ms: sent ${name} (${content.length} chars)`);
  return {
    ended,
    leave: () => {
      left = true;
      log(`${since()} ms: closed ${name}'s connection`);
      request.destroy();
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function abandonRun(baseUrl: URL, model: string, repeats: number, withQueued: boolean): Promise<void> {
  const t0 = performance.now();
  const tag = `${withQueued ? 'queued' : 'control'}-${Date.now()}`;
  const a = chat(baseUrl, model, t0, 'A', `A-${tag} ${STORY.repeat(repeats)}`, 64);
  await sleep(300);
  const b = withQueued ? chat(baseUrl, model, t0, 'B', `B-${tag} ${STORY.repeat(repeats)}`, 64) : null;
  await sleep(300);
  const c = chat(baseUrl, model, t0, 'C', `C-${tag} ${STORY.repeat(2)}`, 8);
  await sleep(1_400);
  const closedMs = Math.round(performance.now() - t0);
  a.leave();
  b?.leave();
  const ended = await Promise.all([a.ended, ...(b === null ? [] : [b.ended]), c.ended]);
  const cEnd = ended[ended.length - 1]!;
  log(`${withQueued ? 'queued' : 'control'}: C answered ${cEnd.endedMs - closedMs} ms after ${withQueued ? 'A and B were' : 'A was'} closed (C's prompt_n ${cEnd.promptN ?? 'not reported'})`);
}

async function prefixRun(baseUrl: URL, model: string, repeats: number): Promise<void> {
  const t0 = performance.now();
  const prompt = `prefix-${Date.now()} ${STORY.repeat(repeats)}`;
  const first = await chat(baseUrl, model, t0, 'first', prompt, 8).ended;
  const again = await chat(baseUrl, model, t0, 'same prompt again', prompt, 8).ended;
  log(`prefix: prompt_n ${first.promptN ?? 'not reported'} the first time (${first.endedMs} ms), ${again.promptN ?? 'not reported'} the second (${again.endedMs - first.endedMs} ms)`);
}

async function adapterRun(baseUrl: URL, model: string, repeats: number): Promise<void> {
  const adapter = new OpenAiAdapter({ baseUrl: baseUrl.href, modelId: model, apiKey: null, params: { temperature: 0, top_p: null, seed: 1, max_tokens: 64 }, dialect: 'llamacpp', retry: { max_attempts: 3, backoff_ms: [100, 200] }, contextSize: null });
  const schema = specialisedAnswerSchema('ds-model-output/2', [1]);
  // The bundle is not read by this adapter (it sends system and user as they are).
  const request = (user: string) => ({ wake_id: 'wake-0001', call_number: 1, bundle: undefined as never, system: 'You are a subject in a study.', user, max_tokens: 64, answer_schema: schema });
  const t0 = performance.now();
  const first = await adapter.call(request(`adapter-${Date.now()} ${STORY.repeat(repeats)}`), 2_000);
  const firstMs = Math.round(performance.now() - t0);
  const second = await adapter.call(request(`next-${Date.now()} ${STORY.repeat(2)}`), REQUEST_BOUND_MS);
  const secondMs = Math.round(performance.now() - t0) - firstMs;
  const said = (o: typeof first): string => (o.kind === 'failed' ? `failed ${o.failure}` : 'answered');
  log(`adapter: the first call ${said(first)} after ${firstMs} ms; the next call ${said(second)} ${secondMs} ms later`);
}

async function main(argv: string[]): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: { 'base-url': { type: 'string' }, model: { type: 'string' }, repeats: { type: 'string' } }, strict: true }));
  } catch (error) {
    throw new UsageError(`${error instanceof Error ? error.message : String(error)}`);
  }
  const base = values['base-url'];
  const model = values.model;
  if (base === undefined || model === undefined) throw new UsageError(`--base-url and --model are required`);
  let baseUrl: URL;
  try {
    baseUrl = new URL(base);
  } catch {
    throw new UsageError(`--base-url ${JSON.stringify(base)} is not a URL (e.g. http://127.0.0.1:8080/v1)`);
  }
  if (baseUrl.protocol !== 'http:') throw new UsageError(`--base-url must be http:// (a local server), got ${baseUrl.protocol}`);
  // 250 repeats ≈ 7,500 stories260K tokens: several prompt batches of 2,048 on a CPU.
  const repeats = positiveInt('--repeats', values.repeats, 250, 2_000);
  await abandonRun(baseUrl, model, repeats, false);
  await abandonRun(baseUrl, model, repeats, true);
  await prefixRun(baseUrl, model, Math.ceil(repeats / 2));
  await adapterRun(baseUrl, model, repeats);
}

// A bad flag is a UsageError: printed with the usage, exit 2 (docs/errors.md), as `npm run bench` does.
main(process.argv.slice(2)).then(
  () => undefined,
  (error: unknown) => {
    process.exitCode = reportFailure('server-cancellation', USAGE, error, false);
  },
);
