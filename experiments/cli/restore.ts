// npm run restore -- DIR [--json]
// The restore drill: set the stored projection aside, restore from the newest snapshot
// that checks (or from seq 1), replay from seq 1 as well, and require
// restored == full replay == stored projection. Exit 0 iff they match; 1 when they do
// not or the store is corrupt; 2 on misuse or a refused replay (version mismatch).
import { formatVersions } from '../../writer/projection-versions.js';
import { restoreDrill } from '../../writer/restore.js';
import { resolveStorePath } from '../../writer/store-reader.js';
import { parseCommandLine } from './command-line.js';
import { reportStoreCommandError } from './store-command-errors.js';

const USAGE = `usage: npm run restore -- DIR [--json]
  DIR  a run folder holding events.db, or the events.db path (its writer must be stopped)
exit: 0 restored == full replay == stored projection, 1 they differ or the store is corrupt, 2 misuse or refused replay`;

function main(): number {
  const cli = parseCommandLine(USAGE, { json: { type: 'boolean' } }, 'run folder or events.db');
  if (!cli.ok) return cli.exitCode;
  const { target } = cli;
  const json = cli.values.json ?? false;
  let report;
  try {
    report = restoreDrill(resolveStorePath(target));
  } catch (error) {
    return reportStoreCommandError('restore', error, json);
  }
  if (json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } else {
    const lines = [
      `restore drill on ${target} (${report.head_seq} events) as ${formatVersions(report.versions)}`,
      report.snapshot_used === null
        ? `restored from seq 1 (no usable snapshot): ${report.events_replayed} event(s) replayed`
        : `restored from the snapshot at seq ${report.snapshot_used} + ${report.events_replayed} event(s) after it`,
      `restored state_hash     ${report.state_hash}`,
      `full replay state_hash  ${report.full_replay_state_hash}`,
      `stored projection       ${report.stored_state_hash}`,
      `match: ${report.match ? 'yes' : 'NO'}`,
      ...report.warnings.map((w) => `warning: ${w}`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return report.match ? 0 : 1;
}

process.exitCode = main();
