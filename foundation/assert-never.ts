// The end of every exhaustive switch: the compiler proves the default unreachable (the value's
// type is `never`), and should a value the types did not foresee arrive anyway (a file read past
// its schema, a cast), the run stops with an internal error naming it instead of going on with a
// guess. One home, so every switch says it the same way.
import { InternalError } from './typed-error.js';

/** A value an exhaustive switch does not handle. */
export class UnhandledCase extends InternalError {}

/** Throws UnhandledCase naming `what` and the value; never returns. */
export function assertNever(value: never, what: string): never {
  throw new UnhandledCase(`unhandled ${what}: ${JSON.stringify(value)}`);
}
