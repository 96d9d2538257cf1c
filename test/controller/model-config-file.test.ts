// The model configuration file and the --model flags (issue 15 item 7; controller/model-config-file.ts,
// cli/model-flags.ts modelChoiceOf, design/model-choice.ts copyModelConfig): real
// files in temporary folders, and the real `npm run experiment` command line — a configuration of
// an `openai` model pointed at a scripted OpenAI-compatible server on loopback runs an instance to
// its end, its file copied byte for byte into the run folder and its sha256 in the signed
// manifest; a bad file or misused flags are refused with exit 2 (a model file that cannot be read,
// exit 1) and leave every folder as it was, byte for byte.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSignedManifest } from '../../design/manifest.js';
import { copyModelConfig, ModelChoiceError, resolveModel, type ModelChoice } from '../../design/model-choice.js';
import { DEFAULT_LOCAL_CONTEXT_TOKENS, DEFAULT_LOCAL_THREADS, DEFAULT_LOCAL_TIMEOUT_MS, DEFAULT_MODEL_TIMEOUT_MS, ModelConfigError, readModelConfigFile } from '../../controller/model-config-file.js';
import { lockPrereg } from '../../design/prereg.js';
import { MODEL_OPTIONS, ModelFlagError, modelChoiceOf, type ModelFlagValues } from '../../cli/model-flags.js';
import { modelFlagsOf } from '../../design/model-choice-flags.js';
import { parseArgs } from 'node:util';
import { RUN_FILES } from '../../schema/run-files.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetup, controllerSetupWith, newInstanceOptions, runInstance, type ControllerSetup } from '../support/controller-run.js';
import { SUBSTANTIVE_ANSWER, SCRIPTED_MODEL_ID, startScriptedModelServer, type ScriptedModelServer } from '../../faults/scripted-model-server.js';
import { ofType, storedEvents } from '../support/stored-events.js';
import { tempDir } from '../support/writer-fixture.js';

/** No call here hangs: the timeout only has to be valid and short. */
const MODEL_TIMEOUT_MS = 1_000;
/** An environment variable no machine sets: an API key that is surely missing. */
const UNSET_KEY_ENV = 'DS_TEST_SURELY_UNSET_API_KEY_7F3A';

const sha256Of = (bytes: Buffer | string): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

function writeConfig(dir: string, name: string, config: unknown, text?: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text ?? `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

function openaiConfig(baseUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { adapter: 'openai', base_url: baseUrl, model_id: SCRIPTED_MODEL_ID, api_key_env: null, structured_output: 'json_schema', stream: false, timeout_ms: MODEL_TIMEOUT_MS, params: { temperature: 0, seed: 7 }, ...extra };
}

/** What readModelConfigFile throws for `config` (it must throw a ModelConfigError). */
function refusal(dir: string, name: string, config: unknown, text?: string): ModelConfigError {
  const file = writeConfig(dir, name, config, text);
  try {
    readModelConfigFile(file);
  } catch (error) {
    expect(error).toBeInstanceOf(ModelConfigError);
    expect((error as Error).message).toContain(file);
    return error as ModelConfigError;
  }
  throw new Error(`${file} was accepted`);
}

function flagRefusal(values: ModelFlagValues): ModelFlagError {
  try {
    modelChoiceOf(values);
  } catch (error) {
    expect(error).toBeInstanceOf(ModelFlagError);
    return error as ModelFlagError;
  }
  throw new Error(`accepted: ${JSON.stringify(values)}`);
}

/** Every file under `root` with its bytes (and every folder), to show a refused command changed nothing. */
function snapshot(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      const rel = path.relative(root, full);
      if (entry.isDirectory()) {
        out.set(`${rel}/`, `dir ${statSync(full).mode.toString(8)}`);
        walk(full);
      } else {
        out.set(rel, `${statSync(full).mode.toString(8)} ${sha256Of(readFileSync(full))}`);
      }
    }
  };
  walk(root);
  return out;
}

// ---------------------------------------------------------------------------------------

describe('readModelConfigFile: a zod-validated file, read once, its bytes pinned', () => {
  const dir = tempDir('ds-model-config-');

  it('an openai configuration: the file names the whole model, defaults filled, the path absolute and the sha256 of its bytes pinned', () => {
    const file = writeConfig(dir, 'openai.json', { adapter: 'openai', base_url: 'http://127.0.0.1:8080/v1', model_id: 'served-model', api_key_env: null });
    const choice = readModelConfigFile(path.relative(process.cwd(), file));
    expect(choice).toEqual({
      adapter: 'openai',
      base_url: 'http://127.0.0.1:8080/v1',
      model_id: 'served-model',
      api_key_env: null,
      params: { temperature: null, top_p: null, seed: null, max_tokens: null },
      dialect: 'json_schema',
      stream: true,
      context_size: null,
      timeout_ms: DEFAULT_MODEL_TIMEOUT_MS,
      config_file: file,
      config_sha256: sha256Of(readFileSync(file)),
    });
  });

  it('the reference policy named by a file (issue 35): the choice a flag makes, with the file and its sha256 pinned; resolved, the manifest\'s config_sha256 is the file\'s; forged: any other key refused by name', () => {
    const file = writeConfig(dir, 'reference.json', { adapter: 'reference' });
    const choice = readModelConfigFile(file);
    expect(choice).toEqual({ adapter: 'reference', config_file: file, config_sha256: sha256Of(readFileSync(file)) });
    expect(resolveModel(choice, { max_attempts: 1, backoff_ms: [] }, 'strip').info.config_sha256).toBe(sha256Of(readFileSync(file)));
    // The flag's choice pins nothing, as before.
    expect(resolveModel({ adapter: 'reference' }, { max_attempts: 1, backoff_ms: [] }, 'refuse').info.config_sha256).toBeNull();
    expect(() => readModelConfigFile(writeConfig(dir, 'reference-extra.json', { adapter: 'reference', model_id: 'x' }))).toThrow(ModelConfigError);
    expect(() => readModelConfigFile(writeConfig(dir, 'reference-extra2.json', { adapter: 'reference', params: {} }))).toThrow(/params/);
  });

  it('the sha256 is of the bytes: the same configuration written another way is another file, another hash', () => {
    const config = openaiConfig('http://127.0.0.1:8080/v1');
    const a = readModelConfigFile(writeConfig(dir, 'a.json', config));
    const b = readModelConfigFile(writeConfig(dir, 'b.json', config, JSON.stringify(config)));
    const { config_file: _fa, config_sha256: ha, ...restA } = a as Extract<ModelChoice, { adapter: 'openai' }>;
    const { config_file: _fb, config_sha256: hb, ...restB } = b as Extract<ModelChoice, { adapter: 'openai' }>;
    expect(restA).toEqual(restB);
    expect(ha).not.toBe(hb);
    expect(hb).toBe(sha256Of(JSON.stringify(config)));
  });

  it('a local configuration: a relative model_file is read from the configuration file’s folder, not the working folder; the model id defaults to the file’s name', () => {
    const sub = path.join(dir, 'configs');
    mkdirSync(sub, { recursive: true });
    const file = writeConfig(sub, 'local.json', { adapter: 'local', model_file: '../models/tiny-model.GGUF' });
    const choice = readModelConfigFile(file);
    expect(choice).toMatchObject({
      adapter: 'local',
      model_file: path.join(dir, 'models', 'tiny-model.GGUF'),
      model_id: 'tiny-model',
      threads: DEFAULT_LOCAL_THREADS,
      context_size: DEFAULT_LOCAL_CONTEXT_TOKENS,
      timeout_ms: DEFAULT_LOCAL_TIMEOUT_MS,
      config_file: file,
      config_sha256: sha256Of(readFileSync(file)),
    });
    expect(path.join(process.cwd(), '../models/tiny-model.GGUF')).not.toBe(path.join(dir, 'models', 'tiny-model.GGUF'));
    // An absolute one is kept as it is.
    expect(readModelConfigFile(writeConfig(sub, 'local-abs.json', { adapter: 'local', model_file: '/opt/models/m.gguf', model_id: 'm1', threads: 2, context_size: 4_096 }))).toMatchObject({ model_file: '/opt/models/m.gguf', model_id: 'm1', threads: 2, context_size: 4_096 });
  });

  it('refuses an unknown key by name, at the top and inside params', () => {
    const top = refusal(dir, 'unknown-top.json', { ...openaiConfig('http://127.0.0.1:8080/v1'), temprature: 0.2 });
    expect(top.message).toContain('temprature');
    expect(top.message).toContain('is not a valid model configuration');
    const nested = refusal(dir, 'unknown-param.json', openaiConfig('http://127.0.0.1:8080/v1', { params: { temperature: 0, top_k: 40 } }));
    expect(nested.message).toContain('top_k');
    expect(nested.message).toContain('params');
    // A key of the other adapter is unknown too: a local model has no base_url.
    expect(refusal(dir, 'local-with-url.json', { adapter: 'local', model_file: 'm.gguf', base_url: 'http://127.0.0.1:1/v1' }).message).toContain('base_url');
  });

  it('refuses retry and pause keys with the reason: they are pre-registered, not part of a model configuration', () => {
    for (const [key, value] of [
      ['retry', { max_attempts: 5, backoff_ms: [1, 1, 1, 1] }],
      ['transport_retry', { max_attempts: 2, backoff_ms: [10] }],
      ['pause_after_consecutive_transport_failures', 100],
      // Forged (issue 36): the schema subset policy is pre-registered too, never a model configuration's.
      ['schema_subset', 'strip'],
    ] as const) {
      const error = refusal(dir, `${key}.json`, { ...openaiConfig('http://127.0.0.1:8080/v1'), [key]: value });
      expect(error.message, key).toContain(`${key}: transport retries, the pause rule, the schema subset policy and the cost cap are pre-registered`);
      expect(error.message, key).toContain("the pre-registration's model_calls block");
    }
  });

  it('refuses impossible values, naming the field', () => {
    const negative = refusal(dir, 'negative-timeout.json', openaiConfig('http://127.0.0.1:8080/v1', { timeout_ms: -5 }));
    expect(negative.message).toMatch(/timeout_ms: /);
    const tinyContext = refusal(dir, 'context-10.json', openaiConfig('http://127.0.0.1:8080/v1', { context_size: 10 }));
    expect(tinyContext.message).toMatch(/context_size: /);
    expect(refusal(dir, 'local-context-10.json', { adapter: 'local', model_file: 'm.gguf', context_size: 10 }).message).toMatch(/context_size: /);
    expect(refusal(dir, 'threads-0.json', { adapter: 'local', model_file: 'm.gguf', threads: 0 }).message).toMatch(/threads: /);
    expect(refusal(dir, 'temperature-9.json', openaiConfig('http://127.0.0.1:8080/v1', { params: { temperature: 9 } })).message).toMatch(/params\.temperature: /);
    expect(refusal(dir, 'dialect.json', openaiConfig('http://127.0.0.1:8080/v1', { structured_output: 'grammar' })).message).toMatch(/structured_output: /);
    expect(refusal(dir, 'ftp.json', openaiConfig('ftp://127.0.0.1/v1')).message).toMatch(/base_url: /);
    expect(refusal(dir, 'no-adapter.json', { model_id: 'x' }).message).toMatch(/adapter: /);
  });

  it('refuses a file that is not JSON, too large, or missing — each said with the file', () => {
    expect(refusal(dir, 'not-json.json', null, '{"adapter": "openai",').message).toContain('is not JSON');
    expect(refusal(dir, 'huge.json', null, `{"adapter":"openai","pad":"${'x'.repeat(70 * 1024)}"}`).message).toContain('larger than');
    const missing = path.join(dir, 'missing.json');
    expect(() => readModelConfigFile(missing)).toThrow(ModelConfigError);
    expect(() => readModelConfigFile(missing)).toThrow(`cannot read the model configuration ${missing}`);
  });
});

describe('modelChoiceOf: --model-config and the flags', () => {
  const dir = tempDir('ds-model-flags-');

  it('--model-config gives the file’s choice', () => {
    const file = writeConfig(dir, 'ok.json', openaiConfig('http://127.0.0.1:8080/v1'));
    expect(modelChoiceOf({ 'model-config': file })).toEqual(readModelConfigFile(file));
  });

  it('refuses flags mixed with --model-config, naming them', () => {
    const file = writeConfig(dir, 'mixed.json', openaiConfig('http://127.0.0.1:8080/v1'));
    const one = flagRefusal({ 'model-config': file, 'model-timeout-ms': '5000' });
    expect(one.message).toContain('--model-config names the whole model; drop --model-timeout-ms');
    const two = flagRefusal({ 'model-config': file, model: 'openai', 'no-stream': true });
    expect(two.message).toContain('--model');
    expect(two.message).toContain('--no-stream');
  });

  it('turns a bad file into a flag error (exit 2), its reason kept', () => {
    const file = writeConfig(dir, 'bad.json', { ...openaiConfig('http://127.0.0.1:8080/v1'), transport_retry: { max_attempts: 2, backoff_ms: [1] } });
    expect(flagRefusal({ 'model-config': file }).message).toContain('transport_retry: transport retries, the pause rule, the schema subset policy and the cost cap are pre-registered');
  });

  it('refuses a configuration whose API-key variable is not set', () => {
    const file = writeConfig(dir, 'key.json', openaiConfig('http://127.0.0.1:8080/v1', { api_key_env: UNSET_KEY_ENV }));
    expect(flagRefusal({ 'model-config': file }).message).toContain(`the environment variable ${UNSET_KEY_ENV} holding the API key is not set`);
  });

  it('--model local: needs --model-file; --threads and --model-file belong to it alone', () => {
    expect(flagRefusal({ model: 'local' }).message).toContain('--model local needs --model-file F.gguf');
    expect(flagRefusal({ threads: '2' }).message).toBe('--threads applies to --model local only');
    expect(flagRefusal({ model: 'openai', 'base-url': 'http://127.0.0.1:1/v1', 'model-id': 'm', 'api-key-env': 'none', threads: '2' }).message).toBe('--threads applies to --model local only');
    expect(flagRefusal({ model: 'reference', 'model-file': 'm.gguf' }).message).toBe('--model-file applies to --model local only');
    expect(flagRefusal({ model: 'local', 'model-file': 'm.gguf', 'base-url': 'http://127.0.0.1:1/v1' }).message).toBe('--base-url applies to --model openai, anthropic or gemini only');
    expect(flagRefusal({ model: 'local', 'model-file': 'm.gguf', threads: 'two' }).message).toContain('--threads must be a whole number');
    expect(flagRefusal({ model: 'local', 'model-file': 'm.gguf', threads: '0' }).message).toContain('threads');
    expect(flagRefusal({ model: 'local', 'model-file': 'm.gguf', 'context-size': '10' }).message).toContain('context_size');
    // The control: a complete --model local is accepted, its file made absolute.
    expect(modelChoiceOf({ model: 'local', 'model-file': 'models/m.gguf', threads: '2' })).toMatchObject({ adapter: 'local', model_file: path.resolve('models/m.gguf'), model_id: 'm', threads: 2, config_file: null, config_sha256: null });
  });
});

describe('prices (issue 36 item 4): in the file, as --prices, and back', () => {
  const dir = tempDir('ds-model-prices-');
  const PRICES = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

  it('a file\'s prices reach the choice and the manifest\'s model.prices; a file without them is not priced', () => {
    const file = writeConfig(dir, 'priced.json', openaiConfig('http://127.0.0.1:8080/v1', { prices: PRICES }));
    const choice = readModelConfigFile(file);
    expect(choice).toMatchObject({ prices: PRICES });
    expect(resolveModel(choice, { max_attempts: 1, backoff_ms: [] }, 'strip').info.prices).toEqual(PRICES);
    expect(readModelConfigFile(writeConfig(dir, 'plain.json', openaiConfig('http://127.0.0.1:8080/v1')))).not.toHaveProperty('prices');
  });

  it('refuses prices that are not four known, non-negative kinds, by name', () => {
    expect(refusal(dir, 'neg.json', openaiConfig('http://127.0.0.1:8080/v1', { prices: { ...PRICES, output: -1 } })).message).toContain('prices.output');
    expect(refusal(dir, 'extra.json', openaiConfig('http://127.0.0.1:8080/v1', { prices: { ...PRICES, batch: 1 } })).message).toContain('batch');
    expect(refusal(dir, 'short.json', openaiConfig('http://127.0.0.1:8080/v1', { prices: { input: 1, output: 2 } })).message).toContain('prices.cache_read');
  });

  it('--prices IN,OUT,CACHE_READ,CACHE_WRITE gives the same prices, and modelFlagsOf gives the flag back', () => {
    const flags = { model: 'openai', 'base-url': 'http://127.0.0.1:8080/v1', 'model-id': 'm', 'api-key-env': 'none', prices: '3,15,0.3,3.75' } as const;
    const choice = modelChoiceOf(flags);
    expect(choice).toMatchObject({ prices: PRICES });
    const back = modelFlagsOf(choice);
    expect(back.slice(back.indexOf('--prices'), back.indexOf('--prices') + 2)).toEqual(['--prices', '3,15,0.3,3.75']);
    const { values } = parseArgs({ args: back, options: MODEL_OPTIONS, strict: true });
    expect(modelChoiceOf(values)).toEqual(choice);
    expect(modelFlagsOf(modelChoiceOf({ ...flags, prices: undefined }))).not.toContain('--prices');
  });

  it('refuses a malformed --prices with what to write, and --prices for a model that is not priced', () => {
    const base = { model: 'openai', 'base-url': 'http://127.0.0.1:8080/v1', 'model-id': 'm', 'api-key-env': 'none' } as const;
    expect(flagRefusal({ ...base, prices: '3,15' }).message).toContain('--prices takes 4 numbers, US dollars per million input, output, cache_read, cache_write tokens, e.g. --prices 3,15,0.3,3.75');
    expect(flagRefusal({ ...base, prices: '3,x,1,1' }).message).toContain('--prices takes 4 numbers');
    expect(flagRefusal({ ...base, prices: '3,15,-1,1' }).message).toContain('cache_read');
    expect(flagRefusal({ model: 'reference', prices: '1,1,1,1' }).message).toBe('--prices applies to --model openai, anthropic, gemini or local only');
  });
});

describe('copyModelConfig: the file into the run folder, byte for byte, or a refusal', () => {
  const dir = tempDir('ds-model-copy-');

  it('copies the file byte-identically into model-config.json', () => {
    // Odd bytes on purpose (tabs, no final newline, a non-ASCII comment-like value): nothing re-serialised.
    const text = '{\t"adapter": "openai", "base_url": "http://127.0.0.1:8080/v1",\n\t"model_id": "modèle-ü", "api_key_env": null}';
    const file = writeConfig(dir, 'odd.json', null, text);
    const choice = readModelConfigFile(file);
    const runDir = path.join(dir, 'run-ok');
    mkdirSync(runDir);
    copyModelConfig(choice, runDir);
    expect(readFileSync(path.join(runDir, RUN_FILES.modelConfig)).equals(readFileSync(file))).toBe(true);
    expect(sha256Of(readFileSync(path.join(runDir, RUN_FILES.modelConfig)))).toBe((choice as { config_sha256: string }).config_sha256);
  });

  it('forged: the file changed after it was read — refused, nothing copied', () => {
    const file = writeConfig(dir, 'changing.json', openaiConfig('http://127.0.0.1:8080/v1'));
    const choice = readModelConfigFile(file);
    writeConfig(dir, 'changing.json', openaiConfig('http://127.0.0.1:9999/v1'));
    const runDir = path.join(dir, 'run-changed');
    mkdirSync(runDir);
    expect(() => copyModelConfig(choice, runDir)).toThrow(ModelChoiceError);
    expect(() => copyModelConfig(choice, runDir)).toThrow(`${file} changed after it was read`);
    expect(readdirSync(runDir)).toEqual([]);
  });

  it('a choice made by flags has no file: nothing is copied', () => {
    const runDir = path.join(dir, 'run-flags');
    mkdirSync(runDir);
    copyModelConfig(modelChoiceOf({ model: 'openai', 'base-url': 'http://127.0.0.1:8080/v1', 'model-id': 'm', 'api-key-env': 'none' }), runDir);
    copyModelConfig({ adapter: 'reference' }, runDir);
    expect(readdirSync(runDir)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------

/** The default pre-registration with a 4-hour wake period (16 wakes), locked with the test key. */
/** A short schedule; schema_subset strip, since the json_schema subset does not hold the answer schema (issue 36): under refuse the start is refused. */
function shortSetup(): ControllerSetup {
  return controllerSetupWith('prereg-short', (prereg) => {
    prereg['wake_schedule']!['base_period_sim_minutes'] = 240;
    prereg['model_calls']!['schema_subset'] = 'strip';
  });
}

describe('a configuration file changed between a study reading it and an instance starting (forged)', () => {
  it('is refused before the instance starts (ModelChoiceError, the file named), no writer started, no store', async () => {
    const setup = shortSetup();
    const file = writeConfig(setup.dir, 'model.json', openaiConfig('http://127.0.0.1:9/v1'));
    const choice = readModelConfigFile(file);
    writeConfig(setup.dir, 'model.json', openaiConfig('http://127.0.0.1:9/v1', { timeout_ms: 2_000 }));
    const run = newInstanceOptions(setup, { name: 'changed-config', model: choice });
    const error = await runInstance(run).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ModelChoiceError);
    expect((error as Error).message).toContain(`${file} changed after it was read`);
    expect(existsSync(path.join(run.options.runDir, RUN_FILES.store))).toBe(false);
    expect(existsSync(path.join(run.options.runDir, RUN_FILES.manifest))).toBe(false);
  }, 30_000);

  // Found by this suite and fixed (issue 15 review).
  it('leaves no half-made run folder behind', async () => {
    const setup = shortSetup();
    const file = writeConfig(setup.dir, 'model.json', openaiConfig('http://127.0.0.1:9/v1'));
    const choice = readModelConfigFile(file);
    writeConfig(setup.dir, 'model.json', openaiConfig('http://127.0.0.1:9/v1', { timeout_ms: 2_000 }));
    const run = newInstanceOptions(setup, { name: 'changed-config', model: choice });
    await runInstance(run).catch(() => undefined);
    const runDir = run.options.runDir;
    expect(existsSync(runDir) ? readdirSync(runDir) : []).toEqual([]);
  }, 30_000);
});

describe('through the real command line: npm run experiment -- --model-config F', () => {
  let setup: ControllerSetup;
  let server: ScriptedModelServer;
  let configFile: string;
  let runDir: string;
  let ok: CliResult;
  const refused: Record<string, { result: CliResult; before: Map<string, string>; after: Map<string, string> }> = {};

  /** A command that must be refused: the setup folder (keys, pre-registration, configs, run folders) snapshotted around it. */
  async function refusedRun(name: string, args: string[]): Promise<void> {
    const before = snapshot(setup.dir);
    const result = await runCli('experiment', args);
    refused[name] = { result, before, after: snapshot(setup.dir) };
  }

  beforeAll(async () => {
    setup = shortSetup();
    server = await startScriptedModelServer((request) => {
      if (request.wakeId === null) throw new Error(`a request without a wake id: ${request.method} ${request.url}`);
      return { kind: 'content', content: JSON.stringify(SUBSTANTIVE_ANSWER) };
    });
    configFile = writeConfig(setup.dir, 'model-openai.json', openaiConfig(server.baseUrl));
    runDir = path.join(setup.dir, 'runs', 'from-config');
    const common = ['--prereg', setup.preregFile, '--key-dir', setup.keyDir, '--same-uid', 'test run in one uid'];
    const emptyOut = path.join(setup.dir, 'runs', 'empty-out');
    mkdirSync(emptyOut);
    const badFile = writeConfig(setup.dir, 'model-bad.json', { ...openaiConfig(server.baseUrl), temprature: 0.3 });
    const retryFile = writeConfig(setup.dir, 'model-retry.json', { ...openaiConfig(server.baseUrl), retry: { max_attempts: 9, backoff_ms: [0, 0, 0, 0, 0, 0, 0, 0] } });
    // The refusals run side by side (each a real node process), before the instance.
    await Promise.all([
      refusedRun('unknown key', ['--group', 'C', '--model-config', badFile, '--out', path.join(setup.dir, 'runs', 'never'), ...common]),
      refusedRun('retry key', ['--group', 'C', '--model-config', retryFile, '--out', emptyOut, ...common]),
      refusedRun('flags mixed', ['--group', 'C', '--model-config', configFile, '--model-timeout-ms', '5000', '--out', emptyOut, ...common]),
      refusedRun('local without file', ['--group', 'C', '--model', 'local', '--out', emptyOut, ...common]),
      refusedRun('threads without local', ['--group', 'C', '--threads', '2', '--out', emptyOut, ...common]),
      refusedRun('local file missing', ['--group', 'C', '--model', 'local', '--model-file', path.join(setup.dir, 'no-such-model.gguf'), '--out', emptyOut, ...common]),
    ]);
    ok = await runCli('experiment', ['--group', 'C', '--model-config', configFile, '--out', runDir, '--json', ...common]);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it('runs the instance the file names to its end: exit 0, verified, every call answered by the configured server', () => {
    expect(ok.code, ok.stderr.slice(-3_000)).toBe(0);
    const out = JSON.parse(ok.stdout) as { status: string; run_dir: string; verify: { ok: boolean } };
    expect(out).toMatchObject({ status: 'finished', run_dir: runDir, verify: { ok: true }, exit_code: 0 });
    expect(server.errors).toEqual([]);
    const events = storedEvents(runDir);
    const started = ofType(events, 'ExperimentEvent.WakeStarted').length;
    expect(started).toBeGreaterThan(0);
    expect(ofType(events, 'ModelOutputEvent.ModelAnswered').length).toBe(started);
    expect(ofType(events, 'ModelOutputEvent.ModelAnswered').every((e) => e.payload['model_id'] === SCRIPTED_MODEL_ID)).toBe(true);
    expect(server.probes.length).toBeGreaterThanOrEqual(1);
  });

  it('copies the file byte for byte into the run folder, and the signed manifest pins its sha256 and what it says', () => {
    const bytes = readFileSync(configFile);
    expect(readFileSync(path.join(runDir, RUN_FILES.modelConfig)).equals(bytes)).toBe(true);
    const checked = checkSignedManifest(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.manifest), 'utf8')), setup.key.keys.publicKey);
    if (!checked.ok) throw new Error(checked.reason);
    expect(checked.manifest.model).toMatchObject({ adapter: 'openai', model_id: SCRIPTED_MODEL_ID, call_timeout_ms: MODEL_TIMEOUT_MS, config_sha256: sha256Of(bytes), structured_output: { dialect: 'json_schema' }, params: { temperature: 0, top_p: null, seed: 7, max_tokens: null } });
    expect(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.model), 'utf8'))).toMatchObject({ adapter: 'openai', base_url: server.baseUrl, config_file: configFile, config_sha256: sha256Of(bytes), stream: false, timeout_ms: MODEL_TIMEOUT_MS });
  });

  it('a file with an unknown key: exit 2, the key named, nothing anywhere created or changed (the run folder does not exist)', () => {
    const r = refused['unknown key']!;
    expect(r.result.code, r.result.stderr).toBe(2);
    expect(r.result.stderr).toContain('temprature');
    expect(r.result.stdout).toBe('');
    expect(r.after).toEqual(r.before);
    expect(existsSync(path.join(setup.dir, 'runs', 'never'))).toBe(false);
  });

  it('a file with a retry policy: exit 2 with the pre-registration reason; the empty run folder stays empty', () => {
    const r = refused['retry key']!;
    expect(r.result.code, r.result.stderr).toBe(2);
    expect(r.result.stderr).toContain('retry: transport retries, the pause rule, the schema subset policy and the cost cap are pre-registered');
    expect(r.after).toEqual(r.before);
  });

  it('flags mixed with --model-config: exit 2, the flag named', () => {
    const r = refused['flags mixed']!;
    expect(r.result.code, r.result.stderr).toBe(2);
    expect(r.result.stderr).toContain('--model-config names the whole model; drop --model-timeout-ms');
    expect(r.after).toEqual(r.before);
  });

  it('--model local without --model-file: exit 2 with what to give', () => {
    const r = refused['local without file']!;
    expect(r.result.code, r.result.stderr).toBe(2);
    expect(r.result.stderr).toContain('experiment: --model local needs --model-file F.gguf');
    expect(r.after).toEqual(r.before);
  });

  it('--threads without --model local: exit 2', () => {
    const r = refused['threads without local']!;
    expect(r.result.code, r.result.stderr).toBe(2);
    expect(r.result.stderr).toContain('experiment: --threads applies to --model local only');
    expect(r.after).toEqual(r.before);
  });

  it('--model local with a model file that does not exist: refused (exit 1) with the file named, nothing changed', () => {
    const r = refused['local file missing']!;
    expect(r.result.code, r.result.stderr).toBe(1);
    expect(r.result.stderr).toContain(`cannot read the model file ${path.join(setup.dir, 'no-such-model.gguf')}`);
    expect(r.after).toEqual(r.before);
  });
});
