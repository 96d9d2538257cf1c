// One phase of the batch-merge benchmark (batch-merge-bench.ts), in a process of its own so that
// its peak RSS (process.resourceUsage().maxRSS) is that phase's alone, not the bench's or an
// earlier phase's. Run as
//   node --import tsx tools/bench/batch-merge-phase.ts PHASE STUDY_DIR TRUSTED_PUB SCENARIOS_DIR
// and prints exactly one JSON object (PhaseResult) on stdout; diagnostics go to stderr.
//   raw            the floor any merge stands on: every events.db under every instance folder,
//                  better-sqlite3 read-only, SELECT envelope ORDER BY seq, JSON.parse of each row
//   merge          what --merge does, in one process: checkRounds (batch-merge.ts: every folder
//                  verified and scored on the worker threads, each reduced to its compact record),
//                  then rebuildStudyReport from those records and writeStudyReport; each step timed,
//                  and the RSS of the process (its worker threads included) sampled through each
//   verify_parts   where a worker's time goes: per folder, the checks checkInstanceFolder makes, timed apart
//   report_parts   where the scoring's time goes: per folder, the steps evaluateInstance makes with
//                  the verify and plan results and the events the verify read given (as the merge's
//                  worker does), the reduction, and the re-read that refuses a store changed since
// RSS is also sampled every RSS_SAMPLE_MS by a worker thread (the phases are synchronous: the main
// thread cannot sample itself), so the summary can say whether RSS climbs through the phase.
import Database from 'better-sqlite3';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { checkSignedManifest } from '../../design/manifest.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { INSTANCE_DIR_RE } from '../../study-contract/study-replicates.js';
import { computeOracle } from '../../oracle/expected-checkpoints.js';
import { checkFacts } from '../../oracle/fact-check.js';
import { detectHardFailures } from '../../oracle/hard-failures.js';
import { loadRunRecord } from '../../oracle/run-record.js';
import { scoreInstance } from '../../oracle/continuity-score.js';
import { checkSideEffects } from '../../oracle/side-effects.js';
import { parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { checkPlansUnder } from '../../verification/plans-under.js';
import { checkReplay } from '../../writer/replay-check.js';
import { findRunFiles } from '../../writer/run-files-walk.js';
import type { VerifiedEvents } from '../../writer/verified-events.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { checkRounds } from '../../study/batch/batch-merge.js';
import { readStudyPlan } from '../../study-contract/study-folder.js';
import { rebuildStudyReport } from '../../study/study-recompute.js';
import { writeStudyReport } from '../../study/study-runner.js';
import { instanceReportRecordOf, usableRuleOf } from '../../study/instance-report-record.js';

export const PHASES = ['raw', 'merge', 'verify_parts', 'report_parts'] as const;
export type Phase = (typeof PHASES)[number];

const RSS_SAMPLE_MS = 50;
/** At most this many RSS samples are kept (a phase of 50 minutes); later ones only move the peak. */
const MAX_RSS_SAMPLES = 60_000;

export interface RssTrace {
  /** RSS in MB when the phase started (modules loaded, nothing read). */
  readonly start_mb: number;
  readonly peak_mb: number;
  /** RSS at 25, 50, 75 and 100 % of the phase's wall time (folders are read at a steady rate, so: of its folders). */
  readonly at_quarters_mb: readonly number[];
  readonly samples: number;
}

export interface PhaseResult {
  readonly phase: Phase;
  readonly folders: number;
  readonly ms: number;
  /** process.resourceUsage().maxRSS of this process, in MB. */
  readonly max_rss_mb: number;
  readonly rss: RssTrace;
  /** The merge phase's steps: each one's time and the peak RSS sampled in it (worker threads included: they share the process). */
  readonly steps: readonly { readonly step: string; readonly ms: number; readonly peak_rss_mb: number }[];
  readonly detail: Record<string, unknown>;
}

const mb = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;
const ms1 = (x: number): number => Math.round(x * 10) / 10;

/** A worker thread that samples the process's RSS while the main thread is busy; stop() returns the trace. */
function startRssSampler(): { stop: () => Promise<{ t: number; rss: number }[]> } {
  const code = `
    const { parentPort } = require('node:worker_threads');
    const { performance } = require('node:perf_hooks');
    const samples = [];
    let peak = 0;
    const take = () => {
      const rss = process.memoryUsage.rss();
      if (rss > peak) peak = rss;
      if (samples.length < ${MAX_RSS_SAMPLES}) samples.push({ t: performance.timeOrigin + performance.now(), rss });
    };
    take();
    const timer = setInterval(take, ${RSS_SAMPLE_MS});
    parentPort.on('message', () => { clearInterval(timer); take(); samples.push({ t: -1, rss: peak }); parentPort.postMessage(samples); });
  `;
  const worker = new Worker(code, { eval: true });
  return {
    stop: () =>
      new Promise((resolve, reject) => {
        worker.once('message', (samples: { t: number; rss: number }[]) => {
          void worker.terminate();
          resolve(samples);
        });
        worker.once('error', reject);
        worker.postMessage('stop');
      }),
  };
}

function traceOf(samples: readonly { t: number; rss: number }[], startAt: number, endAt: number, startRss: number): RssTrace {
  const timed = samples.filter((s) => s.t >= 0);
  const peak = Math.max(startRss, ...samples.map((s) => s.rss));
  const at = (fraction: number): number => {
    const t = startAt + (endAt - startAt) * fraction;
    let best = timed[0]?.rss ?? startRss;
    for (const s of timed) if (s.t <= t) best = s.rss;
    return mb(best);
  };
  return { start_mb: mb(startRss), peak_mb: mb(peak), at_quarters_mb: [0.25, 0.5, 0.75, 1].map(at), samples: timed.length };
}

function instanceFolders(studyDir: string): string[] {
  const dir = path.join(studyDir, STUDY_FILES.instances);
  return readdirSync(dir)
    .filter((name) => INSTANCE_DIR_RE.test(name))
    .sort()
    .map((name) => path.join(dir, name));
}

/** Per-step sums over folders, in ms. */
class StepTimes {
  private readonly sums = new Map<string, number>();
  time<T>(step: string, fn: () => T): T {
    const t = performance.now();
    try {
      return fn();
    } finally {
      this.sums.set(step, (this.sums.get(step) ?? 0) + performance.now() - t);
    }
  }
  perFolder(folders: number): Record<string, number> {
    return Object.fromEntries([...this.sums].map(([k, v]) => [k, ms1(v / Math.max(1, folders))]));
  }
}

function rawPhase(folders: readonly string[]): Record<string, unknown> {
  let rows = 0;
  let chars = 0;
  let stores = 0;
  for (const folder of folders) {
    for (const store of findRunFiles(folder).stores) {
      stores += 1;
      const db = new Database(store, { readonly: true, fileMustExist: true });
      try {
        let seqSum = 0;
        let n = 0;
        for (const row of db.prepare<[], { envelope: string }>('SELECT envelope FROM events ORDER BY seq').iterate()) {
          const parsed = JSON.parse(row.envelope) as { seq: number };
          seqSum += parsed.seq;
          chars += row.envelope.length;
          n += 1;
        }
        // Uses what was parsed, so no engine can skip the parse.
        if (seqSum !== (n * (n + 1)) / 2) throw new Error(`${store}: seqs sum to ${seqSum} over ${n} rows`);
        rows += n;
      } finally {
        db.close();
      }
    }
  }
  return { stores, events: rows, events_per_folder: Math.round(rows / Math.max(1, folders.length)), envelope_mb: mb(chars) };
}

/** The wall-clock instant, comparable with the RSS samples' timestamps. */
const now = (): number => performance.timeOrigin + performance.now();

/** A step's window of the phase, whose peak RSS is read off the samples afterwards. */
interface StepWindow {
  readonly step: string;
  readonly from: number;
  readonly to: number;
  /** RSS read at the step's end: a step shorter than the sampling interval still has a reading. */
  readonly rssAtEnd: number;
}

async function mergePhase(studyDir: string, trustedKey: Uint8Array, scenariosDir: string, windows: StepWindow[]): Promise<Record<string, unknown>> {
  let from = now();
  const check = await checkRounds(studyDir, trustedKey, scenariosDir, 'planned', (line) => process.stderr.write(`${line}\n`), { scoreRefused: true });
  windows.push({ step: 'verify_score', from, to: now(), rssAtEnd: process.memoryUsage.rss() });
  const byKind: Record<string, number> = {};
  for (const f of check.findings) byKind[f.kind] = (byKind[f.kind] ?? 0) + 1;
  const records = [...check.scored.byDir.values()].flatMap((s) => (s.record === null ? [] : [s.record]));
  const recordBytes = records.reduce((sum, r) => sum + JSON.stringify(r).length, 0);
  from = now();
  const rebuilt = rebuildStudyReport(studyDir, scenariosDir, check.scored);
  windows.push({ step: 'report_build', from, to: now(), rssAtEnd: process.memoryUsage.rss() });
  from = now();
  const files = writeStudyReport(studyDir, rebuilt.report);
  windows.push({ step: 'report_write', from, to: now(), rssAtEnd: process.memoryUsage.rss() });
  const statuses: Record<string, number> = {};
  for (const i of rebuilt.report.instances) statuses[i.status] = (statuses[i.status] ?? 0) + 1;
  return {
    planned: check.checked.length,
    verified: check.verified,
    scored: records.length,
    findings_by_kind: byKind,
    first_finding: check.findings[0]?.detail.slice(0, 400) ?? null,
    record_json_bytes_per_instance: Math.round(recordBytes / Math.max(1, records.length)),
    instances: rebuilt.report.instances.length,
    statuses,
    verdict: rebuilt.report.verdict,
    voided: rebuilt.report.voided,
    report_bytes: Object.fromEntries(Object.entries(files).map(([k, f]) => [k, readFileSync(f).length])),
  };
}

function verifyPartsPhase(folders: readonly string[], scenariosDir: string): Record<string, unknown> {
  const steps = new StepTimes();
  for (const dir of folders) {
    const key = parsePublicKeyHex(readFileSync(path.join(dir, RUN_FILES.publicKey), 'utf8'));
    // As the merge's worker does: the verify keeps the rows it read and parsed, the plan check walks those.
    const kept = new Map<string, VerifiedEvents>();
    steps.time('verifyDirectory (chain, signed heads and files; keeps the events read)', () => verifyDirectory(dir, {}, kept));
    steps.time('checkPlansUnder (plan conformance, on the events verified)', () => checkPlansUnder(dir, { scenariosDir, verifiedEvents: kept }));
    steps.time('checkSignedManifest', () => checkSignedManifest(JSON.parse(readFileSync(path.join(dir, RUN_FILES.manifest), 'utf8')), key));
  }
  return { per_folder_ms: steps.perFolder(folders.length) };
}

function reportPartsPhase(folders: readonly string[], studyDir: string, scenariosDir: string): Record<string, unknown> {
  const plan = readStudyPlan(studyDir);
  const steps = new StepTimes();
  for (const dir of folders) {
    // As the merge's worker has them: made once, by the verify step, with the events it read.
    const kept = new Map<string, VerifiedEvents>();
    const checks = { verify: verifyDirectory(dir, {}, kept), plans: checkPlansUnder(dir, { scenariosDir, verifiedEvents: kept }) };
    const store = kept.get(path.join(dir, RUN_FILES.store)) ?? null;
    const verified = store?.events ?? null;
    const record = steps.time('loadRunRecord (files; the events as verified)', () => loadRunRecord(dir, scenariosDir, verified));
    const oracle = steps.time('computeOracle', () => computeOracle({ rules: record.prereg.scoring.oracle, scenario: record.scenario.definition, plan: record.plan }));
    const workspaceDir = path.join(dir, RUN_FILES.workspace);
    const facts = steps.time('checkFacts', () => checkFacts(record));
    const unsoundFacts = new Map(facts.filter((f) => !f.ok).map((f) => [f.claim_id, f.problems.map((p) => `${p.kind}: ${p.detail}`).join('; ')]));
    const sideEffects = steps.time('checkSideEffects', () => checkSideEffects(record, workspaceDir));
    const score = steps.time('scoreInstance', () => scoreInstance({ record, oracle, unsoundFacts, sideEffectProblems: sideEffects.problems, workspaceDir }));
    const given = verified === null ? {} : { events: verified };
    const hardFailures = steps.time('detectHardFailures (verify, plan, FACT and side-effect results given)', () => detectHardFailures(record, { expectedPreregSha256: plan.prereg_sha256, scenariosDir, checks, eventsVerified: verified !== null, made: { facts, sideEffects } }));
    steps.time('  of which checkReplay (full replay of the events verified)', () => checkReplay(path.join(dir, RUN_FILES.store), given));
    steps.time('changedSince (the store re-read, texts compared)', () => store?.changedSince());
    steps.time('instanceReportRecordOf (the compact record)', () => instanceReportRecordOf({ record, oracle, score, hardFailures, notes: [...sideEffects.notes] }, usableRuleOf(record.prereg)));
  }
  return { per_folder_ms: steps.perFolder(folders.length) };
}

async function main(): Promise<void> {
  const [phaseArg, studyDir, pubFile, scenariosDir] = process.argv.slice(2);
  if (!PHASES.includes(phaseArg as Phase) || !studyDir || !pubFile || !scenariosDir) throw new Error(`usage: batch-merge-phase.ts ${PHASES.join('|')} STUDY_DIR TRUSTED_PUB SCENARIOS_DIR`);
  const phase = phaseArg as Phase;
  const trustedKey = parsePublicKeyHex(readFileSync(pubFile, 'utf8'));
  const folders = instanceFolders(studyDir);
  const sampler = startRssSampler();
  const startAt = performance.timeOrigin + performance.now();
  const startRss = process.memoryUsage.rss();
  let detail: Record<string, unknown>;
  const windows: StepWindow[] = [];
  if (phase === 'raw') detail = rawPhase(folders);
  else if (phase === 'merge') detail = await mergePhase(studyDir, trustedKey, scenariosDir, windows);
  else if (phase === 'verify_parts') detail = verifyPartsPhase(folders, scenariosDir);
  else detail = reportPartsPhase(folders, studyDir, scenariosDir);
  const endAt = performance.timeOrigin + performance.now();
  const samples = await sampler.stop();
  // Each step's peak: the highest sample in its window (the whole phase's peak is maxRSS).
  const steps = windows.map((w) => ({ step: w.step, ms: ms1(w.to - w.from), peak_rss_mb: mb(Math.max(w.rssAtEnd, ...samples.filter((x) => x.t >= w.from && x.t <= w.to).map((x) => x.rss))) }));
  const result: PhaseResult = { phase, folders: folders.length, ms: ms1(endAt - startAt), max_rss_mb: mb(process.resourceUsage().maxRSS * 1024), rss: traceOf(samples, startAt, endAt, startRss), steps, detail };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`[bench] batch-merge phase failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
