// The audit desk over real HTTP on loopback (audit/audit-server.ts), on one real finished run —
// the in-process controller with a real ds-writer and ds-runtime on a real SQLite file: every
// page answers with its security headers and no script, and shows what the store holds; every
// request that would change something, names another host or asks for what is not there is
// refused with a page saying why, and the store is unchanged; a run whose model or world text is
// forged into markup renders it as text.
import { createHash } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AuditDesk } from '../../audit/audit-desk.js';
import { AUDIT_LIMITS, startAuditServer, type AuditServer } from '../../audit/audit-server.js';
import { CHAIN_FILTERS, type ChainFilter } from '../../audit/pages/chain-pages.js';
import { PAGE_CSP } from '../../audit/pages/layout.js';
import type { ActionChain } from '../../audit/store-index.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { replayStore } from '../../writer/replay.js';
import { newToken, spawnWriter } from '../../writer/spawn.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { finishedRun, type FinishedRun } from '../support/finished-run.js';
import { editEnvelope, readSnapshots, RunCopies, tamper } from '../support/store-forgery.js';
import { writeSealedRun } from '../support/writer-fixture.js';

const XSS = '<script>alert(1)</script><img src=x onerror=alert(2)>';
const XSS_ESCAPED = '&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;';

let run: FinishedRun | undefined;
let runDir: string;
let dbPath: string;
let copies: RunCopies | undefined;
/** Every event of the run as stored, read with better-sqlite3, not through the desk. */
let events: EventEnvelope[];
let headSeq: number;
let snapshotSeqs: number[];
let desk: AuditDesk | undefined;
let server: AuditServer | undefined;
/** What the desk logged: only failures inside the desk (500s, refused replays) are logged. */
const logs: string[] = [];
const closers: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  run = await finishedRun();
  ({ runDir, dbPath, events } = run);
  copies = new RunCopies(runDir);
  headSeq = events.length;
  snapshotSeqs = readSnapshots(dbPath).map((s) => s.seq);
  desk = AuditDesk.open(runDir, SCENARIOS_DIR);
  server = await startAuditServer(desk, { port: 0, log: (line) => logs.push(line) });
  closers.push(() => server?.close());
}, 120_000);

afterAll(async () => {
  // Servers before desks before folders: the reverse of opening.
  for (const close of closers.splice(0).reverse()) await close();
  copies?.removeAll();
  run?.cleanup();
});

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function theDesk(): AuditDesk {
  if (!desk) throw new Error('the desk did not open');
  return desk;
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** One request with node:http (the Host header is ours to set, unlike fetch's). */
function request(target: string, options: { method?: string; host?: string; body?: string; port?: number } = {}): Promise<Answer> {
  const port = options.port ?? server!.port;
  const body = options.body;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: target,
        method: options.method ?? 'GET',
        agent: false,
        headers: { host: options.host ?? `127.0.0.1:${port}`, ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) }) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The headers every desk answer carries, and no script anywhere in its body. */
function expectGuarded(answer: Answer, what: string): void {
  expect(answer.headers['content-security-policy'], what).toBe(PAGE_CSP);
  expect(answer.headers['x-content-type-options'], what).toBe('nosniff');
  expect(answer.body, what).not.toMatch(/<script/i);
}

/** A 200 HTML page: headers, doctype, no script. */
async function page(target: string): Promise<string> {
  const answer = await request(target);
  expect(answer.status, `${target}: ${/id="problem">([^<]*)/.exec(answer.body)?.[1] ?? ''}`).toBe(200);
  expect(answer.headers['content-type'], target).toBe('text/html; charset=utf-8');
  expect(answer.body.startsWith('<!doctype html><html lang="en">'), target).toBe(true);
  expectGuarded(answer, target);
  return answer.body;
}

/** The seqs of the rows of a page's event table, in order. */
function rowSeqs(body: string): number[] {
  return [...body.matchAll(/<tr data-type="[^"]*"><td><a href="\/event\/(\d+)"/g)].map((m) => Number(m[1]));
}

const count = (body: string, pattern: RegExp): number => [...body.matchAll(pattern)].length;
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const seqsOfType = (...types: string[]): number[] => events.filter((e) => types.includes(e.event_type)).map((e) => e.seq);

describe('every page answers 200, with its CSP and nosniff, as HTML without script, showing the store', () => {
  test('/ shows the run and its head', async () => {
    const body = await page('/');
    expect(body).toContain(`${headSeq} events`);
    expect(body).toContain(`sealed at seq ${headSeq}`);
    expect(body).toContain('chain &amp; signatures verified');
    expect(count(body, /<tr><td><a href="\/timeline\?type=/g)).toBe(new Set(events.map((e) => e.event_type)).size);
  });

  test('/timeline pages by seq and filters by type', async () => {
    const first = await page('/timeline');
    expect(rowSeqs(first)).toEqual(range(1, 100));
    expect(first).toContain('id="next-page" href="/timeline?after=100"');
    expect(first).not.toContain('id="prev-page"');

    const types = ['MemoryEvent.ClaimRecorded', 'ExperimentEvent.CheckpointRecorded'];
    const filtered = await page(`/timeline?type=${types[0]}&type=${types[1]}`);
    const expected = seqsOfType(...types);
    expect(expected.length).toBeGreaterThan(10);
    expect(rowSeqs(filtered)).toEqual(expected.slice(0, 100));
    expect([...filtered.matchAll(/<tr data-type="([^"]*)">/g)].every((m) => types.includes(m[1]!))).toBe(true);

    const before = await page('/timeline?before=250');
    expect(rowSeqs(before)).toEqual(range(150, 249));
    const from = await page('/timeline?after_seq=250');
    expect(rowSeqs(from)).toEqual(range(250, 349));
    const limited = await page(`/timeline?after=${headSeq - 3}&limit=10`);
    expect(rowSeqs(limited)).toEqual(range(headSeq - 2, headSeq));
    expect(limited).toContain('id="prev-page"');
    expect(limited).not.toContain('id="next-page"');
  });

  test('/event/N for one event of every type shows that event as stored', async () => {
    const firstOfType = new Map<string, EventEnvelope>();
    for (const e of events) if (!firstOfType.has(e.event_type)) firstOfType.set(e.event_type, e);
    expect(firstOfType.size).toBeGreaterThan(15);
    for (const [type, event] of firstOfType) {
      const body = await page(`/event/${event.seq}`);
      expect(body, type).toContain(`<h1>Event #${event.seq}</h1>`);
      expect(body, type).toContain(`<strong>${type}</strong>`);
      expect(body, type).toContain(`<pre id="envelope">`);
      expect(body, type).toContain(event.event_hash);
      // A summary that failed its schema would be marked; a stored event of this build is not.
      expect(body, type).not.toContain('class="alarm"');
    }
  });

  test('/event-id/<uuid> redirects to /event/<seq>', async () => {
    for (const event of [events[0]!, events[Math.floor(headSeq / 2)]!, events.at(-1)!]) {
      const answer = await request(`/event-id/${event.event_id}`);
      expect(answer.status).toBe(302);
      expect(answer.headers.location).toBe(`/event/${event.seq}`);
      expect(answer.headers['content-security-policy']).toBe(PAGE_CSP);
    }
  });

  test('/state and /state.json give the state a replay of the events gives', async () => {
    const seq = 250;
    const replayed = replayStore(dbPath, { toSeq: seq });
    const body = await page(`/state?seq=${seq}`);
    expect(body).toContain(`State after seq ${seq}`);
    expect(body).toContain(`state_hash <code>${replayed.state_hash}</code>`);
    const json = await request(`/state.json?seq=${seq}`);
    expect(json.status).toBe(200);
    expect(json.headers['content-type']).toBe('application/json; charset=utf-8');
    expectGuarded(json, '/state.json');
    const parsed = JSON.parse(json.body) as { seq: number; state_hash: string; state: unknown };
    expect(parsed.seq).toBe(seq);
    expect(parsed.state_hash).toBe(replayed.state_hash);
    expect(parsed.state).toEqual(replayed.state);
    // No seq: the head.
    expect(await page('/state')).toContain(`State after seq ${headSeq}`);
  });

  test('/snapshots lists every snapshot, and each compares identical with a replay, as does the projection', async () => {
    const list = await page('/snapshots');
    expect(count(list, /class="compare-snapshot"/g)).toBe(snapshotSeqs.length);
    for (const seq of snapshotSeqs) {
      const body = await page(`/snapshots?seq=${seq}`);
      expect(body, `snapshot ${seq}`).toContain('<span id="comparison-result"><span class="ok">identical</span></span>');
      expect(body, `snapshot ${seq}`).toContain(`replayed state_hash <code>${replayStore(dbPath, { toSeq: seq }).state_hash}</code>`);
    }
    const projection = await page('/snapshots?compare=projection');
    expect(projection).toContain(`Stored projection (covers seq ${headSeq}) vs replay of every event (seq 1–${headSeq})`);
    expect(projection).toContain('<span id="comparison-result"><span class="ok">identical</span></span>');
  });

  test('/chains under every filter lists the matching chains; /chain/N shows every step of each', async () => {
    const { chains } = theDesk().index;
    expect(chains.length).toBeGreaterThan(10);
    expect(chains.length).toBeLessThanOrEqual(100);
    // The index itself is checked against a recount from the envelopes in audit-desk.test.ts.
    const expected: Record<ChainFilter, (c: ActionChain) => boolean> = {
      all: () => true,
      denied: (c) => c.decision === 'deny',
      executed: (c) => c.intent_seq !== null || c.effects.length > 0,
      failed: (c) => c.outcomes.some((o) => o.event_type === 'ActionEvent.ToolFailed'),
      unknown: (c) => c.outcomes.some((o) => o.event_type === 'ActionEvent.ToolOutcomeUnknown'),
    };
    expect(count(await page('/chains'), /<tr class="chain-row">/g)).toBe(chains.length);
    for (const filter of CHAIN_FILTERS) {
      const body = await page(`/chains?only=${filter}`);
      const shown = [...body.matchAll(/<a href="\/chain\/(\d+)" class="open-chain">/g)].map((m) => Number(m[1]));
      expect(shown, filter).toEqual(chains.filter(expected[filter]).map((c) => c.proposed_seq));
    }
    for (const chain of chains) {
      const body = await page(`/chain/${chain.proposed_seq}`);
      const steps = [chain.proposed_seq, chain.decision_seq, chain.intent_seq, ...chain.outcomes.map((o) => o.seq), ...chain.effects.map((o) => o.seq)].filter((s): s is number => s !== null).sort((a, b) => a - b);
      const shown = [...body.matchAll(/<li class="chain-step" data-type="[^"]*"><h3><a href="\/event\/(\d+)"/g)].map((m) => Number(m[1]));
      expect(shown, `chain ${chain.proposed_seq}`).toEqual(steps);
      expect(body).toContain(`Proposal ${chain.proposal_id}`);
    }
  });

  test('/claims, /recovery, /interventions and /integrity show what the store and the signed files hold', async () => {
    const claimSeqs = seqsOfType('MemoryEvent.ClaimRecorded');
    const claims = await page('/claims');
    expect(count(claims, /<tr class="claim-row">/g)).toBe(Math.min(claimSeqs.length, 100));
    expect(claims).toContain(`${claimSeqs.length} claim(s) recorded`);

    const recovery = await page('/recovery');
    const restarts = seqsOfType('SystemEvent.ProcessRestarted');
    expect(restarts.length).toBeGreaterThan(0);
    for (const seq of restarts) expect(recovery).toContain(`<tr><td><a href="/event/${seq}" data-seq="${seq}">#${seq}</a></td><td>SystemEvent.ProcessRestarted</td>`);

    const interventions = await page('/interventions');
    const plan = JSON.parse(readFileSync(`${runDir}/plan.json`, 'utf8')) as { interventions: unknown[]; seed: string };
    expect(count(interventions, /<tr class="intervention">/g)).toBe(plan.interventions.length);
    expect(interventions).toContain(`<td id="plan-seed">${plan.seed}</td>`);
    for (const seq of seqsOfType('ExperimentEvent.InterventionDelivered')) expect(interventions).toContain(`delivered <a href="/event/${seq}"`);
    expect(interventions).not.toContain('id="unplanned"');

    const integrity = await page('/integrity');
    expect(integrity).toContain('<span id="verify-result"><span class="ok">verified</span></span>');
    expect(integrity).toContain('<span class="ok">signature valid</span>');
    const heads = readFileSync(`${runDir}/heads.jsonl`, 'utf8').split('\n').filter((l) => l.trim() !== '').length;
    expect(count(integrity, /<tr class="signed-head">/g)).toBe(heads);
    expect(count(integrity, /signature valid; names the stored event/g)).toBe(heads);
  });
});

describe('refusals', () => {
  test('POST, PUT, DELETE and PATCH are refused with 405 and Allow: GET, HEAD; the store is unchanged', async () => {
    const before = sha256(dbPath);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      for (const target of ['/', '/event/1', '/state?seq=1', '/snapshots?compare=projection', '/chains']) {
        const answer = await request(target, { method, body: 'resolution=happened&operator=mallory' });
        expect(answer.status, `${method} ${target}`).toBe(405);
        expect(answer.headers.allow, `${method} ${target}`).toBe('GET, HEAD');
        expectGuarded(answer, `${method} ${target}`);
        expect(answer.body).toContain(`${method} refused: the audit desk is read-only`);
      }
    }
    expect(sha256(dbPath)).toBe(before);
  });

  test('HEAD answers 200 with the headers of GET and no body', async () => {
    for (const target of ['/', '/timeline', `/event/${headSeq}`, '/integrity']) {
      const get = await request(target);
      const head = await request(target, { method: 'HEAD' });
      expect(head.status, target).toBe(200);
      expect(head.body, target).toBe('');
      expect(head.headers['content-length'], target).toBe(String(Buffer.byteLength(get.body)));
      expect(head.headers['content-security-policy'], target).toBe(PAGE_CSP);
    }
  });

  test('a request naming another host is refused with 421 (DNS rebinding); localhost on the port is accepted', async () => {
    const port = server!.port;
    for (const host of [`evil.example:${port}`, `127.0.0.1:${port + 1}`, '127.0.0.1', `evil.example`]) {
      const answer = await request('/', { host });
      expect(answer.status, host).toBe(421);
      expectGuarded(answer, host);
      expect(answer.body).toContain(`the desk answers requests for 127.0.0.1:${port} only`);
    }
    expect((await request('/', { host: `localhost:${port}` })).status).toBe(200);
  });

  test('bad parameters get a 4xx page saying why; an unknown path is 404', async () => {
    const notAProposal = events.find((e) => e.event_type === 'ActionEvent.PermissionDecided')!.seq;
    const cases: [string, number, string][] = [
      ['/event/0', 404, `no event at seq 0: the store holds seq 1 to ${headSeq}`],
      [`/event/${headSeq + 1}`, 404, `no event at seq ${headSeq + 1}`],
      ['/event/abc', 400, `a seq is a whole number from 1 to ${headSeq}, got &quot;abc&quot;`],
      ['/state?seq=-1', 400, `seq must be a whole number from 1 to ${headSeq}, got &quot;-1&quot;`],
      ['/state?seq=999999', 400, `seq must be from 1 to ${headSeq}, got 999999`],
      ['/state.json?seq=0', 400, `seq must be from 1 to ${headSeq}, got 0`],
      ['/timeline?limit=501', 400, 'limit must be from 1 to 500, got 501'],
      ['/chains?only=x', 400, 'only must be one of all, denied, executed, failed, unknown'],
      [`/chain/${notAProposal}`, 404, `no action chain starts at seq ${notAProposal}: a chain is named by its ActionProposed`],
      ['/event-id/00000000-0000-8000-8000-000000000000', 404, 'no event with id &quot;00000000-0000-8000-8000-000000000000&quot; in this store'],
      [`/timeline?type=${'x'.repeat(AUDIT_LIMITS.maxUrlBytes)}`, 414, `a desk URL is at most ${AUDIT_LIMITS.maxUrlBytes} bytes`],
      ['/nope', 404, 'no page /nope'],
      ['/event', 400, 'a seq is a whole number'],
    ];
    for (const [target, status, why] of cases) {
      const answer = await request(target);
      const shown = target.length > 80 ? `${target.slice(0, 80)}…` : target;
      expect(answer.status, shown).toBe(status);
      expect(answer.headers['content-type'], shown).toBe('text/html; charset=utf-8');
      expectGuarded(answer, shown);
      expect(/<div class="alarm" id="problem">([^<]*)<\/div>/.exec(answer.body)?.[1], shown).toContain(why);
    }
    // A 4xx is the auditor's mistake, not the desk's: nothing was logged as a failure.
    expect(logs).toEqual([]);
  });

  test('a refusal for another host, another method or a long URL names nothing about the run', async () => {
    const experimentId = events[0]!.payload.experiment_id as string;
    expect((await request('/')).body).toContain(experimentId);
    const refusals = [
      await request('/', { host: `evil.example:${server!.port}` }),
      await request('/', { host: `evil.example:${server!.port}`, method: 'POST', body: 'x=1' }),
      await request('/', { method: 'POST', body: 'x=1' }),
      await request(`/timeline?type=${'x'.repeat(AUDIT_LIMITS.maxUrlBytes)}`),
    ];
    for (const answer of refusals) {
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.body).not.toContain(experimentId);
      expect(answer.body).not.toContain('run-banner');
      expect(answer.body).not.toContain(`${headSeq} events`);
    }
    // The host is checked before the method: a foreign POST is a 421, not a 405 page.
    expect(refusals[1]!.status).toBe(421);
  });

  test('a request target that is not a path is a 400, not a desk failure', async () => {
    for (const target of ['http://[', '*', 'http://127.0.0.1/']) {
      const answer = await request(target);
      expect(answer.status, target).toBe(400);
      expect(/<div class="alarm" id="problem">([^<]*)<\/div>/.exec(answer.body)?.[1], target).toMatch(/a desk URL is a path starting with \/|not a URL the desk can read/);
    }
    expect(logs).toEqual([]);
  });

  test('/snapshots?seq=N without a snapshot at N is a 404 naming N', async () => {
    const missing = range(1, headSeq).find((seq) => !snapshotSeqs.includes(seq))!;
    const answer = await request(`/snapshots?seq=${missing}`);
    expect(answer.status).toBe(404);
    expect(answer.body).toContain(`no snapshot at seq ${missing}`);
  });

  test('a timeline page past either end is empty but links back to the events', async () => {
    const pastEnd = await page(`/timeline?after=${headSeq}`);
    expect(rowSeqs(pastEnd)).toEqual([]);
    expect(pastEnd).toContain(`id="prev-page" href="/timeline?before=${headSeq + 1}"`);
    const beforeStart = await page('/timeline?before=1');
    expect(rowSeqs(beforeStart)).toEqual([]);
    expect(beforeStart).toContain('id="next-page" href="/timeline?after=0"');
    // Following them lands on the last and the first page.
    expect(rowSeqs(await page(`/timeline?before=${headSeq + 1}`)).at(-1)).toBe(headSeq);
    expect(rowSeqs(await page('/timeline?after=0'))[0]).toBe(1);
  });
});

describe('text from the run is shown as text', () => {
  test('a claim statement and a message forged into markup render escaped, with no tag of theirs on any page', async () => {
    const claim = events.find((e) => e.event_type === 'MemoryEvent.ClaimRecorded' && !snapshotSeqs.includes(e.seq));
    const message = events.find((e) => e.event_type === 'WorldEvent.MessageReceived');
    if (!claim || !message) throw new Error('the run holds no claim or no message to forge');
    const dir = copies!.copy();
    tamper(dir, (db) => {
      editEnvelope(db, claim.seq, (env) => ({ ...env, payload: { ...env.payload, statement: XSS } }));
      editEnvelope(db, message.seq, (env) => ({ ...env, payload: { ...env.payload, subject: XSS, body: XSS } }));
    });
    const forgedDesk = AuditDesk.open(dir, SCENARIOS_DIR);
    const forgedServer = await startAuditServer(forgedDesk, { port: 0, log: (line) => logs.push(line) });
    closers.push(() => forgedServer.close());
    // The forgery breaks the payload hashes: the banner says so on every page.
    expect(forgedDesk.verify.ok).toBe(false);

    const get = async (target: string): Promise<string> => {
      const answer = await request(target, { port: forgedServer.port });
      expect(answer.status, target).toBe(200);
      expectGuarded(answer, target);
      expect(answer.body, target).not.toMatch(/<img/i);
      expect(answer.body, target).toContain('VERIFICATION FAILED');
      return answer.body;
    };
    const claimPage = await get(`/event/${claim.seq}`);
    // The statement as the claim section's text, and inside the envelope as stored (JSON-quoted).
    expect(claimPage).toContain(`<p id="claim-statement">${XSS_ESCAPED}</p>`);
    expect(claimPage).toContain(`&quot;statement&quot;: &quot;${XSS_ESCAPED}&quot;`);
    const messagePage = await get(`/event/${message.seq}`);
    expect(messagePage).toContain(`: message from ${(message.payload as { from: string }).from}: ${XSS_ESCAPED}</p>`);
    expect(messagePage).toContain(`&quot;body&quot;: &quot;${XSS_ESCAPED}&quot;`);
    // Lists and the state built by replaying the forged events carry it too, escaped.
    for (const target of ['/claims', `/timeline?type=MemoryEvent.ClaimRecorded&type=WorldEvent.MessageReceived`, `/state?seq=${claim.seq}`]) {
      expect(await get(target), target).toContain(XSS_ESCAPED);
    }
  });
});

describe('a damaged store is shown, never fatal (each forgery on its own copy)', () => {
  /** A desk and server on a forged copy; the answer of `target` on it. */
  async function forgedDesk(forge: (dir: string) => void): Promise<{ get: (target: string) => Promise<Answer>; desk: AuditDesk }> {
    const dir = copies!.copy();
    forge(dir);
    const forged = AuditDesk.open(dir, SCENARIOS_DIR);
    const forgedServer = await startAuditServer(forged, { port: 0, log: (line) => logs.push(line) });
    closers.push(() => forgedServer.close());
    return { get: (target) => request(target, { port: forgedServer.port }), desk: forged };
  }

  test('rows that are not envelopes (not JSON, null, {}, another seq, another type) are listed as unreadable, each with its page', async () => {
    const [a, b, c, d, e] = events.filter((x) => x.event_type === 'WorldEvent.DistractorOccurred').map((x) => x.seq);
    const { get, desk: forged } = await forgedDesk((dir) =>
      tamper(dir, (db) => {
        const set = db.prepare('UPDATE events SET envelope = ? WHERE seq = ?');
        set.run('{not json', a);
        set.run('null', b);
        set.run('{}', c);
        editEnvelope(db, d!, (env) => ({ ...env, seq: 5 }));
        editEnvelope(db, e!, (env) => ({ ...env, event_type: 'ActionEvent.Bogus' }));
      }),
    );
    expect(forged.index.unreadable_seqs).toEqual([a, b]);
    const overview = await get('/');
    expect(overview.status).toBe(200);
    expect(overview.body).toContain('2 stored row(s) are not event envelopes');
    const timeline = await get(`/timeline?after=${a! - 1}&limit=500`);
    expect(timeline.status).toBe(200);
    for (const seq of [a, b, c, d, e]) {
      expect(timeline.body, `seq ${seq}`).toMatch(new RegExp(`<tr data-type="WorldEvent.DistractorOccurred" class="unreadable"><td><a href="/event/${seq}"`));
      const own = await get(`/event/${seq}`);
      expect(own.status, `seq ${seq}`).toBe(200);
      expect(own.body, `seq ${seq}`).toContain(`<div class="alarm" id="unreadable">The row at seq ${seq} (filed as WorldEvent.DistractorOccurred) does not read as an event`);
    }
    expect((await get(`/event/${d}`)).body).toContain(`the envelope stored at seq ${d} says seq 5`);
    expect((await get(`/event/${e}`)).body).toContain('the envelope says ActionEvent.Bogus; the row is filed as WorldEvent.DistractorOccurred');
    // The index counts rows under the type they are filed as, not what their text claims.
    expect(forged.index.type_counts.has('ActionEvent.Bogus')).toBe(false);
    expect(logs.filter((l) => l.includes('failed'))).toEqual([]);
  });

  test('events the projector refuses: the state and the comparison say the replay stops there, as a 422 or a verdict, not a desk failure', async () => {
    const proposal = events.find((x) => x.event_type === 'ActionEvent.ActionProposed')!;
    const { get } = await forgedDesk((dir) => tamper(dir, (db) => editEnvelope(db, proposal.seq, (env) => ({ ...env, payload: { ...env.payload, tool: 'rm' } }))));
    // Up to the seq before the next snapshot: the replay starts before the forged proposal and
    // runs on past its permission decision, where the projector refuses it.
    const state = await get(`/state?seq=${snapshotSeqs.find((s) => s > proposal.seq)! - 1}`);
    expect(state.status).toBe(422);
    expect(/<div class="alarm" id="problem">([^<]*)<\/div>/.exec(state.body)?.[1]).toMatch(/^the events do not replay: /);
    const compared = await get('/snapshots?compare=projection');
    expect(compared.status).toBe(200);
    expect(compared.body).toContain('<span id="comparison-result"><span class="bad">CANNOT BE CONFIRMED</span></span>');
    expect(compared.body).toMatch(/id="comparison-note">cannot be confirmed: the replay of seq 1 to \d+ fails: /);
    expect(logs.filter((l) => l.includes('failed'))).toEqual([]);
  });

  test('an intent naming no permission decision is listed as an orphan step (an execution without its decision)', async () => {
    const intent = events.find((x) => x.event_type === 'ActionEvent.ExecutionIntentRecorded')!;
    const { get } = await forgedDesk((dir) => tamper(dir, (db) => editEnvelope(db, intent.seq, (env) => ({ ...env, payload: { ...env.payload, permission_event_id: '00000000-0000-8000-8000-000000000000' } }))));
    const chains = await get('/chains');
    expect(chains.status).toBe(200);
    expect(chains.body).toMatch(new RegExp(`<div class="alarm" id="orphan-steps">\\d+ event\\(s\\) name a proposal, permission decision or intent that no chain holds[^]*href="/event/${intent.seq}"`));
  });

  test('a FACT citing an ineligible or later event is not vouched for', async () => {
    const fact = events.find((x) => x.event_type === 'MemoryEvent.ClaimRecorded' && x.payload.claim_type === 'FACT')!;
    const proposal = events.find((x) => x.event_type === 'ActionEvent.ActionProposed' && x.seq < fact.seq)!;
    const later = events.find((x) => x.event_type === 'WorldEvent.DistractorOccurred' && x.seq > fact.seq)!;
    const { get } = await forgedDesk((dir) => tamper(dir, (db) => editEnvelope(db, fact.seq, (env) => ({ ...env, payload: { ...env.payload, evidence_event_ids: [proposal.event_id, later.event_id] } }))));
    const page = (await get(`/event/${fact.seq}`)).body;
    expect(page).toContain('<p class="alarm" id="fact-unsupported">');
    expect(page).toContain('no: ActionEvent.ActionProposed is not evidence');
    expect(page).toContain(`recorded after what cites it (seq ${fact.seq})`);
    expect(page).not.toContain('Every cited event was in the store before this FACT');
  });

  test('a store recorded under other versions: the state refuses in strict mode naming the modes, and replays with ?mode=migrate, saying so', async () => {
    const { get } = await forgedDesk((dir) => tamper(dir, (db) => db.prepare("UPDATE projection SET state_machine_version = '1.2.0' WHERE id = 1").run()));
    const strict = await get('/state?seq=10');
    expect(strict.status).toBe(422);
    expect(strict.body).toContain('?mode=migrate');
    const migrated = await get('/state?seq=10&mode=migrate');
    expect(migrated.status).toBe(200);
    expect(migrated.body).toContain('(replay mode migrate: this store was recorded under other versions)');
    expect(migrated.body).toContain(replayStore(dbPath, { toSeq: 10 }).state_hash);
    expect((await get('/state?seq=10&mode=guess')).status).toBe(400);
  });
});

test('an open desk does not hold the store: a writer starts on it meanwhile, pages say a writer holds it, and read again once it stops', async () => {
  const dir = copies!.copy();
  const opened = AuditDesk.open(dir, SCENARIOS_DIR);
  const deskServer = await startAuditServer(opened, { port: 0, log: (line) => logs.push(line) });
  closers.push(() => deskServer.close());
  const get = (target: string): Promise<Answer> => request(target, { port: deskServer.port });
  expect((await get('/')).status).toBe(200);
  const storeOpened = events[0]!.payload as { subject_id: string; experiment_id: string; manifest_sha256: string };
  const socketDir = mkdtempSync(path.join(tmpdir(), 'ds-audit-sock-'));
  const writer = await spawnWriter({
    db_path: path.join(dir, 'events.db'),
    socket_path: path.join(socketDir, 'w.sock'),
    mode: 'open',
    subject_id: storeOpened.subject_id,
    experiment_id: storeOpened.experiment_id,
    manifest_sha256: storeOpened.manifest_sha256,
    tokens: { runtime: newToken(), experiment: newToken() },
    projection: 'subject',
    socket_mode: 0o600,
    snapshot_every: 100,
  });
  try {
    expect(writer.head.seq).toBe(headSeq);
    const locked = await get('/timeline');
    expect(locked.status).toBe(503);
    expect(locked.body).toContain('A writer holds the store');
  } finally {
    await writer.stop();
    rmSync(socketDir, { recursive: true, force: true });
  }
  const again = await get('/timeline');
  expect(again.status).toBe(200);
  expect(rowSeqs(again.body)[0]).toBe(1);
});

describe('other kinds of run', () => {
  /** A desk and server on `dir`; every listed page must answer 200 with its guards. */
  async function serve(dir: string): Promise<(target: string) => Promise<string>> {
    const other = AuditDesk.open(dir, SCENARIOS_DIR);
    const otherServer = await startAuditServer(other, { port: 0, log: (line) => logs.push(line) });
    closers.push(() => otherServer.close());
    return async (target) => {
      const answer = await request(target, { port: otherServer.port });
      expect(answer.status, `${target}: ${/id="problem">([^<]*)/.exec(answer.body)?.[1] ?? ''}`).toBe(200);
      expectGuarded(answer, target);
      return answer.body;
    };
  }
  const ROUTES = ['/', '/timeline', '/snapshots', '/snapshots?compare=projection', '/chains', '/claims', '/recovery', '/interventions', '/integrity'];

  test('a group A run: every page answers; the state page says its projection is the record, not what the subject carried', async () => {
    const groupA = await finishedRun('A', 'audited-a');
    closers.push(() => groupA.cleanup());
    const get = await serve(groupA.runDir);
    for (const target of ROUTES) await get(target);
    const rejected = groupA.events.find((e) => e.event_type === 'PlanEvent.PlanRevisionRejected');
    if (!rejected) throw new Error('the group A run rejected no plan revision: the case this test is for');
    expect(await get(`/event/${rejected.seq}`)).toContain('rejected: capability_disabled');
    expect(await get(`/state?seq=${rejected.seq}`)).toContain('This instance runs without persistent state');
    expect(await get('/')).toContain('persistent state: off · autonomous re-planning: off');
  }, 60_000);

  test('an event-counts store with a manifest of another shape (the writer fixture, like npm run demo): every page answers and says what it cannot show', async () => {
    const demo = await writeSealedRun();
    closers.push(() => rmSync(demo.dir, { recursive: true, force: true }));
    const get = await serve(demo.dir);
    for (const target of ROUTES) await get(target);
    expect(await get('/')).toContain('No verified manifest: manifest.dsse.json: the signed body is not an instance manifest');
    expect(await get('/recovery')).toContain("This store's projection (event-counts) does not track execution intents");
    expect(await get('/state?seq=3')).toContain('This projection (event-counts) is not the Subject state; shown as stored.');
    expect(await get('/interventions')).toContain('No plan to show: no plan.json in the run folder');
  });
});

test('a signed head whose event was edited in place (its event_hash field left as it was): the integrity page says the stored event hashes otherwise', async () => {
  const heads = readFileSync(path.join(runDir, 'heads.jsonl'), 'utf8').split('\n').filter((l) => l.trim() !== '');
  const firstHead = JSON.parse(Buffer.from((JSON.parse(heads[0]!) as { payload: string }).payload, 'base64').toString('utf8')) as { seq: number };
  const dir = copies!.copy();
  tamper(dir, (db) => editEnvelope(db, firstHead.seq, (env) => ({ ...env, occurred_at: '2026-01-01T00:00:00.000Z' })));
  const forged = AuditDesk.open(dir, SCENARIOS_DIR);
  const forgedServer = await startAuditServer(forged, { port: 0, log: (line) => logs.push(line) });
  closers.push(() => forgedServer.close());
  const integrity = (await request('/integrity', { port: forgedServer.port })).body;
  expect(integrity).toMatch(new RegExp(`<tr class="signed-head"><td>1</td><td>periodic</td><td><a href="/event/${firstHead.seq}"[^]*?<span class="bad">signature valid but the stored event hashes otherwise</span>`));
  // The untouched run: every head names its stored event.
  expect(await page('/integrity')).not.toContain('hashes otherwise');
});
