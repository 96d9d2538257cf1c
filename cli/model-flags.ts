// The --model flags shared by npm run experiment and npm run study: one parser, so a study's
// instances are configured exactly as a single experiment would be. `--model-config FILE` names
// the same choice as a file (controller/model-config-file.ts); the flags keep working. For
// `--model replay`, replaySettingsOf decides the settings a replay must share with its source.
import path from 'node:path';
import type { Group } from '../controller/instance-runner.js';
import { GROUP_CAPABILITIES } from '../design/manifest.js';
import { ModelChoice, type ReplaySource } from '../design/model-choice.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { RUN_FILES } from '../schema/run-files.js';
import { DEFAULT_LOCAL_CONTEXT_TOKENS, DEFAULT_LOCAL_THREADS, DEFAULT_LOCAL_TIMEOUT_MS, DEFAULT_MODEL_TIMEOUT_MS, localModelIdOf, ModelConfigError, readModelConfigFile } from '../controller/model-config-file.js';
import { ANTHROPIC_DIALECTS, AnthropicDialect, GEMINI_DIALECTS, GeminiDialect, STRUCTURED_OUTPUT_DIALECTS, StructuredOutputDialect } from '../schema/model-call-policy.js';
import { ModelPrices, PRICE_KINDS } from '../schema/model-prices.js';
import { ANTHROPIC_BASE_URL, DEFAULT_GEMINI_BASE_URL } from '../runtime/protocol.js';
import { UsageError } from './command-line.js';

export const MODEL_OPTIONS = {
  model: { type: 'string' },
  'model-config': { type: 'string' },
  'base-url': { type: 'string' },
  'model-id': { type: 'string' },
  'api-key-env': { type: 'string' },
  'structured-output': { type: 'string' },
  'context-size': { type: 'string' },
  'no-stream': { type: 'boolean' },
  'count-tokens': { type: 'boolean' },
  'no-kv-reuse': { type: 'boolean' },
  'model-file': { type: 'string' },
  threads: { type: 'string' },
  temperature: { type: 'string' },
  'top-p': { type: 'string' },
  'model-seed': { type: 'string' },
  'max-tokens': { type: 'string' },
  'json-mode': { type: 'boolean' },
  'model-timeout-ms': { type: 'string' },
  'parallel-slots': { type: 'string' },
  prices: { type: 'string' },
  'replay-from': { type: 'string' },
} as const;

export const MODEL_USAGE = `  --model M          reference (default: the deterministic reference policy, offline),
                     openai (--base-url URL --model-id ID [--api-key-env VAR, default OPENAI_API_KEY;
                     --api-key-env none for a local server] [--structured-output ${STRUCTURED_OUTPUT_DIALECTS.join('|')},
                     default json_schema; --json-mode = json_object] [--context-size N] [--no-stream]),
                     anthropic (--model-id ID [--api-key-env VAR, default ANTHROPIC_API_KEY] [--base-url URL,
                     default ${ANTHROPIC_BASE_URL}] [--structured-output ${ANTHROPIC_DIALECTS.join('|')}, default anthropic_json]
                     [--context-size N: the input window when the Models API reports none] [--no-stream]
                     [--count-tokens: count each prompt with POST /v1/messages/count_tokens]; no --model-seed),
                     gemini (--model-id M --api-key-env VAR [--base-url URL, default ${DEFAULT_GEMINI_BASE_URL}]
                     [--structured-output ${GEMINI_DIALECTS.join('|')}] [--context-size N: when the Models API reports none]
                     [--count-tokens: count each prompt with :countTokens] [--no-stream]: Google's Gemini API, natively),
                     local (--model-file F.gguf [--threads N, default ${DEFAULT_LOCAL_THREADS}] [--context-size N, default ${DEFAULT_LOCAL_CONTEXT_TOKENS}] [--no-kv-reuse]
                     [--model-id ID, default the file's name]; needs npm run setup:local-model once),
                     each with [--temperature T] [--top-p P] [--model-seed N] [--max-tokens N]
                     [--model-timeout-ms MS, default ${DEFAULT_MODEL_TIMEOUT_MS} (openai, anthropic, gemini), ${DEFAULT_LOCAL_TIMEOUT_MS} (local)]
                     [--parallel-slots N: calls the server takes at once (llama-server --parallel), default 1:
                     a study's block lets that many of its A, B, C calls run together]
                     [--prices IN,OUT,CACHE_READ,CACHE_WRITE: US dollars per million tokens of each kind,
                     e.g. 3,15,0.3,3.75; every call record then carries its cost; absent: not priced],
                     replay (--replay-from RUN_DIR: serve that run's recorded model calls; group, seed,
                     start, experiment id and replicate default to that run's, so that it is reproduced)
  --model-config F   the model as a JSON file instead of the flags above (docs/model-protocol.md);
                     copied into every run folder, its sha256 in the manifest`;

/** A --model flag that is wrong or incomplete: the command's misuse (exit 2), a usage error of its own code (`usage_model_flags`). */
export class ModelFlagError extends UsageError {
  override readonly name = 'ModelFlagError';
  static override readonly classCode = 'usage_model_flags';
}

export type ModelFlagValues = { readonly [K in keyof typeof MODEL_OPTIONS]?: (typeof MODEL_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

function numberFlag(name: string, text: string | undefined, integer: boolean): number | null {
  if (text === undefined) return null;
  const value = Number(text);
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) throw new ModelFlagError(`--${name} must be ${integer ? 'a whole number' : 'a number'}, got ${JSON.stringify(text)}`);
  return value;
}

const SAMPLING_FLAGS = ['temperature', 'top-p', 'model-seed', 'max-tokens', 'model-timeout-ms', 'context-size', 'model-id', 'parallel-slots', 'prices'] as const;
const SERVER_FLAGS = ['base-url', 'api-key-env', 'structured-output', 'no-stream'] as const;
const OPENAI_ONLY = ['json-mode'] as const;
/** The hosted APIs with a token-counting endpoint of their own (anthropic's count_tokens, gemini's :countTokens). */
const COUNTING_ONLY = ['count-tokens'] as const;
const LOCAL_ONLY = ['model-file', 'threads', 'no-kv-reuse'] as const;

/** `--prices IN,OUT,CACHE_READ,CACHE_WRITE` (schema/model-prices.ts PRICE_KINDS, in that order); absent: not priced. */
function pricesFlag(text: string | undefined): { prices: ModelPrices } | Record<string, never> {
  if (text === undefined) return {};
  const parts = text.split(',').map((p) => p.trim());
  const numbers = parts.map(Number);
  if (parts.length !== PRICE_KINDS.length || parts.some((p) => p === '') || numbers.some((n) => !Number.isFinite(n))) throw new ModelFlagError(`--prices takes ${PRICE_KINDS.length} numbers, US dollars per million ${PRICE_KINDS.join(', ')} tokens, e.g. --prices 3,15,0.3,3.75 (got ${JSON.stringify(text)})`);
  const parsed = ModelPrices.safeParse(Object.fromEntries(PRICE_KINDS.map((k, i) => [k, numbers[i]])));
  if (!parsed.success) throw new ModelFlagError(`--prices ${text}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return { prices: parsed.data };
}

function refuseFlags(values: ModelFlagValues, flags: readonly (keyof ModelFlagValues)[], why: string): void {
  for (const flag of flags) if (values[flag] !== undefined) throw new ModelFlagError(`--${flag} ${why}`);
}

function checked(choice: unknown, what: string): ModelChoice {
  const parsed = ModelChoice.safeParse(choice);
  if (!parsed.success) throw new ModelFlagError(`${what}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** How a missing key is put right: `optional` for a server that may want none (openai), `required` for an API that always does (anthropic), `file` for a configuration file (either). */
const KEY_ADVICE = {
  optional: 'use --api-key-env none, or "api_key_env": null, for a server without a key',
  required: 'set it, or name the variable that holds the key with --api-key-env VAR',
  file: 'set it, or name the variable that holds the key as "api_key_env" (null for an openai server without a key)',
} as const;

function apiKeyPresent(keyEnv: string | null, what: string, advice: string = KEY_ADVICE.optional): void {
  if (keyEnv !== null && !process.env[keyEnv]) throw new ModelFlagError(`${what}: the environment variable ${keyEnv} holding the API key is not set (${advice})`);
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
    if ('api_key_env' in choice) apiKeyPresent(choice.api_key_env, `--model-config ${values['model-config']}`, KEY_ADVICE.file);
    return choice;
  }
  const model = values.model ?? 'reference';
  const server = model === 'openai' || model === 'anthropic' || model === 'gemini';
  if (!server) refuseFlags(values, SERVER_FLAGS, 'applies to --model openai, anthropic or gemini only');
  if (model !== 'openai') refuseFlags(values, OPENAI_ONLY, 'applies to --model openai only');
  if (model !== 'anthropic' && model !== 'gemini') refuseFlags(values, COUNTING_ONLY, 'applies to --model anthropic or gemini only');
  if (model !== 'local') refuseFlags(values, LOCAL_ONLY, 'applies to --model local only');
  if (!server && model !== 'local') refuseFlags(values, SAMPLING_FLAGS, 'applies to --model openai, anthropic, gemini or local only');
  if (model !== 'replay' && values['replay-from'] !== undefined) throw new ModelFlagError('--replay-from applies to --model replay only');
  const params = (): Record<string, number | null> => ({ temperature: numberFlag('temperature', values.temperature, false), top_p: numberFlag('top-p', values['top-p'], false), seed: numberFlag('model-seed', values['model-seed'], true), max_tokens: numberFlag('max-tokens', values['max-tokens'], true) });
  const timeoutMs = (fallbackMs: number = DEFAULT_MODEL_TIMEOUT_MS): number => numberFlag('model-timeout-ms', values['model-timeout-ms'], true) ?? fallbackMs;
  // Only when given: a choice without it means one slot, and says nothing it was not told.
  const slots = numberFlag('parallel-slots', values['parallel-slots'], true);
  const scheduling = { ...(slots === null ? {} : { parallel_slots: slots }), ...pricesFlag(values.prices) };
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
        { adapter: 'openai', base_url: values['base-url'], model_id: values['model-id'], api_key_env: keyEnv === 'none' ? null : keyEnv, params: params(), dialect: dialect.data, stream: !values['no-stream'], context_size: numberFlag('context-size', values['context-size'], true), timeout_ms: timeoutMs(), config_file: null, config_sha256: null, ...scheduling },
        '--model openai',
      );
      apiKeyPresent(keyEnv === 'none' ? null : keyEnv, '--model openai');
      return choice;
    }
    case 'anthropic': {
      if (!values['model-id']) throw new ModelFlagError('--model anthropic needs --model-id ID (a model the key may use, e.g. as GET /v1/models lists them)');
      const dialectText = values['structured-output'] ?? 'anthropic_json';
      const dialect = AnthropicDialect.safeParse(dialectText);
      if (!dialect.success) throw new ModelFlagError(`--structured-output for --model anthropic must be one of ${ANTHROPIC_DIALECTS.join(', ')} (got ${JSON.stringify(dialectText)})`);
      const keyEnv = values['api-key-env'] ?? 'ANTHROPIC_API_KEY';
      if (keyEnv === 'none') throw new ModelFlagError('--model anthropic needs an API key: --api-key-env VAR names the environment variable holding it (the Messages API answers no request without one)');
      const choice = checked(
        { adapter: 'anthropic', base_url: values['base-url'] ?? ANTHROPIC_BASE_URL, model_id: values['model-id'], api_key_env: keyEnv, params: params(), dialect: dialect.data, stream: !values['no-stream'], context_size: numberFlag('context-size', values['context-size'], true), timeout_ms: timeoutMs(), count_tokens: values['count-tokens'] === true, config_file: null, config_sha256: null, ...scheduling },
        '--model anthropic',
      );
      apiKeyPresent(keyEnv, '--model anthropic', KEY_ADVICE.required);
      return choice;
    }
    case 'gemini': {
      if (!values['model-id'] || !values['api-key-env']) throw new ModelFlagError('--model gemini needs --model-id M (e.g. gemini-2.5-flash) and --api-key-env VAR (the environment variable holding the API key; the key itself is never written anywhere)');
      if (values['api-key-env'] === 'none') throw new ModelFlagError('--model gemini: the Gemini API takes no call without a key; name the environment variable holding it with --api-key-env VAR');
      const dialectText = values['structured-output'] ?? GEMINI_DIALECTS[0];
      const dialect = GeminiDialect.safeParse(dialectText);
      if (!dialect.success) throw new ModelFlagError(`--model gemini: --structured-output must be one of ${GEMINI_DIALECTS.join(', ')} (got ${JSON.stringify(dialectText)})`);
      const choice = checked(
        { adapter: 'gemini', base_url: values['base-url'] ?? DEFAULT_GEMINI_BASE_URL, model_id: values['model-id'], api_key_env: values['api-key-env'], params: params(), dialect: dialect.data, stream: !values['no-stream'], context_size: numberFlag('context-size', values['context-size'], true), timeout_ms: timeoutMs(), count_tokens: values['count-tokens'] === true, config_file: null, config_sha256: null, ...scheduling },
        '--model gemini',
      );
      apiKeyPresent(values['api-key-env'], '--model gemini', KEY_ADVICE.required);
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
          kv_reuse: !values['no-kv-reuse'],
          config_file: null,
          config_sha256: null,
          ...scheduling,
        },
        '--model local',
      );
    }
    case 'replay':
      if (!values['replay-from']) throw new ModelFlagError('--model replay needs --replay-from RUN_DIR (a run whose model calls are served)');
      return { adapter: 'replay', from_run: path.resolve(values['replay-from']) };
    default:
      throw new ModelFlagError(`--model must be reference, openai, anthropic, gemini, local or replay (got ${JSON.stringify(model)})`);
  }
}

/** The flags of npm run experiment a replay decides (absent: not given). */
export interface ReplayFlagValues {
  readonly group?: string | undefined;
  readonly seed?: string | undefined;
  readonly 'start-at'?: string | undefined;
  readonly 'experiment-id'?: string | undefined;
  readonly replicate?: string | undefined;
}

/** What a replay runs with, and the screen lines that say where each value came from. */
export interface ReplaySettings {
  readonly group: Group;
  readonly seed: string;
  readonly startAt: string;
  readonly experimentId: string;
  readonly replicate: number;
  readonly lines: readonly string[];
}

const GROUPS = Object.keys(GROUP_CAPABILITIES) as Group[];

/**
 * The settings of a replay of `source` (issue 16 item 5): each defaults to the source run's, so
 * that `--model replay --replay-from RUN` alone reproduces RUN. An explicit value that differs
 * is refused (ModelFlagError, exit 2) when the replay could not line up with its recordings:
 * another group, seed or start puts other events at the seqs the recorded answers cite. Another
 * experiment id or replicate only renames the events (their ids derive from them): taken, and
 * said, for /2 recordings, which cite seqs; refused for /1 recordings, which cite event ids.
 */
export function replaySettingsOf(source: ReplaySource, given: ReplayFlagValues, preregSha256: string): ReplaySettings {
  const from = `--replay-from ${source.runDir}`;
  if (preregSha256 !== source.preregSha256) {
    throw new ModelFlagError(`${from}: the source ran under the pre-registration ${source.preregSha256}, this one hashes to ${preregSha256}: a replay under another pre-registration has another schedule and budgets and does not reproduce its source; copy ${path.join(source.runDir, RUN_FILES.prereg)} out of the run folder, lock the copy (npm run prereg -- lock FILE) and pass it with --prereg`);
  }
  const sourceGroup = GROUPS.find((g) => canonicalJson(GROUP_CAPABILITIES[g]) === canonicalJson(source.capabilities));
  if (sourceGroup === undefined) throw new ModelFlagError(`${from}: its signed manifest's capabilities ${canonicalJson(source.capabilities)} are no group's of this build (A, B or C): it cannot be replayed as any of them`);
  const conflict = (flag: string, value: string, theirs: string): ModelFlagError =>
    new ModelFlagError(`--${flag} ${value} conflicts with ${from}, which ran with ${theirs}: a replay reproduces its source only under the same ${flag} (another one puts other events where the recorded answers point); drop --${flag}, it defaults to the source's`);
  if (given.group !== undefined && given.group !== sourceGroup) throw conflict('group', given.group, `group ${sourceGroup}'s capabilities`);
  if (given.seed !== undefined && given.seed !== source.seed) throw conflict('seed', given.seed, `seed ${source.seed}`);
  const startAt = given['start-at'];
  if (startAt !== undefined && Date.parse(startAt) !== Date.parse(source.startAt)) throw conflict('start-at', startAt, `hour 0 at ${source.startAt}`);
  let replicate = source.replicate;
  if (given.replicate !== undefined) {
    replicate = Number(given.replicate);
    if (!Number.isInteger(replicate) || replicate < 1) throw new ModelFlagError(`--replicate must be a whole number ≥ 1, got ${given.replicate}`);
  }
  const experimentId = given['experiment-id'] ?? source.experimentId;
  const lines = [`replay of ${source.runDir}: group ${sourceGroup}, seed ${source.seed}, hour 0 at ${source.startAt}, experiment ${source.experimentId}, replicate ${source.replicate}: the source run's (a replay reproduces its source only under its settings)`];
  if (experimentId !== source.experimentId || replicate !== source.replicate) {
    const renamed = `experiment ${experimentId}, replicate ${replicate} (the source's: ${source.experimentId}, replicate ${source.replicate})`;
    if (source.protocol !== 'ds-model-output/2') {
      throw new ModelFlagError(`--experiment-id/--replicate give ${renamed}: the source's answers are ${source.protocol}, which cite event ids, and event ids derive from the experiment id and replicate, so every cited event would be missing; drop them, they default to the source's`);
    }
    lines.push(`replay under ${renamed}: its events get other ids than the source's; the recorded ${source.protocol} answers cite seqs, so they still line up`);
  }
  return { group: sourceGroup, seed: source.seed, startAt: source.startAt, experimentId, replicate, lines };
}
