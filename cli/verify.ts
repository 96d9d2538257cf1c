// npm run verify -- DIR [--json] [--open]
// Checks every events.db and signed file under DIR (a run or study folder, or a run's
// events.db, which stands for its run folder), and every run that has a plan.json against that
// plan (verification/plans-under.ts, with the bundled scenarios of run-defaults.ts). Exit 0 only
// when everything holds, 1 when something failed verification (a damaged store is one such
// failure, listed with the others), 2 when the command itself was misused.
import { statSync } from 'node:fs';
import path from 'node:path';
import { RUN_FILES } from '../schema/run-files.js';
import { verifyDirectory, VerifyInputError, type VerifyFailure } from '../writer/verify-store.js';
import type { PlanFinding } from '../verification/plan-findings.js';
import { checkPlansUnder, type PlansReport } from '../verification/plans-under.js';
import { parseFlags, UsageError } from './command-line.js';
import { runCommand, type CommandOutput } from './command-outcome.js';
import { SCENARIOS_DIR } from './run-defaults.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';

const USAGE = `usage: npm run verify -- DIR [--json] [--open]
  DIR     a run or study folder, or a run's ${RUN_FILES.store} (its folder is verified)
  --open  accept stores without a final signed head (a run in progress, or stopped) as a warning
exit: 0 everything holds · 1 something failed verification · 2 misuse`;

/** The folder to verify: DIR itself, or the run folder of DIR/events.db. */
function folderOf(target: string): string {
  let isFile = false;
  try {
    isFile = statSync(target).isFile();
  } catch {
    return target; // verifyDirectory names a missing path
  }
  if (!isFile) return target;
  if (path.basename(target) !== RUN_FILES.store) throw new VerifyInputError(`${target} is a file but not a run's ${RUN_FILES.store}; give the run or study folder to verify`);
  return path.dirname(target);
}

/** Plan findings in the report's own shape: one list of failures, one of warnings. */
const asVerifyFailure = (f: PlanFinding): VerifyFailure => ({ store: f.file, seq: f.seq, reason: f.message });

function planSummary(plans: PlansReport): string {
  const checked = plans.runs.filter((r) => r.plan === 'checked');
  const absent = plans.runs.length - checked.length;
  const parts = checked.map((r) => {
    const c = r.checked;
    if (!c) return r.run;
    const rebuilt = c.plan_rebuilt ? 'plan rebuilt from the seed' : 'plan not rebuilt';
    return `${r.run}: ${c.wakes_started} of ${c.wakes_planned} wakes, ${c.interventions_delivered} of ${c.interventions_planned} interventions delivered, ${c.sealed ? 'sealed' : 'not sealed'}, ${rebuilt}`;
  });
  const head = `plan: ${checked.length} run(s) checked against plan.json${absent > 0 ? `, ${absent} without a checkable plan (see warnings)` : ''}`;
  return parts.length === 0 ? head : `${head}\n${parts.map((p) => `  ${p}`).join('\n')}`;
}

function main(): CommandOutput | null {
  const args = parseFlags(USAGE, { json: { type: 'boolean' }, open: { type: 'boolean' } });
  if (args === null) return null;
  if (args.positionals.length !== 1) throw new UsageError(args.positionals.length === 0 ? 'give the folder to verify' : `give exactly one folder to verify, got ${args.positionals.length}`);
  const { values } = args;
  const dir = folderOf(args.positionals[0]!);
  const store = verifyDirectory(dir, { allowOpen: values.open ?? false });
  const plans: PlansReport = checkPlansUnder(dir, { scenariosDir: SCENARIOS_DIR });
  const failures = [...store.failures, ...plans.failures.map(asVerifyFailure)];
  const warnings = [...store.warnings, ...plans.notes.map(asVerifyFailure)];
  const report = { ...store, ok: failures.length === 0, failures, warnings, plans: { runs: plans.runs } };
  const line = (f: VerifyFailure): string => `  ${f.store}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.reason}`;
  const text = [`verified ${report.stores} store(s), ${report.events} event(s) under ${dir}`, planSummary(plans)];
  if (report.warnings.length > 0) text.push(`WARNINGS (${report.warnings.length}):\n${report.warnings.map(line).join('\n')}`);
  if (report.failures.length > 0) text.push(`FAILED (${report.failures.length}):\n${report.failures.map(line).join('\n')}`);
  else {
    const planned = plans.runs.some((r) => r.plan === 'checked') ? ', and every checked run follows its plan' : '';
    text.push(`OK: canonical text, payload and event hashes, seq contiguity, chain links, StoreOpened first, signatures and signed heads all hold${planned}`);
  }
  return { exitCode: report.ok ? EXIT_CODES.ok : EXIT_CODES.failed, json: report, text: text.join('\n') };
}

runCommand('verify', USAGE, main);
