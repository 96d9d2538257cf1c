// The error classes of the production code, found by reading its sources (every room of
// foundation/rooms.ts), for the tests that hold them to the one base (test/cli/typed-errors.test.ts)
// and their codes to docs/errors.md (test/cli/errors-doc.test.ts). Found by scanning rather than
// listed, so a class added anywhere is held to both without anyone remembering to list it.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOM_NAMES } from '../../foundation/rooms.js';
import { InternalError, TypedError } from '../../foundation/typed-error.js';

export const REPO = path.resolve(import.meta.dirname, '../..');

/** The file the base is defined in: the one class that may extend Error itself. */
export const BASE_FILE = path.join('foundation', 'typed-error.ts');

/** Bound on the folders walked (the production tree has a few dozen). */
const MAX_FOLDERS = 1_000;

/** The production sources, relative to the repository, with their text. */
export function productionSources(): { file: string; text: string }[] {
  const sources: { file: string; text: string }[] = [];
  const folders = ROOM_NAMES.map((room) => path.join(REPO, room));
  for (let walked = 0; folders.length > 0; walked += 1) {
    if (walked >= MAX_FOLDERS) throw new Error(`more than ${MAX_FOLDERS} folders under the rooms`);
    const folder = folders.pop()!;
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      // local-engine holds the installed model engine (its own node_modules), not this project's code.
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'local-engine') folders.push(full);
      } else if (entry.name.endsWith('.ts')) sources.push({ file: path.relative(REPO, full), text: readFileSync(full, 'utf8') });
    }
  }
  return sources.sort((a, b) => a.file.localeCompare(b.file));
}

const BUILT_IN_ERRORS = ['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'EvalError', 'URIError', 'AggregateError'];

/** The classes a source declares directly on a built-in error (`extends Error`, `extends TypeError`…), by name. */
export function classesOnBuiltInErrors(text: string): string[] {
  const pattern = new RegExp(`\\bclass\\s+(\\w+)\\s+extends\\s+(?:globalThis\\.)?(?:${BUILT_IN_ERRORS.join('|')})\\b`, 'g');
  return [...text.matchAll(pattern)].map((m) => m[1]!);
}

export interface ErrorClass {
  readonly name: string;
  readonly file: string;
  readonly type: typeof TypedError;
  /** The name its instances set (`override readonly name = '…'`), read from its source; null: none. */
  readonly declaredName: string | null;
  readonly internal: boolean;
}

/** Every exported class of the production code whose instances are errors, imported from its file. */
export async function exportedErrorClasses(): Promise<ErrorClass[]> {
  const classes: ErrorClass[] = [];
  for (const { file, text } of productionSources()) {
    const declared = [...text.matchAll(/^export (?:abstract )?class (\w+) extends (\w+)/gm)].map((m) => m[1]!);
    if (declared.length === 0) continue;
    const module = (await import(path.join(REPO, file))) as Record<string, unknown>;
    for (const name of declared) {
      const type = module[name];
      if (typeof type !== 'function' || !(type.prototype instanceof Error)) continue;
      const body = text.slice(text.indexOf(`class ${name} `)).slice(0, 600);
      const own = /override readonly name(?:: string)? = '(\w+)'/.exec(body);
      classes.push({ name, file, type: type as typeof TypedError, declaredName: own?.[1] ?? null, internal: type.prototype instanceof InternalError || type === InternalError });
    }
  }
  return classes;
}
