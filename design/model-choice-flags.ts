// A model choice as the command line spells it: the inverse of cli/model-flags.ts modelChoiceOf
// (test/cluster/batch-plan.test.ts holds the two to each other, flag by flag). Here, not in
// cli/, because a study's refusals print it as advice (study/batch/task-unit.ts planAgainCommand)
// and the study room is below the commands.
import { assertNever } from '../foundation/assert-never.js';
import type { ModelChoice } from './model-choice.js';
import { PRICE_KINDS } from '../schema/model-prices.js';

/**
 * The --model flags that give `choice` back through modelChoiceOf (its inverse): what a refusal
 * prints when it advises planning a study again with the model it was planned with. A choice read
 * from a file is named by the file (--model-config), which pins its own hash again.
 */
export function modelFlagsOf(choice: ModelChoice): string[] {
  switch (choice.adapter) {
    case 'reference':
      return ['--model', 'reference'];
    case 'replay':
      return ['--model', 'replay', '--replay-from', choice.from_run];
    case 'local':
      if (choice.config_file !== null) return ['--model-config', choice.config_file];
      return ['--model', 'local', '--model-file', choice.model_file, '--model-id', choice.model_id, '--threads', String(choice.threads), '--context-size', String(choice.context_size), ...(choice.kv_reuse ? [] : ['--no-kv-reuse']), ...samplingFlagsOf(choice)];
    case 'openai':
      if (choice.config_file !== null) return ['--model-config', choice.config_file];
      return [
        '--model', 'openai', '--base-url', choice.base_url, '--model-id', choice.model_id, '--api-key-env', choice.api_key_env ?? 'none', '--structured-output', choice.dialect,
        ...givenFlag('--context-size', choice.context_size), ...(choice.stream ? [] : ['--no-stream']), ...samplingFlagsOf(choice),
      ];
    case 'anthropic':
      if (choice.config_file !== null) return ['--model-config', choice.config_file];
      return [
        '--model', 'anthropic', '--base-url', choice.base_url, '--model-id', choice.model_id, '--api-key-env', choice.api_key_env, '--structured-output', choice.dialect,
        ...givenFlag('--context-size', choice.context_size), ...(choice.stream ? [] : ['--no-stream']), ...(choice.count_tokens ? ['--count-tokens'] : []), ...samplingFlagsOf(choice),
      ];
    case 'gemini':
      if (choice.config_file !== null) return ['--model-config', choice.config_file];
      return [
        '--model', 'gemini', '--base-url', choice.base_url, '--model-id', choice.model_id, '--api-key-env', choice.api_key_env, '--structured-output', choice.dialect,
        ...givenFlag('--context-size', choice.context_size), ...(choice.stream ? [] : ['--no-stream']), ...(choice.count_tokens ? ['--count-tokens'] : []), ...samplingFlagsOf(choice),
      ];
    default:
      return assertNever(choice, 'model choice');
  }
}

function givenFlag(flag: string, value: number | null): string[] {
  return value === null ? [] : [flag, String(value)];
}

/** The flags of a model that samples and is waited for: its parameters, its call timeout, its parallel slots. */
function samplingFlagsOf(choice: Extract<ModelChoice, { readonly timeout_ms: number }>): string[] {
  const p = choice.params;
  return [...givenFlag('--temperature', p.temperature), ...givenFlag('--top-p', p.top_p), ...givenFlag('--model-seed', p.seed), ...givenFlag('--max-tokens', p.max_tokens), '--model-timeout-ms', String(choice.timeout_ms), ...givenFlag('--parallel-slots', choice.parallel_slots ?? null), ...pricesFlagOf(choice)];
}

/** `--prices IN,OUT,CACHE_READ,CACHE_WRITE` when the choice is priced (cli/model-flags.ts pricesFlag reads it back). */
function pricesFlagOf(choice: Extract<ModelChoice, { readonly timeout_ms: number }>): string[] {
  const prices = choice.prices;
  return prices === undefined ? [] : ['--prices', PRICE_KINDS.map((k) => String(prices[k])).join(',')];
}
