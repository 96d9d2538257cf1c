// The pre-registered cost cap of one instance (issue 36 item 4), counted from the store: what the
// instance has spent (every recorded call's cost from its usage and cache counts at the manifest's
// prices, runtime/call-cost.ts — the same number the call records carry), the cap in force (the
// pre-registration's, or the last raise a resume recorded, SystemEvent.Resumed
// cost_cap_raised_to_usd), and whether the instance stands stopped at it (its last call record is
// a `cost_cap`). One fold for the three readers: the controller (what is left, sent in each wake),
// the resume (refused at the cap unless raised) and the verifier (no made call took the spent over
// the cap in force, and no wake went on after the cap held a call back without a stop).
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { callCostNanoUsd, type CostedUsage } from '../runtime/call-cost.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { callWasMade } from '../schema/events/model-output-events.js';
import { nanoUsdOf, usdText, type ModelPrices } from '../schema/model-prices.js';
import { eventIs } from '../schema/typed-event.js';

/** A cost cap the start cannot hold: the model has no prices, so no call's cost can be counted. */
export class CostCapError extends TypedErrorOf('cost_cap_unpriced', EXIT_CODES.failed) {
  override readonly name = 'CostCapError';
}

/** The advice every refusal of an unpriced cap gives: what the tool accepts. */
export const PRICES_ADVICE = 'state the model\'s prices in its model configuration file — "prices": {"input": …, "output": …, "cache_read": …, "cache_write": …}, US dollars per million tokens (docs/model-protocol.md) — and pass it with --model-config FILE (an openai or local model)';

/** Refuses a pre-registered cap that no price can hold (`what`: the command refused, for the message). */
export function requirePricesForCap(capUsd: number | undefined, prices: ModelPrices | null, what: string): void {
  if (capUsd === undefined || prices !== null) return;
  throw new CostCapError(`refusing to ${what}: the pre-registration caps each instance's cost at $${capUsd} (model_calls.cost_cap_usd_per_instance), but the model has no prices, so what a call costs cannot be counted and the cap could not stop anything; ${PRICES_ADVICE}. Nothing was written`);
}

/** The cap in force and what was spent, after some prefix of the store. */
export interface CostStanding {
  readonly cap_nano_usd: number;
  readonly spent_nano_usd: number;
  /** The last call record is a `cost_cap`: the instance stands stopped at its cap. */
  readonly stopped_at_cap: boolean;
}

/** The cost of a stored call record (of any version: a field an older one lacks reads as not reported). */
export function recordedCallCostNanoUsd(payload: Readonly<Record<string, unknown>>, prices: ModelPrices): number {
  const usage = payload['usage'] as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  if (!usage || typeof usage.prompt_tokens !== 'number' || typeof usage.completion_tokens !== 'number') return 0;
  const count = (key: string): number | null => (typeof payload[key] === 'number' ? (payload[key] as number) : null);
  const costed: CostedUsage = { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, cache_read_tokens: count('cache_read_tokens'), cache_write_tokens: count('cache_write_tokens') };
  return callCostNanoUsd(costed, prices);
}

/**
 * The fold, one event at a time in seq order. `visit` returns what is wrong with the event against
 * the cap (null: nothing), so the verifier lists it and the controller can refuse to go on.
 */
export class CostAccount {
  private capNanoUsd: number;
  private spentNanoUsd = 0;
  private stoppedAtCap = false;
  /** A cost_cap held a call back and no stop (or raise) has followed it yet. */
  private heldBackAtSeq: number | null = null;

  constructor(
    preregisteredCapUsd: number,
    private readonly prices: ModelPrices,
  ) {
    this.capNanoUsd = nanoUsdOf(preregisteredCapUsd);
  }

  get standing(): CostStanding {
    return { cap_nano_usd: this.capNanoUsd, spent_nano_usd: this.spentNanoUsd, stopped_at_cap: this.stoppedAtCap };
  }

  visit(event: EventEnvelope): string | null {
    if (eventIs(event, 'SystemEvent.Resumed')) {
      const raised = (event.payload as Readonly<Record<string, unknown>>)['cost_cap_raised_to_usd'];
      if (typeof raised === 'number') {
        this.capNanoUsd = nanoUsdOf(raised);
        this.stoppedAtCap = false;
      }
      // Not a stop: a Resumed follows one (the store walk holds it to that), and it is the stop that answers a held-back call.
      return null;
    }
    if (eventIs(event, 'SystemEvent.EmergencyStopped')) {
      this.heldBackAtSeq = null;
      return null;
    }
    if (eventIs(event, 'ExperimentEvent.WakeStarted') && this.heldBackAtSeq !== null) {
      const seq = this.heldBackAtSeq;
      this.heldBackAtSeq = null;
      return `the cost cap held back the call at seq ${seq}, and the instance went on to ${event.payload.wake_id} without a recorded stop: a cap reached must stop the instance`;
    }
    const isCall = eventIs(event, 'ModelOutputEvent.ModelAnswered') || eventIs(event, 'ModelOutputEvent.ModelCallFailed');
    if (!isCall) return null;
    const failure = eventIs(event, 'ModelOutputEvent.ModelCallFailed') ? event.payload.failure : null;
    this.stoppedAtCap = failure === 'cost_cap';
    if (failure === 'cost_cap') {
      this.heldBackAtSeq = event.seq;
      return null;
    }
    if (!callWasMade(failure)) return null;
    this.spentNanoUsd += recordedCallCostNanoUsd(event.payload, this.prices);
    if (this.spentNanoUsd <= this.capNanoUsd) return null;
    return `the model call at seq ${event.seq} took what the instance spent to ${usdText(this.spentNanoUsd)}, over its cost cap of ${usdText(this.capNanoUsd)}: the cap must hold a call back before it could exceed it`;
  }
}

/** How the reason of a stop at the cost cap begins (controller/wake-sequence.ts): the screen's advice after it is the raise, not a plain resume. */
export const COST_CAP_STOP_WORDS = 'stopped at the cost cap';

/** An operator's raise of one instance's cost cap at a resume (--raise-cost-cap-usd, --cost-cap-reason). */
export interface CostCapRaise {
  readonly usd: number;
  readonly reason: string;
}

/** The Resumed reason that records a raise: the command and the operator's words. */
export function raisedResumeReason(runDir: string, raise: CostCapRaise): string {
  return `--resume ${runDir} --raise-cost-cap-usd ${raise.usd}: ${raise.reason}`;
}

/** Twice the cap in force, in whole cents: a raise the resume accepts (it must be above the cap). */
export function suggestedRaiseUsd(standing: CostStanding): number {
  return Math.max(0.01, Math.ceil((standing.cap_nano_usd * 2) / 1e7) / 100);
}

/** The command that resumes an instance stopped at its cap with a raised one. */
export function raiseCommandOf(runDir: string, standing: CostStanding): string {
  return `npm run experiment -- --resume ${runDir} --raise-cost-cap-usd ${suggestedRaiseUsd(standing)} --cost-cap-reason "why this instance may spend more"`;
}

/**
 * What a study's report says of one instance's cost cap (docs/oracle.md "The cost cap"): the
 * calls it held back, every raise a resume recorded (each a departure from the pre-registration,
 * with the operator's reason), and what was spent of the cap in force. [] without a cap.
 */
export function costCapNotesOf(events: readonly EventEnvelope[], capUsd: number | undefined, prices: ModelPrices | null): string[] {
  if (capUsd === undefined) return [];
  if (prices === null) return [`the pre-registration caps each instance's cost at $${capUsd}, but its model has no prices: the cap could not be held (a start refuses this; the verifier fails it)`];
  const account = new CostAccount(capUsd, prices);
  const notes: string[] = [];
  let heldBack = 0;
  for (const event of events) {
    account.visit(event);
    if (eventIs(event, 'ModelOutputEvent.ModelCallFailed') && event.payload.failure === 'cost_cap') heldBack += 1;
    const raised = eventIs(event, 'SystemEvent.Resumed') ? (event.payload as Readonly<Record<string, unknown>>)['cost_cap_raised_to_usd'] : null;
    if (typeof raised === 'number') notes.push(`DEPARTURE FROM THE PRE-REGISTRATION: its cost cap was raised to $${raised} at a resume (seq ${event.seq}), above the pre-registered $${capUsd} (model_calls.cost_cap_usd_per_instance): ${String((event.payload as Readonly<Record<string, unknown>>)['reason'])}`);
  }
  const { spent_nano_usd: spent, cap_nano_usd: cap } = account.standing;
  if (heldBack > 0) notes.unshift(`the cost cap held back ${heldBack} model call(s) (each a stop at the cap; not counted as calls)`);
  if (heldBack > 0 || notes.length > 0) notes.push(`spent ${usdText(spent)} of its cost cap of ${usdText(cap)}`);
  return notes;
}
