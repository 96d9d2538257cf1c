// Recorded model calls as the replay adapter serves them: the stored ModelOutputEvents of a run
// turned into the protocol's RecordedModelCall list. Shared by the controller (which reads the
// source run and sends the list in the runtime's start message) and the replay adapter, like
// runtime/protocol.ts: it is the replay's wire format, not runtime logic.
import { InternalError } from '../foundation/typed-error.js';
import type { EventEnvelope } from '../schema/envelope.js';
import type { PayloadOf } from '../schema/event-catalog.js';
import { ModelAnswered, ModelCallFailed, type PromptReuse } from '../schema/events/model-output-events.js';
import { currentPayloadOf } from '../schema/current-payload.js';
import type { ModelProtocol } from './model-protocol.js';
import type { RecordedModelCall } from './protocol.js';

/** The reference policy's and the prompt's token estimate (runtime/prompt.ts estimateTokens). */
const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

export class ReplayRecordingError extends InternalError {
  override readonly name = 'ReplayRecordingError';
}

/** A stored model event read at its own version and lifted to the current one (schema/current-payload.ts). */
function currentPayload(e: EventEnvelope): { answered: PayloadOf<'ModelOutputEvent.ModelAnswered'> } | { failed: PayloadOf<'ModelOutputEvent.ModelCallFailed'> } | null {
  if (e.event_type !== ModelAnswered.type && e.event_type !== ModelCallFailed.type) return null;
  const current = currentPayloadOf(e);
  if (!current.ok) throw new ReplayRecordingError(`replay: event seq ${e.seq} (${e.event_type}): ${current.reason}`);
  const typed = current.event;
  if (typed.event_type === 'ModelOutputEvent.ModelAnswered') return { answered: typed.payload };
  if (typed.event_type === 'ModelOutputEvent.ModelCallFailed') return { failed: typed.payload };
  return null;
}

/**
 * The answer protocol a store's model calls were made in: one for the whole run (a replay
 * never mixes them). Calls recorded before issue 15 (ModelAnswered 1.2.0, ModelCallFailed
 * 1.1.0) were all ds-model-output/1. Null when the store holds no model call.
 */
export function recordedProtocolOf(envelopes: readonly EventEnvelope[]): ModelProtocol | null {
  const seen = new Map<ModelProtocol, number>();
  for (const e of envelopes) {
    const p = currentPayload(e);
    if (p === null) continue;
    const protocol = 'answered' in p ? p.answered.protocol : p.failed.protocol;
    if (!seen.has(protocol)) seen.set(protocol, e.seq);
  }
  if (seen.size > 1) throw new ReplayRecordingError(`replay: the store mixes answer protocols (${[...seen].map(([p, seq]) => `${p} from seq ${seq}`).join(', ')}); a replay would have to pick one`);
  return seen.keys().next().value ?? null;
}

/**
 * The recorded calls of a store, in seq order; call_number is the call's position within its
 * wake. Per ModelOutputEvent (of either version, lifted to the current one):
 * - ModelAnswered → answered, as stored.
 * - ModelCallFailed timeout / transport / http_error / refusal / truncated_prompt /
 *   stream_broken → failed, as stored.
 * - ModelCallFailed schema_violation / length → answered with the stored raw text: the call was
 *   made and answered, and the wake loop must fail the same text the same way. Its usage is the
 *   recorded one; an old event kept none, so then the estimate (prompt unknown to the recording:
 *   0; completion ceil(chars / 4)) with usage_source "estimate".
 * - ModelCallFailed budget_exhausted / cost_cap → skipped: that call was never made, and a
 *   replayed wake with the same budget does not make it either (a replay has no prices, so no cap).
 * Transport attempts (ModelCallAttemptFailed) are not replayed: a replay opens no connection.
 * Any other event is ignored. A model event whose payload fails its schema throws
 * ReplayRecordingError: a replay of a record it cannot read would not be a replay.
 */
export function recordedCallsFromEvents(envelopes: readonly EventEnvelope[]): RecordedModelCall[] {
  const ordered = [...envelopes].sort((a, b) => a.seq - b.seq);
  const callsPerWake = new Map<string, number>();
  const out: RecordedModelCall[] = [];
  const nextCallNumber = (wakeId: string): number => {
    const n = (callsPerWake.get(wakeId) ?? 0) + 1;
    callsPerWake.set(wakeId, n);
    return n;
  };
  let previousSeq = 0;
  for (const e of ordered) {
    if (e.seq === previousSeq) throw new ReplayRecordingError(`replay: two events with seq ${e.seq}`);
    previousSeq = e.seq;
    const current = currentPayload(e);
    if (current === null) continue;
    if ('answered' in current) {
      const p = current.answered;
      out.push({ wake_id: p.wake_id, call_number: nextCallNumber(p.wake_id), outcome: { kind: 'answered', raw_output: p.raw_output, usage: { ...p.usage }, usage_source: p.usage_source, latency_ms: p.latency_ms, system_fingerprint: p.system_fingerprint, ...factsOf(p) } });
      continue;
    }
    const p = current.failed;
    switch (p.failure) {
      case 'budget_exhausted':
      case 'cost_cap':
        break;
      case 'schema_violation':
      case 'length':
        if (p.raw_output === null) throw new ReplayRecordingError(`replay: event seq ${e.seq} is a ${p.failure} without its raw text; it cannot be replayed`);
        out.push({
          wake_id: p.wake_id,
          call_number: nextCallNumber(p.wake_id),
          outcome: {
            kind: 'answered',
            raw_output: p.raw_output,
            usage: p.usage ?? { prompt_tokens: 0, completion_tokens: estimateTokens(p.raw_output) },
            usage_source: p.usage_source ?? 'estimate',
            latency_ms: p.latency_ms,
            system_fingerprint: p.system_fingerprint,
            ...factsOf(p),
          },
        });
        break;
      case 'timeout':
      case 'transport':
      case 'http_error':
      case 'refusal':
      case 'truncated_prompt':
      case 'stream_broken':
        out.push({ wake_id: p.wake_id, call_number: nextCallNumber(p.wake_id), outcome: { kind: 'failed', failure: p.failure, detail: p.detail, raw_output: p.raw_output, latency_ms: p.latency_ms, usage: p.usage, usage_source: p.usage_source, ...factsOf(p) } });
        break;
      default: {
        const unhandled: never = p.failure;
        throw new ReplayRecordingError(`replay: event seq ${e.seq} has unknown failure ${String(unhandled)}`);
      }
    }
  }
  return out;
}

type RecordedFacts = Pick<RecordedModelCall['outcome'], 'finish_reason' | 'response_model' | 'prompt_tokens_counted' | 'prompt_count_source' | 'attempts' | 'prompt_reuse' | 'provider_finish_reason' | 'cache_read_tokens' | 'cache_write_tokens'>;

function factsOf(p: RecordedFacts & { prompt_reuse: PromptReuse | null }): RecordedFacts {
  return { finish_reason: p.finish_reason, response_model: p.response_model, prompt_tokens_counted: p.prompt_tokens_counted, prompt_count_source: p.prompt_count_source, attempts: p.attempts, prompt_reuse: p.prompt_reuse, provider_finish_reason: p.provider_finish_reason, cache_read_tokens: p.cache_read_tokens, cache_write_tokens: p.cache_write_tokens };
}
