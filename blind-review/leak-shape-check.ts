// Check (b) of the leak check (leak-check.ts): the JSON key paths of each file are the same in
// every package. A file's shape is its containers (by path; a timeline entry's detail is a
// container named by its kind, since which kinds occur is behaviour) with the keys each holds; a
// container present in several packages must hold the same keys in all of them, and the packages
// in the minority are named.
import { PACKAGE_FILE_NAMES } from './package-format.js';
import type { LeakFinding } from './leak-finding.js';

/** Container path → the keys it holds. */
export type Shape = Map<string, Set<string>>;
/** File → its shape, for one package. */
export type PackageShapes = Map<string, Shape>;

/** Container path → keys, for (b). Timeline details are containers named by their kind. */
export function collectShape(value: unknown, at: string, out: Shape, depth = 0): void {
  if (depth > 32) return;
  if (Array.isArray(value)) {
    for (const v of value) collectShape(v, `${at}[]`, out, depth + 1);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  const keys = out.get(at) ?? new Set<string>();
  out.set(at, keys);
  for (const [k, v] of Object.entries(value)) {
    keys.add(k);
    collectShape(v, at === '' ? k : `${at}.${k}`, out, depth + 1);
  }
}

/** One container of one file, in the packages that have it: each key all of them hold, or the minority named. */
function containerCheck(having: readonly string[], keysOf: (pkg: string) => Set<string>, file: string, container: string, findings: LeakFinding[]): void {
  const allKeys = new Set<string>();
  for (const n of having) for (const k of keysOf(n)) allKeys.add(k);
  for (const key of [...allKeys].sort()) {
    const holders = having.filter((n) => keysOf(n).has(key));
    if (holders.length === having.length) continue;
    const lackers = having.filter((n) => !holders.includes(n));
    const where = `${container === '' ? '(top level)' : container}.${key}`;
    // Name the minority: a key only some packages have, or the packages that lack a common one.
    if (holders.length <= lackers.length) for (const n of holders) findings.push({ package: n, file, kind: 'key_paths', detail: `key ${where} is present here and in ${holders.length - 1} other package(s) only, absent from ${lackers.length} package(s) with the same structure: a field some packages have and others not can reveal the group` });
    else for (const n of lackers) findings.push({ package: n, file, kind: 'key_paths', detail: `key ${where} is missing here but present in ${holders.length} other package(s): a field some packages have and others not can reveal the group` });
  }
}

/** (b): for each container present in several packages, the same keys in all of them. */
export function shapeChecks(shapes: ReadonlyMap<string, PackageShapes>, findings: LeakFinding[]): void {
  const names = [...shapes.keys()];
  for (const file of PACKAGE_FILE_NAMES) {
    const containers = new Set<string>();
    for (const n of names) for (const c of shapes.get(n)?.get(file)?.keys() ?? []) containers.add(c);
    for (const container of [...containers].sort()) {
      const having = names.filter((n) => shapes.get(n)?.get(file)?.has(container));
      if (having.length < 2) continue;
      containerCheck(having, (n) => shapes.get(n)!.get(file)!.get(container)!, file, container, findings);
    }
  }
}
