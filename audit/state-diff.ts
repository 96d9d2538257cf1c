// Where two JSON states differ, path by path (snapshot vs replay, spec §16.1). Bounded: a
// snapshot rotten everywhere lists the first MAX_STATE_DIFFERENCES and counts the rest.

export const MAX_STATE_DIFFERENCES = 200;
/** Deeper than any projected state nests; a deeper difference is reported at this depth. */
const MAX_DIFF_DEPTH = 32;

export interface StateDifference {
  /** JSON-pointer-like path, e.g. `/claims/wake-0002-c2/status`. */
  readonly path: string;
  /** JSON text of each side; null when the key is absent on that side. */
  readonly left: string | null;
  readonly right: string | null;
}

export interface StateDiff {
  readonly differences: readonly StateDifference[];
  /** Differences beyond MAX_STATE_DIFFERENCES, counted not listed. */
  readonly not_listed: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function diffStates(left: unknown, right: unknown): StateDiff {
  const differences: StateDifference[] = [];
  let notListed = 0;
  const report = (path: string, l: unknown, r: unknown): void => {
    if (differences.length < MAX_STATE_DIFFERENCES) differences.push({ path: path === '' ? '/' : path, left: l === undefined ? null : JSON.stringify(l), right: r === undefined ? null : JSON.stringify(r) });
    else notListed += 1;
  };
  const walk = (path: string, l: unknown, r: unknown, depth: number): void => {
    if (l === r) return;
    if (depth >= MAX_DIFF_DEPTH) {
      if (JSON.stringify(l) !== JSON.stringify(r)) report(path, l, r);
      return;
    }
    if (isObject(l) && isObject(r)) {
      const keys = [...new Set([...Object.keys(l), ...Object.keys(r)])].sort();
      for (const key of keys) walk(`${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`, l[key], r[key], depth + 1);
      return;
    }
    if (Array.isArray(l) && Array.isArray(r)) {
      const n = Math.max(l.length, r.length);
      for (let i = 0; i < n; i += 1) walk(`${path}/${i}`, l[i], r[i], depth + 1);
      return;
    }
    report(path, l, r);
  };
  walk('', left, right, 0);
  return { differences, not_listed: notListed };
}
