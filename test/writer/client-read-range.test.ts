// WriterClient.readRange: the one bounded page loop callers use to read a span of the store.
// A real writer for the pages; a forged writer (a socket that answers hello, then a short page)
// for the check that a writer skipping events is caught, not read as a shorter store.
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GENESIS_HASH } from '../../schema/hash.js';
import { WriterClient, WriterUnavailableError } from '../../writer/client.js';
import { WRITER_LIMITS } from '../../writer/protocol.js';
import { messageDraft, startWriterFixture, tempDir, type WriterFixture } from '../support/writer-fixture.js';

describe('readRange against a real writer', () => {
  let f: WriterFixture;
  let client: WriterClient;
  beforeAll(async () => {
    f = await startWriterFixture();
    client = await f.connect('experiment');
    // More than one page, so the loop must go round.
    const total = WRITER_LIMITS.maxReadPage + 150;
    for (let written = 0; written < total; written += WRITER_LIMITS.maxBatchEvents) {
      await client.append(Array.from({ length: Math.min(WRITER_LIMITS.maxBatchEvents, total - written) }, () => messageDraft()));
    }
  }, 60_000);
  afterAll(async () => f.cleanup());

  test('returns exactly the asked span, contiguous, across pages; an empty span reads nothing', async () => {
    const head = await client.head();
    const all = await client.readRange(1, head.seq);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: head.seq }, (_, i) => i + 1));
    expect((await client.readRange(5, 7)).map((e) => e.seq)).toEqual([5, 6, 7]);
    expect(await client.readRange(head.seq + 1, head.seq)).toEqual([]);
  });
});

describe('readRange against a forged writer', () => {
  let server: net.Server;
  let socketPath: string;
  beforeAll(async () => {
    socketPath = path.join(tempDir('ds-forged-writer-'), 'w.sock');
    const head = { seq: 3, event_hash: GENESIS_HASH };
    server = net.createServer((socket) => {
      let buffer = '';
      socket.on('data', (chunk) => {
        buffer += chunk.toString('utf8');
        for (let i = buffer.indexOf('\n'); i !== -1; i = buffer.indexOf('\n')) {
          const request = JSON.parse(buffer.slice(0, i)) as { id: number; method: string };
          buffer = buffer.slice(i + 1);
          const result =
            request.method === 'hello'
              ? { role: 'experiment', connection_id: 1, subject_id: 's', experiment_id: 'e', head, limits: { maxLineBytes: 1, maxPayloadBytes: 1, maxBatchEvents: 1, maxReadPage: 1_000 }, sealed: null, refused_after_seal: 0 }
              : // Claims a head of 3 but returns no event: a writer that skips.
                { events: [], next_seq: 4, head };
          socket.write(`${JSON.stringify({ id: request.id, ok: true, result })}\n`);
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('a short page is a protocol error naming what was asked, never a shorter store', async () => {
    const client = await WriterClient.connect(socketPath, 'experiment', 'x'.repeat(24));
    try {
      const error = await client.readRange(1, 3).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WriterUnavailableError);
      expect((error as WriterUnavailableError).reason).toBe('protocol');
      expect((error as Error).message).toBe('asked for 3 events from seq 1, the writer returned 0');
    } finally {
      client.close();
    }
  });
});
