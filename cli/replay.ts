// npm run replay -- DIR [--to-seq N] [--json] [--migrate | --use-recorded]
// Rebuilds the projected state from the events alone (read-only, no model calls) and
// compares it with what the store holds at that seq. Exit 0 on a match (or when nothing
// is stored at --to-seq to compare with), 1 on a mismatch or a corrupt store, 2 on
// misuse or a refused replay (recorded versions differ and no mode was chosen).
import { z } from 'zod';
import { formatVersions } from '../writer/projection-versions.js';
import { checkReplay } from '../writer/replay-check.js';
import { resolveStorePath } from '../writer/store-reader.js';
import { parseFlags, UsageError } from './command-line.js';
import { runCommand, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';

const USAGE = `usage: npm run replay -- DIR [--to-seq N] [--json] [--migrate | --use-recorded]
  DIR             a run folder holding events.db, or the events.db path (its writer must be stopped)
  --to-seq N      replay seq 1..N and compare with the snapshot stored at N, if there is one
  --migrate       upcast events recorded under older schema versions; build a new projection under this build
  --use-recorded  replay with the projector version the store recorded, if this build carries it
exit: 0 match (or nothing stored at N), 1 mismatch or corrupt store, 2 misuse or refused replay`;

const Seq = z.string().regex(/^[1-9][0-9]*$/, 'expected a whole number >= 1').transform(Number).pipe(z.number().int().min(1));

function main(): CommandOutput | null {
  const args = parseFlags(USAGE, { json: { type: 'boolean' }, 'to-seq': { type: 'string' }, migrate: { type: 'boolean' }, 'use-recorded': { type: 'boolean' } });
  if (args === null) return null;
  if (args.positionals.length !== 1) throw new UsageError(args.positionals.length === 0 ? 'give exactly one run folder or events.db (none given)' : `give exactly one run folder or events.db, got ${args.positionals.length}`);
  const { values } = args;
  const target = args.positionals[0]!;
  if (values.migrate && values['use-recorded']) throw new UsageError('--migrate and --use-recorded exclude each other: one replay either upcasts to this build or runs the recorded build');
  let toSeq: number | undefined;
  if (values['to-seq'] !== undefined) {
    const parsed = Seq.safeParse(values['to-seq']);
    if (!parsed.success) throw new UsageError(`--to-seq ${JSON.stringify(values['to-seq'])}: ${z.prettifyError(parsed.error)}`);
    toSeq = parsed.data;
  }
  const check = checkReplay(resolveStorePath(target), { toSeq, migrate: values.migrate ?? false, useRecorded: values['use-recorded'] ?? false });
  const { replay } = check;
  const json = {
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
  };
  const lines = [
    `replayed ${replay.events} event(s) of ${target}, seq 1 to ${replay.to_seq} of ${check.head_seq}, as ${formatVersions(replay.versions)} [${replay.mode}]`,
    `state_hash ${replay.state_hash}`,
    check.compared_with === null
      ? 'stored: nothing to compare'
      : `stored ${check.compared_with === 'projection' ? 'projection' : 'snapshot'} at seq ${replay.to_seq}: ${String(check.stored_state_hash)}`,
    `match: ${check.match === null ? 'n/a (nothing stored to compare at this seq)' : check.match ? 'yes' : 'NO'}`,
    ...check.notes.map((n) => `note: ${n}`),
  ];
  return { exitCode: check.match === false ? EXIT_CODES.failed : EXIT_CODES.ok, json, text: lines.join('\n') };
}

runCommand('replay', USAGE, main);
