// The blind-review export (blind-review/exporter.ts) on a real study: one real A, B and C run
// (test/support/blind-study.ts), so that the packages really differ by group. Checked: the exact
// file set, every file against its schema, nothing identifying anywhere, refs that resolve, the
// sealed map (0600, in the study folder only), the signed commitment, the refusal of a second
// export, fresh blind ids per export, a leak refused loudly with the temp folder left for
// inspection, and the command line's exit codes. All or nothing (issue 16): a study with an
// unfinished, damaged (real bytes overwritten in its events.db), missing, foreign or stray
// instance is refused whole through the real command — exit 1, a typed code, every instance named
// with why — with the study and package folders byte-identical afterwards, and the same study
// exports once repaired (the refusal sealed nothing).
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { EXPANSION_NOT_DECIDED } from '../../oracle/expansion.js';
import { BLIND_REVIEW_FILES, BlindCommitment, BlindMap, COMMITMENT_PAYLOAD_TYPE, commitmentOf } from '../../blind-review/blind-map.js';
import { NormalizeError, normalizeEvents, type NormalizedTimeline } from '../../blind-review/event-normalizer.js';
import { OMISSIONS } from '../../blind-review/omissions.js';
import { MODEL_FAILURE_DETAIL_WITHHELD } from '../../blind-review/shown-model-failure.js';
import { DETAIL_SCHEMAS } from '../../blind-review/timeline-detail.js';
import { ExportRefusal, exportStudy, type ExportOptions } from '../../blind-review/exporter.js';
import { instructionsMarkdown, reviewInstructions } from '../../blind-review/review-instructions.js';
import { computeOracle } from '../../oracle/expected-checkpoints.js';
import { ActionChains, ClaimsWithEvidence, ExpectedCheckpoints, Interventions, PACKAGE_FILE_NAMES, PACKAGE_FILES, PackageManifest, RecoveryReports, StateCheckpoints, TimelineEntry } from '../../blind-review/package-format.js';
import type { ScorecardData } from '../../blind-review/scorecard-data.js';
import { loadRunRecord } from '../../oracle/run-record.js';
import { verifyDsse } from '../../schema/dsse.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { ModelAnswered, ModelCallFailed } from '../../schema/events/model-output-events.js';
import { parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { BLIND_SEED, BLIND_STUDY_ID, copyStudy, makeBlindStudy, unseal, type BlindStudy } from '../support/blind-study.js';
import { runCli } from '../support/cli.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';
import { folderState } from '../support/folder-state.js';

let study: BlindStudy;
/**
 * The base study with every way an instance can fail to export, but one: A-r1 unfinished (its
 * seal deleted), B-r1 damaged (a leaf page of its events table overwritten with random bytes),
 * instances/A-r2 (a copy of A-r1: a replicate the report does not count) and instances/notes.txt
 * (not an instance folder); C-r1 is intact, and must not be exported alone.
 */
let forged: string;

/** Overwrites the middle leaf page of the events table of a run's events.db with random bytes: real damage, where every read of the events meets it. */
function damageEvents(runDir: string): void {
  const file = path.join(runDir, 'events.db');
  const db = new Database(file, { readonly: true });
  let offset: number;
  let pageSize: number;
  try {
    pageSize = Number(db.pragma('page_size', { simple: true }));
    const pages = (db.prepare("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno").all() as { pageno: number }[]).map((p) => p.pageno);
    if (pages.length < 3) throw new Error(`test setup: ${file} has ${pages.length} leaf pages of events, too few to damage one in the middle`);
    offset = (pages[Math.floor(pages.length / 2)]! - 1) * pageSize;
  } finally {
    db.close();
  }
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, randomBytes(pageSize), 0, pageSize, offset);
  } finally {
    closeSync(fd);
  }
}

beforeAll(async () => {
  study = await makeBlindStudy();
  forged = copyStudy(study.studyDir);
  const instances = path.join(forged, 'instances');
  cpSync(path.join(instances, 'A-r1'), path.join(instances, 'A-r2'), { recursive: true });
  unseal(path.join(instances, 'A-r1'));
  damageEvents(path.join(instances, 'B-r1'));
  writeFileSync(path.join(instances, 'notes.txt'), 'an operator\'s note left in instances/\n');
}, 120_000);

/**
 * Every entry under `root` (recursively, symlinks not followed): its kind, mode and sha256 or
 * target, so two states compare byte for byte — a file created (a -wal, a -shm), changed or
 * removed anywhere shows. null when `root` does not exist.
 */

const options = (overrides: Partial<ExportOptions> = {}): ExportOptions => ({ scenariosDir: SCENARIOS_DIR, keys: study.setup.key.keys, ...overrides });
/** A stand-in page, for tests about everything but the page (the real one is used in the first test). */
const trivialPage = (data: ScorecardData): string => `<!doctype html><title>${data.manifest.blind_id}</title>\n`;
const newOut = (): string => path.join(tempDir('ds-blind-out-'), 'packages');

function refusalOf(run: () => unknown): ExportRefusal {
  try {
    run();
  } catch (error) {
    if (error instanceof ExportRefusal) return error;
    throw error;
  }
  throw new Error('expected an ExportRefusal, but the export went through');
}

function readTimeline(file: string): TimelineEntry[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => TimelineEntry.parse(JSON.parse(l)));
}

function allStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) allStrings(v, out);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) allStrings(v, out);
  return out;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => path.join(dir, f));
}

/** Turns a real ModelAnswered into a ModelCallFailed 1.2.0 of the same call (a forgery). */
function asFailedCall(e: EventEnvelope, failure: string, detail: string, rawOutput: string | null): void {
  const p = e.payload;
  e.event_type = 'ModelOutputEvent.ModelCallFailed';
  e.schema_version = ModelCallFailed.schemaVersion;
  e.payload = { wake_id: p['wake_id'], adapter: p['adapter'], model_id: p['model_id'], params: p['params'], system_fingerprint: null, latency_ms: 0, context: p['context'], failure, detail, raw_output: rawOutput, usage: null, usage_source: null, protocol: 'ds-model-output/2', finish_reason: null, response_model: null, prompt_tokens_counted: null, prompt_count_source: null, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null, cost_nano_usd: null };
}

/** A run's events, each a copy to forge. */
function eventsOf(group: 'A' | 'B' | 'C'): { runDir: string; record: ReturnType<typeof loadRunRecord>; events: EventEnvelope[] } {
  const runDir = path.join(study.studyDir, 'instances', `${group}-r1`);
  const record = loadRunRecord(runDir, SCENARIOS_DIR);
  return { runDir, record, events: record.events.map((e) => structuredClone(e)) };
}

/** The cited seqs of a ds-model-output/2 answer (claims', then the checkpoint's), as parsed from its text. */
function citedSeqs(raw: string): unknown[] {
  const answer = JSON.parse(raw) as { claims: Array<{ evidence_seqs?: unknown[] }>; checkpoint: { evidence_seqs: unknown[] } };
  return [...answer.claims.flatMap((c) => c.evidence_seqs ?? []), ...answer.checkpoint.evidence_seqs];
}

describe('normalizeEvents rules, on forged copies of real events', () => {
  test('ids in text become refs or [id], host paths and ISO times are rewritten, a refused plan decision is omitted, a refusal otherwise kept', () => {
    const runDir = path.join(study.studyDir, 'instances', 'B-r1');
    const record = loadRunRecord(runDir, SCENARIOS_DIR);
    const events = record.events.map((e) => structuredClone(e));
    const claimAt = events.findIndex((e) => e.event_type === 'MemoryEvent.ClaimRecorded');
    const claim = events[claimAt]!;
    const cited = events[5]!;
    claim.payload['statement'] = `see ${cited.event_id}, 0f9c2d1e-7a3b-4c5d-9e8f-0a1b2c3d4e5f, ${runDir}/workspace/notes/a.md, ${study.studyDir}/x and 2026-03-02T20:30:00.000Z`;
    const refusal = (message: string, seq: number): (typeof events)[number] => ({
      ...structuredClone(claim),
      event_id: `00000000-ffff-8000-8000-${String(seq).padStart(12, '0')}`,
      seq,
      event_type: 'SystemEvent.AppendRejected',
      occurred_at: '2030-01-01T00:00:00.000Z',
      causation_id: null,
      payload: { reason: 'projection_rejected', message, role: 'runtime', method: 'append', request_id: '7', request_sha256: `sha256:${'1'.repeat(64)}`, request_bytes: 10, connection_id: 1 },
    });
    events.splice(claimAt + 1, 0, refusal('event 0 of the batch (PlanEvent.PlanRevisionAccepted) was refused by the subject projection', 100_001), refusal('event 0 of the batch (MemoryEvent.ClaimRecorded) was refused by the subject projection', 100_002));
    const n = normalizeEvents(events, record.plan, { hostPaths: [runDir, study.studyDir] });
    const claimEntry = n.entries.find((e) => e.kind === 'claim_recorded')!;
    const statement = (claimEntry.detail as { statement: string }).statement;
    expect(statement).toBe(`see ${n.refOfEventId.get(cited.event_id)}, [id], notes/a.md, [host path]/x and h12:30`);
    expect(n.stats.idsInTextHidden).toBe(1);
    expect(n.stats.omitted.refused_plan_decision).toBe(1);
    const refused = n.entries.filter((e) => e.kind === 'write_refused');
    expect(refused).toHaveLength(1);
    // The writer's wall clock is not a simulated time: the refusal takes the time of the event before it.
    expect(refused[0]!.t).toBe(claimEntry.t);
    expect(n.stats.timesFromNeighbour).toBe(1);
    expect(JSON.stringify(n.entries)).not.toMatch(/PlanRevisionAccepted|[0-9a-f]{8}-[0-9a-f]{4}-/);
  });

  test("a failed model call keeps the detail about the subject's answer, and withholds the server's text (it may quote the prompt size)", () => {
    const runDir = path.join(study.studyDir, 'instances', 'A-r1');
    const record = loadRunRecord(runDir, SCENARIOS_DIR);
    const events = record.events.map((e) => structuredClone(e));
    const answered = events.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered').slice(0, 2);
    asFailedCall(answered[0]!, 'http_error', 'HTTP 400: this model maximum context length is 8192 tokens, your request has 9731 tokens', null);
    asFailedCall(answered[1]!, 'schema_violation', 'fails ds-model-output/2: checkpoint: required', null);
    const n = normalizeEvents(events, record.plan, { hostPaths: [runDir, study.studyDir] });
    const details = n.entries.filter((e) => e.kind === 'model_call_failed').map((e) => (e.detail as { detail: string }).detail);
    expect(details).toEqual([MODEL_FAILURE_DETAIL_WITHHELD, 'fails ds-model-output/2: checkpoint: required']);
    expect(JSON.stringify(n.entries)).not.toContain('9731');
  });

  test("a real ds-model-output/2 answer's evidence_seqs come out as the refs of the events they cite", () => {
    const { runDir, record, events } = eventsOf('B');
    const n = normalizeEvents(events, record.plan, { hostPaths: [runDir, study.studyDir] });
    const eventAt = new Map(events.map((e) => [e.seq, e] as const));
    const answers = events.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered');
    const entries = n.entries.filter((e) => e.kind === 'model_answered');
    expect(entries).toHaveLength(answers.length);
    let cited = 0;
    for (const [i, answer] of answers.entries()) {
      const seqs = citedSeqs(String(answer.payload['raw_output']));
      const refs = citedSeqs((entries[i]!.detail as { raw_output: string }).raw_output);
      // The reference policy cites kept events only (world events, tool results): each seq is a ref, none hidden.
      expect(refs, `answer ${i}`).toEqual(seqs.map((seq) => n.refOfEventId.get(eventAt.get(seq as number)!.event_id)));
      cited += seqs.length;
    }
    expect(answers.length).toBeGreaterThan(10);
    expect(cited).toBeGreaterThan(10);
    expect(JSON.stringify(n.entries)).not.toMatch(/evidence_seqs\\?":\s*\[\s*\d|event #\d/);
  });

  test('seqs in forged answers: bare, quoted, in JSON quoted in JSON, in a cut-short list and in text become refs, or [id] (counted) for a seq that names no kept event', () => {
    const { runDir, record, events } = eventsOf('A');
    const kept = events.find((e) => e.event_type === 'WorldEvent.MessageReceived')!;
    const other = events.find((e) => e.event_type === 'WorldEvent.InformationPublished')!;
    const omitted = events.find((e) => e.event_type === 'SystemEvent.StoreOpened')!;
    const missing = events.at(-1)!.seq + 1_000;
    const [answer, cutShort] = events.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered');
    const forge = (raw: { answer: string; cut: string }): NormalizedTimeline => {
      const copy = events.map((e) => structuredClone(e));
      copy.find((e) => e.event_id === answer!.event_id)!.payload['raw_output'] = raw.answer;
      asFailedCall(copy.find((e) => e.event_id === cutShort!.event_id)!, 'length', 'the answer fails ds-model-output/2 and ended at its token cap', raw.cut);
      return normalizeEvents(copy, record.plan, { hostPaths: [runDir, study.studyDir] });
    };
    const k = kept.seq;
    const o = other.seq;
    const n = forge({
      answer: `{"claims":[{"claim_type":"FACT","statement":"event #${k} and seq ${o}, not Event #${omitted.seq}","evidence_seqs":[${k}, ${omitted.seq},${missing}]}],"checkpoint":{"evidence_seqs": [ "${o}" ],"next_action":"{\\"evidence_seqs\\":[${k}]}"}}`,
      cut: `{"checkpoint":{"evidence_seqs":[${o}, ${k}`,
    });
    const baseline = forge({ answer: '{}', cut: '{}' });
    const ref = (e: EventEnvelope): string => n.refOfEventId.get(e.event_id)!;
    expect(n.refOfEventId.has(omitted.event_id)).toBe(false);
    const raw = (kind: 'model_answered' | 'model_call_failed'): string => (n.entries.find((e) => e.kind === kind && (e.detail as { raw_output: string | null }).raw_output !== '{}')!.detail as { raw_output: string }).raw_output;
    expect(raw('model_answered')).toBe(
      `{"claims":[{"claim_type":"FACT","statement":"event ${ref(kept)} and seq ${ref(other)}, not Event [id]","evidence_seqs":["${ref(kept)}", "[id]","[id]"]}],"checkpoint":{"evidence_seqs": [ "${ref(other)}" ],"next_action":"{\\"evidence_seqs\\":[\\"${ref(kept)}\\"]}"}}`,
    );
    // Still JSON: the reviewer reads the answer's structure.
    expect(JSON.parse(raw('model_answered'))).toMatchObject({ claims: [{ evidence_seqs: [ref(kept), '[id]', '[id]'] }], checkpoint: { evidence_seqs: [ref(other)] } });
    expect(raw('model_call_failed')).toBe(`{"checkpoint":{"evidence_seqs":["${ref(other)}", "${ref(kept)}"`);
    // The omitted event's seq twice (text and list), the missing seq once.
    expect(n.stats.idsInTextHidden - baseline.stats.idsInTextHidden).toBe(3);
  });

  test('the failures the apparatus decides (truncated_prompt, timeout, transport, stream_broken, http_error) read as one kind, no_answer: two events differing only by them normalize identically', () => {
    const { runDir, record, events } = eventsOf('B');
    const target = events.find((e) => e.event_type === 'ModelOutputEvent.ModelAnswered')!;
    const withFailure = (failure: string): NormalizedTimeline => {
      const copy = events.map((e) => structuredClone(e));
      const e = copy.find((c) => c.event_id === target.event_id)!;
      asFailedCall(e, failure, 'the prompt (9731 tokens) does not fit the context (8192 tokens) with the answer cap', String(target.payload['raw_output']));
      return normalizeEvents(copy, record.plan, { hostPaths: [runDir, study.studyDir] });
    };
    const truncated = withFailure('truncated_prompt');
    const timeout = withFailure('timeout');
    expect(JSON.stringify(timeout.entries)).toBe(JSON.stringify(truncated.entries));
    expect(timeout.stats).toEqual(truncated.stats);
    for (const failure of ['transport', 'stream_broken', 'http_error']) expect(JSON.stringify(withFailure(failure).entries), failure).toBe(JSON.stringify(truncated.entries));
    const entry = truncated.entries.find((e) => e.kind === 'model_call_failed')!;
    expect(entry.summary).toBe('the model call failed: no_answer');
    // Neither the detail nor what arrived: a whole answer would tell a truncated prompt from a timeout.
    expect(entry.detail).toEqual({ failure: 'no_answer', detail: MODEL_FAILURE_DETAIL_WITHHELD, raw_output: null });
    expect(JSON.stringify(truncated.entries)).not.toMatch(/truncated_prompt|9731/);
    // The failures about the subject's own answer, and the wake's grant, keep their kind.
    for (const failure of ['schema_violation', 'length', 'refusal', 'budget_exhausted']) {
      const shown = withFailure(failure).entries.find((e) => e.kind === 'model_call_failed')!;
      expect(shown.detail, failure).toMatchObject({ failure, raw_output: expect.stringContaining('"protocol"') });
    }
  });

  test('events recorded before issue 15 (ModelAnswered 1.2.0, ModelCallFailed 1.1.0) are read lifted to the current version', () => {
    const { runDir, record, events } = eventsOf('A');
    const [answer, failedCall] = events.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered');
    asFailedCall(failedCall!, 'schema_violation', 'fails ds-model-output/1: checkpoint: required', 'not json');
    const current = normalizeEvents(events, record.plan, { hostPaths: [runDir, study.studyDir] });

    const old = events.map((e) => structuredClone(e));
    const oldAnswer = old.find((e) => e.event_id === answer!.event_id)!;
    const { protocol: _p, finish_reason: _f, response_model: _r, prompt_tokens_counted: _c, prompt_count_source: _s, attempts: _a, prompt_reuse: _pr, provider_finish_reason: _pf, cache_read_tokens: _cr, cache_write_tokens: _cw, cost_nano_usd: _cost, usage_source, ...answer12 } = oldAnswer.payload;
    oldAnswer.schema_version = '1.2.0';
    oldAnswer.payload = { ...answer12, usage_estimated: usage_source === 'estimate' };
    const oldFailed = old.find((e) => e.event_id === failedCall!.event_id)!;
    const { protocol: _p2, finish_reason: _f2, response_model: _r2, prompt_tokens_counted: _c2, prompt_count_source: _s2, attempts: _a2, prompt_reuse: _pr2, provider_finish_reason: _pf2, cache_read_tokens: _cr2, cache_write_tokens: _cw2, cost_nano_usd: _cost2, usage: _u, usage_source: _us, ...failed11 } = oldFailed.payload;
    oldFailed.schema_version = '1.1.0';
    oldFailed.payload = failed11;
    // Real old payloads: each passes the schema of its own version, not the current one.
    expect(ModelAnswered.earlier['1.2.0']!.safeParse(oldAnswer.payload).success).toBe(true);
    expect(ModelAnswered.payload.safeParse(oldAnswer.payload).success).toBe(false);
    expect(ModelCallFailed.earlier['1.1.0']!.safeParse(oldFailed.payload).success).toBe(true);
    expect(ModelCallFailed.payload.safeParse(oldFailed.payload).success).toBe(false);

    const lifted = normalizeEvents(old, record.plan, { hostPaths: [runDir, study.studyDir] });
    // Nothing the upcasters add (protocol, finish reason, attempts, …) is shown: the entries are the same.
    expect(lifted.entries).toEqual(current.entries);
    expect(lifted.entries.find((e) => e.kind === 'model_call_failed')!.detail).toMatchObject({ failure: 'schema_violation', detail: 'fails ds-model-output/1: checkpoint: required' });

    // An old payload stamped with the current version is not read as anything: refused, saying what to do.
    oldAnswer.schema_version = ModelAnswered.schemaVersion;
    expect(() => normalizeEvents(old, record.plan, { hostPaths: [runDir, study.studyDir] })).toThrow(NormalizeError);
    expect(() => normalizeEvents(old, record.plan, { hostPaths: [runDir, study.studyDir] })).toThrow(/\(ModelOutputEvent\.ModelAnswered 1\.5\.0\) cannot be read: .*fails its schema.*run npm run verify/);
  });
});

describe('exportStudy on a real study', () => {
  test('one package per instance; every file exact, parsed, blind and self-consistent', () => {
    const studyDir = copyStudy(study.studyDir);
    const out = newOut();
    const result = exportStudy(studyDir, out, options());

    expect(result.packages).toHaveLength(3);
    expect(result.leakCheck).toMatchObject({ ok: true, findings: [], packages: 3, filesChecked: 3 * PACKAGE_FILE_NAMES.length, notes: [] });
    expect(result.notes.join(' ')).toMatch(/3 × plan_decision/);

    // The package folder: the packages, the commitment and its key; no temp folder, no map.
    const ids = result.packages.map((p) => p.blind_id);
    expect(readdirSync(out).sort()).toEqual([...ids, BLIND_REVIEW_FILES.commitment, BLIND_REVIEW_FILES.publicKey].sort());
    expect(filesUnder(out).some((f) => path.basename(f) === BLIND_REVIEW_FILES.sealedMap)).toBe(false);

    // The sealed map: in the study folder, 0600, naming every package, and NOT in the package folder.
    const mapFile = path.join(studyDir, BLIND_REVIEW_FILES.sealedMap);
    expect(result.mapFile).toBe(mapFile);
    expect(statSync(mapFile).mode & 0o777).toBe(0o600);
    const map = BlindMap.parse(JSON.parse(readFileSync(mapFile, 'utf8')));
    expect(map.entries.map((e) => e.blind_id).sort()).toEqual([...ids].sort());
    expect(map.entries.map((e) => `${e.group}-r${e.replicate} ${e.dir}`).sort()).toEqual(['A-r1 instances/A-r1', 'B-r1 instances/B-r1', 'C-r1 instances/C-r1']);
    for (const f of filesUnder(out)) if (statSync(f).isFile()) expect(readFileSync(f, 'utf8'), f).not.toContain(map.salt);

    // The commitment: signed, checked with the controller.pub beside it, and the map's.
    const pub = readFileSync(path.join(out, BLIND_REVIEW_FILES.publicKey), 'utf8');
    expect(pub).toMatch(/^[0-9a-f]{64}\n$/);
    const verified = verifyDsse(JSON.parse(readFileSync(path.join(out, BLIND_REVIEW_FILES.commitment), 'utf8')), COMMITMENT_PAYLOAD_TYPE, parsePublicKeyHex(pub));
    expect(verified.ok).toBe(true);
    const body = BlindCommitment.parse(verified.ok ? verified.body : null);
    expect(body.commitment).toBe(commitmentOf(map));
    expect(body.commitment).toBe(result.commitment.hash);
    expect(body.blind_ids).toEqual([...ids].sort());

    const forbidden = [BLIND_STUDY_ID, BLIND_SEED, `${BLIND_SEED}-r1`, studyDir, study.setup.dir, study.builtIn, 'inst-srcax', 'inst-srcbx', 'inst-srccx'];
    const byGroup = new Map(map.entries.map((e) => [e.blind_id, e] as const));
    const timelineLengths: number[] = [];
    const expectedTexts = new Set<string>();
    const instructionTexts = new Set<string>();
    for (const id of ids) {
      const dir = path.join(out, id);
      // (a) exactly the package files
      expect(readdirSync(dir).sort()).toEqual([...PACKAGE_FILE_NAMES].sort());
      // (d) every file parses with its schema
      const manifest = PackageManifest.parse(JSON.parse(readFileSync(path.join(dir, PACKAGE_FILES.manifest), 'utf8')));
      expect(manifest.blind_id).toBe(id);
      const timeline = readTimeline(path.join(dir, PACKAGE_FILES.timeline));
      for (const e of timeline) expect(DETAIL_SCHEMAS[e.kind].safeParse(e.detail).success, `${id} ${e.ref} ${e.kind}`).toBe(true);
      expect(timeline.map((e) => e.ref)).toEqual(timeline.map((_, i) => `E${String(i + 1).padStart(4, '0')}`));
      expect(manifest.timeline_entries).toBe(timeline.length);
      const parsed = {
        checkpoints: StateCheckpoints.parse(JSON.parse(readFileSync(path.join(dir, PACKAGE_FILES.checkpoints), 'utf8'))),
        interventions: Interventions.parse(JSON.parse(readFileSync(path.join(dir, PACKAGE_FILES.interventions), 'utf8'))),
        claims: ClaimsWithEvidence.parse(JSON.parse(readFileSync(path.join(dir, PACKAGE_FILES.claims), 'utf8'))),
        actions: ActionChains.parse(JSON.parse(readFileSync(path.join(dir, PACKAGE_FILES.actions), 'utf8'))),
        recovery: RecoveryReports.parse(JSON.parse(readFileSync(path.join(dir, PACKAGE_FILES.recovery), 'utf8'))),
      };
      // The expected checkpoints: the oracle's own (computeOracle on the run's plan) in the package's names; the review instructions.
      const expectedText = readFileSync(path.join(dir, PACKAGE_FILES.expected), 'utf8');
      const expected = ExpectedCheckpoints.parse(JSON.parse(expectedText));
      const run = loadRunRecord(path.join(studyDir, byGroup.get(id)!.dir), SCENARIOS_DIR);
      const oracle = computeOracle({ rules: run.prereg.scoring.oracle, scenario: run.scenario.definition, plan: run.plan });
      expect(expected.checkpoints.map((c) => [c.current_goal_id, c.goal_status, c.attention_target, c.waiting_condition, c.next_action.id])).toEqual(
        oracle.checkpoints.map((c) => [c.current_goal_id, c.goal_status, c.attention_target, c.waiting_condition, c.next_action.kind === 'task' ? c.next_action.task_id : c.next_action.kind === 'wait' ? c.next_action.thread_id : null]),
      );
      expect(expected.checkpoints.map((c) => c.wake)).toEqual(oracle.checkpoints.map((c) => `W${String(c.wake_number).padStart(2, '0')}`));
      expect(expected.unscored_wakes.length).toBe(oracle.unscored_wakes.length);
      expect(expected.unscored_wakes.length).toBeGreaterThan(0);
      expect(expectedText).not.toMatch(/wake-\d{4}/);
      expectedTexts.add(expectedText);
      const instructions = readFileSync(path.join(dir, PACKAGE_FILES.instructions), 'utf8');
      expect(instructions).toBe(instructionsMarkdown(reviewInstructions(manifest, expected.oracle_rules_version)));
      for (const d of manifest.dimensions) expect(instructions).toContain(`**${d.name} (weight ${d.weight})**: Pre-registered: ${d.measured_as}`);
      for (const h of manifest.hard_failures) expect(instructions).toContain(`**${h.id}**: Pre-registered: ${h.description}`);
      for (const f of PACKAGE_FILE_NAMES) expect(instructions).toContain(`**${f}**`);
      expect(instructions).toContain(PACKAGE_FILES.expected);
      expect(instructions).not.toContain(id);
      instructionTexts.add(instructions);
      expect(manifest.files).toEqual([...PACKAGE_FILE_NAMES]);

      // The real scorecard page, self-contained and naming its package only.
      const html = readFileSync(path.join(dir, PACKAGE_FILES.scorecard), 'utf8');
      expect(html).toMatch(/^<!doctype html>/i);
      expect(html).toContain(id);
      expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|https?:\/\//i);

      // Refs resolve: every ref anywhere in any JSON file is a timeline entry.
      const refs = new Set(timeline.map((e) => e.ref));
      const used = allStrings([timeline.map((e) => ({ ...e, ref: null })), parsed]).filter((s) => /^E\d{4,6}$/.test(s));
      expect(used.length).toBeGreaterThan(100);
      for (const r of used) expect(refs.has(r), `${id}: ${r}`).toBe(true);
      expect(parsed.checkpoints.length).toBeGreaterThan(20);
      expect(parsed.interventions.map((i) => i.kind)).toContain('runtime_restart');
      expect(parsed.recovery.map((r) => r.process).sort()).toEqual(['runtime', 'writer']);
      expect(parsed.claims.some((c) => c.claim_type === 'FACT' && c.evidence.length > 0)).toBe(true);

      // Nothing identifying or group-revealing in any file.
      for (const file of PACKAGE_FILE_NAMES) {
        const text = readFileSync(path.join(dir, file), 'utf8');
        expect(text, `${id}/${file}`).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i);
        expect(text, `${id}/${file}`).not.toMatch(/capabilit|persistent_state|autonomous_replanning|PlanRevisionAccepted|PlanRevisionRejected|invalid_plan|\bgroup\s*[ABC]\b|"group"\s*:|\b[ABC]-r\d+\b/i);
        expect(text, `${id}/${file}`).not.toMatch(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
        for (const s of forbidden) expect(text.includes(s), `${id}/${file} holds ${s}`).toBe(false);
      }

      // Only the documented omissions: kept entries = events − omitted types (the plan decision of every group).
      const entry = byGroup.get(id)!;
      const record = loadRunRecord(path.join(studyDir, entry.dir), SCENARIOS_DIR);
      const omittedTypes = /^(SystemEvent\.(StoreOpened|ChainHeadSigned|StoreSealed)|ExperimentEvent\.(WakeScheduled|InterventionDelivered)|PlanEvent\.PlanRevision(Accepted|Rejected))$/;
      expect(timeline.length).toBe(record.events.filter((e) => !omittedTypes.test(e.event_type)).length);
      const decision = entry.group === 'C' ? 'PlanEvent.PlanRevisionAccepted' : 'PlanEvent.PlanRevisionRejected';
      expect(record.events.some((e) => e.event_type === decision), `${entry.group} decided ${decision}`).toBe(true);
      expect(timeline.filter((e) => e.kind === 'plan_revision_proposed')).toHaveLength(record.events.filter((e) => e.event_type === 'PlanEvent.PlanRevisionProposed').length);
      // Ids and times inside the subject's own text became refs and simulated times.
      const proposed = timeline.find((e) => e.kind === 'plan_revision_proposed')!;
      expect((proposed.detail as { reason: string }).reason).toMatch(/\(event E\d{4}\)/);
      const journal = timeline.find((e) => e.kind === 'journal_entry')!;
      expect((journal.detail as { text: string }).text).toMatch(/^Wake wake-0001 at h00:00: /);
      timelineLengths.push(timeline.length);
    }
    // Real runs of three groups: the packages differ in behaviour; their expected checkpoints (one replicate) and instructions do not.
    expect(new Set(timelineLengths).size).toBeGreaterThan(1);
    expect(expectedTexts.size).toBe(1);
    expect(instructionTexts.size).toBe(1);
    expect(Object.keys(OMISSIONS)).toContain('plan_decision');
  }, 60_000);

  test('a second export of the same study is refused, saying so, and the first map is untouched', () => {
    const studyDir = copyStudy(study.studyDir);
    exportStudy(studyDir, newOut(), options({ renderScorecard: trivialPage }));
    const mapFile = path.join(studyDir, BLIND_REVIEW_FILES.sealedMap);
    const before = readFileSync(mapFile, 'utf8');
    const out = newOut();
    let refusal: unknown;
    try {
      exportStudy(studyDir, out, options({ renderScorecard: trivialPage }));
    } catch (e) {
      refusal = e;
    }
    expect(refusal).toBeInstanceOf(ExportRefusal);
    expect((refusal as ExportRefusal).problem).toBe('already-exported');
    expect((refusal as ExportRefusal).message).toMatch(/blind-map\.sealed\.json exists: this study was exported already/);
    expect(readFileSync(mapFile, 'utf8')).toBe(before);
    expect(existsSync(out)).toBe(false);
  });

  test('blind ids are random per export, never derived: two copies get different ids; one fixed random source gives two study folders the same ids', () => {
    const a = exportStudy(copyStudy(study.studyDir), newOut(), options({ renderScorecard: trivialPage }));
    const b = exportStudy(copyStudy(study.studyDir), newOut(), options({ renderScorecard: trivialPage }));
    const idsA = a.packages.map((p) => p.blind_id);
    const idsB = b.packages.map((p) => p.blind_id);
    expect(idsA.filter((id) => idsB.includes(id))).toEqual([]);
    expect(a.commitment.hash).not.toBe(b.commitment.hash);
    // The ids depend on the random source alone: a fixed source gives the same ids to two study folders.
    const fixed = (): ExportOptions['random'] => {
      let counter = 0;
      return (bytes) => Buffer.alloc(bytes, (counter += 1) % 256);
    };
    const c = exportStudy(copyStudy(study.studyDir), newOut(), options({ renderScorecard: trivialPage, random: fixed() }));
    const d = exportStudy(copyStudy(study.studyDir), newOut(), options({ renderScorecard: trivialPage, random: fixed() }));
    expect(c.packages.map((p) => p.blind_id)).toEqual(d.packages.map((p) => p.blind_id));
  }, 30_000);

  test('a leak is refused loudly: every finding listed, the packages left in the temp folder, no map, no commitment', () => {
    const studyDir = copyStudy(study.studyDir);
    const out = newOut();
    // A page that leaks the experiment id into one package only.
    let first = true;
    const leaky = (data: ScorecardData): string => {
      const page = `${trivialPage(data)}${first ? `<p>${BLIND_STUDY_ID}</p>` : ''}`;
      first = false;
      return page;
    };
    let refusal: ExportRefusal | null = null;
    try {
      exportStudy(studyDir, out, options({ renderScorecard: leaky }));
    } catch (e) {
      refusal = e as ExportRefusal;
    }
    expect(refusal).toBeInstanceOf(ExportRefusal);
    expect(refusal!.problem).toBe('leak');
    expect(refusal!.details.findings!.map((f) => [f.file, f.kind])).toEqual([[PACKAGE_FILES.scorecard, 'experiment_id']]);
    expect(refusal!.message).toContain(`left in ${refusal!.details.tempDir}`);
    expect(existsSync(path.join(studyDir, BLIND_REVIEW_FILES.sealedMap))).toBe(false);
    expect(readdirSync(out)).toEqual([path.basename(refusal!.details.tempDir!)]);
    expect(readdirSync(refusal!.details.tempDir!)).toHaveLength(3);
  });

  test('refusals: a folder that is not a study, an out folder that is not empty or a file, a study with nothing finished', () => {
    expect(() => exportStudy(tempDir('ds-not-a-study-'), newOut(), options())).toThrow(/study\.json is missing/);
    const busy = tempDir('ds-busy-out-');
    writeFileSync(path.join(busy, 'something'), 'x');
    expect(() => exportStudy(copyStudy(study.studyDir), busy, options())).toThrow(/exists and is not empty/);
    expect(() => exportStudy(copyStudy(study.studyDir), path.join(busy, 'something'), options())).toThrow(/exists and is not a folder/);
    const studyDir = copyStudy(study.studyDir);
    for (const g of ['A', 'B', 'C']) unseal(path.join(studyDir, 'instances', `${g}-r1`));
    const refusal = refusalOf(() => exportStudy(studyDir, newOut(), options()));
    expect(refusal.problem).toBe('instances-refused');
    expect(refusal.code).toBe('export_instances_refused');
    expect(refusal.details.refused?.map((r) => r.instance)).toEqual(['A-r1', 'B-r1', 'C-r1'].map((n) => path.join('instances', n)));
    expect(refusal.message).toMatch(/instances\/C-r1: not finished/);
  });

  test('npm run export: 0 exported and leak-free, 1 a second export, 2 misuse', async () => {
    const studyDir = copyStudy(study.studyDir);
    const out = newOut();
    const ok = await runCli('export', [studyDir, '--out', out, '--key-dir', study.setup.keyDir, '--json']);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const printed = JSON.parse(ok.stdout) as { ok: boolean; exit_code: number; exported: string[]; leak_check: { ok: boolean } };
    expect(printed).toMatchObject({ ok: true, exit_code: 0 });
    expect(printed.exported).toHaveLength(3);
    expect(printed.leak_check.ok).toBe(true);
    // Blind ids only: the map's groups and folders are never printed next to them.
    expect(ok.stdout).not.toMatch(/"group"|instances\/[ABC]-r1/);

    const again = await runCli('export', [studyDir, '--out', newOut(), '--key-dir', study.setup.keyDir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/REFUSED \(already-exported\)/);

    const misuse = await runCli('export', [studyDir, '--key-dir', study.setup.keyDir]);
    expect(misuse.code).toBe(2);
    expect(misuse.stderr).toMatch(/--out PKG_DIR is required/);
    expect(misuse.stderr).toContain('usage: npm run export');
  }, 40_000);
});

describe('all or nothing: a study with any instance that cannot be exported is refused whole', () => {
  test('npm run export of a study with an unfinished, a damaged, a foreign and a stray instance: exit 1, a typed code, every one named with why and what to do, nothing written; repaired, the same study exports', async () => {
    const studyDir = copyStudy(forged);
    const outParent = tempDir('ds-blind-out-');
    const out = path.join(outParent, 'packages');
    const emptyOut = path.join(tempDir('ds-blind-out-'), 'packages');
    mkdirSync(emptyOut);
    const before = { study: folderState(studyDir), outParent: folderState(outParent), emptyOut: folderState(emptyOut) };

    const refused = await runCli('export', [studyDir, '--out', out, '--key-dir', study.setup.keyDir, '--json']);
    expect(refused.code).toBe(1);
    const printed = JSON.parse(refused.stdout) as { ok: boolean; command: string; exit_code: number; error: { code: string; message: string; refused: { instance: string; reason: string }[] } };
    expect(printed).toMatchObject({ ok: false, command: 'export', exit_code: 1, error: { code: 'export_instances_refused' } });
    const inst = (name: string): string => path.join('instances', name);
    expect(printed.error.refused).toEqual([
      { instance: inst('A-r1'), reason: expect.stringMatching(/^not finished: its store is not sealed .*npm run study -- --resume/) },
      { instance: inst('A-r2'), reason: expect.stringMatching(/^not one of the study's instances: its report counts replicates 1 to 1 per group/) },
      { instance: inst('B-r1'), reason: expect.stringMatching(/^its run folder cannot be read: .*npm run verify -- /) },
      { instance: inst('notes.txt'), reason: expect.stringMatching(/^not an instance folder of npm run study/) },
    ]);
    // The screen: the refusal, what state things are in, what to do, and every instance; no stack trace.
    expect(refused.stderr).toMatch(/^export: REFUSED \(instances-refused\): 4 of the 5 instance\(s\) of .* cannot be exported, so nothing was exported/);
    expect(refused.stderr).toContain('Nothing was written: no package, no sealed map, no commitment');
    expect(refused.stderr).toContain(`npm run study -- --resume ${studyDir}`);
    for (const name of ['A-r1', 'A-r2', 'B-r1', 'notes.txt']) expect(refused.stderr).toContain(`\n  ${inst(name)}: `);
    expect(refused.stderr).not.toContain(inst('C-r1'));
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    // Byte-identical: the study folder (no map, no -wal or -shm beside a store read), and no package folder.
    expect(folderState(studyDir)).toEqual(before.study);
    expect(folderState(outParent)).toEqual(before.outParent);
    expect(existsSync(out)).toBe(false);

    // Into an empty package folder: refused the same way, the folder left empty.
    const intoEmpty = await runCli('export', [studyDir, '--out', emptyOut, '--key-dir', study.setup.keyDir]);
    expect({ code: intoEmpty.code, stdout: intoEmpty.stdout }).toEqual({ code: 1, stdout: '' });
    expect(intoEmpty.stderr).toMatch(/^export: REFUSED \(instances-refused\)/);
    expect(folderState(emptyOut)).toEqual(before.emptyOut);
    expect(folderState(studyDir)).toEqual(before.study);

    // Repaired (the intact instances back, the strays moved out): the refusal sealed nothing, so the study exports whole.
    for (const name of ['A-r1', 'B-r1']) {
      rmSync(path.join(studyDir, inst(name)), { recursive: true });
      cpSync(path.join(study.studyDir, inst(name)), path.join(studyDir, inst(name)), { recursive: true });
    }
    rmSync(path.join(studyDir, inst('A-r2')), { recursive: true });
    rmSync(path.join(studyDir, inst('notes.txt')));
    const ok = await runCli('export', [studyDir, '--out', out, '--key-dir', study.setup.keyDir, '--json']);
    expect({ code: ok.code, stderr: ok.stderr }).toEqual({ code: 0, stderr: '' });
    expect((JSON.parse(ok.stdout) as { exported: string[] }).exported).toHaveLength(3);
    expect(existsSync(path.join(studyDir, BLIND_REVIEW_FILES.sealedMap))).toBe(true);
  }, 60_000);

  test('an instance the report counts but the folder lacks (a study stopped before it started it) is refused as missing; nothing written', () => {
    const studyDir = copyStudy(study.studyDir);
    rmSync(path.join(studyDir, 'instances', 'C-r1'), { recursive: true });
    const before = folderState(studyDir);
    const out = newOut();
    const refusal = refusalOf(() => exportStudy(studyDir, out, options({ renderScorecard: trivialPage })));
    expect(refusal.problem).toBe('instances-refused');
    expect(refusal.details.refused).toEqual([{ instance: path.join('instances', 'C-r1'), reason: expect.stringMatching(/^missing: the study's report counts 1 instance\(s\) per group, but this folder does not exist/) }]);
    expect(refusal.message).toMatch(/^1 of the 3 instance\(s\) of /);
    expect(folderState(studyDir)).toEqual(before);
    expect(existsSync(path.dirname(out)) && readdirSync(path.dirname(out))).toEqual([]);
  });

  test('a study stopped before its expansion rule was applied (every instance sealed, n not final) is refused: a resume may still add instances', () => {
    const studyDir = copyStudy(study.studyDir);
    const reportFile = path.join(studyDir, 'report.json');
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as { expansion_reasons: string[] };
    // What study-runner writes when the operator stopped the first round before it was scored.
    report.expansion_reasons = [`${EXPANSION_NOT_DECIDED}the study was stopped before every instance of n = 1 was scored`];
    writeFileSync(reportFile, JSON.stringify(report));
    const before = folderState(studyDir);
    const out = newOut();
    const refusal = refusalOf(() => exportStudy(studyDir, out, options({ renderScorecard: trivialPage })));
    expect(refusal.problem).toBe('instances-refused');
    expect(refusal.message).toMatch(/the expansion rule was not decided: the study was stopped .*finish it first \(npm run study -- --resume /);
    expect(folderState(studyDir)).toEqual(before);
    expect(existsSync(out)).toBe(false);
  });
});
