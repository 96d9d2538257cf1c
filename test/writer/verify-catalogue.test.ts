// verify holds every event to the event catalogue its store was opened under (StoreOpened's
// event_schema_version; schema/catalogue-versions.ts): a writer writes only its catalogue's
// version of a type, so an older version in a store of the current catalogue, or a type or
// version the store's older catalogue did not have, came from another writer or a forger.
// Each case is a copy of a store the real writer wrote, rewritten as a forger who knows the
// format would (every hash and link recomputed): only the version rules can tell.
import Database from 'better-sqlite3';
import { cpSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { writeSignedManifest } from '../../controller/run-signatures.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { EARLIER_CATALOGUES, earlierCataloguesProblems, KNOWN_CATALOGUES, versionInCatalogue } from '../../schema/catalogue-versions.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { computeEventHash, computePayloadHash, eventIdFor } from '../../schema/envelope-hash.js';
import { EVENT_SCHEMA_VERSION, eventDefinition, type EventType } from '../../schema/event-catalog.js';
import { ModelAnswered, ModelCallAttemptFailed, ModelCallFailed } from '../../schema/events/model-output-events.js';
import { GENESIS_HASH, type HashString } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { verifyDirectory, type VerifyReport } from '../../writer/verify-store.js';
import { tamper } from '../support/store-forgery.js';
import { journalDraft, messageDraft, startWriterFixture, tempDir, type WriterFixture } from '../support/writer-fixture.js';

const ANSWERED = 'ModelOutputEvent.ModelAnswered';
const FAILED = 'ModelOutputEvent.ModelCallFailed';
const ATTEMPT = 'ModelOutputEvent.ModelCallAttemptFailed';

let base: WriterFixture;
let baseEvents: number;
const scratch: string[] = [];

beforeAll(async () => {
  // An open store of the real writer (no heads: verify --open warns, nothing else).
  base = await startWriterFixture();
  const experiment = await base.connect('experiment');
  const runtime = await base.connect('runtime');
  for (let i = 0; i < 3; i++) {
    await experiment.append([messageDraft()]);
    await runtime.append([journalDraft(`entry ${i}`)]);
  }
  await base.stop();
  baseEvents = 7;
});

afterAll(() => {
  for (const dir of [base.dir, ...scratch]) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------
// Model events of each version, each checked against the schema of its own version.

const MODEL_CALL = { wake_id: 'wake-0001', adapter: 'openai', model_id: 'test-model', params: { temperature: 0.2, top_p: 0.9, seed: 7, max_tokens: 512 }, system_fingerprint: 'fp_1', latency_ms: 812 };
const CONTEXT = { window_events: 4, eligible_total: 7, omitted_by_count: 3, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 300 };
const CALL_RECORD = { protocol: 'ds-model-output/2', finish_reason: 'stop', response_model: 'test-model', prompt_tokens_counted: 900, prompt_count_source: 'server', attempts: 1 };

interface ForgedEvent {
  readonly type: EventType;
  readonly version: string;
  readonly payload: Record<string, unknown>;
}

function ofVersion(type: EventType, version: string, payload: Record<string, unknown>): ForgedEvent {
  const definition = eventDefinition(type)!;
  const schema = version === definition.schemaVersion ? definition.payload : definition.earlier[version];
  // A version this build reads is forged well-formed, so only the version rule can fail it.
  schema?.parse(payload);
  return { type, version, payload };
}

const ISSUE36 = { provider_finish_reason: 'end_turn', cache_read_tokens: 800, cache_write_tokens: 0, cost_nano_usd: 3_500_000 };

const v = {
  answered15: () => ofVersion(ANSWERED, '1.5.0', { ...MODEL_CALL, adapter: 'anthropic', ...CALL_RECORD, ...ISSUE36, prompt_reuse: { reused_tokens: 800, evaluated_tokens: 100, source: 'server_usage' }, context: CONTEXT, raw_output: '{"protocol":"ds-model-output/2"}', usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_source: 'server' }),
  failed14: () => ofVersion(FAILED, '1.4.0', { ...MODEL_CALL, ...CALL_RECORD, ...ISSUE36, provider_finish_reason: null, prompt_reuse: null, finish_reason: null, context: CONTEXT, failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null, usage: null, usage_source: null, cost_nano_usd: 0 }),
  answered14: () => ofVersion(ANSWERED, '1.4.0', { ...MODEL_CALL, ...CALL_RECORD, prompt_reuse: { reused_tokens: 800, evaluated_tokens: 100, source: 'server_timings' }, context: CONTEXT, raw_output: '{"protocol":"ds-model-output/2"}', usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_source: 'server' }),
  failed13: () => ofVersion(FAILED, '1.3.0', { ...MODEL_CALL, ...CALL_RECORD, prompt_reuse: null, finish_reason: null, context: CONTEXT, failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null, usage: null, usage_source: null }),
  answered13: () => ofVersion(ANSWERED, '1.3.0', { ...MODEL_CALL, ...CALL_RECORD, context: CONTEXT, raw_output: '{"protocol":"ds-model-output/2"}', usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_source: 'server' }),
  answered12: () => ofVersion(ANSWERED, '1.2.0', { ...MODEL_CALL, context: CONTEXT, raw_output: '{"protocol":"ds-model-output/1"}', usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_estimated: false }),
  failed12: () => ofVersion(FAILED, '1.2.0', { ...MODEL_CALL, ...CALL_RECORD, finish_reason: null, context: CONTEXT, failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null, usage: null, usage_source: null }),
  failed11: () => ofVersion(FAILED, '1.1.0', { ...MODEL_CALL, context: CONTEXT, failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null }),
  attempt10: () => ofVersion(ATTEMPT, '1.0.0', { wake_id: 'wake-0001', call_number: 1, attempt: 1, kind: 'connection_refused', detail: 'connect ECONNREFUSED', latency_ms: 3, backoff_ms: 500 }),
};

// ---------------------------------------------------------------------------------------

interface Forgery {
  /** The catalogue StoreOpened is rewritten to name; default the writer's own. */
  readonly catalogue?: string;
  /** Events appended after the writer's, in order. */
  readonly append: readonly ForgedEvent[];
  /** A signed manifest (by the run's key) that replaces the fixture's; StoreOpened is made to name it. */
  readonly manifest?: Record<string, unknown>;
}

/**
 * A copy of the writer's store with StoreOpened naming `catalogue` and `append` after the last
 * event, every hash and link recomputed and the projection row moved along. Returns the folder
 * and the seqs the appended events got.
 */
function forge(f: Forgery): { dir: string; seqs: number[] } {
  const dir = tempDir('ds-forged-catalogue-');
  scratch.push(dir);
  cpSync(base.dir, dir, { recursive: true });
  let manifestSha256: HashString | null = null;
  if (f.manifest !== undefined) {
    rmSync(path.join(dir, RUN_FILES.manifest));
    manifestSha256 = writeSignedManifest(dir, f.manifest, base.keys);
  }
  const seqs: number[] = [];
  tamper(dir, (db: Database.Database) => {
    const stored = (db.prepare('SELECT envelope FROM events ORDER BY seq').all() as { envelope: string }[]).map((r) => JSON.parse(r.envelope) as EventEnvelope);
    const first = stored[0]!;
    const opened = { ...first.payload, ...(f.catalogue === undefined ? {} : { event_schema_version: f.catalogue }), ...(manifestSha256 === null ? {} : { manifest_sha256: manifestSha256 }) };
    const drafts: EventEnvelope[] = [{ ...first, payload: opened }, ...stored.slice(1)];
    for (const e of f.append) {
      const seq = drafts.length + 1;
      seqs.push(seq);
      drafts.push({ ...first, event_id: eventIdFor(first.subject_id, seq), seq, event_type: e.type, schema_version: e.version, actor: 'model', correlation_id: 'wake-0001', payload: e.payload });
    }
    db.prepare('DELETE FROM events').run();
    const insert = db.prepare('INSERT INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, ?, ?, ?, ?)');
    let previous: HashString = GENESIS_HASH;
    for (const draft of drafts) {
      const unhashed: EventEnvelope = { ...draft, previous_event_hash: previous, payload_hash: computePayloadHash(draft.payload), event_hash: GENESIS_HASH };
      const envelope: EventEnvelope = { ...unhashed, event_hash: computeEventHash(unhashed) };
      insert.run(envelope.seq, envelope.event_id, envelope.event_type, envelope.idempotency_key, canonicalJson(envelope));
      previous = envelope.event_hash;
    }
    db.prepare('UPDATE projection SET last_applied_event_seq = ?').run(drafts.length);
  });
  return { dir, seqs };
}

function verifyOpen(dir: string): VerifyReport {
  const report = verifyDirectory(dir, { allowOpen: true });
  // The forged stores are open ones: that is said, and is all that is said besides the failures.
  expect(report.warnings.map((w) => w.reason)).toEqual([expect.stringMatching(/no heads\.jsonl: no signed head covers this store \(accepted: --open\)/)]);
  return report;
}

function reasonsAt(report: VerifyReport, seq: number): string[] {
  return report.failures.filter((x) => x.seq === seq).map((x) => x.reason);
}

describe('the table of catalogues', () => {
  test('names 1.0.0, 1.1.0, 1.2.0 and the current 1.3.0; each changed type has the version its catalogue wrote, null where it had none', () => {
    expect(EVENT_SCHEMA_VERSION).toBe('1.3.0');
    expect(KNOWN_CATALOGUES).toEqual(['1.0.0', '1.1.0', '1.2.0', '1.3.0']);
    expect(earlierCataloguesProblems(EARLIER_CATALOGUES)).toEqual([]);
    const at = (catalogue: string, type: EventType) => versionInCatalogue(catalogue, eventDefinition(type)!);
    expect([at('1.3.0', ANSWERED), at('1.3.0', FAILED), at('1.3.0', ATTEMPT)]).toEqual([ModelAnswered.schemaVersion, ModelCallFailed.schemaVersion, ModelCallAttemptFailed.schemaVersion]);
    expect([at('1.2.0', ANSWERED), at('1.2.0', FAILED), at('1.2.0', ATTEMPT)]).toEqual(['1.4.0', '1.3.0', '1.0.0']);
    expect([at('1.1.0', ANSWERED), at('1.1.0', FAILED), at('1.1.0', ATTEMPT)]).toEqual(['1.3.0', '1.2.0', '1.0.0']);
    expect([at('1.0.0', ANSWERED), at('1.0.0', FAILED), at('1.0.0', ATTEMPT)]).toEqual(['1.2.0', '1.1.0', null]);
    // The ledger gained the wake's cost in 1.3.0 (issue 36): 1.0.0 in every earlier catalogue.
    expect(['1.0.0', '1.1.0', '1.2.0', '1.3.0'].map((c) => at(c, 'ExperimentEvent.BudgetLedgerRecorded'))).toEqual(['1.0.0', '1.0.0', '1.0.0', '1.1.0']);
    // A type that never changed is at its one version in all; an unknown catalogue names nothing.
    expect(['1.0.0', '1.1.0', '1.2.0', '1.3.0'].map((c) => at(c, 'MemoryEvent.JournalEntryWritten'))).toEqual(['1.0.0', '1.0.0', '1.0.0', '1.0.0']);
    expect(at('0.9.0', ANSWERED)).toBeUndefined();
  });

  test('a wrong table is refused with what is wrong (forged tables)', () => {
    expect(
      earlierCataloguesProblems({
        '1.0.0': { [ANSWERED]: '1.1.0', [FAILED]: '1.4.0', 'ModelOutputEvent.ModelThought': '1.0.0' },
        [EVENT_SCHEMA_VERSION]: {},
      }),
    ).toEqual([
      'catalogue 1.0.0 holds ModelOutputEvent.ModelAnswered 1.1.0, which this build has no schema for (the definition\'s earlier map)',
      'catalogue 1.0.0 lists ModelOutputEvent.ModelCallFailed at its current version 1.4.0: list only versions that differ',
      'catalogue 1.0.0 names ModelOutputEvent.ModelThought, which is not in the event catalogue',
      'catalogue 1.3.0 is the current one: list only earlier ones',
      'SystemEvent.Resumed 1.0.0 has a schema in the catalogue but no earlier catalogue holds it',
      'ModelOutputEvent.ModelAnswered 1.4.0 has a schema in the catalogue but no earlier catalogue holds it',
      'ModelOutputEvent.ModelAnswered 1.3.0 has a schema in the catalogue but no earlier catalogue holds it',
      'ModelOutputEvent.ModelAnswered 1.2.0 has a schema in the catalogue but no earlier catalogue holds it',
      'ModelOutputEvent.ModelCallFailed 1.3.0 has a schema in the catalogue but no earlier catalogue holds it',
      'ModelOutputEvent.ModelCallFailed 1.2.0 has a schema in the catalogue but no earlier catalogue holds it',
      'ModelOutputEvent.ModelCallFailed 1.1.0 has a schema in the catalogue but no earlier catalogue holds it',
      'ExperimentEvent.BudgetLedgerRecorded 1.0.0 has a schema in the catalogue but no earlier catalogue holds it',
    ]);
  });
});

describe('stores that keep to their catalogue verify', () => {
  test('the writer\'s own store, and one with every model event at the current version', () => {
    expect(verifyOpen(base.dir).failures).toEqual([]);
    const current = forge({ append: [v.attempt10(), v.failed14(), v.answered15()] });
    expect(verifyOpen(current.dir)).toMatchObject({ ok: true, failures: [], events: baseEvents + 3 });
  });

  test('a store opened under catalogue 1.0.0 (before issue 15) with its ModelAnswered 1.2.0 and ModelCallFailed 1.1.0', () => {
    const old = forge({ catalogue: '1.0.0', append: [v.failed11(), v.answered12()] });
    expect(verifyOpen(old.dir)).toMatchObject({ ok: true, failures: [], events: baseEvents + 2 });
  });

  test('a store opened under catalogue 1.1.0 (before issue 34) with its ModelAnswered 1.3.0 and ModelCallFailed 1.2.0 (no prompt_reuse)', () => {
    const old = forge({ catalogue: '1.1.0', append: [v.attempt10(), v.failed12(), v.answered13()] });
    expect(verifyOpen(old.dir)).toMatchObject({ ok: true, failures: [], events: baseEvents + 3 });
  });

  test('a store opened under catalogue 1.2.0 (before issue 36) with its ModelAnswered 1.4.0 and ModelCallFailed 1.3.0 (no cost, cache counts or provider finish reason)', () => {
    const old = forge({ catalogue: '1.2.0', append: [v.attempt10(), v.failed13(), v.answered14()] });
    expect(verifyOpen(old.dir)).toMatchObject({ ok: true, failures: [], events: baseEvents + 3 });
  });
});

describe('forged: an earlier version in a store of the current catalogue', () => {
  test('a ModelAnswered 1.4.0 (a record without cost) in a 1.3.0 store fails at its seq', () => {
    const { dir, seqs } = forge({ append: [v.answered14()] });
    expect(verifyOpen(dir).failures).toEqual([
      {
        store: RUN_FILES.store,
        seq: seqs[0],
        reason: 'ModelOutputEvent.ModelAnswered 1.4.0 in a store opened under event catalogue 1.3.0, whose ModelOutputEvent.ModelAnswered is 1.5.0: a writer writes only its catalogue\'s version, so another writer wrote it, or it was forged',
      },
    ]);
  });

  test('a ModelAnswered 1.2.0 in a 1.3.0 store fails at its seq', () => {
    const { dir, seqs } = forge({ append: [v.answered12()] });
    const report = verifyOpen(dir);
    expect(report.failures).toEqual([
      {
        store: RUN_FILES.store,
        seq: seqs[0],
        reason: 'ModelOutputEvent.ModelAnswered 1.2.0 in a store opened under event catalogue 1.3.0, whose ModelOutputEvent.ModelAnswered is 1.5.0: a writer writes only its catalogue\'s version, so another writer wrote it, or it was forged',
      },
    ]);
  });

  test('a mix: each earlier-version event fails at its own seq, the current ones beside them do not', () => {
    const { dir, seqs } = forge({ append: [v.answered15(), v.failed11(), v.answered12(), v.failed14()] });
    const report = verifyOpen(dir);
    expect(report.failures.map((x) => x.seq)).toEqual([seqs[1], seqs[2]]);
    expect(reasonsAt(report, seqs[1]!)).toEqual([expect.stringMatching(/^ModelOutputEvent\.ModelCallFailed 1\.1\.0 in a store opened under event catalogue 1\.3\.0, whose ModelOutputEvent\.ModelCallFailed is 1\.4\.0/)]);
    expect(reasonsAt(report, seqs[2]!)).toEqual([expect.stringMatching(/^ModelOutputEvent\.ModelAnswered 1\.2\.0 in a store opened under event catalogue 1\.3\.0/)]);
  });
});

describe('forged: a type or version the store\'s earlier catalogue did not have', () => {
  test('a ModelCallAttemptFailed in a 1.0.0 store', () => {
    const { dir, seqs } = forge({ catalogue: '1.0.0', append: [v.failed11(), v.attempt10()] });
    expect(verifyOpen(dir).failures).toEqual([
      { store: RUN_FILES.store, seq: seqs[1], reason: 'ModelOutputEvent.ModelCallAttemptFailed did not exist in event catalogue 1.0.0, which StoreOpened says this store was opened under: another writer wrote it, or it was forged' },
    ]);
  });

  test('a ModelAnswered 1.3.0 and a ModelCallFailed 1.2.0 in a 1.0.0 store, beside its honest 1.2.0 answer', () => {
    const { dir, seqs } = forge({ catalogue: '1.0.0', append: [v.answered12(), v.answered13(), v.failed12()] });
    const report = verifyOpen(dir);
    expect(report.failures.map((x) => x.seq)).toEqual([seqs[1], seqs[2]]);
    expect(reasonsAt(report, seqs[1]!)).toEqual([expect.stringMatching(/^ModelOutputEvent\.ModelAnswered 1\.3\.0 in a store opened under event catalogue 1\.0\.0, whose ModelOutputEvent\.ModelAnswered is 1\.2\.0/)]);
    expect(reasonsAt(report, seqs[2]!)).toEqual([expect.stringMatching(/^ModelOutputEvent\.ModelCallFailed 1\.2\.0 in a store opened under event catalogue 1\.0\.0, whose ModelOutputEvent\.ModelCallFailed is 1\.1\.0/)]);
  });
});

describe('versions and catalogues this build does not know', () => {
  test('a version no catalogue of this build has (ModelAnswered 1.1.0, of an early 1.0.0 build) fails once, as not understood, in either store', () => {
    for (const catalogue of ['1.0.0', '1.1.0', '1.2.0', '1.3.0']) {
      const { dir, seqs } = forge({ catalogue, append: [{ ...v.answered12(), version: '1.1.0' }] });
      expect(verifyOpen(dir).failures).toEqual([
        { store: RUN_FILES.store, seq: seqs[0], reason: 'schema_version 1.1.0 of ModelOutputEvent.ModelAnswered is not one this verifier understands (1.5.0, 1.4.0, 1.3.0, 1.2.0)' },
      ]);
    }
  });

  test('a store opened under a catalogue this build does not know fails at seq 1, saying its events are not held to it', () => {
    const { dir } = forge({ catalogue: '1.4.0', append: [v.answered12(), v.answered13()] });
    expect(verifyOpen(dir).failures).toEqual([
      { store: RUN_FILES.store, seq: 1, reason: 'StoreOpened says the store was opened under event catalogue 1.4.0; this verifier knows 1.0.0, 1.1.0, 1.2.0, 1.3.0: verify it with the build that wrote it (its events\' versions are not checked here)' },
    ]);
  });
});

describe('the signed manifest names the catalogue StoreOpened names', () => {
  const manifest = (catalogue: string) => ({ experiment_id: base.identity.experiment_id, subject_id: base.identity.subject_id, purpose: 'test', event_schema_version: catalogue });

  test('the same catalogue verifies', () => {
    expect(verifyOpen(forge({ catalogue: '1.0.0', manifest: manifest('1.0.0'), append: [v.answered12()] }).dir).failures).toEqual([]);
  });

  test('forged: StoreOpened rewritten to the earlier catalogue under a manifest signed for the current one', () => {
    const { dir } = forge({ catalogue: '1.0.0', manifest: manifest('1.1.0'), append: [v.answered12()] });
    expect(verifyOpen(dir).failures).toEqual([{ store: RUN_FILES.manifest, seq: 1, reason: 'the signed manifest names event catalogue 1.1.0, StoreOpened 1.0.0' }]);
  });
});
