// The controller's writer-crash intervention over real ds-writer processes: armed at N,
// the writer SIGKILLs itself inside the Nth append transaction before its commit, so
// that batch is lost whole and WAL recovery on reopen leaves a store that verifies.
import { afterEach, describe, expect, test } from 'vitest';
import { ZodError } from 'zod';
import { WriterClient, WriterUnavailableError } from '../../writer/client.js';
import { MAX_CRASH_APPEND_NUMBER, WriterError } from '../../writer/protocol.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { forkLoggedWriter } from '../support/logged-writer.js';
import { journalDraft, messageDraft, reopenWriterFixture, startWriterFixture, type WriterFixture } from '../support/writer-fixture.js';

const fixtures: WriterFixture[] = [];
afterEach(async () => {
  for (const f of fixtures.splice(0)) await f.cleanup();
});

async function fixture(): Promise<WriterFixture> {
  const f = await startWriterFixture();
  fixtures.push(f);
  return f;
}

/** Reopens the store after the crash and returns every stored event type after StoreOpened. */
async function storedAfterCrash(f: WriterFixture): Promise<{ types: string[]; subjects: unknown[] }> {
  const reopened = await reopenWriterFixture(f.dir, f);
  fixtures.push(reopened);
  const client = await reopened.connect('experiment');
  const page = await client.read({ from_seq: 2, limit: 100 });
  await reopened.stop();
  return { types: page.events.map((e) => e.event_type), subjects: page.events.map((e) => e.payload.subject ?? e.payload.text) };
}

describe('crash drill', () => {
  test('armed at 2: the second append is killed inside its transaction; reopening shows only the first; the store verifies', async () => {
    const f = await fixture();
    const client = await f.connect('experiment');
    await f.writer.armCrash(2);
    const first = await client.append([messageDraft({ payload: { from: 'reviewer', subject: 'kept', body: 'committed', in_reply_to: null } })]);
    expect(first.head.seq).toBe(2);
    const second = client.append([
      messageDraft({ payload: { from: 'reviewer', subject: 'lost-1', body: 'never committed', in_reply_to: null } }),
      messageDraft({ payload: { from: 'reviewer', subject: 'lost-2', body: 'never committed', in_reply_to: null } }),
    ]);
    await expect(second).rejects.toBeInstanceOf(WriterUnavailableError);
    await expect(second).rejects.toMatchObject({ reason: 'disconnected' });
    expect(await f.writer.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await storedAfterCrash(f)).toEqual({ types: ['WorldEvent.MessageReceived'], subjects: ['kept'] });
    const report = verifyDirectory(f.dir, { allowOpen: true });
    expect(report.failures).toEqual([]);
    expect(report).toMatchObject({ ok: true, events: 2 });
  });

  test('counts only append batches that reach their commit, from every connection', async () => {
    const f = await fixture();
    const experiment = await f.connect('experiment');
    const runtime = await f.connect('runtime');
    const keyed = journalDraft('counted once', { idempotency_key: 'journal-1' });
    await f.writer.armCrash(3);
    await runtime.append([keyed]); // 1
    await runtime.append([keyed]); // a deduplicated retry commits nothing: not counted
    await expect(runtime.append([messageDraft()])).rejects.toBeInstanceOf(WriterError); // refused (and recorded): not counted
    await expect(experiment.append([messageDraft()], { seq: 1, event_hash: `sha256:${'0'.repeat(64)}` })).rejects.toMatchObject({ code: 'head_conflict' }); // not counted
    await experiment.append([messageDraft({ payload: { from: 'reviewer', subject: 'second', body: 'b', in_reply_to: null } })]); // 2
    await expect(runtime.append([journalDraft('third', { idempotency_key: 'journal-3' })])).rejects.toBeInstanceOf(WriterUnavailableError); // 3: fires
    expect((await f.writer.exited).signal).toBe('SIGKILL');
    const { types } = await storedAfterCrash(f);
    expect(types).toEqual(['MemoryEvent.JournalEntryWritten', 'SystemEvent.AppendRejected', 'SystemEvent.AppendRejected', 'WorldEvent.MessageReceived']);
  });

  test('disarmed, the writer does not fire; arming is bounded to 1…64 appends', async () => {
    const f = await fixture();
    const client = await f.connect('experiment');
    await f.writer.armCrash(1);
    await f.writer.disarmCrash();
    await client.append([messageDraft()]);
    await client.append([messageDraft()]);
    expect(await client.head()).toMatchObject({ seq: 3 });
    await expect(f.writer.armCrash(0)).rejects.toBeInstanceOf(ZodError);
    await expect(f.writer.armCrash(MAX_CRASH_APPEND_NUMBER + 1)).rejects.toBeInstanceOf(ZodError);
    await expect(f.writer.armCrash(1.5)).rejects.toBeInstanceOf(ZodError);
    // Re-arming replaces the count: armed at 1 after two appends, the next one fires.
    await f.writer.armCrash(1);
    await expect(client.append([messageDraft()])).rejects.toBeInstanceOf(WriterUnavailableError);
    expect((await f.writer.exited).signal).toBe('SIGKILL');
  });

  test('the writer logs when it is armed, disarmed and when it fires', async () => {
    const f = await fixture();
    await f.stop();
    const writer = await forkLoggedWriter(f);
    expect(await writer.control({ type: 'arm_crash', during_append_number: 5 }, 'crash_armed')).toEqual({ type: 'crash_armed', during_append_number: 5 });
    expect(await writer.control({ type: 'disarm_crash' }, 'crash_armed')).toEqual({ type: 'crash_armed', during_append_number: null });
    await writer.control({ type: 'arm_crash', during_append_number: 1 }, 'crash_armed');
    const client = await WriterClient.connect(writer.socketPath, 'experiment', f.tokens.experiment);
    await expect(client.append([messageDraft()])).rejects.toBeInstanceOf(WriterUnavailableError);
    expect(await writer.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const log = writer.log();
    expect(log).toMatch(/crash drill armed: SIGKILL inside append transaction number 5 from now, before its commit/);
    expect(log).toMatch(/crash drill disarmed after 0 of 5 append transactions/);
    expect(log).toMatch(/crash drill fires: SIGKILL inside append transaction number 1; the batch is not committed/);
  });
});
