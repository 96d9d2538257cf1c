// npm run audit -- DIR [--port P] [--json]
//
// DIR a study folder (study.json or report.json beside instances/): the whole study read-only
// (audit/study-server.ts) — its verdict and findings, its instances by group and replicate, each
// wake of A, B and C side by side, each instance's desk under /run/<G>-r<k>/. Otherwise one run:
//
// The audit desk (spec §16.1–§16.2): a local, read-only web view of one run on
// http://127.0.0.1:P/. It opens the store read-only, verifies chain and signatures and checks
// the plan once at start (said on screen), indexes the links between events in one streaming
// pass, and then serves pages until Ctrl-C. A run whose writer is still running is locked:
// stop it (or copy the run folder) first. --json prints the start-up report as one JSON object
// (the URL in it) before serving. Exit: 0 stopped by the operator, 1 refused (not a run, damaged,
// locked, port taken), 2 misuse.
import { AuditDesk } from '../audit/audit-desk.js';
import { startAuditServer, type AuditServer } from '../audit/audit-server.js';
import { startStudyServer } from '../audit/study-server.js';
import { StudyView } from '../audit/study-view.js';
import { renderReportHtml } from '../study/report-html.js';
import type { FindingHref } from '../study/finding-href.js';
import { readReportTimelines, type ReportTimelines } from '../study/instance-timelines.js';
import { type StudyReport } from '../oracle/study-report.js';
import { AuditInputError } from '../audit/run-folder.js';
import { parseFlags, UsageError, wholeNumberFlag } from './command-line.js';
import { runCommand, type CommandContext, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { onOperatorPress, untilPressSettled } from './operator-stop.js';
import { SCENARIOS_DIR } from './run-defaults.js';

process.title = 'ds-audit';

export const DEFAULT_AUDIT_PORT = 7380;

const USAGE = `usage: npm run audit -- DIR [--port P] [--json]
  DIR        a run folder (or its events.db), or a study folder: the whole study, each run under /run/<G>-r<k>/
  --port P   the port on 127.0.0.1 (default ${DEFAULT_AUDIT_PORT}; 0 = any free port)
  --json     print the start-up report (with the URL) as one JSON object, then serve
The desk is read-only: no page changes anything. A repair is an event appended through the
writer, with its own command: npm run repair -- DIR --resolve-intent ID ...
exit: 0 stopped with Ctrl-C · 1 refused (not a run, a damaged store, store locked by a running writer, port taken) · 2 misuse`;

const OPTIONS = { port: { type: 'string' }, json: { type: 'boolean' } } as const;

/** After the start-up report: a line on the screen (stderr, so that stdout stays one JSON object with --json). */
const note = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

async function main(context: CommandContext): Promise<CommandOutput | null> {
  const args = parseFlags(USAGE, OPTIONS);
  if (args === null) return null;
  if (args.positionals.length !== 1) throw new UsageError(args.positionals.length === 0 ? 'give the run folder to audit' : `give exactly one run folder, got ${args.positionals.length}: ${args.positionals.join(' ')}`);
  const port = wholeNumberFlag('port', args.values.port, 0, 65_535) ?? DEFAULT_AUDIT_PORT;
  if (StudyView.isStudyFolder(args.positionals[0]!)) return serveStudy(context, args.positionals[0]!, port);
  const desk = AuditDesk.open(args.positionals[0]!, SCENARIOS_DIR);
  const { verify, index, folder, planCheck, opened } = desk;
  const server = await startAuditServer(desk, { port, log: note }).catch(portTaken(port));
  const openUnknown = index.unknown_outcomes.filter((u) => u.closed_seq === null).length;
  const warnings = [folder.manifest, folder.heads].filter((l) => !l.ok).map((l) => (l as { problem: string }).problem);
  const lines = [
    `audit desk: ${folder.runDir}`,
    `  store ${folder.storePath}: ${index.head_seq} events (opened read-only), ${index.sealed_seq === null ? 'NOT sealed' : `sealed at seq ${index.sealed_seq}`}; links indexed in ${Math.round(opened.index_ms)} ms`,
    `  chain & signatures: ${verify.ok ? 'verified' : `FAILED — ${verify.failures.length} failure(s)`}${verify.warnings.length > 0 ? `, ${verify.warnings.length} warning(s)` : ''} (${Math.round(opened.verify_ms)} ms)`,
    ...verify.failures.slice(0, 5).map((f) => `    ${f.store}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.reason}`),
    ...(verify.failures.length > 5 ? [`    … ${verify.failures.length - 5} more on the Chain & signatures page`] : []),
    `  plan: ${planCheck.ok ? (planCheck.value.ok ? 'the store follows its plan' : `${planCheck.value.failures.length} departure(s) from the plan`) : planCheck.problem}`,
    ...warnings.map((w) => `  warning: ${w}`),
    ...(openUnknown > 0 ? [`  ${openUnknown} unknown tool outcome(s) still open: see Intents & recovery`] : []),
    `  serving ${server.url} (read-only; Ctrl-C to stop)`,
  ];
  context.emitNow({
    json: {
      ok: true,
      url: server.url,
      run_dir: folder.runDir,
      store: folder.storePath,
      head_seq: index.head_seq,
      sealed_seq: index.sealed_seq,
      verify: { ok: verify.ok, failures: verify.failures, warnings: verify.warnings },
      plan: planCheck.ok ? { ok: planCheck.value.ok, departures: planCheck.value.failures.length } : { ok: false, problem: planCheck.problem },
      warnings,
      open_unknown_outcomes: openUnknown,
      index_ms: Math.round(opened.index_ms),
      verify_ms: Math.round(opened.verify_ms),
    },
    text: lines.join('\n'),
  });
  return untilStopped(server);
}

function portTaken(port: number): (error: NodeJS.ErrnoException) => never {
  return (error) => {
    if (error.code === 'EADDRINUSE') throw new AuditInputError(`port ${port} on 127.0.0.1 is taken; choose another with --port P (0 = any free port)`);
    throw error;
  };
}

async function serveStudy(context: CommandContext, dir: string, port: number): Promise<CommandOutput> {
  const view = StudyView.open(dir, SCENARIOS_DIR);
  // The served report draws the instances' 72-hour strips as the written one does; read once, on the first request.
  let timelines: ReportTimelines | null = null;
  const renderReport = (report: StudyReport, findingHref: FindingHref): string => {
    timelines ??= readReportTimelines(view.studyDir, report);
    return renderReportHtml(report, { findingHref, timelines });
  };
  const server = await startStudyServer(view, { port, log: note, renderReport }).catch(portTaken(port));
  const report = view.report === null ? 'no report.json yet' : view.report.ok ? `report.json: ${view.report.value.verdict}` : `report.json unreadable: ${view.report.problem}`;
  const unshown = view.findings.filter((f) => f.problem !== null);
  const lines = [
    `audit desk (study): ${view.studyDir}`,
    `  ${view.instances.length} instance(s) in ${view.replicates().length} replicate(s); ${report}; ${view.findings.length} hard failure(s) listed${unshown.length > 0 ? `, ${unshown.length} naming what the study does not hold` : ''}`,
    ...view.problems.slice(0, 5).map((p) => `  problem: ${p}`),
    ...(view.problems.length > 5 ? [`  … ${view.problems.length - 5 + view.problemsNotListed} more on the study page`] : []),
    `  each instance is verified and indexed when first opened`,
    `  serving ${server.url} (read-only; Ctrl-C to stop)`,
  ];
  context.emitNow({
    json: { ok: true, url: server.url, study_dir: view.studyDir, instances: view.instances.length, report: view.report === null ? null : view.report.ok ? { verdict: view.report.value.verdict } : { problem: view.report.problem }, findings: view.findings.length, findings_not_shown: unshown.map((f) => ({ instance: f.key, seq: f.finding.seq, problem: f.problem })), problems: view.problems },
    text: lines.join('\n'),
  });
  return untilStopped(server);
}

function untilStopped(server: AuditServer): Promise<CommandOutput> {
  return new Promise((resolve) => {
    // Every press through one handler that stays installed until exit, npm's relayed copy of a
    // Ctrl-C folded in: a `once` handler left the relay to Node's default action, and `npm run
    // audit` exited 130 instead of 0 (3 of 6 tries). A second press exits at once: nothing here writes.
    onOperatorPress((press) => {
      if (press.count > 1) {
        note(`audit desk: ${press.signal} again: exiting now (read-only, nothing to lose)`);
        process.exit(EXIT_CODES.ok);
      }
      note(`audit desk: ${press.signal}, stopping`);
      // Exit only after the press's window, so npm's relayed copy of this Ctrl-C meets the handler, not the teardown.
      void server.close().then(untilPressSettled).then(() => resolve({ exitCode: EXIT_CODES.ok, json: {}, text: '' }));
    });
  });
}

runCommand('audit', USAGE, main);
