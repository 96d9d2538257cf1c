// How every command ends (issue 16): its exit code, its screen, and — with --json — exactly one
// JSON object on stdout whatever happens, carrying the exit code and, on failure, a typed error
// code. A thrown error never reaches the user as a stack trace: failureOf maps it to a code, an
// exit code and a message a person can act on. A typed error says all of that itself
// (foundation/typed-error.ts), so this is the one place errors are mapped, and no command lists
// classes; what a disk, SQLite or zod raise is mapped by its code here. Errors nothing names are
// bugs: they still get one line (code internal_error); the stack only with DS_STACK=1.
import { ZodError, z } from 'zod';
import { EXIT_CODES, type ExitCode } from '../foundation/exit-codes.js';
import { INTERNAL_ERROR_CODE, InternalError, TypedError } from '../foundation/typed-error.js';

/** What a command produced: its exit code, the one JSON object it prints with --json, and its screen text. */
export interface CommandOutput {
  readonly exitCode: number;
  readonly json: Readonly<Record<string, unknown>>;
  /** Printed on stdout without --json; ends with a newline (added when missing). */
  readonly text: string;
}

export interface CommandFailure {
  readonly exitCode: number;
  /** snake_case, stable: scripts branch on it (docs/errors.md). */
  readonly code: string;
  readonly message: string;
  /** The screen's line when it says more than the message (default: the message). */
  readonly screen?: string;
  /** false: an exit 2 that is no flag's fault (a replay refused on purpose): no usage after it. */
  readonly usageHelps?: boolean;
  readonly details?: Readonly<Record<string, unknown>>;
}

/** A command's own refusal, its code, exit code and details given where it is thrown (a study's path codes, an export's refusal as the command says it). */
export class CommandRefusal extends TypedError {
  override readonly name: string = 'CommandRefusal';
  /** Each refusal's code is whole, as given. */
  static override readonly classCode = null;
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: ExitCode = EXIT_CODES.failed,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
  }
  /** As given, not snake-cased: the caller names the code. */
  override get errorCode(): string {
    return this.code;
  }
  override get endingDetails(): Readonly<Record<string, unknown>> {
    return this.details;
  }
}

/** The environment variable that adds the stack of an internal error to its line (for debugging the apparatus). */
export const STACK_ENV = 'DS_STACK';

/** The system-call errors a path the user named can cause (node's `code`), as typed failures. */
const FILE_SYSTEM_FAILURES: Readonly<Record<string, { exitCode: number; code: string; what: string }>> = {
  ENOENT: { exitCode: EXIT_CODES.misused, code: 'path_not_found', what: 'does not exist' },
  ENOTDIR: { exitCode: EXIT_CODES.misused, code: 'path_not_a_folder', what: 'is (or runs through) a file where a folder is needed' },
  EISDIR: { exitCode: EXIT_CODES.misused, code: 'path_is_a_folder', what: 'is a folder where a file is needed' },
  EEXIST: { exitCode: EXIT_CODES.misused, code: 'path_exists', what: 'exists already' },
  ENOTEMPTY: { exitCode: EXIT_CODES.misused, code: 'folder_not_empty', what: 'is not empty' },
  EACCES: { exitCode: EXIT_CODES.failed, code: 'permission_denied', what: 'may not be read or written by this user' },
  EPERM: { exitCode: EXIT_CODES.failed, code: 'permission_denied', what: 'may not be changed by this user' },
  EROFS: { exitCode: EXIT_CODES.failed, code: 'read_only_file_system', what: 'is on a read-only file system' },
  EIO: { exitCode: EXIT_CODES.failed, code: 'io_error', what: 'could not be read or written: the disk or file system failed (EIO); what was committed before is intact' },
  ENOSPC: { exitCode: EXIT_CODES.failed, code: 'disk_full', what: 'could not be written: the disk is full' },
  EDQUOT: { exitCode: EXIT_CODES.failed, code: 'disk_full', what: 'could not be written: the disk quota is used up' },
};

/** What SQLite says about a file, when an error of better-sqlite3 reaches the top unclassified. */
const SQLITE_FAILURES: Readonly<Record<string, { code: string; message: string }>> = {
  SQLITE_CORRUPT: { code: 'store_damaged', message: 'the store file is damaged (not an intact SQLite database); nothing was changed — npm run verify lists what it can, and the run must be restored from a copy or run again' },
  SQLITE_NOTADB: { code: 'store_damaged', message: 'the file is not a SQLite database (damaged, or not a store); nothing was changed' },
  SQLITE_BUSY: { code: 'store_locked', message: 'another process holds the store (a running writer, or another command on the same run); this is safe and nothing was changed: wait for it to end, or stop it, and run the command again' },
  SQLITE_LOCKED: { code: 'store_locked', message: 'another process holds the store; this is safe and nothing was changed: wait for it to end, or stop it, and run the command again' },
  SQLITE_FULL: { code: 'disk_full', message: 'the disk is full: SQLite could not write; what was committed before is intact — free space and run the command again' },
  SQLITE_CANTOPEN: { code: 'store_unreadable', message: 'SQLite cannot open the store file (missing, a folder, or not readable by this user); nothing was changed' },
  SQLITE_READONLY: { code: 'store_read_only', message: 'the store file or its folder is read-only for this user; nothing was changed' },
};

function sqliteCodeOf(error: Error): string | null {
  const code = (error as { code?: unknown }).code;
  if (error.name !== 'SqliteError' || typeof code !== 'string') return null;
  // Extended codes (SQLITE_IOERR_SHORT_READ, SQLITE_BUSY_SNAPSHOT…) share their primary's meaning.
  const primary = Object.keys(SQLITE_FAILURES).find((p) => code === p || code.startsWith(`${p}_`));
  return primary ?? (code.startsWith('SQLITE_IOERR') ? 'SQLITE_IOERR' : code);
}

/** How a typed error ends its command: what it says of itself. */
function typedFailureOf(error: TypedError): CommandFailure {
  const screen = error.screenText;
  const details = error.endingDetails;
  return {
    exitCode: error.exitCode,
    code: error.errorCode,
    message: error.endingMessage,
    ...(screen === null ? {} : { screen }),
    ...(error.usageHelps ? {} : { usageHelps: false }),
    ...(Object.keys(details).length === 0 ? {} : { details }),
  };
}

/** How a thrown value maps to an exit code and a typed code: the one mapping every command uses. */
export function failureOf(error: unknown): CommandFailure {
  if (!(error instanceof Error)) return { exitCode: EXIT_CODES.failed, code: INTERNAL_ERROR_CODE, message: `internal error (a bug; please report it): ${String(error)}` };
  // An internal error is one no command ends with on purpose: it is mapped as any untyped error.
  if (error instanceof TypedError && !(error instanceof InternalError)) return typedFailureOf(error);
  const sqlite = sqliteCodeOf(error);
  if (sqlite !== null) {
    const known = SQLITE_FAILURES[sqlite];
    if (known) return { exitCode: EXIT_CODES.failed, code: known.code, message: `${known.message} (SQLite: ${error.message})` };
    if (sqlite === 'SQLITE_IOERR') return { exitCode: EXIT_CODES.failed, code: 'io_error', message: `the disk failed a read or write of the store (SQLite: ${error.message}); what was committed before is intact` };
  }
  const errno = (error as NodeJS.ErrnoException).code;
  const fsFailure = typeof errno === 'string' ? FILE_SYSTEM_FAILURES[errno] : undefined;
  if (fsFailure) {
    const where = (error as NodeJS.ErrnoException).path;
    return { exitCode: fsFailure.exitCode, code: fsFailure.code, message: `${where === undefined ? 'a path' : where} ${fsFailure.what} (${errno})` };
  }
  if (error instanceof ZodError) return { exitCode: EXIT_CODES.failed, code: 'invalid_data', message: `a file or value does not have the expected form:\n${z.prettifyError(error)}` };
  return { exitCode: EXIT_CODES.failed, code: INTERNAL_ERROR_CODE, message: `internal error (a bug; please report it${process.env[STACK_ENV] === '1' ? '' : `; ${STACK_ENV}=1 shows where`}): ${error.message}` };
}

function wantsJson(argv: readonly string[]): boolean {
  return argv.includes('--json');
}

function write(stream: NodeJS.WriteStream, text: string): void {
  stream.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
}

/** The JSON object of a failure, the same shape for every command (docs/errors.md). */
export function failureJson(command: string, failure: CommandFailure): Record<string, unknown> {
  return { ok: false, command, exit_code: failure.exitCode, error: { code: failure.code, message: failure.message, ...failure.details } };
}

/** Prints a failure: one stderr line (the usage after a misuse) and, with --json, its one object. */
export function reportFailure(command: string, usage: string, error: unknown, json: boolean): number {
  const failure = failureOf(error);
  // The usage helps after a misuse; not after a refusal of what a store recorded (a version mismatch), where it would read as a typo.
  const showUsage = usage !== '' && failure.exitCode === EXIT_CODES.misused && failure.usageHelps !== false;
  write(process.stderr, `${command}: ${failure.screen ?? failure.message}${showUsage ? `\n${usage}` : ''}`);
  if (failure.code === INTERNAL_ERROR_CODE && error instanceof Error && process.env[STACK_ENV] === '1' && error.stack) write(process.stderr, error.stack);
  if (json) write(process.stdout, JSON.stringify(failureJson(command, failure)));
  return failure.exitCode;
}

export interface CommandContext {
  readonly json: boolean;
  /**
   * For a command that keeps running after its report (the audit desk's server): prints the
   * output now; the command's final return is then only its exit code (nothing more on stdout).
   */
  emitNow(output: Omit<CommandOutput, 'exitCode'>): void;
}

/**
 * Runs a command's main and ends the process's part in it: prints the text, or with --json
 * anywhere in argv exactly one JSON object (json + exit_code); a thrown error becomes its typed
 * failure. Sets process.exitCode; never calls process.exit (pending writes drain).
 */
export function runCommand(name: string, usage: string, main: (context: CommandContext) => CommandOutput | null | Promise<CommandOutput | null>): void {
  const json = wantsJson(process.argv.slice(2));
  let emitted = false;
  const context: CommandContext = {
    json,
    emitNow(output) {
      if (emitted) throw new Error('a command emits its output once');
      emitted = true;
      if (json) write(process.stdout, JSON.stringify({ ...output.json, exit_code: EXIT_CODES.ok }));
      else write(process.stdout, output.text);
    },
  };
  const finish = (output: CommandOutput | null): void => {
    // null: --help was printed (exit 0) and nothing else is.
    if (output === null) {
      process.exitCode = EXIT_CODES.ok;
      return;
    }
    if (!emitted) {
      if (json) write(process.stdout, JSON.stringify({ ...output.json, exit_code: output.exitCode }));
      else write(process.stdout, output.text);
    }
    process.exitCode = output.exitCode;
  };
  const fail = (error: unknown): void => {
    // After an early emit stdout already holds the one object: the failure goes to the screen only.
    process.exitCode = reportFailure(name, usage, error, json && !emitted);
  };
  try {
    const result = main(context);
    if (result instanceof Promise) result.then(finish, fail);
    else finish(result);
  } catch (error) {
    fail(error);
  }
}
