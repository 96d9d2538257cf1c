// One rule for every command (issue 16 class 6): with --json, stdout carries exactly one JSON
// object whatever happens — on failure {ok:false, command, exit_code, error:{code, message}} with
// exit_code the process's own exit code and a typed code — and no failure prints a stack trace.
// Each command gets input a user can type that it must refuse; all run as the real command
// (test/support/cli.ts), at once, from inputs that cost nothing to make.
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { runCli, type CliResult } from '../support/cli.js';
import { tempDir } from '../support/writer-fixture.js';

const dir = tempDir('ds-json-failure-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const aFile = path.join(dir, 'a-file.txt');
writeFileSync(aFile, 'not a folder\n');
const empty = path.join(dir, 'empty');
mkdirSync(empty);
const missing = path.join(dir, 'no-such-folder');

interface Case {
  readonly command: string;
  readonly args: readonly string[];
  readonly exitCode: number;
  /** The typed code, or a pattern of them where the command's own code refines it. */
  readonly code: string | RegExp;
}

const CASES: readonly Case[] = [
  { command: 'verify', args: [missing], exitCode: 2, code: 'verify_input' },
  { command: 'verify', args: [aFile], exitCode: 2, code: 'verify_input' },
  { command: 'verify', args: [], exitCode: 2, code: 'usage' },
  { command: 'replay', args: [missing], exitCode: 2, code: 'store_not_found' },
  { command: 'replay', args: [empty, '--to-seq', 'ten'], exitCode: 2, code: 'usage' },
  { command: 'restore', args: [empty], exitCode: 2, code: 'store_not_found' },
  { command: 'prereg', args: ['check', path.join(dir, 'none.json')], exitCode: 2, code: 'prereg_input' },
  { command: 'prereg', args: ['sign', aFile], exitCode: 2, code: 'usage' },
  { command: 'review', args: ['status', missing], exitCode: 2, code: /^review_input/ },
  { command: 'review', args: ['frobnicate'], exitCode: 2, code: 'usage' },
  { command: 'repair', args: [empty], exitCode: 2, code: 'usage' },
  { command: 'audit', args: [missing, '--port', '0'], exitCode: 2, code: 'store_not_found' },
  { command: 'audit', args: [empty, '--port', 'eighty'], exitCode: 2, code: 'usage' },
  { command: 'experiment', args: ['--group', 'C', '--start-at', 'yesterday'], exitCode: 2, code: 'usage' },
  { command: 'experiment', args: ['--group', 'C', '--out', aFile], exitCode: 2, code: 'usage' },
  { command: 'experiment', args: ['--group', 'C', '--experiment-id', '../x', '--out', path.join(dir, 'never-made')], exitCode: 2, code: 'usage' },
  { command: 'study', args: ['--n', 'three'], exitCode: 2, code: 'usage' },
  { command: 'study', args: ['--out', aFile], exitCode: 2, code: 'study_out_is_a_file' },
  { command: 'export', args: [], exitCode: 2, code: 'usage' },
  { command: 'faults', args: ['--run', '1'], exitCode: 2, code: 'usage' },
  { command: 'demo', args: ['--out', aFile], exitCode: 2, code: 'usage' },
];

/** The one JSON object of stdout (anything else there fails the rule). */
function onlyObject(result: CliResult): Record<string, unknown> {
  const lines = result.stdout.split('\n').filter((l) => l.trim() !== '');
  expect(lines, `stdout must be exactly one JSON line:\n${result.stdout}`).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

describe('--json on failure: one object, the exit code, a typed code, no stack', () => {
  test(
    'every command',
    async () => {
      const before = readdirSync(dir).sort();
      const results = await Promise.all(CASES.map((c) => runCli(c.command, [...c.args, '--json'])));
      CASES.forEach((c, i) => {
        const result = results[i]!;
        const what = `${c.command} ${c.args.join(' ')}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
        expect(result.code, what).toBe(c.exitCode);
        const body = onlyObject(result);
        expect(body, what).toMatchObject({ ok: false, command: c.command, exit_code: c.exitCode });
        const error = body.error as { code: string; message: string };
        if (typeof c.code === 'string') expect(error.code, what).toBe(c.code);
        else expect(error.code, what).toMatch(c.code);
        expect(error.message.length, what).toBeGreaterThan(10);
        // The screen has the message too (a person reads stderr), and never a stack.
        expect(result.stderr, what).toContain(`${c.command}: `);
        expect(result.stderr, what).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
        expect(result.stderr, what).not.toMatch(/SqliteError|ZodError|ENOTDIR|internal error/);
      });
      // Refused: nothing was created or changed beside the inputs.
      expect(readdirSync(dir).sort()).toEqual(before);
      expect(existsSync(path.join(dir, 'never-made'))).toBe(false);
    },
    180_000,
  );

  test('success carries the exit code in its one object too', async () => {
    const result = await runCli('verify', [empty, '--json']);
    // A folder without a store is a verification failure (exit 1) with the report, not an error.
    expect(result.code).toBe(1);
    expect(onlyObject(result)).toMatchObject({ ok: false, stores: 0, exit_code: 1, failures: [expect.objectContaining({ reason: expect.stringContaining('no events.db') })] });
  }, 60_000);
});
