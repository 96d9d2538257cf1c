// What a study will cost, stated by its plan (issue 35 item 2) and kept in study.json: instances,
// model calls (one per wake: runtime/wake-loop.ts `think`, each with at most the pre-registered
// transport attempts), and — where the model's server was checked before hour 0 — the predicted
// time and tokens from the check's measured speed (design/model-forecast.ts). Made by
// study/plan-cost.ts; said on screen at plan time and in --plan-only's --json.
import { z } from 'zod';
import { ModelPrices } from '../schema/model-prices.js';

const Count = z.number().int().min(0);
const Range = z.strictObject({ low: Count, high: Count });

export const PlanCost = z.strictObject({
  /** Round 1 (n_initial per group), and every group expanded to n_expanded by the pre-registered rule. */
  instances: z.strictObject({ round_1: Count, at_most: Count }),
  /** Over the replicates' wake schedules (the same for A, B and C of a replicate; drawn from its seed). */
  wakes_per_instance: z.strictObject({ min: Count, max: Count }),
  /** One model call per wake, summed over the instances. */
  model_calls: z.strictObject({ round_1: Count, at_most: Count }),
  /** The pre-registered transport retry policy's attempts per call at most (a retried call counts once above). */
  attempts_per_call_at_most: Count,
  /** From the check before hour 0; null when none ran (`not_predicted` says why). */
  predicted: z
    .strictObject({
      /** The measured speed the prediction rests on, in words. */
      speed: z.string().max(500),
      instance_ms: Range,
      /** Round 1 on one server, `blocks_at_once` blocks and so `calls_at_once` calls at once. */
      round_1_ms: Range,
      blocks_at_once: Count,
      /** Where `blocks_at_once` comes from, in words: a one-machine study's --concurrency, or a batch plan's assumption (the scheduler decides). */
      blocks_at_once_source: z.string().max(500),
      calls_at_once: Count,
      tokens_per_call: Range,
      tokens_per_instance: Range,
      tokens_round_1: Range,
      /**
       * Issue 36: the expected cost in nano-USD, a forecast from the preflight's token figures
       * (tokens_per_call, prompt and answer apart) at the configured `prices`: low, every prompt
       * token at the input price; high, the largest prompt at the dearer of the input and
       * cache-write prices with the whole answer cap. Null: the model states no prices.
       * Absent: a plan made before costs.
       */
      cost: z
        .strictObject({ prices: ModelPrices, per_call_nano_usd: Range, per_instance_nano_usd: Range, round_1_nano_usd: Range, at_most_nano_usd: Range })
        .nullable()
        .optional(),
    })
    .nullable(),
  not_predicted: z.string().max(1_000).nullable(),
});
export type PlanCost = z.infer<typeof PlanCost>;
