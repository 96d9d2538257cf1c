// npm run study -- [--n 3] [--seed S] [--out DIR] [--concurrency K] [--json] [--prereg FILE]
//                  [--key-dir DIR] [--start-at ISO] [--study-id ID] [--same-uid REASON] [--model …]
// npm run study -- --recompute DIR [--json]
//
// Runs groups A, B and C × n replicates (replicate k: the same seed for every group), scores
// every instance from its run folder, applies the pre-registered expansion rule (spec §6.2),
// checks fairness (§5.2, §19.1), states the verdict (§8.2, §17.3) and writes report.json,
// report.md and report.html. This process is the controller of every instance (ds-controller).
// SIGINT/SIGTERM stops every running instance (recorded, resumable) and still writes the report.
// Exit: 0 report written and the batch valid (supported or rejected), 4 report written but the
// batch void or the evidence insufficient, 3 stopped by the operator, 1 failed or refused,
// 2 misused. --recompute: 0 every number recomputed, 1 differences.
import { randomBytes } from 'node:crypto';
import { cpus, userInfo } from 'node:os';
import path from 'node:path';
import { defaultKeyDir, KeyStoreError } from '../../controller/key-store.js';
import { InstanceError } from '../../controller/instance-runner.js';
import { ModelChoiceError } from '../../controller/model-choice.js';
import { PreregInputError } from '../../controller/prereg.js';
import { RunRecordError } from '../../oracle/run-record.js';
import { recomputeStudy, runStudy, StudyError, type StudyProgress } from '../study/study-runner.js';
import { GROUPS, type StudyReport } from '../../oracle/study-report.js';
import { usableDataGroupLine, usableDataVerdictLine } from '../study/report-markdown.js';
import { EXIT_CODES } from './exit-codes.js';
import { installOperatorStop, todayCompact } from './operator-stop.js';
import { MODEL_OPTIONS, MODEL_USAGE, ModelFlagError, modelChoiceOf } from './model-flags.js';
import { BundledPreregError, DEFAULT_PREREG, DEFAULT_SEED, DEFAULT_START_AT, SCENARIOS_DIR, lockBundledPrereg } from './run-defaults.js';
import { parseFlags, UsageError, wholeNumberFlag } from './command-line.js';

process.title = 'ds-controller';

const USAGE = `usage: npm run study -- [options]
       npm run study -- --recompute DIR [--json]
  --n N              replicates per group before the expansion rule (default: the pre-registration's, 3)
  --seed S           the study seed; replicate k of every group runs with seed S-rk (default ${DEFAULT_SEED})
  --out DIR          the study folder (default runs/<study id>; must be new or empty)
  --concurrency K    instances run at once (default: the number of cores, ${cpus().length})
  --prereg FILE      a locked pre-registration (default experiments/prereg/default.json, locked on first use)
  --key-dir DIR      the controller's key folder (default ${defaultKeyDir()})
  --start-at ISO     virtual time of hour 0 (default ${DEFAULT_START_AT})
  --study-id ID      the batch id shared by every instance (default study-<date>-<random>)
  --same-uid REASON  run writers and runtimes under this uid even as root, saying why
${MODEL_USAGE}
  --recompute DIR    rebuild a finished study's report from its run folders and compare it with report.json
  --json             print report.json (or the recomputation) on stdout
exit: 0 report written, batch valid · 4 report written, void or insufficient evidence · 3 stopped · 1 failed · 2 misuse`;

const OPTIONS = {
  ...MODEL_OPTIONS,
  n: { type: 'string' },
  seed: { type: 'string' },
  out: { type: 'string' },
  concurrency: { type: 'string' },
  prereg: { type: 'string' },
  'key-dir': { type: 'string' },
  'start-at': { type: 'string' },
  'study-id': { type: 'string' },
  'same-uid': { type: 'string' },
  recompute: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
} as const;


/** One redrawn status line on a terminal; plain lines (instance starts and ends only) elsewhere. */
class StudyScreen {
  private readonly tty = process.stderr.isTTY === true;
  private drawn = false;
  private lastPlain = '';

  line(text: string): void {
    this.clear();
    process.stderr.write(`${text}\n`);
  }

  progress(p: StudyProgress): void {
    const running = [...p.running].map(([name, at]) => `${name} ${at}`).join(', ');
    const text = `study (${p.phase}): ${p.finished}/${p.total} finished${p.failed > 0 ? `, ${p.failed} not finished` : ''}${running ? ` · running ${running}` : ''}`;
    if (this.tty) {
      this.clear();
      process.stderr.write(text.slice(0, (process.stderr.columns ?? 120) - 1));
      this.drawn = true;
      return;
    }
    // Off a terminal: a line only when the counts change, not for every wake.
    const counts = `${p.finished}/${p.total}/${p.failed}/${p.running.size}`;
    if (counts !== this.lastPlain) process.stderr.write(`${text.replace(/ · running .*/, ` · ${p.running.size} running`)}\n`);
    this.lastPlain = counts;
  }

  clear(): void {
    if (this.drawn) process.stderr.write('\r\x1b[2K');
    this.drawn = false;
  }
}

function summary(report: StudyReport, files: { json: string; markdown: string; html: string } | null): string {
  const g = report.groups;
  const f = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(2));
  return [
    `VERDICT: ${report.verdict.toUpperCase()}${report.dry_run ? ' (apparatus dry run)' : ''}`,
    `  ${report.verdict_statement}`,
    ...(report.dry_run_statement ? [`  ${report.dry_run_statement}`] : []),
    ...(report.voided ? [`  VOID: ${report.void_reasons.join('; ')}`] : []),
    `  n = ${report.n} per group${report.expanded ? ` (expanded from ${report.n_initial})` : ''}; medians A ${f(g.A.median)} · B ${f(g.B.median)} · C ${f(g.C.median)}`,
    ...report.thresholds.map((t) => `  ${t.met === true ? 'met    ' : t.met === false ? 'NOT met' : 'n/a    '} ${t.description}: ${t.observed} (required ${t.required})`),
    `  fairness: ${report.fairness.ok ? 'OK' : 'FAILED'} · hard failures: A ${g.A.hard_failures}, B ${g.B.hard_failures}, C ${g.C.hard_failures}`,
    ...GROUPS.map((group) => `  usable data, ${usableDataGroupLine(report, group)}`),
    `  ${report.usable_data.shortfalls.length === 0 ? '' : 'NO USABLE DATA: '}${usableDataVerdictLine(report)}`,
    ...report.instances.filter((i) => i.status !== 'finished' || i.hard_failures.length > 0).map((i) => `  ${i.group}-r${i.replicate}: ${i.status}${i.status_detail ? ` (${i.status_detail})` : ''}${i.hard_failures.length > 0 ? `; hard failures ${i.hard_failures.map((h) => h.id).join(', ')}` : ''}`),
    ...report.notes.map((n) => `  note: ${n}`),
    ...(files ? [`  report: ${files.json}`, `          ${files.markdown}`, `          ${files.html}`] : []),
    '',
  ].join('\n');
}

async function main(): Promise<number> {
  const args = parseFlags(USAGE, OPTIONS);
  if (args === null) return 0;
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args.positionals[0])}: this command takes flags only`);
  const { values } = args;
  const json = values.json ?? false;
  if (values.recompute !== undefined) {
    for (const flag of ['n', 'seed', 'out', 'concurrency', 'prereg', 'start-at', 'study-id', 'model'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} cannot be combined with --recompute: the study folder says what it ran with`);
    }
    const r = recomputeStudy(path.resolve(values.recompute), SCENARIOS_DIR);
    if (json) process.stdout.write(`${JSON.stringify({ match: r.differences.length === 0, differences: r.differences, report: r.report })}\n`);
    else {
      process.stdout.write(r.differences.length === 0 ? `RECOMPUTED: every number of ${values.recompute}/report.json follows from its run folders (verdict ${r.report.verdict})\n` : `DIFFERENT: ${r.differences.length} difference(s) between report.json and the run folders:\n${r.differences.map((d) => `  ${d}`).join('\n')}\n`);
    }
    return r.differences.length === 0 ? 0 : 1;
  }

  const screen = new StudyScreen();
  const stop = installOperatorStop((l) => screen.line(l), 'stopping every running instance (recorded, resumable), then writing the report');

  const keyDir = values['key-dir'] ?? defaultKeyDir();
  const model = modelChoiceOf(values);
  if (values.prereg === undefined) lockBundledPrereg(keyDir, (l) => screen.line(`[study] ${l}`));
  const studyId = values['study-id'] ?? `study-${todayCompact()}-${randomBytes(3).toString('hex')}`;
  const outDir = values.out ?? path.join('runs', studyId);
  const concurrency = wholeNumberFlag('concurrency', values.concurrency, 1, 64) ?? Math.max(1, cpus().length);
  const n = wholeNumberFlag('n', values.n, 1, 33);
  screen.line(`[study] ${studyId}: seed ${values.seed ?? DEFAULT_SEED}, ${n ?? 'pre-registered'} replicate(s) per group, concurrency ${concurrency}, folder ${path.resolve(outDir)}`);
  const outcome = await runStudy({
    outDir,
    seed: values.seed ?? DEFAULT_SEED,
    preregFile: values.prereg ?? DEFAULT_PREREG,
    keyDir,
    scenariosDir: SCENARIOS_DIR,
    concurrency,
    n,
    startAt: values['start-at'] ?? DEFAULT_START_AT,
    model,
    studyId,
    operator: `${userInfo().username} (uid ${process.getuid?.() ?? 'unknown'})`,
    signal: stop.signal,
    ...(values['same-uid'] === undefined ? {} : { isolation: { forceSameUid: values['same-uid'] } }),
    log: (line) => screen.line(line),
    onProgress: (p) => screen.progress(p),
  });
  screen.clear();
  if (json) process.stdout.write(`${JSON.stringify(outcome.report)}\n`);
  else process.stdout.write(summary(outcome.report, outcome.files));
  if (stop.signal.aborted) return 3;
  return outcome.report.voided || outcome.report.verdict === 'insufficient evidence' ? EXIT_CODES.notEvidence : EXIT_CODES.ok;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof ModelFlagError || error instanceof BundledPreregError) {
      process.stderr.write(`study: ${error.message}\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (error instanceof StudyError || error instanceof InstanceError || error instanceof ModelChoiceError || error instanceof KeyStoreError || error instanceof PreregInputError || error instanceof RunRecordError) {
      process.stderr.write(`study: ${error.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`study: failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
