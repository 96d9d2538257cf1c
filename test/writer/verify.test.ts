// Every check of `npm run verify` against a forged copy of a real sealed run: each
// forgery must be caught and named with its seq.
import Database from 'better-sqlite3';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signChainHead, writeSignedManifest } from '../../controller/run-signatures.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { ChainHead } from '../../schema/chain-head.js';
import { generateKeyPair, toHex } from '../../schema/ed25519-keys.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { computeEventHash, computePayloadHash } from '../../schema/envelope-hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { verifyDirectory, type VerifyReport } from '../../writer/verify-store.js';
import { runCli } from '../support/cli.js';
import { appendForgedEvent } from '../support/store-forgery.js';
import { journalDraft, reopenWriterFixture, tempDir, writeSealedRun, type WriterFixture } from '../support/writer-fixture.js';

let sealed: WriterFixture;
let lastSeq: number;
let periodicHeadSeq: number;
const scratch: string[] = [];

beforeAll(async () => {
  sealed = await writeSealedRun(tempDir(), 5);
  const heads = readFileSync(path.join(sealed.dir, RUN_FILES.heads), 'utf8').trim().split('\n').map(decodeHead);
  periodicHeadSeq = heads[0]!.seq;
  lastSeq = heads[1]!.seq;
});

afterAll(() => {
  for (const dir of [sealed.dir, ...scratch]) rmSync(dir, { recursive: true, force: true });
});

function decodeHead(line: string): ChainHead {
  const envelope = JSON.parse(line) as { payload: string };
  return ChainHead.parse(JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')));
}

/** A fresh copy of the sealed run to forge. */
function copyRun(): string {
  const dir = tempDir('ds-forged-');
  scratch.push(dir);
  cpSync(sealed.dir, dir, { recursive: true });
  return dir;
}

/** Opens the copy's store with the append-only triggers dropped, as a tamperer would. */
function tamper(dir: string, edit: (db: Database.Database) => void): void {
  const db = new Database(path.join(dir, RUN_FILES.store));
  db.exec('DROP TRIGGER events_refuse_update; DROP TRIGGER events_refuse_delete; DROP TRIGGER events_refuse_overwrite; DROP TRIGGER events_refuse_after_seal;');
  edit(db);
  db.close();
}

function envelopeAt(db: Database.Database, seq: number): EventEnvelope {
  const row = db.prepare('SELECT envelope FROM events WHERE seq = ?').get(seq) as { envelope: string };
  return JSON.parse(row.envelope) as EventEnvelope;
}

function failuresAt(report: VerifyReport, seq: number): string[] {
  return report.failures.filter((f) => f.seq === seq).map((f) => f.reason);
}

test('the untouched sealed run verifies', () => {
  const report = verifyDirectory(sealed.dir);
  expect(report.failures).toEqual([]);
  expect(report).toMatchObject({ ok: true, stores: 1, events: lastSeq });
});

describe('forged stores are caught, with the seq named', () => {
  test('a payload edited in place', () => {
    const dir = copyRun();
    tamper(dir, (db) => {
      const row = db.prepare('SELECT envelope FROM events WHERE seq = 2').get() as { envelope: string };
      const forged = row.envelope.replace('The dataset will follow.', 'The dataset was delivered.');
      expect(forged).not.toBe(row.envelope);
      db.prepare('UPDATE events SET envelope = ? WHERE seq = 2').run(forged);
    });
    const report = verifyDirectory(dir);
    expect(report.ok).toBe(false);
    expect(failuresAt(report, 2)).toEqual(expect.arrayContaining([expect.stringMatching(/payload_hash does not match/), expect.stringMatching(/event_hash does not match/)]));
  });

  test('a middle row deleted', () => {
    const dir = copyRun();
    tamper(dir, (db) => db.prepare('DELETE FROM events WHERE seq = 4').run());
    const report = verifyDirectory(dir);
    expect(report.ok).toBe(false);
    expect(failuresAt(report, 5)).toEqual(expect.arrayContaining([expect.stringMatching(/seq gap: expected seq 4, found 5/), expect.stringMatching(/chain link broken/)]));
  });

  test('two rows swapped', () => {
    const dir = copyRun();
    tamper(dir, (db) => {
      const a = db.prepare('SELECT * FROM events WHERE seq = 6').get() as Record<string, unknown>;
      const b = db.prepare('SELECT * FROM events WHERE seq = 7').get() as Record<string, unknown>;
      db.prepare('DELETE FROM events WHERE seq IN (6, 7)').run();
      const insert = db.prepare('INSERT INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, ?, ?, ?, ?)');
      insert.run(6, b.event_id, b.event_type, b.idempotency_key, b.envelope);
      insert.run(7, a.event_id, a.event_type, a.idempotency_key, a.envelope);
    });
    const report = verifyDirectory(dir);
    expect(report.ok).toBe(false);
    expect(failuresAt(report, 6)).toEqual(expect.arrayContaining([expect.stringMatching(/envelope says seq 7 but is stored at seq 6/), expect.stringMatching(/chain link broken/)]));
    expect(failuresAt(report, 7)).toEqual(expect.arrayContaining([expect.stringMatching(/envelope says seq 6 but is stored at seq 7/)]));
  });

  test('an edited event whose own hashes were recomputed is caught by the next link', () => {
    const dir = copyRun();
    const target = periodicHeadSeq + 2; // after the periodic head, before the end
    expect(target).toBeLessThan(lastSeq);
    tamper(dir, (db) => {
      const env = envelopeAt(db, target);
      const payload = { ...env.payload, text: 'I never wrote this.' };
      const forged: EventEnvelope = { ...env, payload, payload_hash: computePayloadHash(payload) };
      const rehashed = { ...forged, event_hash: computeEventHash(forged) };
      db.prepare('UPDATE events SET envelope = ? WHERE seq = ?').run(canonicalJson(rehashed), target);
    });
    const report = verifyDirectory(dir);
    expect(report.ok).toBe(false);
    expect(failuresAt(report, target)).toEqual([]);
    expect(failuresAt(report, target + 1)).toEqual([expect.stringMatching(/chain link broken: previous_event_hash is not the event_hash of seq/)]);
  });

  test('a rewritten chain is caught by a signed head even when every link is recomputed', () => {
    const dir = copyRun();
    tamper(dir, (db) => {
      let previous = envelopeAt(db, periodicHeadSeq - 1).event_hash;
      for (let seq = periodicHeadSeq; seq <= lastSeq; seq++) {
        const env = envelopeAt(db, seq);
        const payload = seq === periodicHeadSeq ? env.payload : { ...env.payload };
        const forged: EventEnvelope = { ...env, recorded_at: '2030-01-01T00:00:00.000Z', payload, previous_event_hash: previous };
        const rehashed = { ...forged, event_hash: computeEventHash(forged) };
        db.prepare('UPDATE events SET envelope = ? WHERE seq = ?').run(canonicalJson(rehashed), seq);
        previous = rehashed.event_hash;
      }
    });
    const report = verifyDirectory(dir);
    expect(report.ok).toBe(false);
    expect(failuresAt(report, periodicHeadSeq)).toEqual(expect.arrayContaining([expect.stringMatching(/signed head hash differs from the stored event/)]));
    expect(failuresAt(report, lastSeq)).toEqual(expect.arrayContaining([expect.stringMatching(/signed head hash differs from the stored event/)]));
  });

  test('a truncated tail is caught by the final signed head', () => {
    const dir = copyRun();
    tamper(dir, (db) => {
      db.prepare('DELETE FROM events WHERE seq > ?').run(lastSeq - 3);
      // Make the projection agree, so that only the signature can tell.
      db.prepare('UPDATE projection SET last_applied_event_seq = ?').run(lastSeq - 3);
    });
    const report = verifyDirectory(dir);
    expect(report.ok).toBe(false);
    // The seal went with the tail, so the final head now also stands on an unsealed store.
    expect(report.failures).toEqual([
      { store: RUN_FILES.heads, seq: lastSeq, reason: expect.stringMatching(new RegExp(`signed head at seq ${lastSeq} but the store ends at seq ${lastSeq - 3}`)) },
      { store: RUN_FILES.heads, seq: lastSeq, reason: expect.stringMatching(/a final head was signed at seq \d+ but the store was never sealed/) },
    ]);
  });

  test('stored text that is valid JSON but not canonical', () => {
    const dir = copyRun();
    tamper(dir, (db) => {
      const env = envelopeAt(db, 2);
      db.prepare('UPDATE events SET envelope = ? WHERE seq = 2').run(JSON.stringify(env, null, 1));
    });
    const report = verifyDirectory(dir);
    expect(failuresAt(report, 2)).toEqual([expect.stringMatching(/not the canonical \(RFC 8785\) form/)]);
  });

  test('a projection out of step with the events', () => {
    const dir = copyRun();
    tamper(dir, (db) => db.prepare('UPDATE projection SET last_applied_event_seq = 2').run());
    const report = verifyDirectory(dir);
    expect(failuresAt(report, lastSeq)).toEqual([expect.stringMatching(/projection last_applied_event_seq 2 differs/)]);
  });

  test('several forgeries are all listed, not only the first', () => {
    const dir = copyRun();
    tamper(dir, (db) => {
      db.prepare('DELETE FROM events WHERE seq = 3').run();
      const row = db.prepare('SELECT envelope FROM events WHERE seq = 9').get() as { envelope: string };
      db.prepare('UPDATE events SET envelope = ? WHERE seq = 9').run(row.envelope.replace('entry', 'Entry'));
    });
    const report = verifyDirectory(dir);
    expect(failuresAt(report, 4).length).toBeGreaterThan(0);
    expect(failuresAt(report, 9).length).toBeGreaterThan(0);
  });
});

describe('forged signatures are caught', () => {
  test('a flipped byte in the final head signature', () => {
    const dir = copyRun();
    const file = path.join(dir, RUN_FILES.heads);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const envelope = JSON.parse(lines[1]!) as { signatures: { sig: string }[] };
    const sig = Buffer.from(envelope.signatures[0]!.sig, 'base64');
    sig[10] = sig[10]! ^ 0x01;
    envelope.signatures[0]!.sig = sig.toString('base64');
    lines[1] = JSON.stringify(envelope);
    writeFileSync(file, `${lines.join('\n')}\n`);
    const report = verifyDirectory(dir);
    expect(report.ok).toBe(false);
    expect(report.failures.map((f) => f.reason)).toEqual(
      expect.arrayContaining([expect.stringMatching(/line 2: signature does not verify/), expect.stringMatching(/sealed but the final head was never signed/)]),
    );
  });

  test('a head signed by another key', () => {
    const dir = copyRun();
    const file = path.join(dir, RUN_FILES.heads);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    lines[1] = JSON.stringify(signChainHead(decodeHead(lines[1]!), generateKeyPair()));
    writeFileSync(file, `${lines.join('\n')}\n`);
    const report = verifyDirectory(dir);
    expect(report.failures.map((f) => f.reason)).toEqual(expect.arrayContaining([expect.stringMatching(/line 2: no signature by the trusted key/)]));
  });

  test('a controller.pub replaced by another key fails every signature', () => {
    const dir = copyRun();
    writeFileSync(path.join(dir, RUN_FILES.publicKey), `${toHex(generateKeyPair().publicKey)}\n`);
    const report = verifyDirectory(dir);
    const reasons = report.failures.map((f) => `${f.store}: ${f.reason}`);
    expect(reasons).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/heads\.jsonl: line 1: no signature by the trusted key/),
        expect.stringMatching(/manifest\.dsse\.json: no signature by the trusted key/),
        expect.stringMatching(/events\.db: ChainHeadSigned: no signature by the trusted key/),
      ]),
    );
  });

  test('a validly signed manifest that is not the one StoreOpened names', () => {
    const dir = copyRun();
    rmSync(path.join(dir, RUN_FILES.manifest));
    writeSignedManifest(dir, { experiment_id: 'exp-test-001', subject_id: 'subject-001', purpose: 'a different manifest' }, sealed.keys);
    const report = verifyDirectory(dir);
    expect(report.failures).toEqual([{ store: RUN_FILES.manifest, seq: 1, reason: expect.stringMatching(/StoreOpened names/) }]);
  });

  test('events appended after the final head: the reopened writer refuses them; forged ones are caught', async () => {
    const dir = copyRun();
    const reopened = await reopenWriterFixture(dir, sealed);
    const runtime = await reopened.connect('runtime');
    await expect(runtime.append([journalDraft('written after the seal')])).rejects.toMatchObject({ name: 'WriterError', code: 'sealed' });
    await reopened.stop();
    expect(verifyDirectory(dir).failures).toEqual([]);
    tamper(dir, (db) => appendForgedEvent(db, 'MemoryEvent.JournalEntryWritten', { proposal_id: 'proposal-1', entry_id: 'entry-1', text: 'written after the seal' }));
    expect(verifyDirectory(dir).failures).toEqual([
      { store: RUN_FILES.store, seq: lastSeq + 1, reason: expect.stringMatching(new RegExp(`1 event\\(s\\) after SystemEvent.StoreSealed at seq ${lastSeq}`)) },
      { store: RUN_FILES.heads, seq: lastSeq + 1, reason: expect.stringMatching(/events after the final signed head/) },
    ]);
  });

  test('a sealed run without heads fails, even with --open: the seal says the run is over', () => {
    const dir = copyRun();
    rmSync(path.join(dir, RUN_FILES.heads));
    const reasons = [expect.stringMatching(/sealed but the final head was never signed \(no heads\.jsonl/)];
    expect(verifyDirectory(dir).failures.map((f) => f.reason)).toEqual(reasons);
    const open = verifyDirectory(dir, { allowOpen: true });
    expect(open.failures.map((f) => f.reason)).toEqual(reasons);
    expect(open.warnings).toEqual([]);
  });
});

describe('npm run verify', () => {
  const cli = (args: string[]) => runCli('verify', args);

  test('exit 0 and one JSON object for a good run', async () => {
    const result = await cli([sealed.dir, '--json']);
    expect(result.code).toBe(0);
    // A writer-only run has no plan.json: verify says so as a warning, never silently.
    expect(JSON.parse(result.stdout)).toEqual({
      ok: true,
      stores: 1,
      events: lastSeq,
      failures: [],
      warnings: [{ store: 'plan.json', seq: null, reason: "no plan.json: the run's plan was not checked" }],
      plans: { runs: [{ run: '.', plan: 'absent', checked: null }] },
      exit_code: 0,
    });
  });

  test('a run\'s events.db stands for its run folder, as replay, restore and audit take it; another file is refused', async () => {
    const byStore = await cli([path.join(sealed.dir, RUN_FILES.store), '--json']);
    const byFolder = await cli([sealed.dir, '--json']);
    expect(byStore.code).toBe(0);
    expect(JSON.parse(byStore.stdout)).toEqual(JSON.parse(byFolder.stdout));
    const other = await cli([path.join(sealed.dir, RUN_FILES.manifest)]);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/is a file but not a run's events\.db; give the run or study folder/);
  });

  test('exit 1 with every failure and its seq for a forged run', async () => {
    const dir = copyRun();
    tamper(dir, (db) => db.prepare('DELETE FROM events WHERE seq = 4').run());
    const json = await cli([dir, '--json']);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as VerifyReport;
    expect(report.ok).toBe(false);
    expect(report.failures).toContainEqual({ store: RUN_FILES.store, seq: 5, reason: expect.stringMatching(/seq gap/) });
    const human = await cli([dir]);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/events\.db seq 5: seq gap: expected seq 4, found 5/);
  });

  test('exit 2 and a usable message for a folder that does not exist', async () => {
    const result = await cli([path.join(sealed.dir, 'nope')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/is not a folder/);
  });
});
