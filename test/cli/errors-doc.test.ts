// docs/errors.md against the code it describes: every command the README's scripts run has its
// section, every exit code of exit-codes.ts its row, every typed error of the failure table its
// code (or code prefix), and every problem a store file can have its store_* code. A code added
// to the table without a line in the page fails here.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { EXIT_CODES } from '../../experiments/cli/exit-codes.js';
import { FAILURE_TABLE } from '../../experiments/cli/failure-table.js';
import { STORE_FILE_PROBLEMS, storeFileCode } from '../../writer/store-file-failure.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const doc = readFileSync(path.join(REPO, 'docs', 'errors.md'), 'utf8');
const scripts = (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** Every `code` in backticks on the page. */
const mentioned = new Set([...doc.matchAll(/`([a-z][a-z0-9_]*)`/g)].map((m) => m[1]!));
const mentionedWithPrefix = (prefix: string): boolean => mentioned.has(prefix) || [...doc.matchAll(/`([a-z][a-z0-9_]*)\*?`/g)].some((m) => m[1]!.startsWith(`${prefix}_`)) || doc.includes(`\`${prefix}_*\``) || doc.includes(`\`${prefix}_<`);

test('every command the package runs has its section', () => {
  const commands = Object.entries(scripts)
    .filter(([, line]) => /experiments\/(cli|bench)\/[\w-]+\.ts/.test(line))
    .map(([name]) => name);
  expect(commands.length).toBeGreaterThan(10);
  for (const name of commands) expect(doc, `docs/errors.md has no section for npm run ${name}`).toMatch(new RegExp(`^### .*\`npm run ${name}\``, 'm'));
});

test('every exit code has its row', () => {
  for (const [name, code] of Object.entries(EXIT_CODES)) expect(doc, `exit ${code} (${name})`).toMatch(new RegExp(`^\\| ${code} \\|`, 'm'));
});

test('every typed error of the failure table, and every store problem, has its code on the page', () => {
  const missing = Object.entries(FAILURE_TABLE)
    // A row whose own code is the whole code (replay's, repair's) is listed from its own enum, per command.
    .filter(([, row]) => row.ownCodeIsWhole !== true && !mentionedWithPrefix(row.code))
    .map(([name, row]) => `${name} (${row.code})`);
  expect(missing, 'typed errors whose code docs/errors.md does not name').toEqual([]);
  for (const problem of STORE_FILE_PROBLEMS) expect(mentioned.has(storeFileCode(problem)), storeFileCode(problem)).toBe(true);
});
