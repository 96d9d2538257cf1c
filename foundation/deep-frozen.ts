// A plain JSON-like value frozen with everything in it: a value many readers share (a verify's
// kept events, writer/verified-events.ts, and the payloads read of them) can then be changed by
// none of them; a reader that tries throws (strict mode) instead of changing it for the others.

/** Deeper than this is refused: no stored event nests this far (canonical JSON refuses deeper than 64). */
const MAX_DEPTH = 64;

/** Freezes `value` and every object in it; returns it. An object already frozen is taken as frozen through. */
export function deepFrozen<T>(value: T, depth = 0): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  if (depth > MAX_DEPTH) throw new RangeError(`deepFrozen: nested deeper than ${MAX_DEPTH} levels`);
  for (const inner of Object.values(value as object)) deepFrozen(inner, depth + 1);
  return Object.freeze(value);
}
