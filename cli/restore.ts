// npm run restore -- DIR [--json]
// The restore drill: set the stored projection aside, restore from the newest snapshot
// that checks (or from seq 1), replay from seq 1 as well, and require
// restored == full replay == stored projection. Exit 0 iff they match; 1 when they do
// not or the store is corrupt; 2 on misuse or a refused replay (version mismatch).
import { formatVersions } from '../writer/projection-versions.js';
import { restoreDrill } from '../writer/restore.js';
import { resolveStorePath } from '../writer/store-reader.js';
import { parseFlags, UsageError } from './command-line.js';
import { runCommand, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';

const USAGE = `usage: npm run restore -- DIR [--json]
  DIR  a run folder holding events.db, or the events.db path (its writer must be stopped)
exit: 0 restored == full replay == stored projection, 1 they differ or the store is corrupt, 2 misuse or refused replay`;

function main(): CommandOutput | null {
  const args = parseFlags(USAGE, { json: { type: 'boolean' } });
  if (args === null) return null;
  if (args.positionals.length !== 1) throw new UsageError(args.positionals.length === 0 ? 'give exactly one run folder or events.db (none given)' : `give exactly one run folder or events.db, got ${args.positionals.length}`);
  const target = args.positionals[0]!;
  const report = restoreDrill(resolveStorePath(target));
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
  return { exitCode: report.match ? EXIT_CODES.ok : EXIT_CODES.failed, json: { ...report }, text: lines.join('\n') };
}

runCommand('restore', USAGE, main);
