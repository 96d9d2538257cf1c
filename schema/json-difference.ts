// Where two JSON values first differ, as a dotted path a person can look up ("schedule.wakes[3].
// wake_at"). Beside canonical JSON because equality here is canonical equality: two values that
// serialise to the same JCS text are the same value, whatever their key order. The run verifier
// uses it to say where a plan.json departs from the plan its seed gives, and where a stored
// payload departs from the planned one.
import { canonicalJson } from './canonical-json.js';

/** Deeper than this, the two subtrees are compared whole (canonical JSON refuses deeper values anyway). */
const MAX_DIFF_DEPTH = 64;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The dotted path of the first place two JSON values differ, or null when they are equal. */
export function firstDifference(a: unknown, b: unknown, at = '', depth = 0): string | null {
  const here = at === '' ? '(root)' : at;
  if (depth > MAX_DIFF_DEPTH) return canonicalJson(a) === canonicalJson(b) ? null : here;
  if (Array.isArray(a) && Array.isArray(b)) {
    const length = Math.max(a.length, b.length);
    for (let i = 0; i < length; i += 1) {
      if (i >= a.length || i >= b.length) return `${at}[${i}]`;
      const diff = firstDifference(a[i], b[i], `${at}[${i}]`, depth + 1);
      if (diff !== null) return diff;
    }
    return null;
  }
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const key of keys) {
      const child = at === '' ? key : `${at}.${key}`;
      if (!(key in a) || !(key in b)) return child;
      const diff = firstDifference(a[key], b[key], child, depth + 1);
      if (diff !== null) return diff;
    }
    return null;
  }
  return canonicalJson(a) === canonicalJson(b) ? null : here;
}
