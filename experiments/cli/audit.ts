// npm run audit -- DIR [--port P]
//
// The audit desk (spec §16.1–§16.2): a local, read-only web view of one run on
// http://127.0.0.1:P/. It opens the store read-only, verifies chain and signatures and checks
// the plan once at start (said on screen), indexes the links between events in one streaming
// pass, and then serves pages until Ctrl-C. A run whose writer is still running is locked:
// stop it (or copy the run folder) first. Exit: 0 stopped by the operator, 1 refused (not a
// run, locked, port taken), 2 misuse.
import { AuditDesk } from '../../audit/audit-desk.js';
import { startAuditServer } from '../../audit/audit-server.js';
import { AuditInputError } from '../../audit/run-folder.js';
import { AuditIndexError } from '../../audit/store-index.js';
import { ReplayRefusal } from '../../writer/replay-errors.js';
import { StoreReadError } from '../../writer/store-reader.js';
import { VerifyInputError } from '../../writer/verify-store.js';
import { parseFlags, UsageError, wholeNumberFlag } from './command-line.js';

process.title = 'ds-audit';

export const DEFAULT_AUDIT_PORT = 7380;

const USAGE = `usage: npm run audit -- DIR [--port P]
  DIR        a run folder (or its events.db); a study folder holding one run is accepted
  --port P   the port on 127.0.0.1 (default ${DEFAULT_AUDIT_PORT}; 0 = any free port)
The desk is read-only: no page changes anything. A repair is an event appended through the
writer, with its own command: npm run repair -- DIR --resolve-intent ID ...
exit: 0 stopped with Ctrl-C · 1 refused (not a run, store locked by a running writer, port taken) · 2 misuse`;

const OPTIONS = { port: { type: 'string' } } as const;

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

async function main(): Promise<number> {
  const args = parseFlags(USAGE, OPTIONS);
  if (args === null) return 0;
  if (args.positionals.length !== 1) throw new UsageError(args.positionals.length === 0 ? 'give the run folder to audit' : `give exactly one run folder, got ${args.positionals.length}: ${args.positionals.join(' ')}`);
  const port = wholeNumberFlag('port', args.values.port, 0, 65_535) ?? DEFAULT_AUDIT_PORT;
  const desk = AuditDesk.open(args.positionals[0]!);
  const { verify, index, folder, planCheck, opened } = desk;
  say(`audit desk: ${folder.runDir}`);
  say(`  store ${folder.storePath}: ${index.head_seq} events (opened read-only), ${index.sealed_seq === null ? 'NOT sealed' : `sealed at seq ${index.sealed_seq}`}; links indexed in ${Math.round(opened.index_ms)} ms`);
  say(`  chain & signatures: ${verify.ok ? 'verified' : `FAILED — ${verify.failures.length} failure(s)`}${verify.warnings.length > 0 ? `, ${verify.warnings.length} warning(s)` : ''} (${Math.round(opened.verify_ms)} ms)`);
  for (const f of verify.failures.slice(0, 5)) say(`    ${f.store}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.reason}`);
  if (verify.failures.length > 5) say(`    … ${verify.failures.length - 5} more on the Chain & signatures page`);
  say(`  plan: ${planCheck.ok ? (planCheck.value.ok ? 'the store follows its plan' : `${planCheck.value.failures.length} departure(s) from the plan`) : planCheck.problem}`);
  for (const problem of [folder.manifest, folder.heads].filter((l) => !l.ok)) say(`  warning: ${(problem as { problem: string }).problem}`);
  const open = index.unknown_outcomes.filter((u) => u.closed_seq === null).length;
  if (open > 0) say(`  ${open} unknown tool outcome(s) still open: see Intents & recovery`);
  const server = await startAuditServer(desk, { port, log: (line) => process.stderr.write(`${line}\n`) }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'EADDRINUSE') throw new AuditInputError(`port ${port} on 127.0.0.1 is taken; choose another with --port P (0 = any free port)`);
    throw error;
  });
  say(`  serving ${server.url} (read-only; Ctrl-C to stop)`);
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      say(`audit desk: ${signal}, stopping`);
      void server.close().then(() => resolve(0));
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`audit: ${error.message}\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (error instanceof AuditInputError || error instanceof StoreReadError || error instanceof AuditIndexError || error instanceof VerifyInputError || error instanceof ReplayRefusal) {
      process.stderr.write(`audit: ${error.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`audit: failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
