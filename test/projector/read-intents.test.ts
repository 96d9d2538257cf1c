// File reads are executions (issue 5 item 5, DESIGN §6.7, §7): a read goes ActionProposed →
// PermissionDecided → ExecutionIntentRecorded(op read) → ToolSucceeded(content), so what was
// read is a succeeded tool result a FACT can cite. The catalogue carries it
// (ExecutionIntentRecorded and ToolSucceeded at schema 1.1.0), the projector checks that a
// read intent executes a read proposal and intends no change, and that content comes exactly
// with a read and hashes to observed_post_hash; each of those checks has a forged case. The
// last test runs the flow through a real writer with the subject projection.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { evidenceEligibility } from '../../projector/evidence.js';
import { subjectProjection } from '../../projector/subject-projection.js';
import { SubjectState, type SubjectState as State } from '../../projector/subject-state.js';
import { SUBJECT_PROJECTOR_VERSION } from '../../projector/versions.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { eventDefinition, schemaVersionOf, type PayloadOf } from '../../schema/event-catalog.js';
import { MAX_READ_CONTENT_CHARS } from '../../schema/events/action-events.js';
import { hashCanonical, hashText, type HashString } from '../../schema/hash.js';
import { WriterClient } from '../../writer/client.js';
import { WriterError, type EventDraft } from '../../writer/protocol.js';
import { newSocketPath, newToken, spawnWriter } from '../../writer/spawn.js';
import { given } from '../support/projector-spec.js';
import { BUDGET, d, draft, SubjectStream } from '../support/subject-events.js';

const P = subjectProjection;
const TEXT = 'The dataset arrives on Thursday.\n';
const TEXT_HASH = hashText(TEXT);

type IntentPayload = PayloadOf<'ActionEvent.ExecutionIntentRecorded'>;

function readIntent(proposalId: string, permissionEventId: string, o: Partial<IntentPayload> = {}): EventDraft {
  return draft('ActionEvent.ExecutionIntentRecorded', {
    proposal_id: proposalId,
    permission_event_id: permissionEventId,
    op: 'read',
    path: 'notes/data.md',
    to_path: null,
    pre_hash: TEXT_HASH,
    intended_post_hash: TEXT_HASH,
    ...o,
  });
}

function succeeded(intentEventId: string, content: string | null, observed: HashString | null = content === null ? null : hashText(content)): EventDraft {
  return draft('ActionEvent.ToolSucceeded', { intent_event_id: intentEventId, observed_post_hash: observed, content });
}

/** StoreOpened … WakeStarted → ModelAnswered: a subject that may propose. */
function awakeStream(): SubjectStream {
  const s = new SubjectStream().open();
  s.push(d.wakeStarted('w1', BUDGET, s.nextSeq - 1));
  s.push(d.modelAnswered('w1'));
  return s;
}

/** ActionProposed(files, op) → allow; returns the permission envelope. */
function allowed(s: SubjectStream, proposalId: string, op: 'read' | 'write'): EventEnvelope {
  s.push(d.actionProposed(proposalId, 'files', op, { path: 'notes/data.md' }));
  return s.push(d.permission(proposalId, 'allow'));
}

function project(events: readonly EventEnvelope[]): State {
  return P.applyAll(P.initial(), events);
}

describe('the catalogue carries reads', () => {
  test('ExecutionIntentRecorded and ToolSucceeded are at schema 1.1.0; the projector at 1.3.0 (1.2.0 made reads executions; 1.3.0 spends failed calls\' tokens)', () => {
    expect(schemaVersionOf('ActionEvent.ExecutionIntentRecorded')).toBe('1.1.0');
    expect(schemaVersionOf('ActionEvent.ToolSucceeded')).toBe('1.1.0');
    // The other action events did not change.
    for (const type of ['ActionEvent.ActionProposed', 'ActionEvent.PermissionDecided', 'ActionEvent.ToolFailed', 'ActionEvent.ToolOutcomeUnknown', 'ActionEvent.ToolReconciled'] as const) {
      expect(schemaVersionOf(type)).toBe('1.0.0');
    }
    expect(SUBJECT_PROJECTOR_VERSION).toBe('1.3.0');
  });

  test("an intent may be a read; ToolSucceeded needs content (null or at most 32,768 chars)", () => {
    const intent = eventDefinition('ActionEvent.ExecutionIntentRecorded')!.payload;
    const base = { proposal_id: 'p1', permission_event_id: '00000000-0001-8000-8000-000000000000', path: 'a.md', to_path: null, pre_hash: TEXT_HASH, intended_post_hash: TEXT_HASH };
    expect(intent.safeParse({ ...base, op: 'read' }).success).toBe(true);
    expect(intent.safeParse({ ...base, op: 'peek' }).success).toBe(false);

    const ok = eventDefinition('ActionEvent.ToolSucceeded')!.payload;
    const id = '00000000-0002-8000-8000-000000000000';
    expect(ok.safeParse({ intent_event_id: id, observed_post_hash: TEXT_HASH, content: TEXT }).success).toBe(true);
    expect(ok.safeParse({ intent_event_id: id, observed_post_hash: TEXT_HASH, content: null }).success).toBe(true);
    // A 1.0.0 payload (no content) is not a 1.1.0 one: every key is required.
    expect(ok.safeParse({ intent_event_id: id, observed_post_hash: TEXT_HASH }).success).toBe(false);
    expect(MAX_READ_CONTENT_CHARS).toBe(32_768);
    expect(ok.safeParse({ intent_event_id: id, observed_post_hash: null, content: 'x'.repeat(MAX_READ_CONTENT_CHARS) }).success).toBe(true);
    expect(ok.safeParse({ intent_event_id: id, observed_post_hash: null, content: 'x'.repeat(MAX_READ_CONTENT_CHARS + 1) }).success).toBe(false);
  });
});

describe('the projector accepts a read as an execution', () => {
  test('proposal → allow → read intent → ToolSucceeded(content); the result is evidence a FACT cites', () => {
    const s = awakeStream();
    const permission = allowed(s, 'p-read', 'read');
    const intent = s.push(readIntent('p-read', permission.event_id));
    const open = project(s.events);
    expect(open.open_intents[intent.event_id]).toMatchObject({ op: 'read', pre_hash: TEXT_HASH, intended_post_hash: TEXT_HASH, outcome: 'pending' });
    expect(open.cognitive_state).toBe('EXECUTING');
    expect(open.resource_budget.remaining.tool_calls).toBe(BUDGET.tool_calls - 1);
    expect(open.proposals['p-read']).toMatchObject({ op: 'read', decision: 'allow', executed: true });

    const result = s.push(succeeded(intent.event_id, TEXT));
    expect(evidenceEligibility(result)).toEqual({ eligible: true });
    s.push(d.claim('fact-read', 'FACT', [result.event_id], { statement: 'The dataset arrives on Thursday (notes/data.md).' }));
    const state = project(s.events);
    expect(state.open_intents).toEqual({});
    expect(state.claims['fact-read']).toMatchObject({ claim_type: 'FACT', evidence_event_ids: [result.event_id], status: 'active' });
    expect(state.evidence_dependents[result.event_id]).toEqual(['fact-read']);
    expect(state.cognitive_state).toBe('REFLECTING');
    // The state is still a valid SubjectState (OpenIntent.op takes 'read').
    expect(SubjectState.safeParse(open).success).toBe(true);
  });

  test('an empty file reads as empty content; a read of a missing file (pre_hash null) ends in ToolFailed', () => {
    const s = awakeStream();
    const permission = allowed(s, 'p-empty', 'read');
    const intent = s.push(readIntent('p-empty', permission.event_id, { pre_hash: hashText(''), intended_post_hash: hashText('') }));
    s.push(succeeded(intent.event_id, ''));
    expect(project(s.events).open_intents).toEqual({});

    const missing = allowed(s, 'p-missing', 'read');
    const missingIntent = s.push(readIntent('p-missing', missing.event_id, { path: 'absent.md', pre_hash: null, intended_post_hash: null }));
    s.push(draft('ActionEvent.ToolFailed', { intent_event_id: missingIntent.event_id, error: 'no file at that path', observed_hash: null }));
    const state = project(s.events);
    expect(state.open_intents).toEqual({});
    expect(state.proposals['p-missing']!.executed).toBe(true);
  });

  test('a read intent left open by a crash is reconciled (did_not_happen) like any other', () => {
    const s = awakeStream();
    const permission = allowed(s, 'p-read', 'read');
    const intent = s.push(readIntent('p-read', permission.event_id));
    s.push(d.wakeEnded('w1', 'crashed'));
    s.push(d.toolReconciled(intent.event_id, 'did_not_happen'));
    const state = project(s.events);
    expect(state.open_intents).toEqual({});
    expect(state.lifecycle_state).toBe('DORMANT');
  });

  test('a write still succeeds with content null', () => {
    const s = awakeStream();
    const intent = s.fileIntent('p-write', 'notes.md');
    s.push(succeeded(intent.event_id, null, hashCanonical({ v: 1 })));
    expect(project(s.events).open_intents).toEqual({});
  });
});

describe('forged read events are refused', () => {
  test('a read intent with a to_path', () => {
    const s = awakeStream();
    const permission = allowed(s, 'p-read', 'read');
    given(s).when(readIntent('p-read', permission.event_id, { to_path: 'elsewhere.md' })).thenRefused('read_with_to_path');
  });

  test('a read intent that intends a change (intended_post_hash ≠ pre_hash, or one of them null)', () => {
    const s = awakeStream();
    const permission = allowed(s, 'p-read', 'read');
    given(s).when(readIntent('p-read', permission.event_id, { intended_post_hash: hashText('other') })).thenRefused('read_changes_file');
    given(s).when(readIntent('p-read', permission.event_id, { pre_hash: null })).thenRefused('read_changes_file');
  });

  test('a read permission executed as a write, and a write permission executed as a read', () => {
    const s = awakeStream();
    const readPermission = allowed(s, 'p-read', 'read');
    given(s)
      .when(draft('ActionEvent.ExecutionIntentRecorded', { proposal_id: 'p-read', permission_event_id: readPermission.event_id, op: 'write', path: 'notes/data.md', to_path: null, pre_hash: TEXT_HASH, intended_post_hash: hashText('overwritten') }))
      .thenRefused('read_op_mismatch');
    const t = awakeStream();
    const writePermission = allowed(t, 'p-write', 'write');
    given(t).when(readIntent('p-write', writePermission.event_id)).thenRefused('read_op_mismatch');
  });

  test('a read that succeeded without content, with content that does not hash to observed_post_hash, or with no hash', () => {
    const s = awakeStream();
    const permission = allowed(s, 'p-read', 'read');
    const intent = s.push(readIntent('p-read', permission.event_id));
    given(s).when(succeeded(intent.event_id, null, TEXT_HASH)).thenRefused('read_without_content');
    given(s).when(succeeded(intent.event_id, 'The dataset arrives on Friday.\n', TEXT_HASH)).thenRefused('content_hash_mismatch');
    given(s).when(succeeded(intent.event_id, TEXT, null)).thenRefused('content_hash_mismatch');
    // The genuine one is still accepted after the refusals.
    s.push(succeeded(intent.event_id, TEXT));
    expect(project(s.events).open_intents).toEqual({});
  });

  test('content on the outcome of a write', () => {
    const s = awakeStream();
    const intent = s.fileIntent('p-write', 'notes.md');
    given(s).when(succeeded(intent.event_id, 'smuggled text')).thenRefused('content_without_read');
  });

  test('an unknown read outcome is still closed only by an operator, whatever the content', () => {
    const s = awakeStream();
    const permission = allowed(s, 'p-read', 'read');
    const intent = s.push(readIntent('p-read', permission.event_id));
    s.push(d.toolOutcomeUnknown(intent.event_id));
    given(s).when(succeeded(intent.event_id, TEXT)).thenRefused('outcome_unknown');
  });

  test('no read is allowed while RECOVERING (the projector refuses the allow)', () => {
    const s = awakeStream();
    const intent = s.fileIntent('p-write', 'notes.md');
    s.push(d.toolOutcomeUnknown(intent.event_id));
    expect(project(s.events).lifecycle_state).toBe('RECOVERING');
    s.push(d.modelAnswered('w1'));
    s.push(d.actionProposed('p-read', 'files', 'read', { path: 'notes.md' }));
    given(s).when(d.permission('p-read', 'allow')).thenRefused('read_only');
  });
});

describe('through a real writer with the subject projection', () => {
  test('the read flow is stored, a FACT cites the result, a 1.0.0 ToolSucceeded and a forged content are refused', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ds-read-intents-'));
    const tokens = { runtime: newToken(), experiment: newToken() };
    const writer = await spawnWriter({
      db_path: path.join(dir, 'events.db'),
      socket_path: newSocketPath(),
      mode: 'create',
      subject_id: 'subject-001',
      experiment_id: 'exp-read-intents',
      manifest_sha256: hashCanonical({ purpose: 'read intents test' }),
      tokens,
      projection: 'subject',
      socket_mode: 0o600,
      snapshot_every: 1_000,
    });
    const ex = await WriterClient.connect(writer.socketPath, 'experiment', tokens.experiment);
    const rt = await WriterClient.connect(writer.socketPath, 'runtime', tokens.runtime);
    const one = async (client: WriterClient, dr: EventDraft): Promise<{ event_id: string; seq: number }> => (await client.append([dr])).events[0]!;
    const refusal = async (dr: EventDraft): Promise<WriterError> => {
      const caught = await rt.append([dr]).then(
        () => null,
        (error: unknown) => error,
      );
      expect(caught).toBeInstanceOf(WriterError);
      return caught as WriterError;
    };
    try {
      await one(ex, d.subjectInitialized());
      await one(ex, d.wakeStarted('w1', BUDGET, 2));
      await one(rt, d.modelAnswered('w1'));
      await one(rt, d.actionProposed('p-read', 'files', 'read', { path: 'notes/data.md' }));
      const permission = await one(rt, d.permission('p-read', 'allow'));
      const intent = await one(rt, readIntent('p-read', permission.event_id));

      const old = { ...succeeded(intent.event_id, TEXT), schema_version: '1.0.0' };
      expect((await refusal(old)).code).toBe('schema');
      expect((await refusal(succeeded(intent.event_id, 'forged text', TEXT_HASH))).code).toBe('projection_rejected');

      const result = await one(rt, succeeded(intent.event_id, TEXT));
      const stored = (await rt.read({ from_seq: result.seq, limit: 1 })).events[0];
      expect(stored).toMatchObject({ event_type: 'ActionEvent.ToolSucceeded', schema_version: '1.1.0', payload: { content: TEXT, observed_post_hash: TEXT_HASH } });
      const fact = await one(rt, d.claim('fact-read', 'FACT', [result.event_id]));
      expect(fact.seq).toBe(result.seq + 1);
    } finally {
      ex.close();
      rt.close();
      const exit = await writer.stop();
      rmSync(dir, { recursive: true, force: true });
      expect(exit.code).toBe(0);
    }
  });
});
