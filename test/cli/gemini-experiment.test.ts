// `npm run experiment -- --group C --model gemini …` through the real CLI (issue 36 item 5): the
// controller, the writer and the runtime as processes, the gemini adapter calling a Gemini-like
// server on loopback (test/support/gemini-like-server.ts) — accepted answers, usage and the
// provider's finish reason on every call, verify OK, and the key in no file of the run folder.
//
// The schema subset (issue 36 item 2): Gemini documents that responseJsonSchema keywords outside
// its subset are IGNORED, not refused (runtime/schema-subsets/gemini.ts), so the loopback server's
// 400 for such keywords stays off — Google would not send it. The run's schema is outside that
// subset, so the run uses a pre-registration with schema_subset "strip", and the test checks that
// every schema the server received is inside it (the constraint sent is the one recorded as
// weaker, never silently ignored). Without "strip" the start is refused before hour 0, before any
// request reaches the server.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { runCli } from '../support/cli.js';
import { controllerSetupWith, REPO } from '../support/controller-run.js';
import { SUBSTANTIVE_ANSWER } from '../../faults/scripted-model-server.js';
import { GEMINI_TEST_MODEL, startGeminiLikeServer, type GeminiLikeServer } from '../support/gemini-like-server.js';
import { ofType, storedEvents } from '../support/stored-events.js';
import { checkSubset } from '../../runtime/schema-subsets/subset-check.js';
import { GEMINI_JSON_SCHEMA_SUBSET } from '../../runtime/schema-subsets/gemini.js';

const KEY = 'AIza-cli-SECRET-0d9e8f7a6b5c4d3e';
const KEY_ENV = 'DS_TEST_GEMINI_API_KEY';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

function npmExperiment(args: readonly string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn('npm', ['run', 'experiment', '--', ...args], { cwd: REPO, env: { ...process.env, [KEY_ENV]: KEY }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

let server: GeminiLikeServer | null = null;
let untouched: GeminiLikeServer | null = null;
afterAll(async () => {
  await server?.close();
  await untouched?.close();
});

/** Every responseJsonSchema a generate request carried. */
function sentSchemas(s: GeminiLikeServer): unknown[] {
  return s.requests.filter((r) => /:(stream)?[gG]enerateContent/.test(r.path)).map((r) => ((r.body as Record<string, unknown>)['generationConfig'] as Record<string, unknown>)['responseJsonSchema']);
}

describe('npm run experiment --model gemini', () => {
  test('group C against the loopback Gemini API: accepted answers, usage on every call, verify OK, the key in no file', async () => {
    // A short schedule (a wake every 12 simulated hours) keeps the run to a few wakes.
    const setup = controllerSetupWith('prereg-gemini', (p) => {
      p['wake_schedule']!['base_period_sim_minutes'] = 720;
      // The answer schema is outside Gemini's subset (string lengths, pattern, const): stripped as pre-registered.
      p['model_calls']!['schema_subset'] = 'strip';
      (p['model_calls']!['transport_retry'] as Record<string, unknown>) = { max_attempts: 3, backoff_ms: [50, 100] };
    });
    let limited = 0;
    const userOf = (body: Record<string, unknown>): string => JSON.stringify(body['contents']);
    server = await startGeminiLikeServer({
      key: KEY,
      thoughtsTokens: 3,
      // wake-0002's call is answered 429 once: the retry is the study's, recorded as an attempt.
      faultFor: (body) => (limited === 0 && userOf(body).includes('wake-0002') ? (limited++, 'rate_limited') : null),
      answer: () => JSON.stringify(SUBSTANTIVE_ANSWER),
    });
    const runDir = path.join(setup.dir, 'runs', 'gemini');
    const run = await npmExperiment(['--group', 'C', '--model', 'gemini', '--model-id', GEMINI_TEST_MODEL, '--api-key-env', KEY_ENV, '--base-url', server.baseUrl, '--count-tokens', '--out', runDir, '--key-dir', setup.keyDir, '--prereg', setup.preregFile, '--same-uid', 'gemini test']);
    expect(run.code, run.output.slice(-4000)).toBe(0);
    expect(run.output).not.toContain(KEY);

    const events = storedEvents(runDir);
    const answered = ofType(events, 'ModelOutputEvent.ModelAnswered');
    expect(answered.length).toBeGreaterThan(0);
    expect(ofType(events, 'ModelOutputEvent.ModelCallFailed')).toEqual([]);
    for (const e of answered) {
      expect(e.payload).toMatchObject({ adapter: 'gemini', model_id: GEMINI_TEST_MODEL, finish_reason: 'stop', provider_finish_reason: 'STOP', response_model: `${GEMINI_TEST_MODEL}-001`, usage_source: 'server', prompt_count_source: 'tokenizer', cache_read_tokens: 0 });
      const usage = e.payload['usage'] as { prompt_tokens: number; completion_tokens: number };
      expect(usage.prompt_tokens).toBeGreaterThan(0);
      expect(usage.completion_tokens).toBeGreaterThan(3);
    }
    // The 429 was an attempt without an answer, recorded before the retry that answered.
    const attempts = ofType(events, 'ModelOutputEvent.ModelCallAttemptFailed');
    expect(attempts.map((e) => e.payload['kind'])).toEqual(['http_429']);
    expect(String(attempts[0]!.payload['detail'])).toContain('not followed: the backoff is pre-registered');

    const verified = await runCli('verify', [runDir]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    for (const file of filesUnder(runDir)) expect(readFileSync(file).includes(KEY), file).toBe(false);
    // Every request carried the key in its header, and only there.
    expect(server.requests.every((r) => r.apiKey === KEY)).toBe(true);
    // What was sent keeps to Gemini's documented subset: nothing Google would silently ignore.
    const schemas = sentSchemas(server);
    expect(schemas.length).toBeGreaterThan(1);
    for (const schema of schemas) expect(checkSubset(schema as Record<string, unknown>, GEMINI_JSON_SCHEMA_SUBSET)).toEqual([]);
  }, 180_000);

  test('without schema_subset "strip" the start is refused before hour 0, naming the keywords and the remedy; no request reaches the server and no folder is left', async () => {
    const setup = controllerSetupWith('prereg-gemini-refuse', (p) => void (p['wake_schedule']!['base_period_sim_minutes'] = 720));
    untouched = await startGeminiLikeServer({ key: KEY, answer: () => JSON.stringify(SUBSTANTIVE_ANSWER) });
    const runDir = path.join(setup.dir, 'runs', 'gemini-refused');
    const run = await npmExperiment(['--group', 'C', '--model', 'gemini', '--model-id', GEMINI_TEST_MODEL, '--api-key-env', KEY_ENV, '--base-url', untouched.baseUrl, '--out', runDir, '--key-dir', setup.keyDir, '--prereg', setup.preregFile, '--same-uid', 'gemini test']);
    expect(run.code).not.toBe(0);
    expect(run.output).toContain('gemini_json_schema');
    expect(run.output).toMatch(/minLength|maxLength|pattern|const/);
    expect(run.output).toContain('schema_subset "strip"');
    expect(run.output).not.toContain(KEY);
    expect(untouched.requests).toEqual([]);
    expect(existsSync(runDir)).toBe(false);
  }, 120_000);
});
