// `npm run experiment -- --group C --model gemini …` through the real CLI (issue 36 item 5): the
// controller, the writer and the runtime as processes, the gemini adapter calling a Gemini-like
// server on loopback (test/support/gemini-like-server.ts) — accepted answers, usage and the
// provider's finish reason on every call, verify OK, and the key in no file of the run folder.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { runCli } from '../support/cli.js';
import { controllerSetupWith, REPO } from '../support/controller-run.js';
import { SUBSTANTIVE_ANSWER } from '../../faults/scripted-model-server.js';
import { GEMINI_TEST_MODEL, startGeminiLikeServer, type GeminiLikeServer } from '../support/gemini-like-server.js';
import { ofType, storedEvents } from '../support/stored-events.js';

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
afterAll(async () => {
  await server?.close();
});

describe('npm run experiment --model gemini', () => {
  test('group C against the loopback Gemini API: accepted answers, usage on every call, verify OK, the key in no file', async () => {
    // A short schedule (a wake every 12 simulated hours) keeps the run to a few wakes.
    const setup = controllerSetupWith('prereg-gemini', (p) => {
      p['wake_schedule']!['base_period_sim_minutes'] = 720;
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
  }, 180_000);
});
