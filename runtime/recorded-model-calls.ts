// Recorded model calls as the replay adapter serves them: the stored ModelOutputEvents of a run
// turned into the protocol's RecordedModelCall list. Shared by the controller (which reads the
// source run and sends the list in the runtime's start message) and the replay adapter, like
// runtime/protocol.ts: it is the replay's wire format, not runtime logic.
import type { EventEnvelope } from '../schema/envelope.js';
import { ModelAnswered, ModelCallFailed } from '../schema/events/model-output-events.js';
import type { RecordedModelCall } from './protocol.js';

/** The reference policy's and the prompt's token estimate (runtime/prompt.ts estimateTokens). */
const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

export class ReplayRecordingError extends Error {
  override readonly name = 'ReplayRecordingError';
}

/**
 * The recorded calls of a store, in seq order; call_number is the call's position within its
 * wake. Per ModelOutputEvent:
 * - ModelAnswered → answered, as stored, with its own usage_estimated.
 * - ModelCallFailed timeout / http_error / refusal → failed, as stored.
 * - ModelCallFailed schema_violation → answered with the stored raw text: the call was made
 *   and answered, and the wake loop must fail the same text the same way. The event keeps
 *   no usage, so the usage is the estimate (prompt unknown to the recording: 0; completion
 *   ceil(chars / 4)) and usage_estimated is true.
 * - ModelCallFailed budget_exhausted → skipped: that call was never made, and a replayed
 *   wake with the same budget does not make it either.
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
    const definition = e.event_type === ModelAnswered.type ? ModelAnswered : e.event_type === ModelCallFailed.type ? ModelCallFailed : null;
    // No upcasters exist for model events: a payload of another version cannot be read as this one.
    if (definition !== null && e.schema_version !== definition.schemaVersion) throw new ReplayRecordingError(`replay: event seq ${e.seq} (${e.event_type}) has schema version ${e.schema_version}; this build reads ${definition.schemaVersion}`);
    if (e.event_type === ModelAnswered.type) {
      const parsed = ModelAnswered.payload.safeParse(e.payload);
      if (!parsed.success) throw new ReplayRecordingError(`replay: event seq ${e.seq} (${e.event_type}) fails its schema: ${parsed.error.issues[0]?.message ?? 'unknown issue'}`);
      const p = parsed.data;
      out.push({
        wake_id: p.wake_id,
        call_number: nextCallNumber(p.wake_id),
        outcome: { kind: 'answered', raw_output: p.raw_output, usage: { ...p.usage }, usage_estimated: p.usage_estimated, latency_ms: p.latency_ms, system_fingerprint: p.system_fingerprint },
      });
    } else if (e.event_type === ModelCallFailed.type) {
      const parsed = ModelCallFailed.payload.safeParse(e.payload);
      if (!parsed.success) throw new ReplayRecordingError(`replay: event seq ${e.seq} (${e.event_type}) fails its schema: ${parsed.error.issues[0]?.message ?? 'unknown issue'}`);
      const p = parsed.data;
      switch (p.failure) {
        case 'budget_exhausted':
          break;
        case 'schema_violation':
          if (p.raw_output === null) throw new ReplayRecordingError(`replay: event seq ${e.seq} is a schema_violation without its raw text; it cannot be replayed`);
          out.push({
            wake_id: p.wake_id,
            call_number: nextCallNumber(p.wake_id),
            outcome: { kind: 'answered', raw_output: p.raw_output, usage: { prompt_tokens: 0, completion_tokens: estimateTokens(p.raw_output) }, usage_estimated: true, latency_ms: p.latency_ms, system_fingerprint: p.system_fingerprint },
          });
          break;
        case 'timeout':
        case 'http_error':
        case 'refusal':
          out.push({
            wake_id: p.wake_id,
            call_number: nextCallNumber(p.wake_id),
            outcome: { kind: 'failed', failure: p.failure, detail: p.detail, raw_output: p.raw_output, latency_ms: p.latency_ms },
          });
          break;
        default: {
          const unhandled: never = p.failure;
          throw new ReplayRecordingError(`replay: event seq ${e.seq} has unknown failure ${String(unhandled)}`);
        }
      }
    }
  }
  return out;
}
