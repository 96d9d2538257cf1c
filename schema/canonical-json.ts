// RFC 8785 (JCS) canonical JSON, the only serialisation that is ever hashed or signed.
//
// The `canonicalize` package silently drops `undefined` members and calls `toJSON`;
// both would let two different in-memory values share one hash without anyone
// noticing, so values are checked to be plain JSON first and refused otherwise.
import canonicalize from 'canonicalize';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';

export class NotJsonError extends TypedErrorOf('not_json', EXIT_CODES.failed) {
  override readonly name = 'NotJsonError';
  constructor(readonly path: string, readonly found: string) {
    super(`value at ${path} is ${found}, which has no JSON form; refusing to canonicalise it`);
  }
}

const MAX_DEPTH = 64;

function assertPlainJson(value: unknown, path: string, depth: number): void {
  if (depth > MAX_DEPTH) throw new NotJsonError(path, `nested deeper than ${MAX_DEPTH} levels`);
  if (value === null) return;
  switch (typeof value) {
    case 'string':
      // A lone surrogate has no UTF-8 form, so no canonical bytes (RFC 8785 §3.2.2.2).
      if (!value.isWellFormed()) throw new NotJsonError(path, 'a string with a lone surrogate');
      return;
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new NotJsonError(path, String(value));
      return;
    case 'object': {
      if (Array.isArray(value)) {
        value.forEach((item, i) => assertPlainJson(item, `${path}[${i}]`, depth + 1));
        return;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        throw new NotJsonError(path, `an instance of ${proto?.constructor?.name ?? 'unknown'}`);
      }
      for (const [key, member] of Object.entries(value)) {
        if (!key.isWellFormed()) throw new NotJsonError(path, 'an object key with a lone surrogate');
        assertPlainJson(member, `${path}.${key}`, depth + 1);
      }
      return;
    }
    default:
      throw new NotJsonError(path, typeof value);
  }
}

/** JCS text of a plain JSON value; throws NotJsonError for anything else. */
export function canonicalJson(value: unknown): string {
  assertPlainJson(value, '$', 0);
  const text = canonicalize(value);
  if (text === undefined) throw new NotJsonError('$', 'undefined');
  return text;
}
