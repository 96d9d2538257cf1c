// The one table of typed failures (experiments/cli/failure-table.ts) against the real classes and
// the real errors a disk, SQLite or zod raise: every row names a class that exists and whose
// instances carry that name (rows are keyed by name so a command need not load every room), and
// what the table does not name still ends in one typed line — never a stack.
import Database from 'better-sqlite3';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { FAILURE_TABLE } from '../../experiments/cli/failure-table.js';
import { CommandRefusal, failureOf } from '../../experiments/cli/command-outcome.js';
import { EXIT_CODES } from '../../experiments/cli/exit-codes.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'ds-failure-table-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every `export class NAME extends …Error|Refusal` under the apparatus's rooms, with its file. */
function declaredErrorClasses(): Map<string, string> {
  const classes = new Map<string, string>();
  const rooms = ['schema', 'projector', 'writer', 'runtime', 'controller', 'oracle', 'blind-review', 'audit', 'experiments'];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'local-engine') walk(full);
      } else if (entry.name.endsWith('.ts')) {
        for (const m of readFileSync(full, 'utf8').matchAll(/^export class (\w+) extends (\w+)/gm)) classes.set(m[1]!, path.relative(REPO, full));
      }
    }
  };
  for (const room of rooms) walk(path.join(REPO, room));
  return classes;
}

describe('the failure table', () => {
  test('every row names an exported class whose instances carry that name', async () => {
    const classes = declaredErrorClasses();
    for (const name of Object.keys(FAILURE_TABLE)) {
      const file = classes.get(name);
      expect(file, `${name} is in the failure table but no file exports that class`).toBeDefined();
      const module = (await import(path.join(REPO, file!))) as Record<string, unknown>;
      const type = module[name] as { prototype: Error };
      // The name the table is keyed by is the one each instance sets (override readonly name = '…').
      const source = readFileSync(path.join(REPO, file!), 'utf8');
      const body = source.slice(source.indexOf(`export class ${name} `));
      const own = /override readonly name(?:: string)? = '(\w+)'/.exec(body.slice(0, 600));
      expect(own?.[1], `${name} (${file}) must set its name to its class name`).toBe(name);
      expect(typeof type).toBe('function');
    }
  });

  test('a known error keeps its exit code and gets its typed code; its own code refines it', async () => {
    const { KeyStoreError } = await import('../../controller/key-store.js');
    const { StoreReadError } = await import('../../writer/store-reader.js');
    const { UsageError } = await import('../../experiments/cli/command-line.js');
    expect(failureOf(new UsageError('give --group'))).toMatchObject({ exitCode: EXIT_CODES.misused, code: 'usage', message: 'give --group' });
    expect(failureOf(new KeyStoreError('missing', 'no key'))).toMatchObject({ exitCode: EXIT_CODES.misused, code: 'key_store_missing' });
    expect(failureOf(new KeyStoreError('too-open', 'mode 0644'))).toMatchObject({ exitCode: EXIT_CODES.failed, code: 'key_store_too_open' });
    expect(failureOf(new StoreReadError('locked', 'a writer holds it'))).toMatchObject({ exitCode: EXIT_CODES.failed, code: 'store_locked' });
    expect(failureOf(new StoreReadError('not_found', 'no events.db'))).toMatchObject({ exitCode: EXIT_CODES.misused, code: 'store_not_found' });
    expect(failureOf(new CommandRefusal('study_incomplete', 'two instances missing', EXIT_CODES.failed, { missing: 2 }))).toEqual({ exitCode: 1, code: 'study_incomplete', message: 'two instances missing', details: { missing: 2 } });
  });

  test('what a disk, SQLite and zod raise is typed too: damaged file, wrong path kind, bad data', () => {
    const garbage = path.join(dir, 'events.db');
    writeFileSync(garbage, Buffer.alloc(8_192, 0x5a));
    let sqlite: unknown;
    try {
      new Database(garbage, { readonly: true }).prepare('SELECT 1 FROM sqlite_master').get();
    } catch (error) {
      sqlite = error;
    }
    expect(failureOf(sqlite)).toMatchObject({ exitCode: EXIT_CODES.failed, code: 'store_damaged' });
    let notDir: unknown;
    try {
      readdirSync(path.join(garbage, 'inside'));
    } catch (error) {
      notDir = error;
    }
    expect(failureOf(notDir)).toMatchObject({ exitCode: EXIT_CODES.misused, code: 'path_not_a_folder', message: expect.stringContaining(garbage) });
    const zod = z.object({ at: z.iso.datetime() }).safeParse({ at: 'yesterday' });
    expect(failureOf(zod.error)).toMatchObject({ exitCode: EXIT_CODES.failed, code: 'invalid_data', message: expect.stringContaining('at') });
  });

  test('an error nothing names is an internal error: one line, no stack, how to see it', () => {
    const failure = failureOf(new TypeError("Cannot read properties of undefined (reading 'seq')"));
    expect(failure).toMatchObject({ exitCode: EXIT_CODES.failed, code: 'internal_error' });
    expect(failure.message).toMatch(/^internal error \(a bug; please report it; DS_STACK=1 shows where\): Cannot read/);
    expect(failure.message).not.toMatch(/\n\s+at /);
    expect(failureOf('a string')).toMatchObject({ code: 'internal_error' });
  });
});
