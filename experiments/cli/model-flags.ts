// The --model flags shared by npm run experiment and npm run study: one parser, so a study's
// instances are configured exactly as a single experiment would be.
import path from 'node:path';
import { DEFAULT_MODEL_TIMEOUT_MS, ModelChoice } from '../../controller/model-choice.js';

export const MODEL_OPTIONS = {
  model: { type: 'string' },
  'base-url': { type: 'string' },
  'model-id': { type: 'string' },
  'api-key-env': { type: 'string' },
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
                     --api-key-env none for a local server] [--temperature T] [--top-p P]
                     [--model-seed N] [--max-tokens N] [--json-mode] [--model-timeout-ms MS, default ${DEFAULT_MODEL_TIMEOUT_MS}]),
                     replay (--replay-from RUN_DIR: serve that run's recorded model calls)`;

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

export function modelChoiceOf(values: ModelFlagValues): ModelChoice {
  const model = values.model ?? 'reference';
  const openaiFlags = ['base-url', 'model-id', 'api-key-env', 'temperature', 'top-p', 'model-seed', 'max-tokens', 'json-mode', 'model-timeout-ms'] as const;
  if (model !== 'openai') {
    for (const flag of openaiFlags) if (values[flag] !== undefined) throw new ModelFlagError(`--${flag} applies to --model openai only`);
  }
  if (model !== 'replay' && values['replay-from'] !== undefined) throw new ModelFlagError('--replay-from applies to --model replay only');
  switch (model) {
    case 'reference':
      return { adapter: 'reference' };
    case 'openai': {
      if (!values['base-url'] || !values['model-id']) throw new ModelFlagError('--model openai needs --base-url URL and --model-id ID');
      const keyEnv = values['api-key-env'] ?? 'OPENAI_API_KEY';
      const params = { temperature: numberFlag('temperature', values.temperature, false), top_p: numberFlag('top-p', values['top-p'], false), seed: numberFlag('model-seed', values['model-seed'], true), max_tokens: numberFlag('max-tokens', values['max-tokens'], true) };
      const choice = ModelChoice.safeParse({ adapter: 'openai', base_url: values['base-url'], model_id: values['model-id'], api_key_env: keyEnv === 'none' ? null : keyEnv, params, json_mode: values['json-mode'] ?? false, timeout_ms: numberFlag('model-timeout-ms', values['model-timeout-ms'], true) ?? DEFAULT_MODEL_TIMEOUT_MS });
      if (!choice.success) throw new ModelFlagError(`--model openai: ${choice.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
      if (keyEnv !== 'none' && !process.env[keyEnv]) throw new ModelFlagError(`--model openai: the environment variable ${keyEnv} holding the API key is not set (use --api-key-env none for a server without a key)`);
      return choice.data;
    }
    case 'replay':
      if (!values['replay-from']) throw new ModelFlagError('--model replay needs --replay-from RUN_DIR (a run whose model calls are served)');
      return { adapter: 'replay', from_run: path.resolve(values['replay-from']) };
    default:
      throw new ModelFlagError(`--model must be reference, openai or replay (got ${JSON.stringify(model)})`);
  }
}

