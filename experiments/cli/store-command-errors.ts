// How the replay and restore commands report a typed failure: one line (or a list) on
// stderr, and with --json one object on stdout too, so a script can tell a version
// refusal from a broken store. Exit 2: misuse or a replay refused on purpose;
// exit 1: the store itself fails (corrupt, or its events cannot be re-applied).
import { ProjectionRefusal } from '../../projector/projection.js';
import { MissingUpcasterError, ReplayRefusal, VersionMismatchError } from '../../writer/replay-errors.js';
import { StoreReadError } from '../../writer/store-reader.js';

export function reportStoreCommandError(command: string, error: unknown, json: boolean): number {
  let exitCode: number;
  let body: Record<string, unknown>;
  if (error instanceof ReplayRefusal) {
    exitCode = 2;
    body = { code: error.code, message: error.message };
    if (error instanceof VersionMismatchError) body.differences = error.differences;
    if (error instanceof MissingUpcasterError) body.missing_upcasters = error.missing;
  } else if (error instanceof StoreReadError) {
    exitCode = error.code === 'corrupt' ? 1 : 2;
    body = { code: error.code, message: error.message };
  } else if (error instanceof ProjectionRefusal) {
    exitCode = 1;
    body = { code: 'projection_refused', message: `the projection refused a stored event, so the state cannot be rebuilt under these versions: ${error.message}` };
  } else {
    throw error;
  }
  process.stderr.write(`${command}: ${String(body.message)}\n`);
  if (json) process.stdout.write(`${JSON.stringify({ error: body })}\n`);
  return exitCode;
}
