// npm run verify -- DIR [--json] [--open]
// Checks every events.db and signed file under DIR. Exit 0 only when everything holds,
// 1 when something failed verification, 2 when the command itself was misused.
import { verifyDirectory, VerifyInputError, type VerifyFailure } from '../../writer/verify-store.js';
import { parseCommandLine } from './command-line.js';

const USAGE = 'usage: npm run verify -- DIR [--json] [--open]\n  --open  accept stores without a final signed head (a run in progress) as a warning';

function main(): number {
  const cli = parseCommandLine(USAGE, { json: { type: 'boolean' }, open: { type: 'boolean' } }, 'folder to verify');
  if (!cli.ok) return cli.exitCode;
  const { values, target: dir } = cli;
  let report;
  try {
    report = verifyDirectory(dir, { allowOpen: values.open ?? false });
  } catch (error) {
    if (error instanceof VerifyInputError) {
      process.stderr.write(`verify: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } else {
    const line = (f: VerifyFailure): string => `  ${f.store}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.reason}`;
    process.stdout.write(`verified ${report.stores} store(s), ${report.events} event(s) under ${dir}\n`);
    if (report.warnings.length > 0) process.stdout.write(`WARNINGS (${report.warnings.length}):\n${report.warnings.map(line).join('\n')}\n`);
    if (report.failures.length > 0) process.stdout.write(`FAILED (${report.failures.length}):\n${report.failures.map(line).join('\n')}\n`);
    else process.stdout.write('OK: canonical text, payload and event hashes, seq contiguity, chain links, StoreOpened first, signatures and signed heads all hold\n');
  }
  return report.ok ? 0 : 1;
}

process.exitCode = main();
