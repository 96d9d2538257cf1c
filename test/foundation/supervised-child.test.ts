// The one supervised-child life cycle (foundation/supervised-child.ts), with real child
// processes: ready, a refusal, silence until the deadline (the child is killed), an exit during
// start-up, and a stop the child ignores (SIGKILL behind the request). Each path is forged by a
// child script that behaves that way.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { startSupervisedChild, type StartReading, type SupervisedChildSpec } from '../../foundation/supervised-child.js';

type Ready = { readonly pid: number };

function childScript(body: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'supervised-')), 'child.mjs');
  writeFileSync(file, body);
  return file;
}

class StartFailed extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

function spec(body: string, overrides: Partial<SupervisedChildSpec<Ready>> = {}): SupervisedChildSpec<Ready> {
  const readStart = (raw: unknown): StartReading<Ready> => {
    const m = raw as { type?: string; pid?: number; why?: string };
    if (m.type === 'ready') return { ready: { pid: m.pid! } };
    if (m.type === 'refused') return { refused: new StartFailed('refused', m.why!) };
    return null;
  };
  return {
    label: 'child',
    logTag: '[test]',
    code: { main: childScript(body), execArgv: [], reused: false },
    env: { PATH: process.env.PATH },
    startTimeoutMs: 5_000,
    startMessage: { type: 'start' },
    readStart,
    startError: (code, message) => new StartFailed(code, message),
    ...overrides,
  };
}

describe('startSupervisedChild', () => {
  test('ready: messages before and after ready that are not the start reach onMessage; stop asks and the child exits', async () => {
    const seen: unknown[] = [];
    const body = `process.on('message', (m) => {
      if (m.type === 'start') { process.send({ type: 'note', n: 1 }); process.send({ type: 'ready', pid: process.pid }); process.send({ type: 'note', n: 2 }); }
      if (m.type === 'shutdown') process.exit(0);
    });`;
    const child = await startSupervisedChild(spec(body, { onMessage: (raw) => seen.push(raw) }));
    expect(child.ready.pid).toBe(child.child.pid);
    expect(child.alive()).toBe(true);
    expect(child.exitNow()).toBeNull();
    const exit = await child.stop({ type: 'shutdown' }, 5_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(seen).toEqual([{ type: 'note', n: 1 }, { type: 'note', n: 2 }]);
    expect(child.exitNow()).toEqual({ code: 0, signal: null });
    expect(child.send({ type: 'late' })).toBe(false);
  });

  test("a refusal rejects with the child's own error", async () => {
    const body = `process.on('message', () => { process.send({ type: 'refused', why: 'no store' }); setTimeout(() => process.exit(3), 50); });`;
    await expect(startSupervisedChild(spec(body))).rejects.toMatchObject({ code: 'refused', message: 'no store' });
  });

  test('silence until the deadline: rejected as start_timeout and the child is SIGKILLed', async () => {
    const pidFile = path.join(mkdtempSync(path.join(tmpdir(), 'supervised-pid-')), 'pid');
    const body = `import { writeFileSync } from 'node:fs'; writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); process.on('message', () => {}); setInterval(() => {}, 1000);`;
    await expect(startSupervisedChild(spec(body, { startTimeoutMs: 500 }))).rejects.toMatchObject({ code: 'start_timeout', message: 'child did not become ready within 500 ms' });
    const pid = Number(readFileSync(pidFile, 'utf8'));
    // The deadline killed it: signal 0 to its pid finds no process once the kill has landed.
    const gone = async (): Promise<boolean> => {
      for (let i = 0; i < 50; i += 1) {
        try {
          process.kill(pid, 0);
        } catch {
          return true;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      return false;
    };
    expect(await gone()).toBe(true);
  });

  test('an exit during start-up rejects as exited, naming code and signal', async () => {
    const body = `process.on('message', () => process.exit(7));`;
    await expect(startSupervisedChild(spec(body))).rejects.toMatchObject({ code: 'exited', message: 'child exited during start-up (code 7, signal null)' });
  });

  test('a stop the child ignores ends in SIGKILL after the timeout', async () => {
    const body = `process.on('message', (m) => { if (m.type === 'start') process.send({ type: 'ready', pid: process.pid }); }); setInterval(() => {}, 1000);`;
    const child = await startSupervisedChild(spec(body));
    const started = Date.now();
    const exit = await child.stop({ type: 'shutdown' }, 300);
    expect(exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });
});
