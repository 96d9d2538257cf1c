// Issue 36's first "Done when": `npm run experiment -- --group C --model anthropic --model-id …
// --api-key-env …` through the REAL command line against the loopback Messages server
// (test/support/anthropic-like-server.ts, written from Anthropic's documentation; no hosted API
// is reachable from here). The instance runs to its end with every call answered and accepted,
// every call's usage recorded with the cache's reads and writes and the provider's stop_reason,
// verify OK — and the key's string in no file of the run folder.
//
// The server checks every schema sent against Anthropic's documented subset, as the API does
// (a 400 for `minimum`, `minLength`, …). The answer schema has such keywords, so the runs use a
// copy of the pre-registration with schema_subset "strip", locked (issue 36 item 2): the keywords
// are left out of what is sent — the server accepts every request — and the runtime still holds
// every answer to the full schema. Under a pre-registration that does not say so (absent = refuse)
// the start is refused before hour 0, by the subset check, before any request reaches the server.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSignedManifest } from '../../design/manifest.js';
import { SUBSTANTIVE_ANSWER } from '../../faults/scripted-model-server.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetupWith, type ControllerSetup } from '../support/controller-run.js';
import { ofType, storedEvents } from '../support/stored-events.js';
import { startAnthropicLikeServer, type AnthropicLikeServer } from '../support/anthropic-like-server.js';

const KEY_ENV = 'DS_TEST_ANTHROPIC_EXPERIMENT_KEY';
const KEY = 'sk-ant-e2e-DO-NOT-WRITE-91c3e7';
const MODEL = 'claude-loopback-1';
/** Example prices, US dollars per million input, output, cache-read and cache-write tokens: every call's cost is held to them. */
const PRICES = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

/** Every file under `dir` (the run folder: store, manifest, logs, model configuration). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

describe('npm run experiment -- --group C --model anthropic against the loopback Messages server', () => {
  let setup: ControllerSetup;
  let refusing: ControllerSetup;
  let server: AnthropicLikeServer;
  /** The server the refused start names: it must see no request. */
  let untouched: AnthropicLikeServer;
  const runs: Record<string, { dir: string; result: CliResult }> = {};

  beforeAll(async () => {
    process.env[KEY_ENV] = KEY;
    const short = (prereg: Record<string, Record<string, unknown>>): void => void (prereg['wake_schedule']!['base_period_sim_minutes'] = 240);
    setup = controllerSetupWith('prereg-strip', (prereg) => {
      short(prereg);
      prereg['model_calls']!['schema_subset'] = 'strip';
    });
    refusing = controllerSetupWith('prereg-short', short);
    server = await startAnthropicLikeServer({ apiKey: KEY, models: [MODEL], schemaSubsetCheck: true, simulateSystemCache: true, answer: () => SUBSTANTIVE_ANSWER });
    untouched = await startAnthropicLikeServer({ apiKey: KEY, models: [MODEL], schemaSubsetCheck: true });
    const common = (s: ControllerSetup): string[] => ['--group', 'C', '--model', 'anthropic', '--model-id', MODEL, '--api-key-env', KEY_ENV, '--prereg', s.preregFile, '--key-dir', s.keyDir, '--same-uid', 'test run in one uid', '--json'];
    const run = async (name: string, s: ControllerSetup, extra: string[]): Promise<void> => {
      const dir = path.join(s.dir, 'runs', name);
      runs[name] = { dir, result: await runCli('experiment', [...common(s), '--out', dir, ...extra]) };
    };
    await Promise.all([
      run('json', setup, ['--base-url', server.baseUrl, '--count-tokens', '--prices', '3,15,0.3,3.75']),
      run('tool', setup, ['--base-url', server.baseUrl, '--structured-output', 'anthropic_tool', '--no-stream', '--prices', '3,15,0.3,3.75']),
      run('subset', refusing, ['--base-url', untouched.baseUrl]),
    ]);
  }, 240_000);

  afterAll(async () => {
    await server?.close();
    await untouched?.close();
  });

  it.each(['json', 'tool'])('%s: exit 0, verified, every wake\'s call answered and accepted, with usage, cache counts and the stop_reason kept', (name) => {
    const { dir, result } = runs[name]!;
    expect(result.code, result.stderr.slice(-3_000)).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'finished', verify: { ok: true }, exit_code: 0 });
    const events = storedEvents(dir);
    const wakes = ofType(events, 'ExperimentEvent.WakeStarted').length;
    const answered = ofType(events, 'ModelOutputEvent.ModelAnswered');
    expect(wakes).toBeGreaterThan(0);
    expect(answered).toHaveLength(wakes);
    expect(ofType(events, 'ModelOutputEvent.ModelCallFailed')).toEqual([]);
    for (const e of answered) {
      const p = e.payload as Record<string, unknown> & { usage: { prompt_tokens: number; completion_tokens: number } };
      expect(p).toMatchObject({ adapter: 'anthropic', model_id: MODEL, response_model: MODEL, usage_source: 'server', finish_reason: 'stop', provider_finish_reason: name === 'tool' ? 'tool_use' : 'end_turn', prompt_count_source: name === 'json' ? 'server' : 'estimate' });
      expect(p['cache_read_tokens']).toEqual(expect.any(Number));
      expect(p['cache_write_tokens']).toEqual(expect.any(Number));
      expect((p['cache_read_tokens'] as number) + (p['cache_write_tokens'] as number)).toBeGreaterThan(0);
      expect(p.usage.prompt_tokens).toBeGreaterThan((p['cache_read_tokens'] as number) + (p['cache_write_tokens'] as number));
      // Its cost: its own counts at the prices given, each kind at its price.
      const fresh = p.usage.prompt_tokens - (p['cache_read_tokens'] as number) - (p['cache_write_tokens'] as number);
      const expectedNanoUsd = Math.round(fresh * PRICES.input * 1_000 + (p['cache_read_tokens'] as number) * PRICES.cache_read * 1_000 + (p['cache_write_tokens'] as number) * PRICES.cache_write * 1_000 + p.usage.completion_tokens * PRICES.output * 1_000);
      expect(p['cost_nano_usd']).toBe(expectedNanoUsd);
      expect(p['cost_nano_usd']).toBeGreaterThan(0);
    }
    // The simulated cache: the system prompt written once, read by the calls after it.
    expect(answered.some((e) => (e.payload as { cache_read_tokens: number }).cache_read_tokens > 0)).toBe(true);
    const checked = checkSignedManifest(JSON.parse(readFileSync(path.join(dir, RUN_FILES.manifest), 'utf8')), setup.key.keys.publicKey);
    if (!checked.ok) throw new Error(checked.reason);
    expect(checked.manifest.model).toMatchObject({ adapter: 'anthropic', model_id: MODEL, structured_output: { dialect: name === 'tool' ? 'anthropic_tool' : 'anthropic_json' }, params: { seed: null }, prices: PRICES });
  });

  it('sent every request with the key in x-api-key and anthropic-version 2023-06-01, never a seed', () => {
    const posted = server.messages();
    expect(posted.length).toBeGreaterThan(2);
    for (const r of posted) {
      expect(r.headers['x-api-key']).toBe(KEY);
      expect(r.headers['anthropic-version']).toBe('2023-06-01');
      expect(r.body).not.toHaveProperty('seed');
    }
  });

  it('the key\'s string is in no file of either run folder', () => {
    for (const name of ['json', 'tool']) {
      for (const file of filesUnder(runs[name]!.dir)) {
        if (!statSync(file).isFile()) continue;
        expect(readFileSync(file).includes(Buffer.from(KEY)), file).toBe(false);
      }
    }
  });

  it('the server\'s subset check, on for every request, refused none: what was sent keeps to the documented subset', () => {
    expect(server.messages().length).toBeGreaterThan(2);
    expect(server.refusedSchemas()).toEqual([]);
  });

  it('under a pre-registration that does not pre-register "strip", the start is refused before hour 0 by the subset check, naming the keywords; no request was sent and no folder is left', () => {
    const { result } = runs['subset']!;
    expect(result.code).not.toBe(0);
    expect(`${result.stdout}\n${result.stderr}`).toMatch(/anthropic_json/);
    expect(`${result.stdout}\n${result.stderr}`).toMatch(/minLength|minimum|maxLength/);
    expect(`${result.stdout}\n${result.stderr}`).toContain('schema_subset "strip"');
    expect(`${result.stdout}\n${result.stderr}`).not.toContain(KEY);
    expect(untouched.messages()).toEqual([]);
    expect(existsSync(runs['subset']!.dir)).toBe(false);
  });
});
