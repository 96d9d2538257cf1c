// Upcasters lift a stored event from an older schema_version of its type towards the
// catalogue's (spec §10.4: a version upgrade uses a migrator and never rewrites
// history). A replay applies them only when told to migrate, and only to the in-memory
// copy it hands to the projection: the stored envelope and its hashes stay as written.
import type { EventEnvelope } from './envelope.js';
import { ModelAnswered, ModelCallFailed } from './events/model-output-events.js';
import { BudgetLedgerRecorded } from './events/experiment-events.js';
import { Resumed } from './events/system-events.js';

/** The event as it reads one schema version later (or at the catalogue's version). */
export interface Upcast {
  readonly schema_version: string;
  readonly payload: Record<string, unknown>;
}

/** Pure: no clock, no randomness, no I/O, and no mutation of `event`. */
export type Upcaster = (event: Readonly<EventEnvelope>) => Upcast;

/** Keyed by upcasterKey(event_type, from_version). */
export type UpcasterRegistry = ReadonlyMap<string, Upcaster>;

export function upcasterKey(eventType: string, fromVersion: string): string {
  return `${eventType}@${fromVersion}`;
}

/**
 * The upcasters this build ships. Catalogue 1.1.0 (issue 15) bumped the two model-call events;
 * what they did not record reads as "not known" (null), never as a made-up measurement:
 * - ModelAnswered 1.2.0 → 1.3.0: protocol ds-model-output/1 (the only one then), no finish
 *   reason, response model or prompt count, one attempt; usage_estimated true ⇒ usage_source
 *   "estimate", false ⇒ "server".
 * - ModelCallFailed 1.1.0 → 1.2.0: the same call record; no usage (it was not recorded). A
 *   budget_exhausted call asked for nothing, but the field is not nullable: it keeps /1.
 * Catalogue 1.2.0 (issue 34): ModelAnswered 1.3.0 → 1.4.0 and ModelCallFailed 1.2.0 → 1.3.0 add
 * prompt_reuse, null (nobody recorded what a cache served).
 * Catalogue 1.3.0 (issue 36): ModelAnswered 1.4.0 → 1.5.0 and ModelCallFailed 1.3.0 → 1.4.0 add
 * provider_finish_reason, cache_read_tokens, cache_write_tokens and cost_nano_usd, each null
 * (not recorded: no adapter then mapped a finish reason, counted a cache's tokens or priced a call);
 * BudgetLedgerRecorded 1.0.0 → 1.1.0 adds used.cost_nano_usd, null (no call was priced).
 */
const LEGACY_CALL_RECORD = { protocol: 'ds-model-output/1', finish_reason: null, response_model: null, prompt_tokens_counted: null, prompt_count_source: null, attempts: 1 } as const;

/** Catalogue 1.2.0 (issue 34): the call record's prompt_reuse, not reported before it (null). */
const withoutReuse = (event: Readonly<EventEnvelope>, to: string): Upcast => ({ schema_version: to, payload: { ...(event.payload as Record<string, unknown>), prompt_reuse: null } });

/** Catalogue 1.3.0 (issue 36): what no call recorded before it, null. */
const withoutCost = (event: Readonly<EventEnvelope>, to: string): Upcast => ({ schema_version: to, payload: { ...(event.payload as Record<string, unknown>), provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null, cost_nano_usd: null } });

export const BUILT_IN_UPCASTERS: UpcasterRegistry = new Map<string, Upcaster>([
  [
    upcasterKey(ModelAnswered.type, '1.2.0'),
    (event) => {
      const { usage_estimated, ...rest } = event.payload as Record<string, unknown>;
      return { schema_version: '1.3.0', payload: { ...rest, ...LEGACY_CALL_RECORD, usage_source: usage_estimated === true ? 'estimate' : 'server' } };
    },
  ],
  [
    upcasterKey(ModelCallFailed.type, '1.1.0'),
    (event) => ({ schema_version: '1.2.0', payload: { ...(event.payload as Record<string, unknown>), ...LEGACY_CALL_RECORD, usage: null, usage_source: null } }),
  ],
  [upcasterKey(ModelAnswered.type, '1.3.0'), (event) => withoutReuse(event, '1.4.0')],
  [upcasterKey(ModelCallFailed.type, '1.2.0'), (event) => withoutReuse(event, '1.3.0')],
  [upcasterKey(ModelAnswered.type, '1.4.0'), (event) => withoutCost(event, '1.5.0')],
  [upcasterKey(ModelCallFailed.type, '1.3.0'), (event) => withoutCost(event, '1.4.0')],
  [
    upcasterKey(BudgetLedgerRecorded.type, '1.0.0'),
    (event) => {
      const payload = event.payload as Record<string, unknown>;
      return { schema_version: '1.1.0', payload: { ...payload, used: { ...(payload['used'] as Record<string, unknown>), cost_nano_usd: null } } };
    },
  ],
  // Catalogue 1.3.0 (issue 36): no resume before it raised a cost cap (there was none).
  [upcasterKey(Resumed.type, '1.0.0'), (event) => ({ schema_version: '1.1.0', payload: { ...(event.payload as Record<string, unknown>), cost_cap_raised_to_usd: null } })],
]);
