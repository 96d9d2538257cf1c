// The desk's one-line summaries and typed reads of model events of every version this build
// reads: an event recorded under an earlier schema version (ModelAnswered 1.2.0, ModelCallFailed
// 1.1.0, before issue 15) is read lifted, like every other reader reads it, and says so; what it
// never recorded reads "unknown", never "undefined". Envelopes sealed by the writer's serialiser.
import { describe, expect, test } from 'vitest';
import { summarizeEvent, typedEvent } from '../../audit/event-summary.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { ModelAnswered, ModelCallFailed } from '../../schema/events/model-output-events.js';
import type { EventDraft } from '../../writer/protocol.js';
import { d, SubjectStream } from '../support/subject-events.js';

const MODEL_CALL = { wake_id: 'w1', adapter: 'openai', model_id: 'test-model', params: { temperature: 0.2, top_p: 0.9, seed: 7, max_tokens: 512 }, system_fingerprint: 'fp_1', latency_ms: 812 };
const CONTEXT = { window_events: 4, eligible_total: 7, omitted_by_count: 3, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 300 };
const LIFTED_ANSWER = ` [recorded as 1.2.0, read as ${ModelAnswered.schemaVersion}: what it did not record shows as unknown]`;

function earlier(template: EventDraft, version: string, payload: Record<string, unknown>): EventDraft {
  return { ...template, schema_version: version, payload };
}

function stream(...drafts: EventDraft[]): EventEnvelope[] {
  const s = new SubjectStream().open();
  return drafts.map((dr) => s.push(dr));
}

const answered12 = (usageEstimated: boolean) =>
  earlier(d.modelAnswered('w1'), '1.2.0', ModelAnswered.earlier['1.2.0']!.parse({ ...MODEL_CALL, context: CONTEXT, raw_output: '{}', usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_estimated: usageEstimated }) as Record<string, unknown>);
const failed11 = earlier(d.modelCallFailed('w1'), '1.1.0', ModelCallFailed.earlier['1.1.0']!.parse({ ...MODEL_CALL, context: CONTEXT, failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null }) as Record<string, unknown>);

describe('model events of the current version', () => {
  test('read as stored, with no note', () => {
    const [answered, failed] = stream(d.modelAnswered('w1'), d.modelCallFailed('w1'));
    expect(summarizeEvent(answered!)).toBe('model reference-policy-1 answered (100+50 tokens; finish stop; window 0 of 0)');
    expect(summarizeEvent(failed!)).toBe('model call failed: timeout — no answer');
  });
});

describe('model events of an earlier version (before issue 15)', () => {
  test('a ModelAnswered 1.2.0 is summarised from its lifted payload: who counted its tokens, its finish reason unknown, and the version it was recorded as', () => {
    const [server, estimated] = stream(answered12(false), answered12(true));
    expect(summarizeEvent(server!)).toBe(`model test-model answered (900+120 tokens; finish unknown; window 4 of 7)${LIFTED_ANSWER}`);
    expect(summarizeEvent(estimated!)).toBe(`model test-model answered (900+120 tokens, counted by estimate; finish unknown; window 4 of 7)${LIFTED_ANSWER}`);
    for (const e of [server!, estimated!]) expect(summarizeEvent(e)).not.toMatch(/undefined|⚠/);
  });

  test('typedEvent hands the pages the lifted payload; the envelope as stored is unchanged', () => {
    const [answered] = stream(answered12(true));
    const typed = typedEvent(answered!);
    expect(typed.ok).toBe(true);
    if (!typed.ok || typed.event.event_type !== 'ModelOutputEvent.ModelAnswered') throw new Error('not read as a ModelAnswered');
    expect(typed.event.payload).toMatchObject({ protocol: 'ds-model-output/1', usage_source: 'estimate', finish_reason: null, response_model: null, prompt_tokens_counted: null, attempts: 1 });
    expect(typed.event.payload).not.toHaveProperty('usage_estimated');
    expect(answered!.schema_version).toBe('1.2.0');
    expect(answered!.payload).toMatchObject({ usage_estimated: true });
    expect(answered!.payload).not.toHaveProperty('protocol');
  });

  test('a ModelCallFailed 1.1.0 reads as a failure, with its note', () => {
    const [failed] = stream(failed11);
    expect(summarizeEvent(failed!)).toBe(`model call failed: timeout — no complete answer within timeoutMs 60000 [recorded as 1.1.0, read as ${ModelCallFailed.schemaVersion}: what it did not record shows as unknown]`);
  });
});

describe('what cannot be read is shown as such (forged)', () => {
  test('a 1.2.0 payload under the current version number, a payload that fails its own version, and a version this build does not read', () => {
    const [relabelled, broken, unknown] = stream(
      { ...answered12(false), schema_version: ModelAnswered.schemaVersion },
      earlier(d.modelAnswered('w1'), '1.2.0', { ...MODEL_CALL, context: CONTEXT, raw_output: '{}', usage: { prompt_tokens: 900, completion_tokens: 120 } }),
      { ...answered12(false), schema_version: '1.1.0' },
    );
    expect(summarizeEvent(relabelled!)).toMatch(/^⚠ the payload of ModelOutputEvent\.ModelAnswered 1\.5\.0 fails its schema/);
    expect(summarizeEvent(broken!)).toMatch(/^⚠ the payload of ModelOutputEvent\.ModelAnswered 1\.2\.0 fails its schema: .* at usage_estimated/);
    expect(summarizeEvent(unknown!)).toBe('⚠ schema version 1.1.0 of ModelOutputEvent.ModelAnswered is not one this build reads (1.5.0, 1.4.0, 1.3.0, 1.2.0)');
    for (const e of [relabelled!, broken!, unknown!]) expect(typedEvent(e).ok).toBe(false);
  });
});
