// A controller's process ends when its instance does: no timer of its own left holding the event
// loop. A bounded wait that never cleared its timer (the wait for a lost writer's exit, after the
// planned writer crash) kept every instance with a writer restart alive CHILD_STOP_TIMEOUT_MS
// after it had printed its result — 5.8 s of work took 14.7 s, in every test, study and fault run.
// Real parts: `npm run experiment` as a real process (its bundle), with its writer and runtime.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { CHILD_STOP_TIMEOUT_MS } from '../../controller/instance-processes.js';
import { processCodeFor } from '../../foundation/process-code.js';
import { controllerSetup } from '../support/controller-run.js';

const REPO = path.resolve(import.meta.dirname, '..', '..');
const setup = controllerSetup();

afterAll(() => rmSync(setup.dir, { recursive: true, force: true }));

test('an instance with a planned writer restart: the controller exits right after it prints its result', async () => {
  const code = await processCodeFor(path.join(REPO, 'cli', 'experiment.ts'), REPO);
  const out = path.join(setup.dir, 'runs', 'exit');
  const child = spawn(process.execPath, [...code.execArgv, code.main, '--group', 'A', '--prereg', setup.preregFile, '--key-dir', setup.keyDir, '--out', out, '--same-uid', 'test run in one uid', '--json'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let resultAtMs: number | null = null;
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    // --json prints exactly one object, as the command's last act.
    if (resultAtMs === null && stdout.includes('"exit_code"')) resultAtMs = performance.now();
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exitCode = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  const exitedAtMs = performance.now();
  expect(exitCode, `${stdout}\n${stderr.slice(-3000)}`).toBe(0);
  // The path that held the timer was taken: the writer was killed as planned and restarted.
  expect(stderr).toContain('restarting it on the same store');
  expect(JSON.parse(stdout).status).toBe('finished');
  expect(resultAtMs).not.toBeNull();
  // Not a speed claim: the bound only tells "exits when done" from "waits out a 10 s timer", with slack for a busy machine.
  expect(exitedAtMs - resultAtMs!).toBeLessThan(CHILD_STOP_TIMEOUT_MS / 2);
}, 120_000);
