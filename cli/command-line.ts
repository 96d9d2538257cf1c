// The shape shared by commands that take one folder (or file) and flags: usage on
// --help (exit 0), a usable message and exit 2 on anything else that is not a call.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';

type Options = NonNullable<ParseArgsConfig['options']>;
type Values<O extends Options> = ReturnType<typeof parseArgs<{ options: O; allowPositionals: true }>>['values'];

export type CommandLine<O extends Options> = { readonly ok: true; readonly values: Values<O>; readonly target: string } | { readonly ok: false; readonly exitCode: number };

export function parseCommandLine<O extends Options>(usage: string, options: O, target: string): CommandLine<O> {
  let args;
  try {
    args = parseArgs({ allowPositionals: true, options: { ...options, help: { type: 'boolean' } } });
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${usage}\n`);
    return { ok: false, exitCode: 2 };
  }
  if ((args.values as { help?: boolean }).help) {
    process.stdout.write(`${usage}\n`);
    return { ok: false, exitCode: 0 };
  }
  const [first, ...extra] = args.positionals;
  if (!first || extra.length > 0) {
    process.stderr.write(`give exactly one ${target}\n${usage}\n`);
    return { ok: false, exitCode: 2 };
  }
  return { ok: true, values: args.values as Values<O>, target: first };
}

/** A command line that is not a call: the command prints the message and its usage, and exits 2 (code `usage`; a kind of its own refines it: `usage_model_flags`, cli/model-flags.ts). */
export class UsageError extends TypedErrorOf('usage', EXIT_CODES.misused) {
  override readonly name: string = 'UsageError';
}

type Parsed<O extends Options> = ReturnType<typeof parseArgs<{ options: O; allowPositionals: true }>>;

/**
 * The flags (and any positionals) of a command that maps its own errors to exit codes: null
 * after printing the usage for --help; a flag parseArgs refuses is a UsageError.
 */
export function parseFlags<O extends Options>(usage: string, options: O): { values: Parsed<O>['values']; positionals: string[] } | null {
  let args;
  try {
    args = parseArgs({ allowPositionals: true, options: { ...options, help: { type: 'boolean' } } });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if ((args.values as { help?: boolean }).help) {
    process.stdout.write(`${usage}\n`);
    return null;
  }
  return { values: args.values as Parsed<O>['values'], positionals: args.positionals };
}

/** `--name N` as a whole number in [min, max]; null when the flag is absent. */
export function wholeNumberFlag(name: string, text: string | undefined, min: number, max: number): number | null {
  if (text === undefined) return null;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  return value;
}
