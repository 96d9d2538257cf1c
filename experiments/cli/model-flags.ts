// The --model flags shared by npm run experiment and npm run study: one parser, so a study's
// instances are configured exactly as a single experiment would be. `--model-config FILE` names
// the same choice as a file (controller/model-config-file.ts); the flags keep working.
import path from 'node:path';
import { ModelChoice } from '../../controller/model-choice.js';
import { DEFAULT_LOCAL_CONTEXT_TOKENS, DEFAULT_LOCAL_THREADS, DEFAULT_LOCAL_TIMEOUT_MS, DEFAULT_MODEL_TIMEOUT_MS, localModelIdOf, ModelConfigError, readModelConfigFile } from '../../controller/model-config-file.js';
import { STRUCTURED_OUTPUT_DIALECTS, StructuredOutputDialect } from '../../schema/model-call-policy.js';

export const MODEL_OPTIONS = {
  model: { type: 'string' },
  'model-config': { type: 'string' },
  'base-url': { type: 'string' },
  'model-id': { type: 'string' },
  'api-key-env': { type: 'string' },
  'structured-output': { type: 'string' },
  'context-size': { type: 'string' },
  'no-stream': { type: 'boolean' },
  'model-file': { type: 'string' },
  threads: { type: 'string' },
  temperature: { type: 'string' },
  'top-p': { type: 'string' },
  'model-seed': { type: 'string' },
  'max-tokens': { type: 'string' },
  'json-mode': { type: 'boolean' },
  'model-timeout-ms': { type: 'string' },
  'replay-from': { type: 'string' },
} as const;

export const MODEL_USAGE = `  --model M          reference (default: the deterministic reference policy, offline),
                     openai (--base-url URL --model-id ID [--api-key-env VAR, default OPENAI_API_KEY;
                     --api-key-env none for a local server] [--structured-output ${STRUCTURED_OUTPUT_DIALECTS.join('|')},
                     default json_schema; --json-mode = json_object] [--context-size N] [--no-stream]),
                     local (--model-file F.gguf [--threads N, default ${DEFAULT_LOCAL_THREADS}] [--context-size N, default ${DEFAULT_LOCAL_CONTEXT_TOKENS}]
                     [--model-id ID, default the file's name]; needs npm run setup:local-model once),
                     both with [--temperature T] [--top-p P] [--model-seed N] [--max-tokens N]
                     [--model-timeout-ms MS, default ${DEFAULT_MODEL_TIMEOUT_MS} (openai), ${DEFAULT_LOCAL_TIMEOUT_MS} (local)],
                     replay (--replay-from RUN_DIR: serve that run's recorded model calls)
  --model-config F   the model as a JSON file instead of the flags above (docs/model-protocol.md);
                     copied into every run folder, its sha256 in the manifest`;

/** A --model flag that is wrong or incomplete: the command's misuse (exit 2). */
export class ModelFlagError extends Error {
  override readonly name = 'ModelFlagError';
}

export type ModelFlagValues = { readonly [K in keyof typeof MODEL_OPTIONS]?: (typeof MODEL_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

function numberFlag(name: string, text: string | undefined, integer: boolean): number | null {
  if (text === undefined) return null;
  const value = Number(text);
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) throw new ModelFlagError(`--${name} must be ${integer ? 'a whole number' : 'a number'}, got ${JSON.stringify(text)}`);
  return value;
}

const SAMPLING_FLAGS = ['temperature', 'top-p', 'model-seed', 'max-tokens', 'model-timeout-ms', 'context-size', 'model-id'] as const;
const OPENAI_ONLY = ['base-url', 'api-key-env', 'structured-output', 'json-mode', 'no-stream'] as const;
const LOCAL_ONLY = ['model-file', 'threads'] as const;

function refuseFlags(values: ModelFlagValues, flags: readonly (keyof ModelFlagValues)[], why: string): void {
  for (const flag of flags) if (values[flag] !== undefined) throw new ModelFlagError(`--${flag} ${why}`);
}

function checked(choice: unknown, what: string): ModelChoice {
  const parsed = ModelChoice.safeParse(choice);
  if (!parsed.success) throw new ModelFlagError(`${what}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

function apiKeyPresent(keyEnv: string | null, what: string): void {
  if (keyEnv !== null && !process.env[keyEnv]) throw new ModelFlagError(`${what}: the environment variable ${keyEnv} holding the API key is not set (use --api-key-env none, or "api_key_env": null, for a server without a key)`);
}

export function modelChoiceOf(values: ModelFlagValues): ModelChoice {
  if (values['model-config'] !== undefined) {
    const others = (Object.keys(MODEL_OPTIONS) as (keyof ModelFlagValues)[]).filter((k) => k !== 'model-config' && values[k] !== undefined);
    if (others.length > 0) throw new ModelFlagError(`--model-config names the whole model; drop ${others.map((k) => `--${k}`).join(', ')} (or put them in the file)`);
    let choice: ModelChoice;
    try {
      choice = checked(readModelConfigFile(values['model-config']), `--model-config ${values['model-config']}`);
    } catch (error) {
      if (error instanceof ModelConfigError) throw new ModelFlagError(error.message);
      throw error;
    }
    if (choice.adapter === 'openai') apiKeyPresent(choice.api_key_env, `--model-config ${values['model-config']}`);
    return choice;
  }
  const model = values.model ?? 'reference';
  if (model !== 'openai') refuseFlags(values, OPENAI_ONLY, 'applies to --model openai only');
  if (model !== 'local') refuseFlags(values, LOCAL_ONLY, 'applies to --model local only');
  if (model !== 'openai' && model !== 'local') refuseFlags(values, SAMPLING_FLAGS, 'applies to --model openai or local only');
  if (model !== 'replay' && values['replay-from'] !== undefined) throw new ModelFlagError('--replay-from applies to --model replay only');
  const params = (): Record<string, number | null> => ({ temperature: numberFlag('temperature', values.temperature, false), top_p: numberFlag('top-p', values['top-p'], false), seed: numberFlag('model-seed', values['model-seed'], true), max_tokens: numberFlag('max-tokens', values['max-tokens'], true) });
  const timeoutMs = (fallbackMs: number = DEFAULT_MODEL_TIMEOUT_MS): number => numberFlag('model-timeout-ms', values['model-timeout-ms'], true) ?? fallbackMs;
  switch (model) {
    case 'reference':
      return { adapter: 'reference' };
    case 'openai': {
      if (!values['base-url'] || !values['model-id']) throw new ModelFlagError('--model openai needs --base-url URL and --model-id ID');
      if (values['json-mode'] && values['structured-output'] !== undefined && values['structured-output'] !== 'json_object') throw new ModelFlagError('--json-mode means --structured-output json_object; give one of them');
      const dialectText = values['json-mode'] ? 'json_object' : (values['structured-output'] ?? 'json_schema');
      const dialect = StructuredOutputDialect.safeParse(dialectText);
      if (!dialect.success) throw new ModelFlagError(`--structured-output must be one of ${STRUCTURED_OUTPUT_DIALECTS.join(', ')} (got ${JSON.stringify(dialectText)})`);
      const keyEnv = values['api-key-env'] ?? 'OPENAI_API_KEY';
      const choice = checked(
        { adapter: 'openai', base_url: values['base-url'], model_id: values['model-id'], api_key_env: keyEnv === 'none' ? null : keyEnv, params: params(), dialect: dialect.data, stream: !values['no-stream'], context_size: numberFlag('context-size', values['context-size'], true), timeout_ms: timeoutMs(), config_file: null, config_sha256: null },
        '--model openai',
      );
      apiKeyPresent(keyEnv === 'none' ? null : keyEnv, '--model openai');
      return choice;
    }
    case 'local': {
      if (!values['model-file']) throw new ModelFlagError('--model local needs --model-file F.gguf (a GGUF model file the runtime loads with node-llama-cpp)');
      const modelFile = path.resolve(values['model-file']);
      return checked(
        {
          adapter: 'local',
          model_file: modelFile,
          model_id: values['model-id'] ?? localModelIdOf(modelFile),
          params: params(),
          threads: numberFlag('threads', values.threads, true) ?? DEFAULT_LOCAL_THREADS,
          context_size: numberFlag('context-size', values['context-size'], true) ?? DEFAULT_LOCAL_CONTEXT_TOKENS,
          timeout_ms: timeoutMs(DEFAULT_LOCAL_TIMEOUT_MS),
          config_file: null,
          config_sha256: null,
        },
        '--model local',
      );
    }
    case 'replay':
      if (!values['replay-from']) throw new ModelFlagError('--model replay needs --replay-from RUN_DIR (a run whose model calls are served)');
      return { adapter: 'replay', from_run: path.resolve(values['replay-from']) };
    default:
      throw new ModelFlagError(`--model must be reference, openai, local or replay (got ${JSON.stringify(model)})`);
  }
}
