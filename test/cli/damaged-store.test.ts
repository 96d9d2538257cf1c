// A damaged, empty or locked store is a clear refusal, never a stack trace, and a refused
// command leaves the run folder byte-identical (issue 16, classes 2 and 3). One real finished
// run and one real stopped run are made once; each case works on a copy. The damage is what a
// disk or a stray write leaves: seeded random bytes over a page in the middle of events.db
// (test/support/damaged-store-file.ts), below SQLite. Every command is the real one
// (test/support/cli.ts); each case checks the exit code, the message (naming the file), the
// JSON object and that every file of the folder, and the list of names, is as it was.
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync, statSync, truncateSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RUN_FILES } from '../../schema/run-files.js';
import { StoreReadError, StoreReader } from '../../writer/store-reader.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { runCli, spawnCli, type CliResult } from '../support/cli.js';
import { controllerSetup, newInstanceOptions, runInstance, spawnExperimentCli, waitForOutput, type ControllerSetup } from '../support/controller-run.js';
import { damageMiddleOfStore } from '../support/damaged-store-file.js';
import { finishedRun, type FinishedRun } from '../support/finished-run.js';
import { tempDir } from '../support/writer-fixture.js';
import { folderState } from '../support/folder-state.js';

/** A command that should refuse at once; one that serves instead (the audit desk) is killed after this. */
const REFUSAL_TIMEOUT_MS = 60_000;
/** How long the first of two resumes may take to hold the store, and then to finish. */
const RESUME_TIMEOUT_MS = 90_000;
/** A plausible repair: which intent, what happened, who says so and how they know. */
const REPAIR_FLAGS = ['--resolve-intent', '5d0c3e2a-9b1f-4c6e-8a7d-2f4b6c8e0a13', '--resolution', 'did_not_happen', '--operator', 'tester', '--note', 'looked at the workspace file'];

let finished: FinishedRun;
let stoppedDir: string;
let stoppedSetup: ControllerSetup;
const scratch: string[] = [];

beforeAll(async () => {
  // A stopped run: an emergency stop (an abort, as the CLI's SIGINT is) after the fifth wake.
  // Its own setup (key folder), so that it runs while the finished run is made or copied.
  stoppedSetup = controllerSetup();
  const stop = new AbortController();
  const run = newInstanceOptions(stoppedSetup, { name: 'stopped', group: 'B', groupBlindId: 'inst-stopped', signal: stop.signal, log: (line) => line.startsWith('wake-0005 ') && stop.abort('test: operator stop after wake-0005') });
  const [made, result] = await Promise.all([finishedRun(), runInstance(run)]);
  finished = made;
  if (result.status !== 'stopped') throw new Error(`test setup: the run to resume did not stop: ${result.status}`);
  stoppedDir = run.options.runDir;
}, 180_000);

afterAll(() => {
  finished?.cleanup();
  if (stoppedSetup) rmSync(stoppedSetup.dir, { recursive: true, force: true });
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A copy of a run folder, removed after the file. */
function copyOf(runDir: string): string {
  const dir = path.join(tempDir('ds-damaged-'), path.basename(runDir));
  scratch.push(path.dirname(dir));
  cpSync(runDir, dir, { recursive: true });
  return dir;
}


/** No stack trace and no raw SQLite error reaches the user. */
function expectNoStack(result: CliResult): void {
  const both = `${result.stdout}\n${result.stderr}`;
  expect(both, both).not.toMatch(/^\s+at /m);
  expect(both, both).not.toMatch(/SqliteError/);
}

/** Exactly one JSON object on stdout. */
function onlyJson(result: CliResult): Record<string, unknown> {
  const lines = result.stdout.split('\n').filter((l) => l.trim() !== '');
  expect(lines, result.stdout).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

/** The failure object every command prints with --json (cli/command-outcome.ts). */
function expectJsonRefusal(result: CliResult, code: string, file: string): void {
  const json = onlyJson(result);
  expect(json).toMatchObject({ ok: false, exit_code: 1, error: { code, message: expect.stringContaining(file) } });
}

/** A command that would serve forever if it did not refuse: ended after REFUSAL_TIMEOUT_MS (and then the test fails). */
async function runRefusing(script: string, args: readonly string[]): Promise<CliResult> {
  const cli = spawnCli(script, args);
  let stdout = '';
  let stderr = '';
  cli.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  cli.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => cli.child.kill('SIGKILL'), REFUSAL_TIMEOUT_MS);
  const code = await cli.exited;
  clearTimeout(timer);
  return { code: code ?? -1, stdout, stderr };
}

describe('random bytes over a page in the middle of a finished run\'s events.db', () => {
  /** A damaged copy of the finished run, its store, and the folder as it was before the command. */
  function damaged(): { dir: string; store: string; before: ReturnType<typeof folderState> } {
    const dir = copyOf(finished.runDir);
    const store = path.join(dir, RUN_FILES.store);
    damageMiddleOfStore(store);
    return { dir, store, before: folderState(dir) };
  }

  test('verify (text): exit 1, the damaged store listed with its code, the folder byte-identical', async () => {
    const { dir, store, before } = damaged();
    const result = await runCli('verify', [dir]);
    expectNoStack(result);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/FAILED \(\d+\):/);
    expect(result.stdout).toContain(`events.db seq `);
    expect(result.stdout).toContain(`store_damaged: ${store} is damaged: it is not an intact SQLite database`);
    expect(folderState(dir)).toEqual(before);
  });

  test('verify --json: exit 1 and one JSON object, the report, listing the damaged store', async () => {
    const { dir, store, before } = damaged();
    const result = await runCli('verify', [dir, '--json']);
    expectNoStack(result);
    expect(result.code, result.stderr).toBe(1);
    const report = onlyJson(result) as { ok: boolean; failures: { store: string; reason: string }[] };
    expect(report.ok).toBe(false);
    expect(report.failures).toContainEqual(expect.objectContaining({ store: RUN_FILES.store, reason: expect.stringMatching(new RegExp(`^store_damaged: ${store.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&')} is damaged`)) }));
    expect(folderState(dir)).toEqual(before);
  });

  test('replay --json: store_damaged, exit 1, byte-identical', async () => {
    const { dir, store, before } = damaged();
    const result = await runCli('replay', [dir, '--json']);
    expectNoStack(result);
    expect(result.code, result.stderr).toBe(1);
    expectJsonRefusal(result, 'store_damaged', store);
    expect(result.stderr).toContain(`${store} is damaged`);
    expect(folderState(dir)).toEqual(before);
  });

  test('restore --json: store_damaged, exit 1, byte-identical', async () => {
    const { dir, store, before } = damaged();
    const result = await runCli('restore', [dir, '--json']);
    expectNoStack(result);
    expect(result.code, result.stderr).toBe(1);
    expectJsonRefusal(result, 'store_damaged', store);
    expect(folderState(dir)).toEqual(before);
  });

  test('repair --json: store_damaged, exit 1, nothing appended, byte-identical', async () => {
    const { dir, store, before } = damaged();
    const result = await runCli('repair', [dir, ...REPAIR_FLAGS, '--json']);
    expectNoStack(result);
    expect(result.code, result.stderr).toBe(1);
    expectJsonRefusal(result, 'store_damaged', store);
    expect(folderState(dir)).toEqual(before);
  });

  test('audit: refused before serving, exit 1, byte-identical', async () => {
    const { dir, store, before } = damaged();
    const result = await runRefusing('audit', [dir, '--port', '0']);
    expectNoStack(result);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).not.toContain('serving http');
    expect(result.stderr).toContain(`${store} is damaged: it is not an intact SQLite database`);
    expect(folderState(dir)).toEqual(before);
  });

  test('experiment --resume --json: store_damaged, exit 1, nothing spawned or written, byte-identical', async () => {
    const { dir, store, before } = damaged();
    const result = await runCli('experiment', ['--resume', dir, '--key-dir', finished.setup.keyDir, '--same-uid', 'test', '--json']);
    expectNoStack(result);
    expect(result.code, result.stderr).toBe(1);
    expectJsonRefusal(result, 'store_damaged', store);
    expect(result.stderr).not.toMatch(/ds-writer pid/);
    expect(folderState(dir)).toEqual(before);
  });

  test('in-process: the reader says damaged, naming the file, where a read meets the page, and at open with checkIntegrity', () => {
    const { dir, store, before } = damaged();
    const reader = StoreReader.open(store);
    let error: unknown = null;
    try {
      for (const _row of reader.iterateEvents(0, Number.MAX_SAFE_INTEGER)) void _row;
    } catch (caught) {
      error = caught;
    } finally {
      reader.close();
    }
    expect(error).toBeInstanceOf(StoreReadError);
    expect(error).toMatchObject({ code: 'damaged', message: expect.stringContaining(`${store} is damaged`) });
    expect(() => StoreReader.open(store, { checkIntegrity: true })).toThrow(expect.objectContaining({ code: 'damaged' }) as unknown as Error);
    expect(folderState(dir)).toEqual(before);
  });
});

describe('verify goes on after a damaged store', () => {
  test('a study-like folder with a damaged run and an intact one: one failure for the damaged store, the intact one verified', () => {
    const parent = tempDir('ds-damaged-two-');
    scratch.push(parent);
    cpSync(finished.runDir, path.join(parent, 'a-damaged'), { recursive: true });
    cpSync(finished.runDir, path.join(parent, 'b-intact'), { recursive: true });
    damageMiddleOfStore(path.join(parent, 'a-damaged', RUN_FILES.store));
    const report = verifyDirectory(parent);
    expect(report.stores).toBe(2);
    expect(report.failures.map((f) => f.store)).toEqual([path.join('a-damaged', RUN_FILES.store)]);
    expect(report.failures[0]!.reason).toMatch(/^store_damaged: .*a-damaged\/events\.db is damaged: it is not an intact SQLite database/);
    // Every event of the intact run was read, and those of the damaged one up to the damage.
    expect(report.events).toBeGreaterThan(finished.events.length);
    expect(report.events).toBeLessThan(2 * finished.events.length);
  });

  test('damage only a page-by-page check finds (an index page): still a store_damaged failure', () => {
    const dir = copyOf(finished.runDir);
    damageMiddleOfStore(path.join(dir, RUN_FILES.store), { btree: 'events_by_type' });
    const report = verifyDirectory(dir);
    expect(report.events).toBe(finished.events.length);
    expect(report.failures).toEqual([{ store: RUN_FILES.store, seq: null, reason: expect.stringMatching(/^store_damaged: .* is damaged: it is not an intact SQLite database \(SQLite (quick_check|SQLITE_CORRUPT)/) }]);
  });
});

describe('an intact finished run', () => {
  test('experiment --resume is refused as finished before a writer starts (it would rewrite the header): byte-identical', async () => {
    const dir = copyOf(finished.runDir);
    const before = folderState(dir);
    const result = await runCli('experiment', ['--resume', dir, '--key-dir', finished.setup.keyDir, '--same-uid', 'test']);
    expectNoStack(result);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/is finished and sealed \(seq \d+\); nothing to resume/);
    expect(result.stderr).not.toMatch(/ds-writer pid/);
    expect(folderState(dir)).toEqual(before);
  });
});

describe('an empty events.db (0 bytes)', () => {
  test('experiment --resume is refused as store_empty, and the file stays 0 bytes: the folder byte-identical', async () => {
    const dir = copyOf(stoppedDir);
    const store = path.join(dir, RUN_FILES.store);
    truncateSync(store, 0);
    const before = folderState(dir);
    const result = await runCli('experiment', ['--resume', dir, '--key-dir', stoppedSetup.keyDir, '--same-uid', 'test', '--json']);
    expectNoStack(result);
    expect(result.code, result.stderr).toBe(1);
    expectJsonRefusal(result, 'store_empty', store);
    expect(result.stderr).toContain(`${store} is empty (0 bytes)`);
    expect(statSync(store).size).toBe(0);
    expect(folderState(dir)).toEqual(before);
  });
});

describe('a hot journal (a writer killed inside a transaction, e.g. its journal-mode switch)', () => {
  test('verify lists it (exit 1) saying the resume rolls it back, changes nothing; the resume does, and the run goes on', async () => {
    const dir = copyOf(stoppedDir);
    const store = path.join(dir, RUN_FILES.store);
    // A real process killed with SIGKILL mid-transaction in rollback-journal mode: what SQLite leaves is a hot -journal.
    const script = [
      `const Database = (await import(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))})).default;`,
      `const db = new Database(${JSON.stringify(store)});`,
      "db.pragma('journal_mode = DELETE'); db.pragma('cache_size = 1'); db.exec('BEGIN');",
      "db.exec('CREATE TABLE junk (x)'); db.exec('INSERT INTO junk SELECT randomblob(4000) FROM events');",
      "process.kill(process.pid, 'SIGKILL');",
    ].join('\n');
    const killed = spawnSync(process.execPath, ['--input-type=module', '-e', script]);
    expect(killed.signal).toBe('SIGKILL');
    expect(statSync(`${store}-journal`).size).toBeGreaterThan(0);
    const before = folderState(dir);
    const verified = await runCli('verify', [dir, '--open', '--json']);
    expectNoStack(verified);
    expect(verified.code, verified.stderr).toBe(1);
    const report = onlyJson(verified) as { failures: { reason: string }[] };
    expect(report.failures).toContainEqual(expect.objectContaining({ reason: expect.stringMatching(/^store_read_only: .* has a hot journal beside it .*--resume .* rolls the unfinished transaction back/) }));
    expect(folderState(dir)).toEqual(before);
    const resumed = await runCli('experiment', ['--resume', dir, '--key-dir', stoppedSetup.keyDir, '--same-uid', 'test']);
    expectNoStack(resumed);
    expect(resumed.code, resumed.stderr.slice(-2_000)).toBe(0);
    expect((await runCli('verify', [dir])).code).toBe(0);
  }, RESUME_TIMEOUT_MS);
});

describe('two resumes of one stopped run at once', () => {
  test('the second is refused as store_locked (safe, nothing changed), and the first finishes normally', async () => {
    const dir = copyOf(stoppedDir);
    const store = path.join(dir, RUN_FILES.store);
    const common = ['--key-dir', stoppedSetup.keyDir, '--same-uid', 'test'];
    // Slowed so that it still holds the store while the second starts (~3 s): the ~60 virtual hours left take ~11 s at 20,000×.
    const first = spawnExperimentCli(['--resume', dir, '--speed', '20000', ...common]);
    try {
      await waitForOutput(first.output, /ds-writer pid \d+ serving seq/, RESUME_TIMEOUT_MS);
      const second = await runCli('experiment', ['--resume', dir, ...common, '--json']);
      expectNoStack(second);
      expect(second.code, second.stderr).toBe(1);
      expectJsonRefusal(second, 'store_locked', store);
      expect(second.stderr).toMatch(/is locked: a writer is still running on it .*That is safe: nothing was changed/);
      expect(second.stderr).not.toMatch(/ds-writer pid/);
      expect(first.child.exitCode, first.output()).toBeNull();
      expect(await first.exited, first.output()).toBe(0);
      expect(first.output()).toMatch(/FINISHED: /);
      expect(first.output()).toMatch(/verify: OK/);
    } finally {
      if (first.child.exitCode === null) process.kill(-first.child.pid!, 'SIGKILL');
    }
  }, 2 * RESUME_TIMEOUT_MS);
});
