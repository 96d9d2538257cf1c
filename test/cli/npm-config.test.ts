// The project's .npmrc, as npm itself reads it (not its text): `npm run X -- --json` through npm
// prints exactly one JSON object on stdout — npm's "> pkg script" banner, which goes to stdout at
// any loglevel but silent, stays off it — and the dependencies' install scripts run in the
// foreground, so that `npm ci` shows the native build's progress instead of a minute of nothing.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/controller-run.js';

const run = promisify(execFile);

async function npm(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run('npm', [...args], { cwd: REPO }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

/** One JSON object and nothing else, or null. */
function oneObject(stdout: string): unknown {
  try {
    const value: unknown = JSON.parse(stdout);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

describe('npm configuration (.npmrc)', () => {
  it('npm run verify -- DIR --json prints one JSON object on stdout', async () => {
    const r = await npm(['run', 'verify', '--', '/nonexistent/calm-npm-check', '--json']);
    expect(r.code).not.toBe(0);
    expect(oneObject(r.stdout)).toMatchObject({ command: 'verify' });
  }, 60_000);

  it('forged: at loglevel notice npm puts its banner on stdout, and the check sees the output is no longer one object', async () => {
    const r = await npm(['--loglevel=notice', 'run', 'verify', '--', '/nonexistent/calm-npm-check', '--json']);
    expect(r.stdout).toContain('> digital-subject-runtime@');
    expect(oneObject(r.stdout)).toBeNull();
  }, 60_000);

  it('install scripts run in the foreground (npm ci shows the native build as it runs)', async () => {
    expect((await npm(['config', 'get', 'foreground-scripts'])).stdout.trim()).toBe('true');
    expect((await npm(['config', 'get', 'loglevel'])).stdout.trim()).toBe('silent');
  }, 60_000);
});
