// The writer refuses a FACT without eligible evidence (DESIGN §6.7, spec §17.2): checked
// against the store itself, inside the append transaction.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ModelAnswered } from '../../schema/events/model-output-events.js';
import { eventIdFor } from '../../schema/envelope-hash.js';
import type { WriterClient } from '../../writer/client.js';
import { WriterError, type EventDraft } from '../../writer/protocol.js';
import { journalDraft, messageDraft, startWriterFixture, type WriterFixture } from '../support/writer-fixture.js';

let f: WriterFixture;
let runtime: WriterClient;
let experiment: WriterClient;
let worldEventId: string;
let modelEventId: string;

function claim(claimId: string, type: 'FACT' | 'PLAN' | 'INFERENCE', evidence: string[]): EventDraft {
  return {
    event_type: 'MemoryEvent.ClaimRecorded',
    schema_version: '1.0.0',
    occurred_at: '2026-07-20T09:00:00.000Z',
    actor: 'runtime',
    causation_id: null,
    correlation_id: 'wake-0001',
    idempotency_key: null,
    payload: { claim_id: claimId, claim_type: type, statement: `${type} ${claimId}`, evidence_event_ids: evidence, confidence: type === 'INFERENCE' ? 0.6 : null, alternatives: [] },
  };
}

beforeAll(async () => {
  f = await startWriterFixture();
  runtime = await f.connect('runtime');
  experiment = await f.connect('experiment');
  worldEventId = (await experiment.append([messageDraft()])).events[0]!.event_id;
  const model: EventDraft = {
    event_type: 'ModelOutputEvent.ModelAnswered',
    schema_version: ModelAnswered.schemaVersion,
    occurred_at: '2026-07-20T09:00:00.000Z',
    actor: 'model',
    causation_id: null,
    correlation_id: 'wake-0001',
    idempotency_key: null,
    payload: {
      wake_id: 'wake-0001',
      adapter: 'reference',
      model_id: 'reference-policy',
      params: { temperature: null, top_p: null, seed: null, max_tokens: null },
      system_fingerprint: null,
      latency_ms: 1,
      raw_output: '{"claims":[]}',
      usage: { prompt_tokens: 10, completion_tokens: 5 },
      usage_source: 'server',
      protocol: 'ds-model-output/2',
      finish_reason: 'stop',
      response_model: null,
      prompt_tokens_counted: null,
      prompt_count_source: null,
      attempts: 1,
      prompt_reuse: null,
      provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null, cost_nano_usd: null,
      context: { window_events: 0, eligible_total: 0, omitted_by_count: 0, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 0 },
    },
  };
  modelEventId = (await runtime.append([model])).events[0]!.event_id;
});

afterAll(async () => {
  await f.cleanup();
});

async function expectEvidenceRejected(drafts: EventDraft[], reason: RegExp): Promise<void> {
  const before = await runtime.head();
  const error = await runtime.append(drafts).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WriterError);
  expect(error).toMatchObject({ code: 'evidence_rejected', message: expect.stringMatching(reason) });
  const after = await runtime.head();
  // Nothing of the batch; only the refusal record.
  expect(after.seq).toBe(before.seq + 1);
  const [record] = (await runtime.read({ from_seq: after.seq, limit: 1 })).events;
  expect(record).toMatchObject({ event_type: 'SystemEvent.AppendRejected', payload: { reason: 'evidence_rejected' } });
}

describe('FACT evidence', () => {
  test('a FACT citing a world event is stored', async () => {
    const result = await runtime.append([claim('fact-world', 'FACT', [worldEventId])]);
    expect(result.events).toHaveLength(1);
  });

  test('a FACT citing model output is refused: a model saying so is not evidence', async () => {
    await expectEvidenceRejected([claim('fact-model', 'FACT', [modelEventId])], /ModelOutputEvent\.ModelAnswered is not evidence/);
  });

  test('a FACT citing an event that is not in the store is refused', async () => {
    await expectEvidenceRejected([claim('fact-ghost', 'FACT', ['00000000-ffff-8000-8000-000000000000'])], /not in the store/);
  });

  test('a FACT citing a PLAN claim is refused; citing a FACT claim is allowed (justification chains)', async () => {
    const plan = await runtime.append([claim('plan-1', 'PLAN', [])]);
    await expectEvidenceRejected([claim('fact-on-plan', 'FACT', [plan.events[0]!.event_id])], /a PLAN claim is not evidence/);
    const fact = await runtime.append([claim('fact-base', 'FACT', [worldEventId])]);
    const derived = await runtime.append([claim('fact-derived', 'FACT', [fact.events[0]!.event_id])]);
    expect(derived.events).toHaveLength(1);
  });

  test('evidence appended earlier in the same batch counts; a bad FACT anywhere rolls the whole batch back', async () => {
    const head = await runtime.head();
    const journal = journalDraft('same batch', { payload: { proposal_id: 'p-1', entry_id: 'e-same-batch', text: 'x' } });
    await expectEvidenceRejected([journal, claim('fact-bad', 'FACT', [modelEventId])], /not evidence/);
    const page = await runtime.read({ from_seq: head.seq + 1, limit: 10 });
    expect(page.events.map((e) => e.event_type)).toEqual(['SystemEvent.AppendRejected']);
    // Event ids derive from subject and seq, so a caller holding the head can cite the
    // first event of its own batch from the second.
    const now = await runtime.head();
    const firstId = eventIdFor(f.identity.subject_id, now.seq + 1);
    const ok = await runtime.append([claim('fact-first', 'FACT', [worldEventId]), claim('fact-second', 'FACT', [firstId])], now);
    expect(ok.events.map((e) => e.event_id)[0]).toBe(firstId);
    expect(ok.events).toHaveLength(2);
  });

  test('a FACT with no evidence at all is refused', async () => {
    await expectEvidenceRejected([claim('fact-empty', 'FACT', [])], /cites no evidence/);
  });
});
