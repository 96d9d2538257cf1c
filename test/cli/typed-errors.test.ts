// Every error of the apparatus extends the one base (foundation/typed-error.ts), which carries how a
// command ends with it, and cli/command-outcome.ts maps errors in that one place:
// no production class extends Error itself (read from the sources, so a new one fails here),
// every exported error class is a TypedError named as its class with a class code; a known error
// keeps its exit code and code; what a disk, SQLite or zod raise is typed too, and anything else
// ends in one typed line — never a stack. (docs/errors.md against the codes: errors-doc.test.ts.)
import Database from 'better-sqlite3';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { CommandRefusal, failureOf } from '../../cli/command-outcome.js';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { InternalError, TypedError } from '../../foundation/typed-error.js';
import { BASE_FILE, classesOnBuiltInErrors, exportedErrorClasses, productionSources } from '../support/error-classes.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ds-typed-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the one error base', () => {
  test('no production class extends a built-in error but the base itself', () => {
    const sources = productionSources();
    expect(sources.length).toBeGreaterThan(100);
    const offenders = sources.filter(({ file }) => file !== BASE_FILE).flatMap(({ file, text }) => classesOnBuiltInErrors(text).map((name) => `${file}: ${name}`));
    expect(offenders, 'error classes that do not extend foundation/typed-error.ts').toEqual([]);
    expect(classesOnBuiltInErrors(sources.find(({ file }) => file === BASE_FILE)!.text)).toEqual(['TypedError']);
  });

  test('the scan finds a forged class on Error (or another built-in), and not one on the base', () => {
    const forged = ['export class ForgedError extends Error {', '  override readonly name = "ForgedError";', '}', 'class Quiet extends TypeError {}', 'class Sneaky\n  extends globalThis.RangeError {}'].join('\n');
    expect(classesOnBuiltInErrors(forged)).toEqual(['ForgedError', 'Quiet', 'Sneaky']);
    expect(classesOnBuiltInErrors('export class Fine extends TypedError {}\nclass AlsoFine extends InternalError {}\nclass ErrorLike extends ErrorBase {}')).toEqual([]);
  });

  test('every exported error class is a TypedError named as its class, with a class code', async () => {
    const classes = (await exportedErrorClasses()).filter(({ type }) => type !== TypedError && type !== InternalError);
    expect(classes.length).toBeGreaterThan(60);
    for (const { name, file, type, declaredName, internal } of classes) {
      expect(type.prototype, `${name} (${file})`).toBeInstanceOf(TypedError);
      // The name a screen line and a log show is the class's (override readonly name = '…').
      if (declaredName !== null || !internal) expect(declaredName, `${name} (${file}) must set its name to its class name`).toBe(name);
      if (internal) continue;
      expect(type.classCode, `${name} (${file}) sets no classCode`).not.toBeUndefined();
      if (type.classCode !== null) expect(type.classCode).toMatch(/^[a-z][a-z0-9_]*$/);
    }
  });

  test('an internal error ends as an untyped one does: internal_error, one line', async () => {
    const { WriterUnavailableError } = await import('../../writer/client.js');
    const failure = failureOf(new WriterUnavailableError('disconnected', 'the writer closed the socket'));
    expect(failure).toEqual(failureOf(new Error('the writer closed the socket')));
    expect(failure).toMatchObject({ exitCode: EXIT_CODES.failed, code: 'internal_error' });
  });
});

describe('how a command ends with an error', () => {
  test('a known error keeps its exit code and gets its typed code; its own code refines it', async () => {
    const { KeyStoreError } = await import('../../controller/key-store.js');
    const { StoreReadError } = await import('../../writer/store-reader.js');
    const { UsageError } = await import('../../cli/command-line.js');
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
