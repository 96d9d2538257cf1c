// Integration tests against real ds-writer processes on real SQLite files (DESIGN §2, §4):
// process identity, the hash chain, authentication, roles, schema checks, atomic
// batches, optimistic concurrency, idempotency, limits, reads, crash durability,
// exclusivity of the store and the append-only triggers in the file itself.
import Database from 'better-sqlite3';
import { execFileSync, fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { canonicalJson } from '../../schema/canonical-json.js';
import { EventEnvelope } from '../../schema/envelope.js';
import { computeEventHash, computePayloadHash, eventIdFor } from '../../schema/envelope-hash.js';
import { AppendRejected } from '../../schema/events/system-events.js';
import { GENESIS_HASH, hashCanonical } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { WriterClient, WriterUnavailableError } from '../../writer/client.js';
import { DEFAULT_SNAPSHOT_EVERY_EVENTS, WRITER_LIMITS, WriterChildMessage, WriterError, type AppendResult, type EventDraft, type Head, type WriterErrorCode } from '../../writer/protocol.js';
import { spawnWriter, WriterStartError } from '../../writer/spawn.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { journalDraft, messageDraft, reopenWriterFixture, startWriterFixture, tempDir, type WriterFixture } from '../support/writer-fixture.js';

// ---------------------------------------------------------------------------------------
// helpers

type AppendRejectedPayload = ReturnType<typeof AppendRejected.payload.parse>;

function sha256OfLine(line: string): string {
  return `sha256:${createHash('sha256').update(Buffer.from(line, 'utf8')).digest('hex')}`;
}

/** A string nobody would write by accident: if it shows up in the store, request content leaked. */
function plantSecret(label: string): string {
  return `SECRET-${label}-${randomBytes(12).toString('hex')}`;
}

let nextRawId = 1_000_000;

function appendLine(events: unknown[], expectHead?: Head | null): (id: number) => string {
  return (id) => JSON.stringify({ id, method: 'append', params: { events, ...(expectHead === undefined ? {} : { expect_head: expectHead }) } });
}

async function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

async function readAll(client: WriterClient, pageSize = 1_000): Promise<EventEnvelope[]> {
  const all: EventEnvelope[] = [];
  let from = 1;
  for (;;) {
    const page = await client.read({ from_seq: from, limit: pageSize });
    all.push(...page.events);
    if (page.events.length === 0 || page.next_seq > page.head.seq) return all;
    from = page.next_seq;
  }
}

/** seq 1..n contiguous, each link and hash recomputed independently of the writer. */
function expectValidChain(events: readonly EventEnvelope[], subjectId: string): void {
  let previous = GENESIS_HASH as string;
  events.forEach((env, i) => {
    expect(EventEnvelope.parse(env)).toEqual(env);
    expect(env.seq).toBe(i + 1);
    expect(env.subject_id).toBe(subjectId);
    expect(env.event_id).toBe(eventIdFor(subjectId, env.seq));
    expect(env.previous_event_hash).toBe(previous);
    expect(computePayloadHash(env.payload)).toBe(env.payload_hash);
    expect(computeEventHash(env)).toBe(env.event_hash);
    previous = env.event_hash;
  });
}

interface Refusal {
  readonly error: WriterError;
  readonly line: string;
  readonly id: number;
  readonly before: Head;
  readonly after: Head;
  readonly record: AppendRejectedPayload;
  readonly recordEnvelope: EventEnvelope;
}

/**
 * Sends one exact request line on an authenticated connection, expects a refusal with
 * `code`, and checks that the refusal — and nothing else — was recorded as
 * SystemEvent.AppendRejected at `rejectionSeq`, with the sha256 of the very bytes sent.
 */
async function expectRefused(client: WriterClient, build: (id: number) => string, code: WriterErrorCode): Promise<Refusal> {
  const before = await client.head();
  const id = nextRawId++;
  const line = build(id);
  const outcome = await settle(client.rawRequest(line, id));
  if (outcome.ok) throw new Error(`expected ${code}, the writer accepted: ${JSON.stringify(outcome.value)}`);
  const error = outcome.error;
  expect(error).toBeInstanceOf(WriterError);
  if (!(error instanceof WriterError)) throw error;
  expect(error.code, error.message).toBe(code);
  const after = await client.head();
  expect(after.seq).toBe(before.seq + 1);
  expect(error.rejectionSeq).toBe(after.seq);
  const page = await client.read({ from_seq: before.seq + 1, limit: 10 });
  expect(page.events).toHaveLength(1);
  const recordEnvelope = page.events[0]!;
  expect(recordEnvelope.seq).toBe(error.rejectionSeq);
  expect(recordEnvelope.event_type).toBe('SystemEvent.AppendRejected');
  expect(recordEnvelope.actor).toBe('experiment');
  expect(recordEnvelope.idempotency_key).toBeNull();
  expect(recordEnvelope.previous_event_hash).toBe(before.event_hash);
  expect(recordEnvelope.event_hash).toBe(after.event_hash);
  const record = AppendRejected.payload.parse(recordEnvelope.payload);
  expect(record.reason).toBe(code);
  expect(record.request_sha256).toBe(sha256OfLine(line));
  expect(record.request_bytes).toBe(Buffer.byteLength(line, 'utf8'));
  expect(record.role).toBe(client.hello!.role);
  expect(record.connection_id).toBe(client.hello!.connection_id);
  return { error, line, id, before, after, record, recordEnvelope };
}

/** A bare socket, for what WriterClient will not do: talk before hello, watch the hang-up. */
interface RawSession {
  request(line: string): Promise<Record<string, unknown>>;
  readonly closed: Promise<void>;
  isClosed(): boolean;
  end(): void;
}

async function rawSession(socketPath: string): Promise<RawSession> {
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const s = net.createConnection(socketPath);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
  socket.setEncoding('utf8');
  let buffer = '';
  let isClosed = false;
  const lines: string[] = [];
  const waiters: ((line: string) => void)[] = [];
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  void closed.then(() => {
    isClosed = true;
  });
  socket.on('error', () => undefined);
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      const waiter = waiters.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    }
  });
  return {
    request(line) {
      socket.write(`${line}\n`);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer to ${line.slice(0, 80)}`)), 5_000);
        const take = (text: string): void => {
          clearTimeout(timer);
          resolve(JSON.parse(text) as Record<string, unknown>);
        };
        const queued = lines.shift();
        if (queued !== undefined) take(queued);
        else waiters.push(take);
      });
    },
    closed,
    isClosed: () => isClosed,
    end: () => socket.end(),
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms).unref())]);
}

function validRejectedPayload(): Record<string, unknown> {
  return {
    reason: 'schema',
    message: 'forged refusal',
    role: null,
    method: 'append',
    request_id: '1',
    request_sha256: `sha256:${'a'.repeat(64)}`,
    request_bytes: 10,
    connection_id: 1,
  };
}

// ---------------------------------------------------------------------------------------
// one writer shared by the protocol tests; each test measures the head before and after

describe('ds-writer: protocol against one live writer process', () => {
  let f: WriterFixture;
  let exp: WriterClient;
  let rt: WriterClient;
  const secrets: string[] = [];

  let dir: string | undefined;

  beforeAll(async () => {
    dir = tempDir();
    f = await startWriterFixture(dir);
    exp = await f.connect('experiment');
    rt = await f.connect('runtime');
  });

  afterAll(async () => {
    await f?.stop().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('1. process and chain', () => {
    test('runs as a separate OS process titled ds-writer, child of this one', () => {
      const pid = f.writer.pid;
      expect(pid).toBeGreaterThan(0);
      expect(pid).not.toBe(process.pid);
      expect(() => process.kill(pid, 0)).not.toThrow();
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
      expect(argv[0]).toBe('ds-writer');
      const psArgs = execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).trim();
      expect(psArgs.startsWith('ds-writer')).toBe(true);
      // Role tokens travel over IPC, never in argv.
      expect(argv.join(' ')).not.toContain(f.tokens.runtime);
      expect(argv.join(' ')).not.toContain(f.tokens.experiment);
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      expect(ppid).toBe(process.pid);
    });

    test('seq 1 is SystemEvent.StoreOpened binding the store to the experiment and its signed manifest', async () => {
      expect(exp.hello?.experiment_id).toBe(f.identity.experiment_id);
      expect(exp.hello?.subject_id).toBe(f.identity.subject_id);
      const page = await exp.read({ from_seq: 1, limit: 1 });
      const first = page.events[0]!;
      expect(first.seq).toBe(1);
      expect(first.event_type).toBe('SystemEvent.StoreOpened');
      expect(first.previous_event_hash).toBe(GENESIS_HASH);
      expect(first.payload.experiment_id).toBe(f.identity.experiment_id);
      expect(first.payload.subject_id).toBe(f.identity.subject_id);
      expect(first.payload.manifest_sha256).toBe(f.identity.manifest_sha256);
      // ... and that hash is the hash of the manifest actually signed into the run folder.
      const dsse = JSON.parse(readFileSync(path.join(f.dir, RUN_FILES.manifest), 'utf8')) as { payload: string };
      const manifest = JSON.parse(Buffer.from(dsse.payload, 'base64').toString('utf8')) as unknown;
      expect(hashCanonical(manifest)).toBe(first.payload.manifest_sha256);
      // The writer reported seq 1 as its head when it became ready.
      expect(f.writer.head).toEqual({ seq: 1, event_hash: first.event_hash });
    });

    test('appends from two connections, pipelined, get contiguous seqs and a linked chain', async () => {
      const before = await exp.head();
      const pending: Promise<AppendResult>[] = [];
      for (let i = 0; i < 20; i++) {
        pending.push(exp.append([messageDraft()]));
        pending.push(rt.append([journalDraft(`concurrent ${i}`)]));
      }
      const results = await Promise.all(pending);
      const seqs = results.map((r) => r.events[0]!.seq).sort((a, b) => a - b);
      expect(seqs).toEqual(Array.from({ length: 40 }, (_, i) => before.seq + 1 + i));
      for (const r of results) expect(r.events[0]!.deduplicated).toBe(false);
      const all = await readAll(exp);
      expect(all).toHaveLength(before.seq + 40);
      expectValidChain(all, f.identity.subject_id);
      // Each acknowledged hash is the stored one.
      for (const r of results) expect(all[r.events[0]!.seq - 1]!.event_hash).toBe(r.events[0]!.event_hash);
    });
  });

  describe('2. hello', () => {
    test('a wrong token is refused as unauthenticated, recorded without the token, and the connection is closed', async () => {
      const secretToken = plantSecret('token');
      secrets.push(secretToken);
      const before = await exp.head();
      const session = await rawSession(f.writer.socketPath);
      const line = JSON.stringify({ id: 7, method: 'hello', params: { role: 'experiment', token: secretToken } });
      const response = await session.request(line);
      expect(response.ok).toBe(false);
      expect(response.id).toBe(7);
      const error = response.error as { code: string; rejection_seq: number };
      expect(error.code).toBe('unauthenticated');
      await withTimeout(session.closed, 3_000, 'the writer to hang up after a wrong token');
      expect(session.isClosed()).toBe(true);

      const after = await exp.head();
      expect(after.seq).toBe(before.seq + 1);
      expect(error.rejection_seq).toBe(after.seq);
      const env = (await exp.read({ from_seq: after.seq, limit: 1 })).events[0]!;
      expect(env.event_type).toBe('SystemEvent.AppendRejected');
      const record = AppendRejected.payload.parse(env.payload);
      expect(record.reason).toBe('unauthenticated');
      expect(record.role).toBeNull();
      expect(record.method).toBe('hello');
      expect(record.request_id).toBe('7');
      expect(record.request_sha256).toBe(sha256OfLine(line));
      expect(record.request_bytes).toBe(Buffer.byteLength(line));
      expect(JSON.stringify(env)).not.toContain(secretToken);
    });

    test('WriterClient.connect with a wrong token (or another role\'s token) rejects with a typed WriterError', async () => {
      const wrong = await settle(WriterClient.connect(f.writer.socketPath, 'runtime', 'x'.repeat(f.tokens.runtime.length)));
      expect(wrong.ok).toBe(false);
      const error = (wrong as { error: unknown }).error;
      expect(error).toBeInstanceOf(WriterError);
      expect((error as WriterError).code).toBe('unauthenticated');
      const seq = (error as WriterError).rejectionSeq!;
      const recorded = (await exp.read({ from_seq: seq, limit: 1 })).events[0]!;
      expect(recorded.event_type).toBe('SystemEvent.AppendRejected');
      expect(recorded.payload.reason).toBe('unauthenticated');

      // The runtime's token does not open the experiment role.
      const swapped = await settle(WriterClient.connect(f.writer.socketPath, 'experiment', f.tokens.runtime));
      expect(swapped.ok).toBe(false);
      expect((swapped as { error: WriterError }).error).toBeInstanceOf(WriterError);
      expect((swapped as { error: WriterError }).error.code).toBe('unauthenticated');
      expect((swapped as { error: WriterError }).error.rejectionSeq).toBe(seq + 1);
    });

    test('a request before hello is refused as unauthenticated and recorded by hash only; hello still works afterwards', async () => {
      const secret = plantSecret('before-hello');
      secrets.push(secret);
      const before = await exp.head();
      const session = await rawSession(f.writer.socketPath);
      try {
        const line = JSON.stringify({ id: 'early-1', method: 'append', params: { events: [messageDraft({ payload: { from: 'x', subject: 's', body: secret, in_reply_to: null } })] } });
        const response = await session.request(line);
        expect(response.ok).toBe(false);
        expect(response.id).toBe('early-1');
        const error = response.error as { code: string; rejection_seq: number };
        expect(error.code).toBe('unauthenticated');
        const headLine = JSON.stringify({ id: 'early-2', method: 'head', params: {} });
        const headResponse = await session.request(headLine);
        expect((headResponse.error as { code: string }).code).toBe('unauthenticated');
        expect(session.isClosed()).toBe(false);

        const hello = await session.request(JSON.stringify({ id: 'hello-1', method: 'hello', params: { role: 'experiment', token: f.tokens.experiment } }));
        expect(hello.ok).toBe(true);
        const helloResult = hello.result as { head: Head; role: string };
        expect(helloResult.role).toBe('experiment');
        // Two refusals, two records, nothing else.
        expect(helloResult.head.seq).toBe(before.seq + 2);

        const page = await exp.read({ from_seq: before.seq + 1, limit: 10 });
        expect(page.events.map((e) => e.seq)).toEqual([before.seq + 1, before.seq + 2]);
        const [appendRecord, headRecord] = page.events.map((e) => AppendRejected.payload.parse(e.payload));
        expect(error.rejection_seq).toBe(before.seq + 1);
        expect(appendRecord).toMatchObject({ reason: 'unauthenticated', role: null, method: 'append', request_id: 'early-1', request_sha256: sha256OfLine(line) });
        expect(headRecord).toMatchObject({ reason: 'unauthenticated', role: null, method: 'head', request_id: 'early-2', request_sha256: sha256OfLine(headLine) });
        for (const env of page.events) expect(JSON.stringify(env)).not.toContain(secret);
      } finally {
        session.end();
      }
    });
  });

  describe('3. roles', () => {
    test('the runtime may not append World, System or Experiment events', async () => {
      const cases: unknown[] = [
        messageDraft({ actor: 'runtime' }),
        { ...messageDraft(), event_type: 'SystemEvent.EmergencyStopped', actor: 'runtime', payload: { operator: 'me', reason: 'runtime wants out' } },
        { ...messageDraft(), event_type: 'ExperimentEvent.WakeEnded', actor: 'runtime', payload: { wake_id: 'wake-0001', outcome: 'completed' } },
      ];
      for (const draft of cases) {
        const { error, record, recordEnvelope } = await expectRefused(rt, appendLine([draft]), 'role_forbidden');
        expect(error.details).toEqual({ index: 0 });
        expect(record.role).toBe('runtime');
        expect(record.method).toBe('append');
        expect(recordEnvelope.event_type).not.toBe((draft as EventDraft).event_type);
      }
    });

    test('the experiment role may not append MemoryEvents', async () => {
      await expectRefused(exp, appendLine([journalDraft('not yours', { actor: 'experiment' })]), 'role_forbidden');
    });

    test('a role may not claim an actor outside its own (runtime as experiment, experiment as model)', async () => {
      const r1 = await expectRefused(rt, appendLine([journalDraft('pretending', { actor: 'experiment' })]), 'role_forbidden');
      expect(r1.error.message).toContain('actor');
      const r2 = await expectRefused(exp, appendLine([messageDraft({ actor: 'model' })]), 'role_forbidden');
      expect(r2.error.message).toContain('actor');
      // Control: the actors each role does own are accepted.
      const ok1 = await rt.append([journalDraft('by the model', { actor: 'model' }), journalDraft('by a tool', { actor: 'tool' })]);
      expect(ok1.events).toHaveLength(2);
      const ok2 = await exp.append([messageDraft({ actor: 'user' })]);
      expect(ok2.events).toHaveLength(1);
    });

    test('nobody may append SystemEvent.StoreOpened or SystemEvent.AppendRejected', async () => {
      const storeOpened = (await exp.read({ from_seq: 1, limit: 1 })).events[0]!.payload;
      for (const client of [exp, rt]) {
        const actor = client === exp ? 'experiment' : 'runtime';
        const forgedOpen = { ...messageDraft(), event_type: 'SystemEvent.StoreOpened', actor, payload: storeOpened };
        const forgedRejection = { ...messageDraft(), event_type: 'SystemEvent.AppendRejected', actor, payload: validRejectedPayload() };
        for (const draft of [forgedOpen, forgedRejection]) {
          const { error } = await expectRefused(client, appendLine([draft]), 'role_forbidden');
          expect(error.details).toEqual({ index: 0 });
        }
      }
      const all = await readAll(exp);
      expect(all.filter((e) => e.event_type === 'SystemEvent.StoreOpened').map((e) => e.seq)).toEqual([1]);
      for (const env of all.filter((e) => e.event_type === 'SystemEvent.AppendRejected')) expect(env.payload.message).not.toBe('forged refusal');
    });
  });

  describe('4. schema and malformed input', () => {
    test('unknown type, wrong schema_version, extra or missing payload keys, extra envelope key: schema, recorded, nothing stored', async () => {
      const secretExtra = plantSecret('payload-extra');
      const secretMissing = plantSecret('payload-missing');
      const secretEnvelope = plantSecret('envelope-extra');
      const secretVersion = plantSecret('version');
      secrets.push(secretExtra, secretMissing, secretEnvelope, secretVersion);
      const base = messageDraft();
      const cases: { what: string; draft: unknown }[] = [
        { what: 'unknown event type', draft: { ...base, event_type: 'WorldEvent.NoSuchThing' } },
        { what: 'wrong schema_version', draft: { ...base, schema_version: '2.0.0', payload: { ...base.payload, body: secretVersion } } },
        { what: 'payload with an unknown extra key', draft: { ...base, payload: { ...base.payload, cc: secretExtra } } },
        { what: 'payload missing a field', draft: { ...base, payload: { from: 'reviewer', subject: 'x', body: secretMissing } } },
        { what: 'envelope draft with an extra key', draft: { ...base, seq: 1, note: secretEnvelope } },
        { what: 'envelope draft with a forged hash', draft: { ...base, event_hash: `sha256:${'b'.repeat(64)}` } },
      ];
      for (const { what, draft } of cases) {
        const { record, recordEnvelope } = await expectRefused(exp, appendLine([draft]), 'schema');
        expect(record.method, what).toBe('append');
        const text = JSON.stringify(recordEnvelope);
        for (const s of [secretExtra, secretMissing, secretEnvelope, secretVersion]) expect(text, what).not.toContain(s);
      }
    });

    test('a request carrying anything beyond its schema (e.g. SQL) is refused as schema', async () => {
      const { record } = await expectRefused(
        exp,
        (id) => JSON.stringify({ id, method: 'read', params: { from_seq: 1, limit: 1, sql: 'SELECT * FROM events' } }),
        'schema',
      );
      expect(record.method).toBe('read');
    });

    test('a line that is not JSON is bad_message; recorded with its hash, no method, no id', async () => {
      const secret = plantSecret('malformed');
      secrets.push(secret);
      const { record, recordEnvelope } = await expectRefused(exp, (id) => `{"id":${id},"method":"append","params":{"events":[{"payload":"${secret}"`, 'bad_message');
      expect(record.method).toBeNull();
      expect(record.request_id).toBeNull();
      expect(JSON.stringify(recordEnvelope)).not.toContain(secret);
    });

    test('an unknown method is unknown_method, recorded with the request id but not the method it named', async () => {
      const { record, recordEnvelope, id, error } = await expectRefused(exp, (rid) => JSON.stringify({ id: rid, method: 'delete_events', params: { from_seq: 1 } }), 'unknown_method');
      expect(record.method).toBeNull();
      expect(JSON.stringify(recordEnvelope)).not.toContain('delete_events');
      expect(record.request_id).toBe(String(id));
      expect(error.message).toContain('append');
    });

    test('a second hello on an authenticated connection is refused (bad_message) and the role does not change', async () => {
      const { record } = await expectRefused(
        rt,
        (id) => JSON.stringify({ id, method: 'hello', params: { role: 'experiment', token: f.tokens.experiment } }),
        'bad_message',
      );
      expect(record.role).toBe('runtime');
      await expectRefused(rt, appendLine([messageDraft({ actor: 'runtime' })]), 'role_forbidden');
    });
  });

  describe('5. atomic batches', () => {
    test('a batch whose 3rd event is invalid writes none of the batch', async () => {
      const marker = plantSecret('batch');
      const drafts: unknown[] = [0, 1, 2, 3, 4].map((i) => messageDraft({ payload: { from: 'batch', subject: `${marker}-${i}`, body: 'b', in_reply_to: null } }));
      drafts[2] = { ...(drafts[2] as EventDraft), payload: { from: 'batch', subject: `${marker}-2` } };
      const { error, before } = await expectRefused(exp, appendLine(drafts), 'schema');
      expect(error.details).toEqual({ index: 2 });
      const all = await readAll(exp);
      expect(all).toHaveLength(before.seq + 1);
      expect(all.some((e) => JSON.stringify(e.payload).includes(marker))).toBe(false);
    });

    test('a batch whose 3rd event is forbidden to the role writes none of the batch either', async () => {
      const drafts: EventDraft[] = [journalDraft('one'), journalDraft('two'), messageDraft({ actor: 'runtime' }), journalDraft('four')];
      const { error, before } = await expectRefused(rt, appendLine(drafts), 'role_forbidden');
      expect(error.details).toEqual({ index: 2 });
      const all = await readAll(exp);
      expect(all).toHaveLength(before.seq + 1);
    });

    test('a valid batch is stored in order with consecutive seqs', async () => {
      const before = await rt.head();
      const texts = ['a', 'b', 'c', 'd'].map((t) => `${t}-${randomBytes(4).toString('hex')}`);
      const result = await rt.append(texts.map((t) => journalDraft(t)));
      expect(result.events.map((e) => e.seq)).toEqual([1, 2, 3, 4].map((i) => before.seq + i));
      expect(result.head).toEqual({ seq: before.seq + 4, event_hash: result.events[3]!.event_hash });
      const page = await rt.read({ from_seq: before.seq + 1, limit: 10 });
      expect(page.events.map((e) => e.payload.text)).toEqual(texts);
    });
  });

  describe('6. expect_head', () => {
    test('a correct expect_head appends; a stale one is head_conflict naming the head the writer holds', async () => {
      const head = await exp.head();
      const ok = await exp.append([messageDraft()], head);
      expect(ok.events[0]!.seq).toBe(head.seq + 1);
      expect(ok.head.seq).toBe(head.seq + 1);

      // `head` is now stale.
      const { error, before, after } = await expectRefused(exp, appendLine([messageDraft()], head), 'head_conflict');
      expect(before).toEqual(ok.head);
      // Recording the refusal moved the head; the error names the head as it is now.
      expect(after.seq).toBe(before.seq + 1);
      expect(error.details).toEqual({ current_head: after });

      // A stale hash at the right seq is a conflict too.
      const current = await exp.head();
      const wrongHash = { seq: current.seq, event_hash: `sha256:${'c'.repeat(64)}` };
      const r2 = await expectRefused(exp, appendLine([messageDraft()], wrongHash), 'head_conflict');
      expect(r2.error.details).toEqual({ current_head: r2.after });

      // Retrying with the head the conflict named succeeds.
      const retried = await exp.append([messageDraft()], r2.after);
      expect(retried.events[0]!.seq).toBe(r2.after.seq + 1);
    });
  });

  describe('7. idempotency', () => {
    test('a repeated key returns the stored seq and hash, deduplicated, writing nothing', async () => {
      const draft = messageDraft({ idempotency_key: 'idem-alpha' });
      const first = await exp.append([draft]);
      expect(first.events[0]!.deduplicated).toBe(false);
      const headAfterFirst = await exp.head();
      const again = await exp.append([draft]);
      expect(again.events).toEqual([{ ...first.events[0]!, deduplicated: true }]);
      expect(await exp.head()).toEqual(headAfterFirst);
      expect(again.head).toEqual(headAfterFirst);
      // Even a stale expect_head does not turn a retry into a conflict.
      const againStale = await exp.append([draft], first.head);
      expect(againStale.events[0]).toEqual({ ...first.events[0]!, deduplicated: true });
      expect(await exp.head()).toEqual(headAfterFirst);
    });

    test('the same key with a different payload is idempotency_conflict, recorded', async () => {
      const draft = messageDraft({ idempotency_key: 'idem-beta' });
      const first = await exp.append([draft]);
      const changed = { ...draft, payload: { ...draft.payload, body: 'something else' } };
      const { error } = await expectRefused(exp, appendLine([changed]), 'idempotency_conflict');
      expect(error.details).toMatchObject({ idempotency_key: 'idem-beta', seq: first.events[0]!.seq, event_hash: first.events[0]!.event_hash });
    });

    test('a retried batch that mixes a stored key with a new event is idempotency_conflict; the new event is not written', async () => {
      const stored = messageDraft({ idempotency_key: 'idem-gamma' });
      await exp.append([stored]);
      const fresh = messageDraft({ idempotency_key: 'idem-gamma-new' });
      const { error } = await expectRefused(exp, appendLine([stored, fresh]), 'idempotency_conflict');
      expect(error.details).toEqual({ index: 1 });
      const unkeyed = messageDraft();
      const r2 = await expectRefused(exp, appendLine([unkeyed, stored]), 'idempotency_conflict');
      expect(r2.error.details).toEqual({ index: 0 });
      const all = await readAll(exp);
      expect(all.some((e) => e.idempotency_key === 'idem-gamma-new')).toBe(false);
    });

    test('one key twice in one batch is idempotency_conflict', async () => {
      const a = messageDraft({ idempotency_key: 'idem-delta' });
      const b = messageDraft({ idempotency_key: 'idem-delta' });
      await expectRefused(exp, appendLine([a, b]), 'idempotency_conflict');
      const all = await readAll(exp);
      expect(all.some((e) => e.idempotency_key === 'idem-delta')).toBe(false);
    });

    test('a retried batch whose keys all exist is deduplicated event by event, in order', async () => {
      const batch = [messageDraft({ idempotency_key: 'idem-eps-1' }), messageDraft({ idempotency_key: 'idem-eps-2' }), messageDraft({ idempotency_key: 'idem-eps-3' })];
      const first = await exp.append(batch);
      const head = await exp.head();
      const again = await exp.append(batch);
      expect(again.events).toEqual(first.events.map((e) => ({ ...e, deduplicated: true })));
      expect(await exp.head()).toEqual(head);
    });
  });

  describe('8. limits', () => {
    test('a payload over maxPayloadBytes is limit_exceeded', async () => {
      const body = 'x'.repeat(WRITER_LIMITS.maxPayloadBytes);
      const draft = messageDraft({ payload: { from: 'big', subject: 'big', body, in_reply_to: null } });
      expect(Buffer.byteLength(JSON.stringify(draft.payload))).toBeGreaterThan(WRITER_LIMITS.maxPayloadBytes);
      const { error, record } = await expectRefused(exp, appendLine([draft]), 'limit_exceeded');
      expect(error.details).toEqual({ index: 0, limit: 'maxPayloadBytes' });
      expect(record.request_bytes).toBeGreaterThan(WRITER_LIMITS.maxPayloadBytes);
    });

    test('a batch over maxBatchEvents is limit_exceeded; a batch of exactly maxBatchEvents is stored', async () => {
      const tooMany = Array.from({ length: WRITER_LIMITS.maxBatchEvents + 1 }, () => messageDraft());
      const { error, before } = await expectRefused(exp, appendLine(tooMany), 'limit_exceeded');
      expect(error.details).toEqual({ limit: 'maxBatchEvents' });
      expect((await exp.head()).seq).toBe(before.seq + 1);

      const exactly = Array.from({ length: WRITER_LIMITS.maxBatchEvents }, () => messageDraft());
      const head = await exp.head();
      const ok = await exp.append(exactly);
      expect(ok.events).toHaveLength(WRITER_LIMITS.maxBatchEvents);
      expect(ok.head.seq).toBe(head.seq + WRITER_LIMITS.maxBatchEvents);
    });

    test('a read over maxReadPage is limit_exceeded; a read of exactly maxReadPage is served', async () => {
      const { error, record } = await expectRefused(exp, (id) => JSON.stringify({ id, method: 'read', params: { from_seq: 1, limit: WRITER_LIMITS.maxReadPage + 1 } }), 'limit_exceeded');
      expect(error.details).toEqual({ limit: 'maxReadPage' });
      expect(record.method).toBe('read');
      const page = await exp.read({ from_seq: 1, limit: WRITER_LIMITS.maxReadPage });
      expect(page.events).toHaveLength(WRITER_LIMITS.maxReadPage);
    });
    test('a line over maxLineBytes is limit_exceeded, recorded, and the connection is closed', async () => {
      const before = await exp.head();
      const session = await rawSession(f.writer.socketPath);
      const hello = await session.request(JSON.stringify({ id: 1, method: 'hello', params: { role: 'runtime', token: f.tokens.runtime } }));
      expect(hello.ok).toBe(true);
      const huge = JSON.stringify({ id: 2, method: 'append', params: { events: [journalDraft('y'.repeat(WRITER_LIMITS.maxLineBytes))] } });
      expect(Buffer.byteLength(huge)).toBeGreaterThan(WRITER_LIMITS.maxLineBytes);
      const response = await session.request(huge);
      expect(response.ok).toBe(false);
      const error = response.error as { code: string; details: unknown; rejection_seq: number };
      expect(error.code).toBe('limit_exceeded');
      expect(error.details).toEqual({ limit: 'maxLineBytes' });
      await withTimeout(session.closed, 3_000, 'the writer to hang up after an oversized line');
      const after = await exp.head();
      expect(after.seq).toBe(before.seq + 1);
      expect(error.rejection_seq).toBe(after.seq);
      const record = AppendRejected.payload.parse((await exp.read({ from_seq: after.seq, limit: 1 })).events[0]!.payload);
      expect(record).toMatchObject({ reason: 'limit_exceeded', role: 'runtime' });
      expect(record.request_bytes).toBeLessThanOrEqual(WRITER_LIMITS.maxLineBytes);
    });
  });

  describe('9. read', () => {
    test('pages of any size walk the whole store, ending at next_seq = head.seq + 1', async () => {
      const head = await exp.head();
      const pages: number[][] = [];
      let from = 1;
      let last: number | null = null;
      while (from <= head.seq) {
        const page = await rt.read({ from_seq: from, limit: 97 });
        expect(page.events.length).toBeGreaterThan(0);
        expect(page.events.length).toBeLessThanOrEqual(97);
        expect(page.events[0]!.seq).toBe(from);
        pages.push(page.events.map((e) => e.seq));
        last = page.next_seq;
        from = page.next_seq;
      }
      expect(last).toBe(head.seq + 1);
      expect(pages.flat()).toEqual(Array.from({ length: head.seq }, (_, i) => i + 1));
      // Past the end: nothing, and next_seq still head.seq + 1.
      const beyond = await rt.read({ from_seq: head.seq + 1, limit: 10 });
      expect(beyond.events).toEqual([]);
      expect(beyond.next_seq).toBe(head.seq + 1);
    });

    test('a type filter returns exactly the events of those types, in seq order, across pages', async () => {
      const all = await readAll(exp);
      const types = ['MemoryEvent.JournalEntryWritten', 'SystemEvent.AppendRejected'];
      const expected = all.filter((e) => types.includes(e.event_type)).map((e) => e.seq);
      expect(expected.length).toBeGreaterThan(10);
      const got: EventEnvelope[] = [];
      let from = 1;
      for (let guard = 0; guard < 1_000; guard++) {
        const page = await exp.read({ from_seq: from, limit: 7, types });
        got.push(...page.events);
        if (page.events.length < 7) {
          expect(page.next_seq).toBe(page.head.seq + 1);
          break;
        }
        expect(page.next_seq).toBe(page.events[page.events.length - 1]!.seq + 1);
        from = page.next_seq;
      }
      expect(got.map((e) => e.seq)).toEqual(expected);
      for (const e of got) expect(types).toContain(e.event_type);
      // A single type.
      const onlyOpened = await exp.read({ from_seq: 1, limit: 1_000, types: ['SystemEvent.StoreOpened'] });
      expect(onlyOpened.events.map((e) => e.seq)).toEqual([1]);
    });

    test('every envelope read parses with EventEnvelope, hashes to itself and links to the one before', async () => {
      const all = await readAll(rt);
      expect(all.length).toBe((await rt.head()).seq);
      for (const env of all) expect(EventEnvelope.safeParse(env).success).toBe(true);
      expectValidChain(all, f.identity.subject_id);
      // Every refusal so far was recorded with a hash and a reason, never with the request's content.
      const texts = all.map((e) => canonicalJson(e));
      expect(secrets.length).toBeGreaterThan(0);
      for (const secret of secrets) for (const text of texts) expect(text).not.toContain(secret);
    });
  });

  describe('7b. idempotency across a writer restart', () => {
    test('after a clean restart the head is kept, keys still deduplicate and the chain continues', async () => {
      const draft = messageDraft({ idempotency_key: 'idem-restart' });
      const first = await exp.append([draft]);
      const headBefore = await exp.head();
      const oldPid = f.writer.pid;
      f = await f.restart();
      expect(f.writer.pid).not.toBe(oldPid);
      expect(f.writer.head).toEqual(headBefore);
      exp = await f.connect('experiment');
      rt = await f.connect('runtime');
      expect(exp.hello?.head).toEqual(headBefore);

      const again = await exp.append([draft]);
      expect(again.events).toEqual([{ ...first.events[0]!, deduplicated: true }]);
      expect(await exp.head()).toEqual(headBefore);
      const changed = { ...draft, payload: { ...draft.payload, body: 'changed after restart' } };
      await expectRefused(exp, appendLine([changed]), 'idempotency_conflict');

      const next = await rt.append([journalDraft('after restart')]);
      const page = await rt.read({ from_seq: next.events[0]!.seq - 1, limit: 2 });
      expect(page.events[1]!.previous_event_hash).toBe(page.events[0]!.event_hash);
      expectValidChain(await readAll(rt), f.identity.subject_id);
    });
  });
});

// ---------------------------------------------------------------------------------------
// 10. durability across SIGKILL

describe('ds-writer: durability when killed mid-stream', () => {
  const dirs: string[] = [];
  let current: WriterFixture | null = null;

  afterAll(async () => {
    await current?.stop().catch(() => undefined);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('every acknowledged append survives SIGKILL with its seq and hash; every other one failed loudly', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const f = await startWriterFixture(dir);
    current = f;
    const client = await f.connect('experiment');
    const baseSeq = (await client.head()).seq;
    const TOTAL = 300;
    const KILL_AFTER = 60;
    const acked = new Map<string, AppendResult['events'][number]>();
    const failed = new Map<string, unknown>();
    const kill: { exit: Promise<{ signal: NodeJS.Signals | null }> | null } = { exit: null };
    const drafts = Array.from({ length: TOTAL }, (_, i) => messageDraft({ idempotency_key: `dur-${String(i).padStart(3, '0')}` }));
    const all = drafts.map((draft) =>
      client.append([draft]).then(
        (result) => {
          acked.set(draft.idempotency_key!, result.events[0]!);
          if (acked.size === KILL_AFTER) kill.exit = f.writer.kill('SIGKILL');
        },
        (error: unknown) => {
          failed.set(draft.idempotency_key!, error);
        },
      ),
    );
    await withTimeout(Promise.all(all), 30_000, 'all pipelined appends to settle');
    expect(kill.exit).not.toBeNull();
    expect((await kill.exit!).signal).toBe('SIGKILL');

    // Every request settled one way or the other, and the kill was really mid-stream.
    expect(acked.size + failed.size).toBe(TOTAL);
    expect(acked.size).toBeGreaterThanOrEqual(KILL_AFTER);
    expect(failed.size).toBeGreaterThan(0);
    for (const error of failed.values()) expect(error).toBeInstanceOf(WriterUnavailableError);

    const g = await reopenWriterFixture(f.dir, f);
    current = g;
    const reader = await g.connect('experiment');
    const stored = await readAll(reader);
    expect(stored.length).toBe((await reader.head()).seq);
    expect(g.writer.head.seq).toBe(stored.length);
    const byKey = new Map(stored.filter((e) => e.idempotency_key !== null).map((e) => [e.idempotency_key!, e]));
    for (const [key, ack] of acked) {
      const env = byKey.get(key);
      expect(env, `acknowledged ${key} is missing after the crash`).toBeDefined();
      expect(env!.seq).toBe(ack.seq);
      expect(env!.event_hash).toBe(ack.event_hash);
      expect(env!.event_id).toBe(ack.event_id);
    }
    // Nothing but our own appends (after StoreOpened) is in the store.
    for (const key of byKey.keys()) expect(key.startsWith('dur-')).toBe(true);
    expect(stored.length).toBe(baseSeq + byKey.size);

    // The unknown outcomes are resolved by retrying with the same keys: stored ones
    // deduplicate to their seq, the rest are appended now; every key ends up exactly once.
    const unknown = drafts.filter((d) => failed.has(d.idempotency_key!));
    const retried = await Promise.all(unknown.map((d) => reader.append([d])));
    retried.forEach((r, i) => {
      const wasStored = byKey.get(unknown[i]!.idempotency_key!);
      if (wasStored) expect(r.events[0]).toMatchObject({ seq: wasStored.seq, event_hash: wasStored.event_hash, deduplicated: true });
      else expect(r.events[0]!.deduplicated).toBe(false);
    });
    const finalEvents = await readAll(reader);
    const keys = finalEvents.map((e) => e.idempotency_key).filter((k): k is string => k !== null);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe(TOTAL);
    expectValidChain(finalEvents, g.identity.subject_id);

    await g.stop();
    current = null;
    const report = verifyDirectory(g.dir, { allowOpen: true });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.events).toBe(finalEvents.length);
  });
});

// ---------------------------------------------------------------------------------------
// 11. one writer per store, right identity only; 12. append-only in the file itself

describe('ds-writer: exclusivity, identity and the file', () => {
  let f: WriterFixture;
  let running = true;

  let dir: string | undefined;

  beforeAll(async () => {
    dir = tempDir();
    f = await startWriterFixture(dir);
    const client = await f.connect('experiment');
    await client.append([messageDraft({ idempotency_key: 'file-1' }), messageDraft({ idempotency_key: 'file-2' }), messageDraft()]);
  });

  afterAll(async () => {
    if (running) await f?.stop().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function config(overrides: Partial<Parameters<typeof spawnWriter>[0]> = {}): Parameters<typeof spawnWriter>[0] {
    return {
      db_path: f.dbPath,
      socket_path: path.join(f.dir, 'second.sock'),
      mode: 'open',
      ...f.identity,
      tokens: f.tokens,
      projection: 'event-counts',
      socket_mode: 0o600,
      snapshot_every: DEFAULT_SNAPSHOT_EVERY_EVENTS,
      ...overrides,
    };
  }

  async function expectStartFails(overrides: Partial<Parameters<typeof spawnWriter>[0]>): Promise<WriterStartError> {
    const outcome = await settle(spawnWriter(config(overrides)));
    if (outcome.ok) {
      await outcome.value.kill('SIGKILL');
      throw new Error('a second writer started');
    }
    expect(outcome.error).toBeInstanceOf(WriterStartError);
    return outcome.error as WriterStartError;
  }

  test('11a. a second writer cannot open a store while the first runs, and the first keeps working', async () => {
    expect(running).toBe(true);
    const client = await f.connect('experiment');
    const before = await client.head();
    const error = await expectStartFails({});
    expect(error.message).toMatch(/locked|busy/i);
    // Same socket path as the running writer: the failed start must not take it over either.
    const error2 = await expectStartFails({ socket_path: f.writer.socketPath });
    // Refused before it touches the store: the live socket is checked first.
    expect(error2.code).toBe('socket_in_use');
    expect(error2.message).toMatch(/is served by a running process/);

    expect(() => process.kill(f.writer.pid, 0)).not.toThrow();
    expect(await client.head()).toEqual(before);
    const ok = await client.append([messageDraft()]);
    expect(ok.events[0]!.seq).toBe(before.seq + 1);
    const fresh = await f.connect('runtime');
    expect(fresh.hello?.head).toEqual(ok.head);
  });

  test('11a2. a writer on another store refuses to take over a live writer\'s socket', async () => {
    const other = tempDir();
    try {
      const error = await expectStartFails({ mode: 'create', db_path: path.join(other, 'events.db'), socket_path: f.writer.socketPath });
      expect(error.message).toMatch(/is served by a running process/);
      const client = await f.connect('experiment');
      expect(client.hello?.experiment_id).toBe(f.identity.experiment_id);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  test('11a3. verify refuses to read a store while its writer runs, saying why', () => {
    const report = verifyDirectory(f.dir, { allowOpen: true });
    expect(report.ok).toBe(false);
    expect(report.failures).toContainEqual({ store: 'events.db', seq: null, reason: expect.stringMatching(/locked: a writer is still running/) });
  });

  test('11b. creating a store where one exists fails, whether or not a writer runs on it', async () => {
    const error = await expectStartFails({ mode: 'create' });
    expect(error.code).toBe('store_exists');
    await f.stop();
    running = false;
    const error2 = await expectStartFails({ mode: 'create' });
    expect(error2.code).toBe('store_exists');
    expect(error2.message).toContain(f.dbPath);
  });

  test('11c. opening with another experiment_id, manifest hash or subject fails with identity_mismatch', async () => {
    expect(running).toBe(false);
    const wrongExperiment = await expectStartFails({ experiment_id: 'exp-someone-else' });
    expect(wrongExperiment.code).toBe('identity_mismatch');
    expect(wrongExperiment.message).toContain(f.identity.experiment_id);
    const wrongManifest = await expectStartFails({ manifest_sha256: `sha256:${'d'.repeat(64)}` });
    expect(wrongManifest.code).toBe('identity_mismatch');
    expect(wrongManifest.message).toContain(f.identity.manifest_sha256);
    const wrongSubject = await expectStartFails({ subject_id: 'subject-999' });
    expect(wrongSubject.code).toBe('identity_mismatch');
    const missing = await expectStartFails({ db_path: path.join(f.dir, 'nope', 'events.db') });
    expect(missing.code).toBe('store_missing');
  });

  test('12. UPDATE, DELETE and INSERT OR REPLACE on events all abort in the file itself; the table is unchanged', () => {
    expect(running).toBe(false);
    const db = new Database(f.dbPath);
    try {
      const snapshot = (): unknown[] => db.prepare('SELECT seq, event_id, event_type, idempotency_key, envelope FROM events ORDER BY seq').all();
      const before = snapshot();
      expect(before.length).toBeGreaterThanOrEqual(5);
      const last = before[before.length - 1] as { seq: number; event_id: string };
      const second = before[1] as { seq: number; event_id: string; idempotency_key: string };
      expect(second.idempotency_key).toBe('file-1');

      const attempts: [string, () => unknown][] = [
        ['UPDATE one row', () => db.prepare("UPDATE events SET envelope = '{}' WHERE seq = 2").run()],
        ['UPDATE all rows to themselves', () => db.prepare('UPDATE events SET event_type = event_type').run()],
        ['DELETE the tail', () => db.prepare('DELETE FROM events WHERE seq = ?').run(last.seq)],
        ['DELETE everything', () => db.prepare('DELETE FROM events').run()],
        [
          'INSERT OR REPLACE at an existing seq',
          () => db.prepare("INSERT OR REPLACE INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (2, 'forged-id', 'WorldEvent.MessageReceived', NULL, '{}')").run(),
        ],
        [
          'REPLACE with an existing event_id at a new seq',
          () => db.prepare("REPLACE INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, ?, 'WorldEvent.MessageReceived', NULL, '{}')").run(last.seq + 1, second.event_id),
        ],
        [
          'INSERT OR REPLACE with an existing idempotency_key at a new seq',
          () => db.prepare("INSERT OR REPLACE INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, 'forged-id-2', 'WorldEvent.MessageReceived', 'file-1', '{}')").run(last.seq + 1),
        ],
        [
          'upsert at an existing seq',
          () => db.prepare("INSERT INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (2, 'forged-id-3', 'X', NULL, '{}') ON CONFLICT (seq) DO UPDATE SET envelope = excluded.envelope").run(),
        ],
      ];
      for (const [what, attempt] of attempts) {
        expect(attempt, what).toThrow(/append-only/);
        expect(snapshot(), what).toEqual(before);
      }
    } finally {
      db.close();
    }
    const report = verifyDirectory(f.dir, { allowOpen: true });
    expect(report.failures).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------
// start-up failure as the parent sees it on the IPC channel

describe('ds-writer: start-up failure', () => {
  // Known bug (writer/main.ts `fail`): fail() throws after sending `fatal`; inside start()
  // that throw is caught by `start(...).catch(...)`, which calls fail() again, so the parent
  // gets a second, wrong `fatal` (code start_failed) and the process dies at once on an
  // unhandled rejection instead of exiting after the 50 ms meant to let the message leave.
  test('a writer that cannot open its store sends exactly one fatal message, with the store error code', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ds-fatal-'));
    try {
      const child = fork(fileURLToPath(new URL('../../writer/main.ts', import.meta.url)), [], {
        execArgv: ['--import', createRequire(import.meta.url).resolve('tsx')],
        stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      });
      const messages: unknown[] = [];
      child.on('message', (m: unknown) => messages.push(m));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.send({
        type: 'start',
        db_path: path.join(dir, 'events.db'),
        socket_path: path.join(dir, 'w.sock'),
        mode: 'open',
        subject_id: 'subject-001',
        experiment_id: 'exp-test-001',
        manifest_sha256: `sha256:${'0'.repeat(64)}`,
        tokens: { runtime: 'r'.repeat(24), experiment: 'e'.repeat(24) },
        projection: 'event-counts',
        socket_mode: 0o600,
        snapshot_every: DEFAULT_SNAPSHOT_EVERY_EVENTS,
      });
      expect(await withTimeout(exited, 15_000, 'the writer to exit')).toBe(1);
      const fatals = messages.map((m) => WriterChildMessage.parse(m)).filter((m) => m.type === 'fatal');
      expect(fatals.map((m) => (m.type === 'fatal' ? m.code : null))).toEqual(['store_missing']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
