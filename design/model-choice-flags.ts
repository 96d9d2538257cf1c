// A model choice as the command line spells it: the inverse of cli/model-flags.ts modelChoiceOf
// (test/cluster/batch-plan.test.ts holds the two to each other, flag by flag). Here, not in
// cli/, because a study's refusals print it as advice (study/batch/task-unit.ts planAgainCommand)
// and the study room is below the commands.
import type { ModelChoice } from './model-choice.js';

/**
 * The --model flags that give `choice` back through modelChoiceOf (its inverse): what a refusal
 * prints when it advises planning a study again with the model it was planned with. A choice read
 * from a file is named by the file (--model-config), which pins its own hash again.
 */
export function modelFlagsOf(choice: ModelChoice): string[] {
  if (choice.adapter === 'reference') return ['--model', 'reference'];
  if (choice.adapter === 'replay') return ['--model', 'replay', '--replay-from', choice.from_run];
  if (choice.config_file !== null) return ['--model-config', choice.config_file];
  const p = choice.params;
  const given = (flag: string, value: number | null): string[] => (value === null ? [] : [flag, String(value)]);
  const sampling = [...given('--temperature', p.temperature), ...given('--top-p', p.top_p), ...given('--model-seed', p.seed), ...given('--max-tokens', p.max_tokens), '--model-timeout-ms', String(choice.timeout_ms), ...given('--parallel-slots', choice.parallel_slots ?? null)];
  if (choice.adapter === 'local') return ['--model', 'local', '--model-file', choice.model_file, '--model-id', choice.model_id, '--threads', String(choice.threads), '--context-size', String(choice.context_size), ...sampling];
  return [
    '--model', 'openai', '--base-url', choice.base_url, '--model-id', choice.model_id, '--api-key-env', choice.api_key_env ?? 'none', '--structured-output', choice.dialect,
    ...given('--context-size', choice.context_size), ...(choice.stream ? [] : ['--no-stream']), ...sampling,
  ];
}
