// The error of a verify that was given something it cannot verify (a path that is not a folder,
// a file that is not a run's events.db, a tree too deep or too large to walk): the command was
// misused (exit 2, code verify_input: docs/errors.md), unlike a failure the report lists. Its own
// file because the entry (verify-store.ts), the folder walk (run-files-walk.ts) and the command
// (cli/verify.ts) all throw it.
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';

export class VerifyInputError extends TypedErrorOf('verify_input', EXIT_CODES.misused) {
  override readonly name = 'VerifyInputError';
}
