// `--model gemini` on the command line and in a model configuration file (issue 36 item 3):
// the flags give the choice, its inverse gives the flags back, the file gives the same choice,
// and what is wrong is refused with advice the tool accepts.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { describe, expect, test } from 'vitest';
import { MODEL_OPTIONS, ModelFlagError, modelChoiceOf, type ModelFlagValues } from '../../cli/model-flags.js';
import { readModelConfigFile } from '../../controller/model-config-file.js';
import { modelFlagsOf } from '../../design/model-choice-flags.js';
import { resolveModel } from '../../design/model-choice.js';
import { DEFAULT_GEMINI_BASE_URL } from '../../runtime/protocol.js';
import { tempDir } from '../support/writer-fixture.js';

const KEY_ENV = 'DS_TEST_GEMINI_FLAGS_KEY';
process.env[KEY_ENV] = 'AIza-flags-test';
const RETRY = { max_attempts: 2, backoff_ms: [10] };

function choiceOf(args: readonly string[]) {
  const { values } = parseArgs({ args: [...args], options: MODEL_OPTIONS, strict: true, allowPositionals: false });
  return modelChoiceOf(values as ModelFlagValues);
}

describe('--model gemini', () => {
  test('the flags give the choice (the documented base URL by default), its inverse gives them back, and the manifest records it as a sampling model', () => {
    const choice = choiceOf(['--model', 'gemini', '--model-id', 'gemini-2.5-flash', '--api-key-env', KEY_ENV, '--count-tokens', '--temperature', '0.3', '--model-seed', '5']);
    expect(choice).toMatchObject({ adapter: 'gemini', base_url: DEFAULT_GEMINI_BASE_URL, model_id: 'gemini-2.5-flash', api_key_env: KEY_ENV, dialect: 'gemini_json_schema', stream: true, count_tokens: true, context_size: null, timeout_ms: 60_000 });
    expect(choiceOf(modelFlagsOf(choice))).toEqual(choice);
    const resolved = resolveModel(choice, RETRY, 'strip');
    expect(resolved.info).toMatchObject({ adapter: 'gemini', model_id: 'gemini-2.5-flash', call_timeout_ms: 60_000, structured_output: { dialect: 'gemini_json_schema' }, prices: null });
    // The schema subset decided for Gemini's dialect under the pre-registered policy, said in lines.
    expect(resolved.subsetChoice).toEqual({ dialect: 'gemini_json_schema', policy: 'strip' });
    expect(resolved.subsetLines.join('\n')).toContain('gemini_json_schema');
    expect(resolved.runtime).toMatchObject({ adapter: 'gemini', retry: RETRY });
    expect(JSON.stringify(resolved)).not.toContain('AIza-flags-test');
    const priced = choiceOf(['--model', 'gemini', '--model-id', 'gemini-2.5-flash', '--api-key-env', KEY_ENV, '--prices', '0.3,2.5,0.03,0']);
    expect(resolveModel(priced, RETRY, 'strip').info.prices).toEqual({ input: 0.3, output: 2.5, cache_read: 0.03, cache_write: 0 });
  });

  test('refused: no key variable, --api-key-env none, a key variable not set, an OpenAI dialect, an openai-only flag', () => {
    expect(() => choiceOf(['--model', 'gemini', '--model-id', 'gemini-2.5-flash'])).toThrow(/--model gemini needs --model-id M .* and --api-key-env VAR/);
    expect(() => choiceOf(['--model', 'gemini', '--model-id', 'g', '--api-key-env', 'none'])).toThrow(/takes no call without a key/);
    expect(() => choiceOf(['--model', 'gemini', '--model-id', 'g', '--api-key-env', 'DS_TEST_UNSET_GEMINI_KEY'])).toThrow(/DS_TEST_UNSET_GEMINI_KEY holding the API key is not set \(set it, or name the variable that holds the key with --api-key-env VAR/);
    expect(() => choiceOf(['--model', 'gemini', '--model-id', 'g', '--api-key-env', KEY_ENV, '--structured-output', 'json_schema'])).toThrow(/must be one of gemini_json_schema/);
    expect(() => choiceOf(['--model', 'gemini', '--model-id', 'g', '--api-key-env', KEY_ENV, '--json-mode'])).toThrow(ModelFlagError);
    expect(() => choiceOf(['--model', 'openai', '--base-url', 'http://127.0.0.1:1/v1', '--model-id', 'm', '--api-key-env', 'none', '--count-tokens'])).toThrow(/--count-tokens applies to --model anthropic or gemini only/);
  });

  test('the configuration file names the same choice, its hash pinned; a file without api_key_env is refused', () => {
    const dir = tempDir('ds-gemini-config-');
    const file = path.join(dir, 'gemini.json');
    writeFileSync(file, JSON.stringify({ adapter: 'gemini', model_id: 'gemini-2.5-flash', api_key_env: KEY_ENV, count_tokens: true, params: { temperature: 0.3, seed: 5 }, prices: { input: 0.3, output: 2.5, cache_read: 0.03, cache_write: 0 } }));
    const fromFile = readModelConfigFile(file);
    const fromFlags = choiceOf(['--model', 'gemini', '--model-id', 'gemini-2.5-flash', '--api-key-env', KEY_ENV, '--count-tokens', '--temperature', '0.3', '--model-seed', '5', '--prices', '0.3,2.5,0.03,0']);
    expect({ ...fromFile, config_file: null, config_sha256: null }).toEqual(fromFlags);
    expect('config_sha256' in fromFile ? fromFile.config_sha256 : null).toMatch(/^sha256:[0-9a-f]{64}$/);
    const keyless = path.join(dir, 'keyless.json');
    writeFileSync(keyless, JSON.stringify({ adapter: 'gemini', model_id: 'gemini-2.5-flash' }));
    expect(() => readModelConfigFile(keyless)).toThrow(/api_key_env/);
  });
});
