// The `replay` model adapter (issue 5 item 3, docs/model-protocol.md): serves the model calls
// a run recorded, and never calls out — it opens no socket and imports no network code. The
// controller reads the recorded ModelOutputEvents from the source store and hands them over
// as RecordedModelCall (runtime/protocol.ts); `recordedCallsFromEvents` makes that list.
//
// It never invents output: a call with no recording fails as `http_error` with a detail
// saying so, which the wake loop records like any failed call — a replay that diverges from
// its source shows up as a different event, never as plausible made-up text.
import type { EventEnvelope } from '../../schema/envelope.js';
import { NO_CALL_FACTS, type ModelAdapter, type ModelAdapterDefinition, type ModelCallOutcome, type ModelParams, type ModelRequest } from '../model-adapter.js';
import type { RecordedModelCall } from '../protocol.js';
import { ReplayRecordingError } from '../recorded-model-calls.js';

export { recordedCallsFromEvents, ReplayRecordingError } from '../recorded-model-calls.js';


/** No sampling happens in a replay: its own parameters are none (the source's are in the source's events). */
const NO_PARAMS: ModelParams = { temperature: null, top_p: null, seed: null, max_tokens: null };

function keyOf(wakeId: string, callNumber: number): string {
  return `${wakeId}\u0000${callNumber}`;
}

/** The replay adapter as the house asks it (runtime/model-adapter.ts ModelAdapterDefinition; listed in adapter-list.ts): no model, nothing waited for, every count as its source recorded it. */
export const REPLAY_ADAPTER: ModelAdapterDefinition<'replay'> = {
  name: 'replay',
  callsModel: false,
  usageCountedBy: ['server', 'tokenizer', 'estimate'],
  promptCountedBy: ['server', 'tokenizer', 'estimate'],
  callTimeoutMs: () => null,
  checkedBeforeStart: false,
  answeredByServer: false,
  preflightReportsBuild: false,
  create: (config) => new ReplayAdapter(config.source_model_id, config.calls),
};

export class ReplayAdapter implements ModelAdapter {
  readonly name = 'replay' as const;
  readonly model_id: string;
  readonly params: ModelParams = NO_PARAMS;
  readonly build = null;
  private readonly recordings = new Map<string, RecordedModelCall>();
  private readonly served = new Set<string>();

  /** `sourceModelId` is the model the recordings came from (the source manifest's model_id). */
  constructor(sourceModelId: string, calls: readonly RecordedModelCall[]) {
    if (sourceModelId.length === 0) throw new ReplayRecordingError('replay: the source model id is empty');
    this.model_id = sourceModelId;
    for (const call of calls) {
      if (!Number.isSafeInteger(call.call_number) || call.call_number < 1) throw new ReplayRecordingError(`replay: wake ${call.wake_id} has call number ${call.call_number}; call numbers start at 1`);
      const key = keyOf(call.wake_id, call.call_number);
      // Two recordings for one call would make the replay pick one silently.
      if (this.recordings.has(key)) throw new ReplayRecordingError(`replay: wake ${call.wake_id} call ${call.call_number} is recorded twice`);
      this.recordings.set(key, call);
    }
  }

  /** Serves the recorded outcome, latency included; `timeoutMs` does not apply (nothing is waited for). */
  async call(request: ModelRequest, _timeoutMs: number): Promise<ModelCallOutcome> {
    const key = keyOf(request.wake_id, request.call_number);
    const recording = this.recordings.get(key);
    if (!recording) {
      return { kind: 'failed', failure: 'http_error', detail: `replay: no recorded call for wake ${request.wake_id} call ${request.call_number}`, raw_output: null, latency_ms: 0, ...NO_CALL_FACTS };
    }
    this.served.add(key);
    // Served as recorded, facts included: the replayed events say what the source's said.
    const o = recording.outcome;
    return o.kind === 'answered' ? { ...o, usage: { ...o.usage } } : { ...o, usage: o.usage === null ? null : { ...o.usage } };
  }

  /** Recorded calls nobody asked for (in recording order): a replay that made fewer calls than its source. */
  unservedCalls(): { wake_id: string; call_number: number }[] {
    const out: { wake_id: string; call_number: number }[] = [];
    for (const [key, call] of this.recordings) if (!this.served.has(key)) out.push({ wake_id: call.wake_id, call_number: call.call_number });
    return out;
  }
}

