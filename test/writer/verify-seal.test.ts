// What `npm run verify` checks about the seal, each rule against a forged copy of a real
// run: at most one StoreSealed, and last; the final signed head names exactly it; no
// final head without a seal, no seal without a final head; an unsealed run in progress
// passes only with --open.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signChainHead } from '../../controller/run-signatures.js';
import { ChainHead } from '../../schema/chain-head.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { appendForgedEvent, RunCopies, tamper } from '../support/store-forgery.js';
import { messageDraft, startWriterFixture, tempDir, writeSealedRun, type WriterFixture } from '../support/writer-fixture.js';

let sealed: WriterFixture;
let copies: RunCopies;
let sealSeq: number;
let hashBeforeSeal: string;

function headsOf(dir: string): { lines: string[]; heads: ChainHead[] } {
  const lines = readFileSync(path.join(dir, RUN_FILES.heads), 'utf8').trim().split('\n');
  const heads = lines.map((line) => ChainHead.parse(JSON.parse(Buffer.from((JSON.parse(line) as { payload: string }).payload, 'base64').toString('utf8'))));
  return { lines, heads };
}

function writeHeads(dir: string, lines: readonly string[]): void {
  writeFileSync(path.join(dir, RUN_FILES.heads), lines.length === 0 ? '' : `${lines.join('\n')}\n`);
}

beforeAll(async () => {
  sealed = await writeSealedRun(tempDir(), 3);
  copies = new RunCopies(sealed.dir);
  const { heads } = headsOf(sealed.dir);
  sealSeq = heads.at(-1)!.seq;
  // The event before the seal, for a validly signed final head that misses it.
  const dir = copies.copy();
  tamper(dir, (db) => {
    const row = db.prepare('SELECT envelope FROM events WHERE seq = ?').get(sealSeq - 1) as { envelope: string };
    hashBeforeSeal = (JSON.parse(row.envelope) as { event_hash: string }).event_hash;
    expect((db.prepare('SELECT event_type FROM events WHERE seq = ?').get(sealSeq) as { event_type: string }).event_type).toBe('SystemEvent.StoreSealed');
  });
});

afterAll(() => {
  copies.removeAll();
  rmSync(sealed.dir, { recursive: true, force: true });
});

describe('the seal and the final head', () => {
  test('the untouched sealed run verifies: its final head names the StoreSealed, the last event', () => {
    const { heads } = headsOf(sealed.dir);
    expect(heads.map((h) => h.kind)).toEqual(['periodic', 'final']);
    const report = verifyDirectory(sealed.dir);
    expect(report.failures).toEqual([]);
    expect(report).toMatchObject({ ok: true, events: sealSeq, warnings: [] });
  });

  test('a final head that is not on the seal (validly signed, on the event before it) fails', () => {
    const dir = copies.copy();
    const { lines, heads } = headsOf(dir);
    const early: ChainHead = { ...heads.at(-1)!, seq: sealSeq - 1, event_hash: hashBeforeSeal };
    writeHeads(dir, [...lines.slice(0, -1), JSON.stringify(signChainHead(early, sealed.keys))]);
    expect(verifyDirectory(dir).failures).toEqual([
      { store: RUN_FILES.heads, seq: sealSeq - 1, reason: `the final signed head names seq ${sealSeq - 1}, not the SystemEvent.StoreSealed at seq ${sealSeq}` },
      { store: RUN_FILES.heads, seq: sealSeq, reason: expect.stringMatching(new RegExp(`events after the final signed head \\(seq ${sealSeq - 1}\\)`)) },
    ]);
  });

  test('a final head at the seal seq with another hash fails', () => {
    const dir = copies.copy();
    const { lines, heads } = headsOf(dir);
    const wrong: ChainHead = { ...heads.at(-1)!, event_hash: hashBeforeSeal };
    writeHeads(dir, [...lines.slice(0, -1), JSON.stringify(signChainHead(wrong, sealed.keys))]);
    expect(verifyDirectory(dir).failures).toEqual([
      { store: RUN_FILES.heads, seq: sealSeq, reason: `signed head hash differs from the stored event at seq ${sealSeq} (history rewritten?)` },
    ]);
  });

  test('a seal without a final head fails, with --open too', () => {
    const dir = copies.copy();
    writeHeads(dir, headsOf(dir).lines.slice(0, -1));
    const expected = [{ store: RUN_FILES.heads, seq: sealSeq, reason: `sealed but the final head was never signed (no final head in ${RUN_FILES.heads})` }];
    expect(verifyDirectory(dir).failures).toEqual(expected);
    const open = verifyDirectory(dir, { allowOpen: true });
    expect(open.failures).toEqual(expected);
    expect(open.warnings).toEqual([]);
  });

  test('an event after the seal fails, named at its seq, even with --open', () => {
    const dir = copies.copy();
    tamper(dir, (db) => appendForgedEvent(db, 'WorldEvent.MessageReceived', messageDraft().payload));
    const open = verifyDirectory(dir, { allowOpen: true });
    expect(open.failures).toEqual([
      { store: RUN_FILES.store, seq: sealSeq + 1, reason: `1 event(s) after SystemEvent.StoreSealed at seq ${sealSeq}: nothing may follow the seal (inserted outside the writer?)` },
      { store: RUN_FILES.heads, seq: sealSeq + 1, reason: expect.stringMatching(/events after the final signed head/) },
    ]);
  });

  test('a second StoreSealed fails at its seq', () => {
    const dir = copies.copy();
    tamper(dir, (db) => appendForgedEvent(db, 'SystemEvent.StoreSealed', { reason: 'sealed twice', sealed_by: 'experiment' }));
    const reasons = verifyDirectory(dir).failures.map((f) => `${f.store} ${String(f.seq)}: ${f.reason}`);
    expect(reasons).toEqual(
      expect.arrayContaining([
        `${RUN_FILES.store} ${sealSeq + 1}: a second SystemEvent.StoreSealed (the store was sealed at seq ${sealSeq})`,
        `${RUN_FILES.store} ${sealSeq + 1}: 1 event(s) after SystemEvent.StoreSealed at seq ${sealSeq}: nothing may follow the seal (inserted outside the writer?)`,
      ]),
    );
  });
});

describe('stores that were never sealed', () => {
  let open: WriterFixture;
  let lastSeq: number;

  beforeAll(async () => {
    open = await startWriterFixture();
    const experiment = await open.connect('experiment');
    await experiment.append([messageDraft()]);
    await open.signHead('periodic');
    lastSeq = (await experiment.head()).seq;
    await open.stop();
  });

  afterAll(() => rmSync(open.dir, { recursive: true, force: true }));

  test('a run in progress (periodic heads only, no seal) fails, and passes with --open as a warning', () => {
    expect(verifyDirectory(open.dir).failures).toEqual([{ store: RUN_FILES.heads, seq: lastSeq, reason: 'no final signed head: a truncated tail could not be detected' }]);
    const report = verifyDirectory(open.dir, { allowOpen: true });
    expect(report.ok).toBe(true);
    expect(report.warnings).toEqual([{ store: RUN_FILES.heads, seq: lastSeq, reason: 'no final signed head: a truncated tail could not be detected (accepted: --open)' }]);
  });

  test('a run in progress without heads.jsonl fails, and passes with --open as a warning', () => {
    const inProgress = new RunCopies(open.dir);
    try {
      const copy = inProgress.copy();
      rmSync(path.join(copy, RUN_FILES.heads));
      expect(verifyDirectory(copy).failures).toEqual([{ store: RUN_FILES.store, seq: lastSeq, reason: 'no heads.jsonl: no signed head covers this store' }]);
      const report = verifyDirectory(copy, { allowOpen: true });
      expect(report.ok).toBe(true);
      expect(report.warnings).toEqual([{ store: RUN_FILES.store, seq: lastSeq, reason: 'no heads.jsonl: no signed head covers this store (accepted: --open)' }]);
    } finally {
      inProgress.removeAll();
    }
  });

  test('a final head on a store that was never sealed fails, with --open too', () => {
    const copies = new RunCopies(open.dir);
    try {
      const dir = copies.copy();
      const { lines, heads } = headsOf(dir);
      // A validly signed final head on the real last event: only the missing seal is wrong.
      let lastHash = '';
      tamper(dir, (db) => {
        lastHash = (JSON.parse((db.prepare('SELECT envelope FROM events WHERE seq = ?').get(lastSeq) as { envelope: string }).envelope) as { event_hash: string }).event_hash;
      });
      const final: ChainHead = { ...heads[0]!, seq: lastSeq, event_hash: lastHash, kind: 'final' };
      writeHeads(dir, [...lines, JSON.stringify(signChainHead(final, open.keys))]);
      const expected = [
        { store: RUN_FILES.heads, seq: lastSeq, reason: `a final head was signed at seq ${lastSeq} but the store was never sealed (no SystemEvent.StoreSealed): appends were never refused after it` },
      ];
      expect(verifyDirectory(dir).failures).toEqual(expected);
      expect(verifyDirectory(dir, { allowOpen: true }).failures).toEqual(expected);
    } finally {
      copies.removeAll();
    }
  });
});
