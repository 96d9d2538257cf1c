// npm run faults -- [--seed S] [--runs N] [--out DIR] [--concurrency K] [--same-uid REASON] [--random-subject-model F.gguf] [--json]
// npm run faults -- --seed S --run I --out DIR [--json]
//
// The fault-injection harness (issue 8, docs/faults.md): real instances, each with one seeded
// fault (a SIGKILL of the writer, the runtime or the controller at a named point, a damaged
// snapshot, a tampered workspace file, a dropped or duplicated socket message, a model timeout or
// garbage answer, a full disk under the run folder), resumed to the end and checked against the invariants. `--run I` reruns one
// run of a seed and says whether it reproduced its earlier record in OUT; without such a record
// it is refused before anything runs or is written (a check that compares nothing is no check).
// Exit 0 every invariant held (and a rerun reproduced), 1 a violation or a rerun that differs,
// 2 misuse (a rerun without a record to compare with included), 3 stopped by the operator (Ctrl-C),
// 4 nothing violated but some runs
// were skipped (not tried: no root for disk_full, no model for random_subject). Ends through runCommand: with
// --json, one JSON object on stdout whatever happens (docs/errors.md).
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { FAULT_CELLS } from '../faults/fault-plan.js';
import { earlierRecordsOf, MAX_RUNS, runHarness, type FaultSummary, type HarnessStop } from '../faults/fault-harness.js';
import { prepareHarness } from '../faults/fault-run.js';
import { REPO } from './run-defaults.js';
import { onOperatorPress, todayCompact } from './operator-stop.js';
import { parseFlags, UsageError, wholeNumberFlag } from './command-line.js';
import { runCommand, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';

const DEFAULT_SEED = 'faults-1';

const USAGE = `usage: npm run faults -- [--seed S] [--runs N] [--out DIR] [--concurrency K] [--random-subject-model F.gguf] [--json]
       npm run faults -- --seed S --run I --out DIR [--json]
  --seed S           the harness seed: every run's group, point, kind and hit follow from it (default ${DEFAULT_SEED})
  --runs N           runs 1..N (default ${FAULT_CELLS.length}: every fault kind at every point it applies to once); 0 = calibrate only
  --run I            rerun run I of the seed only, and compare it with its earlier record in --out (refused without one)
  --out DIR          the harness folder (default runs/faults-<date>-<random>; reused: the calibration is kept there)
  --concurrency K    instances at once (default: the number of cores, ${cpus().length})
  --same-uid REASON  run writers and runtimes under the controller's uid even as root, saying why
  --random-subject-model F.gguf   the model random_subject runs answer with (the project's test model:
                     ../shared/models/stories260K.gguf); without it those runs are skipped, said so
  --json             print the summary as one JSON object on stdout
exit: 0 no violation (and a rerun reproduced) · 1 a violation, or a rerun that differs · 2 misuse (a rerun with no record in --out too)
      · 3 stopped by the operator (Ctrl-C: runs under way finish and are checked, no new one starts; again: they are killed, unchecked)
      · 4 no violation, but some runs were skipped (not tried: a disk_full run without root, a random_subject run without a model)`;


function print(summary: FaultSummary): string {
  const count = (record: Record<string, number>): string =>
    Object.entries(record)
      .map(([k, n]) => `${k} ${n}`)
      .join(' · ');
  const lines = [
    `${summary.interrupted !== null && summary.failures.length === 0 ? `INTERRUPTED (${summary.interrupted.by}: ${summary.interrupted.not_started} run(s) not started, ${summary.interrupted.killed} killed under way, unchecked)` : !summary.ok ? 'FAILED' : summary.skipped.length > 0 ? `INCOMPLETE (${summary.skipped.length} SKIPPED, not tried)` : 'OK'}: ${summary.runs} run(s) of seed ${summary.seed} in ${summary.duration_s} s (${summary.runs_per_minute} runs per minute, ${summary.concurrency} at once, calibration included); records in ${summary.out}`,
    `  faults by kind:  ${count(summary.faults)}`,
    `  faults by point: ${count(summary.points)}`,
    `  coverage: ${summary.coverage.cells - summary.coverage.missing.length} of ${summary.coverage.cells} applicable (point, kind) cells exercised${summary.coverage.missing.length > 0 && summary.runs >= summary.coverage.cells ? ` (missing: ${summary.coverage.missing.join('; ')})` : ''}`,
    `  violations by invariant: ${count(summary.violations)}`,
  ];
  // Not tried is not passed: every skipped run is named, with why.
  if (summary.skipped.length > 0) lines.push(`  SKIPPED (not tried, not counted as passed): ${summary.skipped.length} run(s)`);
  for (const s of summary.skipped) lines.push(`  - ${s.name}: ${s.reason}`);
  if (summary.reproduction) {
    const r = summary.reproduction;
    lines.push(r.compared ? `  rerun of run ${r.run}: ${r.same ? 'reproduced its earlier record exactly' : `DIFFERS from its earlier record in ${r.differences.join(', ')}`}` : `  rerun of run ${r.run}: NOT COMPARED (no earlier record): not a reproduction`);
  }
  for (const f of summary.failures) lines.push(`  ✗ ${f.invariant} in ${f.name}: ${f.detail}\n      reproduce: ${f.command}`);
  return `${lines.join('\n')}\n`;
}

/**
 * The operator's Ctrl-C (or SIGTERM): the first press starts no more runs and lets the ones under
 * way finish and be checked; the second kills them (their processes, a frozen one included; their
 * disks unmounted, their model servers ended) and lists them unchecked; the third exits at once
 * (130), saying what may be left behind. The instances run in process groups of their own
 * (fault-run.ts), so a press reaches the harness alone.
 */
function operatorStop(log: (line: string) => void, concurrency: number): { readonly signals: HarnessStop; release(): void } {
  const startNoMore = new AbortController();
  const killNow = new AbortController();
  const release = onOperatorPress((press) => {
    if (press.count === 1) {
      log(`${press.signal}: no new run starts; the runs under way (at most ${concurrency}) finish and are checked. Press again to kill them now (unchecked), a third time to exit at once`);
      startNoMore.abort(`operator signal ${press.signal}`);
    } else if (press.count === 2) {
      log(`second ${press.signal}: killing the runs under way; they are listed unchecked, their disks unmounted and their model servers ended`);
      killNow.abort(`operator signal ${press.signal} (a second press)`);
    } else {
      log(`${press.signal} again: exiting now (${EXIT_CODES.abandoned}); a run under way may leave its processes, a mounted /tmp/ds-fault-disk-* and a /tmp/ds-fault-* folder behind`);
      process.exit(EXIT_CODES.abandoned);
    }
  });
  return { signals: { startNoMore: startNoMore.signal, killNow: killNow.signal }, release };
}

async function main(): Promise<CommandOutput | null> {
  const args = parseFlags(USAGE, { seed: { type: 'string' }, runs: { type: 'string' }, run: { type: 'string' }, out: { type: 'string' }, concurrency: { type: 'string' }, 'same-uid': { type: 'string' }, 'random-subject-model': { type: 'string' }, json: { type: 'boolean' } } as const);
  if (args === null) return null;
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args.positionals[0])}: this command takes flags only`);
  const { values } = args;
  const runs = wholeNumberFlag('runs', values.runs, 0, MAX_RUNS);
  const only = wholeNumberFlag('run', values.run, 1, MAX_RUNS);
  if (runs !== null && only !== null) throw new UsageError('give --runs or --run, not both');
  if (only !== null && values.seed === undefined) throw new UsageError('--run I needs the --seed it belongs to');
  if (only !== null && values.out === undefined) throw new UsageError(`--run I compares the rerun with its record in the harness folder that made it: give that folder's --out (a new folder holds nothing to compare with)`);
  const concurrency = wholeNumberFlag('concurrency', values.concurrency, 1, 64) ?? cpus().length;
  const outDir = path.resolve(values.out ?? path.join('runs', `faults-${todayCompact()}-${randomBytes(3).toString('hex')}`));
  if (existsSync(outDir) && !lstatSync(outDir).isDirectory()) throw new UsageError(`--out ${outDir} exists and is not a folder: the harness needs a folder of its own (new, or one it made)`);
  const seed = values.seed ?? DEFAULT_SEED;
  // Before prepareHarness creates anything: a rerun with nothing to compare with is refused here, OUT
  // untouched — FaultRerunRefusal, misuse (exit 2) with what the search found (it says so itself).
  if (only !== null) earlierRecordsOf(outDir, seed, only);
  const model = values['random-subject-model'];
  const setup = prepareHarness(outDir, REPO, values['same-uid'] ?? null, model === undefined ? null : path.resolve(model));
  const log = (line: string): void => void process.stderr.write(`[faults] ${line}\n`);
  log(`seed ${seed}, ${only !== null ? `run ${only} only` : `${runs ?? FAULT_CELLS.length} run(s)`}, ${concurrency} at once, folder ${outDir}`);
  // runHarness looks again before it calibrates (the records may have gone meanwhile): refused the same way.
  const stop = operatorStop(log, concurrency);
  let summary: FaultSummary;
  try {
    summary = await runHarness({ setup, seed, runs: runs ?? FAULT_CELLS.length, only, concurrency, onProgress: log, stop: stop.signals });
  } finally {
    stop.release();
  }
  // Stopped by the operator: what ran is checked and reported, the batch is not whole (3, resumable: the same
  // seed and --out plan the same runs); skipped runs were not tried: not evidence about them (4), though nothing failed.
  const violated = summary.failures.length > 0 || (summary.reproduction !== null && !summary.reproduction.same);
  const exitCode = violated ? EXIT_CODES.failed : summary.interrupted !== null ? EXIT_CODES.stopped : !summary.ok ? EXIT_CODES.failed : summary.skipped.length > 0 ? EXIT_CODES.notEvidence : EXIT_CODES.ok;
  return { exitCode, json: summary, text: print(summary) };
}

runCommand('faults', USAGE, main);
