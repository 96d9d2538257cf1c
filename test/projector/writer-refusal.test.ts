// The Subject projector inside a REAL writer process (DESIGN §2, §5: "an event implying an
// illegal transition is rejected at append time"; spec §12.2: all or nothing). The
// writer runs with projection 'subject'; an illegal event is answered with
// projection_rejected, recorded as SystemEvent.AppendRejected, and nothing of its batch
// is stored or folded into the writer's state.
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { subjectProjection, subjectStateHash } from '../../projector/subject-projection.js';
import type { SubjectState } from '../../projector/subject-state.js';
import { eventIdFor } from '../../schema/envelope-hash.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { AppendRejected } from '../../schema/events/system-events.js';
import { WriterClient } from '../../writer/client.js';
import { DEFAULT_SNAPSHOT_EVERY_EVENTS, WriterError, type AppendResult, type EventDraft, type Head } from '../../writer/protocol.js';
import { newToken, spawnWriter, type WriterProcess } from '../../writer/spawn.js';
import { assertValidChain, d, EXPERIMENT_ID, MANIFEST_SHA256, standardRun, SUBJECT_ID, type StandardRun } from '../support/subject-events.js';
import { tempDir } from '../support/writer-fixture.js';

// ---------------------------------------------------------------------------------------
// A writer with the Subject projection (the shared fixture starts 'event-counts').

interface SubjectWriter {
  readonly dir: string;
  readonly dbPath: string;
  readonly writer: WriterProcess;
  readonly runtime: WriterClient;
  readonly experiment: WriterClient;
}

async function startSubjectWriter(): Promise<SubjectWriter> {
  const dir = tempDir('ds-subject-');
  const dbPath = path.join(dir, 'events.db');
  const tokens = { runtime: newToken(), experiment: newToken() };
  const writer = await spawnWriter({
    db_path: dbPath,
    socket_path: path.join(dir, 'w.sock'),
    mode: 'create',
    subject_id: SUBJECT_ID,
    experiment_id: EXPERIMENT_ID,
    manifest_sha256: MANIFEST_SHA256,
    tokens,
    projection: 'subject',
    socket_mode: 0o600,
    snapshot_every: DEFAULT_SNAPSHOT_EVERY_EVENTS,
  });
  const runtime = await WriterClient.connect(writer.socketPath, 'runtime', tokens.runtime);
  const experiment = await WriterClient.connect(writer.socketPath, 'experiment', tokens.experiment);
  return { dir, dbPath, writer, runtime, experiment };
}

const RUNTIME_CATEGORIES = new Set(['ModelOutputEvent', 'ActionEvent', 'MemoryEvent', 'PlanEvent']);

function roleOf(draft: EventDraft): 'runtime' | 'experiment' {
  return RUNTIME_CATEGORIES.has(draft.event_type.split('.')[0]!) ? 'runtime' : 'experiment';
}

async function readAll(client: WriterClient): Promise<EventEnvelope[]> {
  const all: EventEnvelope[] = [];
  let from = 1;
  for (;;) {
    const page = await client.read({ from_seq: from, limit: 1_000 });
    all.push(...page.events);
    if (page.events.length === 0 || page.next_seq > page.head.seq) return all;
    from = page.next_seq;
  }
}

function project(events: readonly EventEnvelope[]): SubjectState {
  return subjectProjection.applyAll(subjectProjection.initial(), events);
}

const at = (seq: number): string => new Date(Date.parse('2026-07-21T08:00:00.000Z') + seq * 60_000).toISOString();

function stamped(draft: EventDraft, seq: number): EventDraft {
  return { ...draft, occurred_at: at(seq) };
}

// ---------------------------------------------------------------------------------------

let w: SubjectWriter;
let run: StandardRun;
let stopped = false;

beforeAll(async () => {
  w = await startSubjectWriter();
  run = standardRun();
});

afterAll(async () => {
  if (!w) return;
  w.runtime.close();
  w.experiment.close();
  if (!stopped) await w.writer.stop();
  rmSync(w.dir, { recursive: true, force: true });
});

/**
 * Appends `drafts` with `client`, expects projection_rejected for the event at
 * `badIndex`, and checks that the refusal — and nothing of the batch — is in the store.
 */
async function expectProjectionRejected(client: WriterClient, drafts: EventDraft[], badIndex: number, reason: RegExp): Promise<{ before: Head; rejectionSeq: number }> {
  const before = await client.head();
  let outcome: AppendResult | WriterError;
  try {
    outcome = await client.append(drafts);
  } catch (error) {
    if (!(error instanceof WriterError)) throw error;
    outcome = error;
  }
  if (!(outcome instanceof WriterError)) throw new Error(`expected projection_rejected, the writer accepted ${JSON.stringify(outcome.events)}`);
  expect(outcome.code, outcome.message).toBe('projection_rejected');
  expect(outcome.message).toMatch(reason);
  // details name the event the projection refused, at the seq it would have had.
  expect(outcome.details).toMatchObject({ seq: before.seq + 1 + badIndex, event_type: drafts[badIndex]!.event_type });
  if (outcome.details && 'index' in outcome.details) expect(outcome.details.index).toBe(badIndex);
  expect(outcome.message).toContain(`at seq ${before.seq + 1 + badIndex} refused by the projection`);
  // The head moved by exactly one event: the refusal record.
  const after = await client.head();
  expect(after.seq).toBe(before.seq + 1);
  expect(outcome.rejectionSeq).toBe(after.seq);
  const page = await client.read({ from_seq: before.seq + 1, limit: 1_000 });
  expect(page.events).toHaveLength(1);
  const record = page.events[0]!;
  expect(record).toMatchObject({ seq: after.seq, event_type: 'SystemEvent.AppendRejected', actor: 'experiment', previous_event_hash: before.event_hash, event_hash: after.event_hash });
  const payload = AppendRejected.payload.parse(record.payload);
  expect(payload).toMatchObject({ reason: 'projection_rejected', role: client.hello!.role, method: 'append', connection_id: client.hello!.connection_id });
  // No event of the batch is in the store under the id it would have had.
  const ids = new Set((await readAll(client)).map((e) => e.event_id));
  for (let i = 1; i < drafts.length; i++) expect(ids.has(eventIdFor(SUBJECT_ID, before.seq + 1 + i))).toBe(false);
  return { before, rejectionSeq: after.seq };
}

describe('a writer running the Subject projection', () => {
  test('takes the standard run, batch by batch per role, and stores exactly the events the builder predicted', async () => {
    expect(w.writer.head.seq).toBe(1); // its own StoreOpened
    const { drafts, events } = run.stream;
    // Consecutive events of one role go in one batch (the writer folds a batch with applyAll).
    let i = 1;
    while (i < drafts.length) {
      const role = roleOf(drafts[i]!);
      const batch: EventDraft[] = [];
      const start = i;
      while (i < drafts.length && roleOf(drafts[i]!) === role) {
        batch.push({ ...drafts[i]!, occurred_at: events[i]!.occurred_at });
        i++;
      }
      const result = await (role === 'runtime' ? w.runtime : w.experiment).append(batch);
      expect(result.events.map((e) => e.seq)).toEqual(events.slice(start, i).map((e) => e.seq));
      expect(result.events.map((e) => e.event_id)).toEqual(events.slice(start, i).map((e) => e.event_id));
    }
    const stored = await readAll(w.runtime);
    assertValidChain(stored);
    expect(stored.map((e) => [e.seq, e.event_id, e.event_type, e.payload])).toEqual(
      events.map((e, j) => (j === 0 ? [e.seq, e.event_id, e.event_type, stored[0]!.payload] : [e.seq, e.event_id, e.event_type, e.payload])),
    );
    // The same subject, whether projected from the builder's envelopes or the writer's.
    expect(subjectStateHash(project(stored))).toBe(subjectStateHash(project(events)));
    expect(project(stored).claims['fact-dataset']?.status).toBe('refuted');
  });

  test('runtime: ActionProposed while DORMANT is refused at append time and recorded', async () => {
    await expectProjectionRejected(w.runtime, [d.actionProposed('p-dormant', 'files', 'write')], 0, /no wake is in progress \(lifecycle DORMANT\)/);
  });

  test('experiment: WakeStarted twice and WakeEnded for another wake are refused; the right ones are taken', async () => {
    const head = await w.experiment.head();
    await w.experiment.append([stamped(d.wakeStarted('w-batch', { model_calls: 2, tokens: 1_000, tool_calls: 1 }, head.seq), head.seq + 1)]);
    await expectProjectionRejected(w.experiment, [d.wakeStarted('w-other')], 0, /wake w-batch has not ended/);
    await expectProjectionRejected(w.experiment, [d.message(), d.wakeEnded('w-other')], 1, /wake w-other is not the one in progress \(w-batch\)/);
  });

  test('a batch refused at its last event leaves no trace but the rejection; the same events minus the bad one are then accepted', async () => {
    const batchAt = (base: number): EventDraft[] => {
      const permissionId = eventIdFor(SUBJECT_ID, base + 3);
      return [
        d.modelAnswered('w-batch'),
        d.actionProposed('p1', 'files', 'write', { path: 'report.md' }),
        d.permission('p1', 'allow'),
        d.intent('p1', permissionId, 'report.md'),
        d.intent('p1', permissionId, 'report.md'), // the same side effect again
      ];
    };
    const head = await w.runtime.head();
    const { rejectionSeq } = await expectProjectionRejected(w.runtime, batchAt(head.seq), 4, /proposal p1 was already executed: a second execution would duplicate a side effect/);
    // Had the writer kept any of the refused batch in its state, re-proposing p1 or
    // spending the only tool call again would now be refused.
    const good = batchAt(rejectionSeq).slice(0, 4);
    const result = await w.runtime.append(good);
    expect(result.events.map((e) => e.seq)).toEqual([rejectionSeq + 1, rejectionSeq + 2, rejectionSeq + 3, rejectionSeq + 4]);
    const intentId = result.events[3]!.event_id;
    await w.runtime.append([d.toolSucceeded(intentId)]);
    await expectProjectionRejected(w.runtime, [d.toolSucceeded(intentId)], 0, /no open execution intent/);
  });

  test('allow with no tool budget left is refused with its proposal; the proposal alone, then a deny, are accepted', async () => {
    await expectProjectionRejected(w.runtime, [d.actionProposed('p2', 'files', 'write', { path: 'x.md' }), d.permission('p2', 'allow')], 1, /no tool calls left in this wake/);
    await w.runtime.append([d.actionProposed('p2', 'files', 'write', { path: 'x.md' })]);
    await w.runtime.append([d.permission('p2', 'deny')]);
  });

  test('claims: INFERENCE without confidence and a reused claim id are refused by the projection', async () => {
    await expectProjectionRejected(w.runtime, [d.claim('inf-1', 'INFERENCE', [], { confidence: null })], 0, /an INFERENCE carries a confidence/);
    await w.runtime.append([d.claim('plan-1', 'PLAN', [])]);
    await expectProjectionRejected(w.runtime, [d.focus(), d.claim('plan-1', 'PLAN', [])], 1, /claim plan-1 exists/);
  });

  test('after EmergencyStopped nothing the subject does is accepted', async () => {
    await w.experiment.append([d.wakeEnded('w-batch'), d.emergencyStopped()]);
    await expectProjectionRejected(w.experiment, [d.wakeStarted('w-after')], 0, /illegal lifecycle transition STOPPED → AWAKE/);
    await expectProjectionRejected(w.runtime, [d.modelAnswered('w-batch')], 0, /no wake is in progress \(lifecycle STOPPED\)/);
  });

  test('the projection the writer committed equals a replay of what it stored (refusal records included)', async () => {
    const stored = await readAll(w.runtime);
    assertValidChain(stored);
    const rejections = stored.filter((e) => e.event_type === 'SystemEvent.AppendRejected');
    expect(rejections.length).toBe(10);
    for (const r of rejections) expect(AppendRejected.payload.parse(r.payload).reason).toBe('projection_rejected');
    const replayed = project(stored);
    expect(replayed.lifecycle_state).toBe('STOPPED');
    expect(replayed.last_applied_event_seq).toBe(stored.length);
    w.runtime.close();
    w.experiment.close();
    await w.writer.stop();
    stopped = true;
    const db = new Database(w.dbPath, { readonly: true });
    try {
      const row = db.prepare('SELECT name, state, state_hash, last_applied_event_seq FROM projection').get() as { name: string; state: string; state_hash: string; last_applied_event_seq: number };
      expect(row.name).toBe('subject');
      expect(row.last_applied_event_seq).toBe(stored.length);
      expect(row.state_hash).toBe(subjectStateHash(replayed));
      expect(JSON.parse(row.state)).toEqual(replayed);
    } finally {
      db.close();
    }
  });
});
