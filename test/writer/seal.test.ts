// The seal (issue 4 item 6) over real ds-writer processes: only the controller may seal,
// exactly the head it has seen; StoreSealed is the last event; afterwards every append
// and seal is refused with `sealed`, never recorded but counted and logged; a reopened
// sealed store keeps refusing; the file itself refuses inserts after the seal.
import Database from 'better-sqlite3';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { HeadSigningError, sealAndSignFinalHead, signAndRecordHead, type HeadSigning } from '../../controller/run-signatures.js';
import { ChainHead } from '../../schema/chain-head.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { AppendRejected, StoreSealed } from '../../schema/events/system-events.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { WriterClient } from '../../writer/client.js';
import { WriterError, type Head, type WriterErrorCode } from '../../writer/protocol.js';
import { STORE_FORMAT_VERSION } from '../../writer/store-schema.js';
import { WriterStartError } from '../../writer/spawn.js';
import { forkLoggedWriter } from '../support/logged-writer.js';
import { appendForgedEvent, RunCopies, tamper } from '../support/store-forgery.js';
import { journalDraft, messageDraft, reopenWriterFixture, startWriterFixture, type WriterFixture } from '../support/writer-fixture.js';

async function refusal(promise: Promise<unknown>, code: WriterErrorCode): Promise<WriterError> {
  const error = await promise.then(
    (value) => {
      throw new Error(`expected ${code}, the writer answered ${JSON.stringify(value)}`);
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WriterError);
  const refused = error as WriterError;
  expect(refused.code, refused.message).toBe(code);
  return refused;
}

async function eventsFrom(client: WriterClient, fromSeq: number): Promise<EventEnvelope[]> {
  return (await client.read({ from_seq: fromSeq, limit: 1_000 })).events;
}

let f: WriterFixture;
let experiment: WriterClient;
let runtime: WriterClient;
let copies: RunCopies;
const keyedJournal = journalDraft('before the seal', { idempotency_key: 'journal-before-seal' });

beforeAll(async () => {
  f = await startWriterFixture();
  copies = new RunCopies(f.dir);
  experiment = await f.connect('experiment');
  runtime = await f.connect('runtime');
  await experiment.append([messageDraft()]);
  await runtime.append([keyedJournal]);
});

afterAll(async () => {
  copies.removeAll();
  await f.cleanup();
});

describe('sealing over a real writer', () => {
  test('a new store is not sealed: ready and hello say so', () => {
    expect(f.writer.sealed).toBe(false);
    expect(experiment.hello).toMatchObject({ sealed: null, refused_after_seal: 0 });
  });

  test('the runtime may not seal: role_forbidden, recorded like any other refusal', async () => {
    const before = await runtime.head();
    const error = await refusal(runtime.seal(before, 'not yours to end'), 'role_forbidden');
    const [record] = await eventsFrom(runtime, before.seq + 1);
    expect(error.rejectionSeq).toBe(before.seq + 1);
    expect(record).toMatchObject({ seq: before.seq + 1, event_type: 'SystemEvent.AppendRejected' });
    expect(AppendRejected.payload.parse(record!.payload)).toMatchObject({ reason: 'role_forbidden', method: 'seal', role: 'runtime' });
  });

  test('a seal of a head that is not the current one is a head_conflict, recorded, and seals nothing', async () => {
    const seen = await experiment.head();
    await experiment.append([messageDraft()]);
    const error = await refusal(experiment.seal(seen, 'stale view'), 'head_conflict');
    const record = (await eventsFrom(experiment, seen.seq + 2))[0]!;
    expect(AppendRejected.payload.parse(record.payload)).toMatchObject({ reason: 'head_conflict', method: 'seal' });
    expect(error.details).toMatchObject({ current_head: await experiment.head() });
    expect(await eventsFrom(experiment, 1)).not.toContainEqual(expect.objectContaining({ event_type: 'SystemEvent.StoreSealed' }));
  });

  let sealedHead: Head;

  test('the seal appends StoreSealed after exactly the expected head and answers its head', async () => {
    const seen = await experiment.head();
    sealedHead = await experiment.seal(seen, 'the run is over');
    expect(sealedHead.seq).toBe(seen.seq + 1);
    const events = await eventsFrom(experiment, seen.seq);
    expect(events.map((e) => e.seq)).toEqual([seen.seq, seen.seq + 1]);
    const seal = events[1]!;
    expect(seal).toMatchObject({ event_type: 'SystemEvent.StoreSealed', actor: 'experiment', idempotency_key: null, previous_event_hash: seen.event_hash, event_hash: sealedHead.event_hash });
    expect(StoreSealed.payload.parse(seal.payload)).toEqual({ reason: 'the run is over', sealed_by: 'experiment' });
    expect(await experiment.head()).toEqual(sealedHead);
  });

  test('afterwards every append and seal gets `sealed`, nothing is recorded, and each refusal is counted', async () => {
    const attempts: [string, () => Promise<unknown>][] = [
      ['an experiment append', () => experiment.append([messageDraft()])],
      ['a runtime append', () => runtime.append([journalDraft('after the seal')])],
      // Before role checks: the answer is `sealed`, not role_forbidden.
      ['a runtime WorldEvent', () => runtime.append([messageDraft({ actor: 'experiment' })])],
      // Even a retry that would write nothing.
      ['an idempotent retry of an event stored before the seal', () => runtime.append([keyedJournal])],
      ['an append with the sealed head as expect_head', () => experiment.append([messageDraft()], sealedHead)],
      ['a second seal', () => experiment.seal(sealedHead, 'again')],
      ['a runtime seal', () => runtime.seal(sealedHead, 'again')],
    ];
    let count = 0;
    for (const [what, attempt] of attempts) {
      const error = await refusal(attempt(), 'sealed');
      count += 1;
      expect(error.message, what).toBe(`the store was sealed at seq ${sealedHead.seq}; nothing more may be appended`);
      expect(error.rejectionSeq, what).toBeNull();
      expect(error.details, what).toEqual({ sealed_head: sealedHead, refused_after_seal: count });
    }
    // Other refusals cannot be recorded either; they say so and are counted too.
    const bad = await refusal(experiment.rawRequest('not json', 424242), 'bad_message');
    expect(bad.message).toMatch(new RegExp(`not recorded in the store: it was sealed at seq ${sealedHead.seq}`));
    expect(bad.rejectionSeq).toBeNull();
    expect(await experiment.head()).toEqual(sealedHead);
    expect(await eventsFrom(experiment, sealedHead.seq)).toHaveLength(1);
    const late = await f.connect('runtime');
    expect(late.hello).toMatchObject({ head: sealedHead, sealed: sealedHead, refused_after_seal: attempts.length + 1 });
  });

  test('the file refuses a raw insert after the seal (trigger), and is of the current format', async () => {
    await f.stop();
    const db = new Database(f.dbPath);
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(STORE_FORMAT_VERSION);
      expect(STORE_FORMAT_VERSION).toBe(3);
      const before = db.prepare('SELECT count(*) AS n FROM events').get() as { n: number };
      expect(() => db.prepare("INSERT INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, 'x', 'WorldEvent.MessageReceived', NULL, '{}')").run(before.n + 1)).toThrow(
        /events is sealed: nothing may be inserted after SystemEvent.StoreSealed/,
      );
      expect(db.prepare('SELECT count(*) AS n FROM events').get()).toEqual(before);
    } finally {
      db.close();
    }
  });

  test('reopened (mode open), the sealed store serves reads, says sealed, and keeps refusing appends and seals', async () => {
    const reopened = await reopenWriterFixture(f.dir, f);
    try {
      expect(reopened.writer.sealed).toBe(true);
      expect(reopened.writer.head).toEqual(sealedHead);
      const client = await reopened.connect('experiment');
      // The count is per writer process: a new writer starts from nothing.
      expect(client.hello).toMatchObject({ sealed: sealedHead, refused_after_seal: 0 });
      expect((await eventsFrom(client, 1)).at(-1)).toMatchObject({ seq: sealedHead.seq, event_type: 'SystemEvent.StoreSealed' });
      expect(await client.head()).toEqual(sealedHead);
      await refusal(client.append([messageDraft()]), 'sealed');
      await refusal(client.seal(sealedHead, 'once more'), 'sealed');
      expect(await client.head()).toEqual(sealedHead);
    } finally {
      await reopened.stop();
    }
  });

  test('a store where an event follows the seal (forged past the trigger) is refused at open as corrupt', async () => {
    const dir = copies.copy();
    tamper(dir, (db) => appendForgedEvent(db, 'WorldEvent.MessageReceived', messageDraft().payload));
    await expect(reopenWriterFixture(dir, f)).rejects.toSatisfy((e: unknown) => e instanceof WriterStartError && e.code === 'corrupt' && /StoreSealed at seq \d+ is not the one last event/.test(e.message));
  });

  test('a store of format 2 (no seal trigger) is refused, not upgraded', async () => {
    const dir = copies.copy();
    const db = new Database(path.join(dir, RUN_FILES.store));
    db.pragma('user_version = 2');
    db.close();
    await expect(reopenWriterFixture(dir, f)).rejects.toSatisfy((e: unknown) => e instanceof WriterStartError && e.code === 'not_a_store' && /has store format 2; this writer reads format 3/.test(e.message));
  });
});

describe('the writer log after the seal', () => {
  test('says the store is sealed at start, logs every refusal with the running count, and the total at stop', async () => {
    const unsealed = await startWriterFixture();
    try {
      await unsealed.stop();
      const writer = await forkLoggedWriter(unsealed);
      expect(writer.ready.sealed).toBe(false);
      const client = await WriterClient.connect(writer.socketPath, 'experiment', unsealed.tokens.experiment);
      const sealed = await client.seal(await client.head(), 'log test');
      await refusal(client.append([messageDraft()]), 'sealed');
      await refusal(client.seal(sealed, 'again'), 'sealed');
      client.close();
      expect(await writer.stop()).toEqual({ code: 0, signal: null });
      const log = writer.log();
      expect(log).toMatch(new RegExp(`store sealed at seq ${sealed.seq} \\(${sealed.event_hash}\\); appends are refused from now on`));
      expect(log).toMatch(/refused append after the seal \(sealed; 1 refused since the seal, none recorded\)/);
      expect(log).toMatch(/refused seal after the seal \(sealed; 2 refused since the seal, none recorded\)/);
      expect(log).toMatch(/stopping: parent asked \(store sealed; 2 request\(s\) refused since the seal, none recorded\)/);

      const again = await forkLoggedWriter(unsealed, 'again.sock');
      expect(again.ready).toMatchObject({ sealed: true, head: sealed });
      expect(await again.stop()).toEqual({ code: 0, signal: null });
      expect(again.log()).toMatch(new RegExp(`at head seq ${sealed.seq} \\(sealed at seq ${sealed.seq}: reads only, every append is refused\\)`));
    } finally {
      await unsealed.cleanup();
    }
  });
});

describe('the controller signs the final head on the seal', () => {
  const headsText = (dir: string): string => (existsSync(path.join(dir, RUN_FILES.heads)) ? readFileSync(path.join(dir, RUN_FILES.heads), 'utf8') : '');

  test('signAndRecordHead refuses a final head and writes nothing; sealAndSignFinalHead seals and signs it, once', async () => {
    const run = await startWriterFixture();
    try {
      const client = await run.connect('experiment');
      await client.append([messageDraft()]);
      const now = (): string => new Date().toISOString();
      const signing: HeadSigning = { runDir: run.dir, keys: run.keys, experimentId: run.identity.experiment_id, occurredAt: now(), now };
      const before = await client.head();
      await expect(signAndRecordHead(client, 'final', signing)).rejects.toSatisfy(
        (e: unknown) => e instanceof HeadSigningError && e.code === 'final_needs_seal' && /use sealAndSignFinalHead/.test(e.message),
      );
      expect(headsText(run.dir)).toBe('');
      expect(await client.head()).toEqual(before);

      const periodic = await signAndRecordHead(client, 'periodic', signing);
      const afterPeriodic = await client.head();
      const final = await sealAndSignFinalHead(client, signing, 'all wakes ran');
      const sealedHead = await client.head();
      expect(final).toMatchObject({ kind: 'final', seq: afterPeriodic.seq + 1, event_hash: sealedHead.event_hash, experiment_id: run.identity.experiment_id });
      const lines = headsText(run.dir).trim().split('\n');
      const signed = lines.map((line) => ChainHead.parse(JSON.parse(Buffer.from((JSON.parse(line) as { payload: string }).payload, 'base64').toString('utf8'))));
      expect(signed).toEqual([periodic, final]);
      const [seal] = await eventsFrom(client, final.seq);
      expect(StoreSealed.payload.parse(seal!.payload)).toEqual({ reason: 'all wakes ran', sealed_by: 'experiment' });

      // A second attempt is refused by the writer before anything is signed.
      await refusal(sealAndSignFinalHead(client, signing, 'again'), 'sealed');
      expect(headsText(run.dir).trim().split('\n')).toEqual(lines);
    } finally {
      await run.cleanup();
    }
  });
});
