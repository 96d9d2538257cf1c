// docs/errors.md against the code it describes: every command the README's scripts run has its
// section, every exit code of foundation/exit-codes.ts its row, every typed error class its code
// (or code prefix: the classCode of foundation/typed-error.ts, read from every class the
// production sources export), and every problem a store file can have its store_* code. A class
// added with a code the page does not name fails here.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { TypedError } from '../../foundation/typed-error.js';
import { STORE_FILE_PROBLEMS, storeFileCode } from '../../writer/store-file-failure.js';
import { exportedErrorClasses } from '../support/error-classes.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const doc = readFileSync(path.join(REPO, 'docs', 'errors.md'), 'utf8');
const scripts = (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** Every `code` in backticks on the page. */
const mentioned = new Set([...doc.matchAll(/`([a-z][a-z0-9_]*)`/g)].map((m) => m[1]!));
const mentionedWithPrefix = (prefix: string): boolean => mentioned.has(prefix) || [...doc.matchAll(/`([a-z][a-z0-9_]*)\*?`/g)].some((m) => m[1]!.startsWith(`${prefix}_`)) || doc.includes(`\`${prefix}_*\``) || doc.includes(`\`${prefix}_<`);

test('every command the package runs has its section', () => {
  const commands = Object.entries(scripts)
    .filter(([, line]) => /(cli|tools\/bench)\/[\w-]+\.ts/.test(line))
    .map(([name]) => name);
  expect(commands.length).toBeGreaterThan(10);
  for (const name of commands) expect(doc, `docs/errors.md has no section for npm run ${name}`).toMatch(new RegExp(`^### .*\`npm run ${name}\``, 'm'));
});

test('every exit code has its row', () => {
  for (const [name, code] of Object.entries(EXIT_CODES)) expect(doc, `exit ${code} (${name})`).toMatch(new RegExp(`^ *\\| ${code} \\|`, 'm'));
});

test('every typed error class, and every store problem, has its code on the page', async () => {
  const typed = (await exportedErrorClasses()).filter(({ type, internal }) => type !== TypedError && !internal);
  expect(typed.length).toBeGreaterThan(40);
  const missing = typed
    // A class whose errors' own code is the whole code (replay's, repair's: classCode null) is listed from its own enum, per command.
    .filter(({ type }) => type.classCode !== null && !mentionedWithPrefix(type.classCode))
    .map(({ name, type }) => `${name} (${type.classCode})`);
  expect(missing, 'typed errors whose code docs/errors.md does not name').toEqual([]);
  for (const problem of STORE_FILE_PROBLEMS) expect(mentioned.has(storeFileCode(problem)), storeFileCode(problem)).toBe(true);
});
