// The resume's flags that raise an instance's cost cap (issue 36 item 4, controller/cost-cap-resume.ts):
// --raise-cost-cap-usd USD with --cost-cap-reason TEXT, both or neither, only with --resume.
import type { CostCapRaise } from '../design/cost-cap.js';
import { CostCapUsd } from '../schema/model-prices.js';
import { UsageError } from './command-line.js';

export const COST_CAP_OPTIONS = {
  'raise-cost-cap-usd': { type: 'string' },
  'cost-cap-reason': { type: 'string' },
} as const;

export const COST_CAP_USAGE = `  --raise-cost-cap-usd USD  with --resume, of an instance stopped at its cost cap: its cap from now on
                     (above the one in force), a departure from the pre-registration recorded in the
                     store and named in the study's report; needs --cost-cap-reason TEXT (why)`;

/** The raise the flags ask for (null: none); a usage error for half of it, a bad amount, or without --resume. */
export function costCapRaiseOf(values: { readonly 'raise-cost-cap-usd'?: string | undefined; readonly 'cost-cap-reason'?: string | undefined; readonly resume?: string | undefined }): CostCapRaise | null {
  const usdText = values['raise-cost-cap-usd'];
  const reason = values['cost-cap-reason']?.trim();
  if (usdText === undefined && reason === undefined) return null;
  if (values.resume === undefined) throw new UsageError('--raise-cost-cap-usd and --cost-cap-reason go with --resume DIR: a new instance holds the pre-registered cap');
  if (usdText === undefined || reason === undefined || reason.length === 0) throw new UsageError('give both --raise-cost-cap-usd USD and --cost-cap-reason TEXT (why this instance may spend more): a raise is recorded with its reason');
  const usd = CostCapUsd.safeParse(Number(usdText));
  if (!/^\d+(\.\d+)?$/.test(usdText) || !usd.success) throw new UsageError(`--raise-cost-cap-usd must be a dollar amount above 0 and at most 1000000, e.g. 2.50 (got ${JSON.stringify(usdText)})`);
  if (reason.length > 1_000) throw new UsageError(`--cost-cap-reason is ${reason.length} characters: say why in at most 1000`);
  return { usd: usd.data, reason };
}
