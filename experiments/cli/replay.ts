// npm run replay -- DIR [--to-seq N] [--json] [--migrate | --use-recorded]
// Rebuilds the projected state from the events alone (read-only, no model calls) and
// compares it with what the store holds at that seq. Exit 0 on a match (or when nothing
// is stored at --to-seq to compare with), 1 on a mismatch or a corrupt store, 2 on
// misuse or a refused replay (recorded versions differ and no mode was chosen).
import { z } from 'zod';
import { formatVersions } from '../../writer/projection-versions.js';
import { checkReplay } from '../../writer/replay-check.js';
import { resolveStorePath } from '../../writer/store-reader.js';
import { parseCommandLine } from './command-line.js';
import { reportStoreCommandError } from './store-command-errors.js';

const USAGE = `usage: npm run replay -- DIR [--to-seq N] [--json] [--migrate | --use-recorded]
  DIR             a run folder holding events.db, or the events.db path (its writer must be stopped)
  --to-seq N      replay seq 1..N and compare with the snapshot stored at N, if there is one
  --migrate       upcast events recorded under older schema versions; build a new projection under this build
  --use-recorded  replay with the projector version the store recorded, if this build carries it
exit: 0 match (or nothing stored at N), 1 mismatch or corrupt store, 2 misuse or refused replay`;

const Seq = z.string().regex(/^[1-9][0-9]*$/, 'expected a whole number >= 1').transform(Number).pipe(z.number().int().min(1));

function main(): number {
  const cli = parseCommandLine(
    USAGE,
    { json: { type: 'boolean' }, 'to-seq': { type: 'string' }, migrate: { type: 'boolean' }, 'use-recorded': { type: 'boolean' } },
    'run folder or events.db',
  );
  if (!cli.ok) return cli.exitCode;
  const { values, target } = cli;
  if (values.migrate && values['use-recorded']) {
    process.stderr.write(`--migrate and --use-recorded exclude each other: one replay either upcasts to this build or runs the recorded build\n${USAGE}\n`);
    return 2;
  }
  let toSeq: number | undefined;
  if (values['to-seq'] !== undefined) {
    const parsed = Seq.safeParse(values['to-seq']);
    if (!parsed.success) {
      process.stderr.write(`--to-seq ${JSON.stringify(values['to-seq'])}: ${z.prettifyError(parsed.error)}\n${USAGE}\n`);
      return 2;
    }
    toSeq = parsed.data;
  }
  const json = values.json ?? false;
  let check;
  try {
    check = checkReplay(resolveStorePath(target), { toSeq, migrate: values.migrate ?? false, useRecorded: values['use-recorded'] ?? false });
  } catch (error) {
    return reportStoreCommandError('replay', error, json);
  }
  const { replay } = check;
  if (json) {
    process.stdout.write(
      `${JSON.stringify({
        state_hash: replay.state_hash,
        events: replay.events,
        match: check.match,
        to_seq: replay.to_seq,
        head_seq: check.head_seq,
        compared_with: check.compared_with,
        stored_state_hash: check.stored_state_hash,
        mode: replay.mode,
        versions: replay.versions,
        accepted_differences: replay.accepted_differences,
        migrated_events: replay.migrated_events,
        notes: check.notes,
      })}\n`,
    );
  } else {
    const lines = [
      `replayed ${replay.events} event(s) of ${target}, seq 1 to ${replay.to_seq} of ${check.head_seq}, as ${formatVersions(replay.versions)} [${replay.mode}]`,
      `state_hash ${replay.state_hash}`,
      check.compared_with === null
        ? 'stored: nothing to compare'
        : `stored ${check.compared_with === 'projection' ? 'projection' : 'snapshot'} at seq ${replay.to_seq}: ${String(check.stored_state_hash)}`,
      `match: ${check.match === null ? 'n/a (nothing stored to compare at this seq)' : check.match ? 'yes' : 'NO'}`,
      ...check.notes.map((n) => `note: ${n}`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return check.match === false ? 1 : 0;
}

process.exitCode = main();
