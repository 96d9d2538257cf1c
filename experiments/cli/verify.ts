// npm run verify -- DIR [--json] [--open]
// Checks every events.db and signed file under DIR, and every run that has a plan.json
// against that plan (controller/plan-conformance.ts). Exit 0 only when everything holds,
// 1 when something failed verification, 2 when the command itself was misused.
import { checkPlansUnder, type PlanFinding, type PlansReport } from '../../controller/plan-conformance.js';
import { verifyDirectory, VerifyInputError, type VerifyFailure } from '../../writer/verify-store.js';
import { parseCommandLine } from './command-line.js';

const USAGE = 'usage: npm run verify -- DIR [--json] [--open]\n  --open  accept stores without a final signed head (a run in progress) as a warning';

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

function main(): number {
  const cli = parseCommandLine(USAGE, { json: { type: 'boolean' }, open: { type: 'boolean' } }, 'folder to verify');
  if (!cli.ok) return cli.exitCode;
  const { values, target: dir } = cli;
  let store;
  let plans: PlansReport;
  try {
    store = verifyDirectory(dir, { allowOpen: values.open ?? false });
    plans = checkPlansUnder(dir);
  } catch (error) {
    if (error instanceof VerifyInputError) {
      process.stderr.write(`verify: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const failures = [...store.failures, ...plans.failures.map(asVerifyFailure)];
  const warnings = [...store.warnings, ...plans.notes.map(asVerifyFailure)];
  const report = { ...store, ok: failures.length === 0, failures, warnings, plans: { runs: plans.runs } };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } else {
    const line = (f: VerifyFailure): string => `  ${f.store}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.reason}`;
    process.stdout.write(`verified ${report.stores} store(s), ${report.events} event(s) under ${dir}\n`);
    process.stdout.write(`${planSummary(plans)}\n`);
    if (report.warnings.length > 0) process.stdout.write(`WARNINGS (${report.warnings.length}):\n${report.warnings.map(line).join('\n')}\n`);
    if (report.failures.length > 0) process.stdout.write(`FAILED (${report.failures.length}):\n${report.failures.map(line).join('\n')}\n`);
    else {
      const planned = plans.runs.some((r) => r.plan === 'checked') ? ', and every checked run follows its plan' : '';
      process.stdout.write(`OK: canonical text, payload and event hashes, seq contiguity, chain links, StoreOpened first, signatures and signed heads all hold${planned}\n`);
    }
  }
  return report.ok ? 0 : 1;
}

process.exitCode = main();
