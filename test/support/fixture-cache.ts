// A folder built once per test run and shared by the test files that need the same one (the
// same real instances, built from the same inputs): the first file to ask builds it, under a
// lock, and every file gets a copy of its own, so no file sees another's changes.
//
// Why: several files each ran the same real 72-hour instances in their beforeAll (three files
// the same A/B/C blind study, four the same finished C run), ~10-40 s apiece on 2 cores.
//
// The cache lives in the run's temporary folder (suite-temp-dir.ts, Vitest's global setup),
// so it never outlives a run and never serves a run built by older code. Outside that setup
// (no DS_TEST_FIXTURE_CACHE) nothing is cached: every call builds its own, as before.
import { cpSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { FIXTURE_CACHE_ENV } from './suite-temp-dir.js';
import { tempDir } from './writer-fixture.js';

/** A build of a few real instances takes ~30 s on a loaded 2-core machine; a waiter gives up well after. */
const BUILD_WAIT_MS = 300_000;
const POLL_MS = 100;
/** Left by a build that threw: the waiters fail at once, with its message, instead of waiting out BUILD_WAIT_MS. */
const FAILED_FILE = 'build-failed.txt';

export interface CachedCopy {
  /** The caller's own copy. */
  readonly dir: string;
  /** The folder `build` wrote into (recorded paths inside the copy may name it; it stays for the run). */
  readonly builtIn: string;
}

/**
 * A fresh folder holding what `build(dir)` wrote into `dir` — built at most once per run for
 * `key` (which must name every input the build depends on). The copy keeps the folder's
 * layout below it.
 */
export async function cachedFolder(key: string, build: (dir: string) => Promise<void>): Promise<CachedCopy> {
  const cacheRoot = process.env[FIXTURE_CACHE_ENV];
  const copy = path.join(tempDir('ds-fixture-copy-'), key);
  if (!cacheRoot) {
    mkdirSync(copy);
    await build(copy);
    return { dir: copy, builtIn: copy };
  }
  const built = path.join(cacheRoot, key);
  const lock = `${built}.lock`;
  let mine = false;
  try {
    mkdirSync(lock);
    mine = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  // Built under another name and renamed: a waiter sees the whole folder or none.
  const partial = `${built}.partial`;
  if (mine) {
    mkdirSync(partial);
    try {
      await build(partial);
    } catch (error) {
      writeFileSync(path.join(lock, FAILED_FILE), error instanceof Error ? (error.stack ?? error.message) : String(error));
      throw error;
    }
    renameSync(partial, built);
  } else {
    const deadline = Date.now() + BUILD_WAIT_MS;
    while (!existsSync(built)) {
      if (existsSync(path.join(lock, FAILED_FILE))) throw new Error(`test setup: the shared fixture ${key} failed to build in another test file (${path.join(lock, FAILED_FILE)})`);
      if (Date.now() > deadline) throw new Error(`test setup: the shared fixture ${key} was not built within ${BUILD_WAIT_MS} ms by the test file building it`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
  cpSync(built, copy, { recursive: true, preserveTimestamps: true });
  return { dir: copy, builtIn: partial };
}

/** Removes a copy cachedFolder gave (and the temporary folder around it). */
export function removeCopy(copy: string): void {
  rmSync(path.dirname(copy), { recursive: true, force: true });
}
