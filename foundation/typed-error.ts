// The one base of every error the apparatus throws (issue 17 item 5). The error itself carries
// how a command ends with it — its exit code (foundation/exit-codes.ts), its stable code, and what
// the screen and the JSON say beside the message — so cli/command-outcome.ts maps
// every error in one place (`instanceof TypedError`) and no command lists classes by name.
// docs/errors.md is the contract for the codes: test/cli/errors-doc.test.ts holds the page to each
// class's code, and test/cli/typed-errors.test.ts holds every error class to this base. Most
// classes say it in their heading: `extends TypedErrorOf('scenario', EXIT_CODES.failed)`, or
// `CodedErrorOf<Code>(…)` for errors made with an own code; the rest override what differs.
//
// An error no command ends with on purpose — control flow, a refusal its room turns into a
// result or a record, a child process's failure its parent reports — extends InternalError:
// one that reaches a command anyway is a bug of the apparatus and ends `internal_error`, exactly
// as an untyped error does.
import { EXIT_CODES, type ExitCode } from './exit-codes.js';

/** The code of an error nothing names: a bug (docs/errors.md). */
export const INTERNAL_ERROR_CODE = 'internal_error';

export abstract class TypedError extends Error {
  /**
   * The code of this class's errors (snake_case, docs/errors.md), or the prefix their own code
   * refines; null: each error's own code is the whole code (a full name from its own enum, which
   * docs/errors.md lists per command). Every class sets it (the test checks it is not undefined).
   */
  declare static readonly classCode: string | null;

  /** How the command that ends with this error exits. */
  abstract readonly exitCode: ExitCode;

  /** This error's own code (kebab-case or snake_case), refining its class's code; null: it has none. */
  get ownCode(): string | null {
    return null;
  }

  /**
   * The stable code a script branches on: the class's code refined by the own code as
   * `<class code>_<own code>` (kebab-case turned snake_case), or the own code alone where it
   * already starts with the class's code or the class has none; the class's code without one.
   */
  get errorCode(): string {
    const classCode = (this.constructor as typeof TypedError).classCode ?? null;
    const ownText = this.ownCode;
    const own = ownText === null || ownText === '' ? null : ownText.replaceAll('-', '_');
    if (own === null) return classCode ?? INTERNAL_ERROR_CODE;
    return classCode === null || own.startsWith(`${classCode}_`) ? own : `${classCode}_${own}`;
  }

  /** The message a command ends with: the error's own, unless its context must be said first. */
  get endingMessage(): string {
    return this.message;
  }

  /** The screen's text, when it says more than the message (the JSON carries that as details); null: the message. */
  get screenText(): string | null {
    return null;
  }

  /** false: an exit 2 that is no flag's fault (a store's recorded versions were refused): no usage after it. */
  get usageHelps(): boolean {
    return true;
  }

  /** Fields a script needs beside the message (the JSON's error object). */
  get endingDetails(): Readonly<Record<string, unknown>> {
    return {};
  }
}

/**
 * The base of a class whose errors all end a command the same way: `class ScenarioError extends
 * TypedErrorOf('scenario', EXIT_CODES.failed)`. A class whose exit code depends on its own code
 * overrides `exitCode` (a getter here, so that it can).
 */
export function TypedErrorOf(classCode: string | null, exitCode: ExitCode) {
  abstract class Typed extends TypedError {
    static override readonly classCode: string | null = classCode;
    get exitCode(): ExitCode {
      return exitCode;
    }
  }
  return Typed;
}

/** The same, for errors given their own code as they are made: `new InstanceError('resume', message)` ends `instance_resume`. */
export function CodedErrorOf<Code extends string>(classCode: string | null, exitCode: ExitCode) {
  abstract class Coded extends TypedErrorOf(classCode, exitCode) {
    constructor(
      readonly code: Code,
      message: string,
    ) {
      super(message);
    }
    override get ownCode(): string {
      return this.code;
    }
  }
  return Coded;
}

/** An error no command ends with on purpose (see the top of this file): one that reaches a command is `internal_error`. */
export abstract class InternalError extends TypedErrorOf(INTERNAL_ERROR_CODE, EXIT_CODES.failed) {}

/** An internal error with a code its room branches on (a failure returned as a result, a child process's failure). */
export abstract class CodedInternalError<Code extends string> extends InternalError {
  constructor(
    readonly code: Code,
    message: string,
  ) {
    super(message);
  }
}
