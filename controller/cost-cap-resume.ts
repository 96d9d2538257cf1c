// A resume of an instance under a cost cap (issue 36 item 4), decided before anything is written.
// An instance that stopped at its cap would stop again at its next call under the same cap, so
// such a resume is refused unless the operator raises this instance's cap (--raise-cost-cap-usd
// with --cost-cap-reason): the raise is recorded in the resume's SystemEvent.Resumed
// (cost_cap_raised_to_usd), held by the verifier from there on, and named by the study's report as
// a departure from the pre-registration. A raise is refused where nothing stopped at a cap.
import { CostAccount, requirePricesForCap, raiseCommandOf, suggestedRaiseUsd, type CostCapRaise, type CostStanding } from '../design/cost-cap.js';
import type { ModelCallRules } from '../design/prereg.js';
import { EventEnvelope } from '../schema/envelope.js';
import { nanoUsdOf, usdText, type ModelPrices } from '../schema/model-prices.js';
import { StoreReader } from '../writer/store-reader.js';
import { InstanceError } from './instance-error.js';

export interface CostCapResumeInput {
  readonly runDir: string;
  readonly storeFile: string;
  readonly rules: ModelCallRules;
  readonly prices: ModelPrices | null;
  readonly raise: CostCapRaise | null;
}

/** The raise to record (null: none), or the refusal, with the command the tool accepts. */
export function checkCostCapBeforeResume(input: CostCapResumeInput): CostCapRaise | null {
  const capUsd = input.rules.cost_cap_usd_per_instance;
  const { raise, runDir } = input;
  if (capUsd === undefined) {
    if (raise !== null) throw new InstanceError('cost_cap', `refusing --raise-cost-cap-usd: this instance's pre-registration sets no cost cap (model_calls.cost_cap_usd_per_instance), so there is none to raise; resume it with npm run experiment -- --resume ${runDir}`);
    return null;
  }
  requirePricesForCap(capUsd, input.prices, `resume ${runDir}`);
  const standing = standingOf(input.storeFile, capUsd, input.prices!);
  const spent = `it has spent ${usdText(standing.spent_nano_usd)} of its cost cap of ${usdText(standing.cap_nano_usd)}`;
  if (raise === null) {
    if (!standing.stopped_at_cap) return null;
    throw new InstanceError(
      'cost_cap',
      `refusing to resume ${runDir}: the instance stopped at its cost cap (${spent}), and under the same cap it would stop again at its next model call. To go on, raise this instance's cap — a departure from the pre-registration, recorded in the store and named in the study's report: ${raiseCommandOf(runDir, standing)}`,
    );
  }
  if (!standing.stopped_at_cap) throw new InstanceError('cost_cap', `refusing --raise-cost-cap-usd: the instance did not stop at its cost cap (${spent}); resume it without raising: npm run experiment -- --resume ${runDir}`);
  if (nanoUsdOf(raise.usd) <= standing.cap_nano_usd) throw new InstanceError('cost_cap', `refusing --raise-cost-cap-usd ${raise.usd}: a raise must be above the cap in force (${usdText(standing.cap_nano_usd)}; ${spent}), e.g. --raise-cost-cap-usd ${suggestedRaiseUsd(standing)}`);
  return raise;
}

/** The cost standing of the stopped store, read once, one event at a time. */
function standingOf(storeFile: string, capUsd: number, prices: ModelPrices): CostStanding {
  const account = new CostAccount(capUsd, prices);
  const reader = StoreReader.open(storeFile);
  try {
    for (const row of reader.iterateEvents(0, reader.headSeq())) account.visit(EventEnvelope.parse(JSON.parse(row.envelope)));
  } finally {
    reader.close();
  }
  return account.standing;
}
