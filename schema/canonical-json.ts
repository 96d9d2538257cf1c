// RFC 8785 (JCS) canonical JSON, the only serialisation that is ever hashed or signed.
//
// Written here in one pass rather than by the `canonicalize` package: that package silently drops
// `undefined` members and calls `toJSON` (both would let two different in-memory values share one
// hash without anyone noticing), so every value had to be walked twice, once to refuse what is
// not plain JSON and once to serialise it; the writer and every verifier canonicalise each event
// several times. The package stays the reference the tests hold this serialisation to.
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';

export class NotJsonError extends TypedErrorOf('not_json', EXIT_CODES.failed) {
  override readonly name = 'NotJsonError';
  constructor(readonly path: string, readonly found: string) {
    super(`value at ${path} is ${found}, which has no JSON form; refusing to canonicalise it`);
  }
}

const MAX_DEPTH = 64;

/**
 * Where a refused value sits, as `$.a[2].b`: built only when a value is refused (a path string
 * per member, built eagerly, cost more than the serialisation itself on a store's events).
 */
type At = { readonly parent: At | null; readonly key: string | number } | null;

function pathOf(at: At): string {
  const parts: string[] = [];
  for (let p = at; p !== null; p = p.parent) parts.push(typeof p.key === 'number' ? `[${p.key}]` : `.${p.key}`);
  return `$${parts.reverse().join('')}`;
}

/**
 * RFC 8785 in one pass, refusing what is not plain JSON on the way: strings and numbers as
 * ECMAScript's JSON.stringify writes them (RFC 8785 §3.2.2.2–3), object members sorted by their
 * UTF-16 code units (§3.2.3, JavaScript's default sort order), no whitespace. The `canonicalize`
 * package (RFC 8785's reference for JavaScript) is what test/schema/canonical-json.test.ts holds
 * this to, on real stores and generated values.
 */
function write(value: unknown, at: At, depth: number): string {
  if (depth > MAX_DEPTH) throw new NotJsonError(pathOf(at), `nested deeper than ${MAX_DEPTH} levels`);
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      // A lone surrogate has no UTF-8 form, so no canonical bytes (RFC 8785 §3.2.2.2).
      if (!value.isWellFormed()) throw new NotJsonError(pathOf(at), 'a string with a lone surrogate');
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new NotJsonError(pathOf(at), String(value));
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        const items: string[] = new Array<string>(value.length);
        // An index loop, not forEach: a hole of a sparse array is refused (undefined), never skipped.
        for (let i = 0; i < value.length; i += 1) items[i] = write(value[i], { parent: at, key: i }, depth + 1);
        return `[${items.join(',')}]`;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        throw new NotJsonError(pathOf(at), `an instance of ${proto?.constructor?.name ?? 'unknown'}`);
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      const members: string[] = new Array<string>(keys.length);
      for (let i = 0; i < keys.length; i += 1) {
        const key = keys[i]!;
        if (!key.isWellFormed()) throw new NotJsonError(pathOf(at), 'an object key with a lone surrogate');
        members[i] = `${JSON.stringify(key)}:${write(record[key], { parent: at, key }, depth + 1)}`;
      }
      return `{${members.join(',')}}`;
    }
    default:
      throw new NotJsonError(pathOf(at), typeof value);
  }
}

/** JCS text of a plain JSON value; throws NotJsonError for anything else. */
export function canonicalJson(value: unknown): string {
  return write(value, null, 0);
}
