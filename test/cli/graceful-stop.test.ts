// The stop of a cluster task and of a study (cli/operator-stop.ts installGracefulStop):
// the first press asks for a stop at the next wake boundary, the grace's end or a second press
// cuts the wake under way. In-process: the signal handlers are called as Node calls them
// (process.emit with the signal's name), so no signal reaches the test worker itself. The real
// processes' side is test/cli/interrupt.test.ts (a study's Ctrl-C) and
// test/cluster/slurm-study.test.ts (scancel of a task).
import { afterEach, describe, expect, it } from 'vitest';
import { installGracefulStop, SAME_PRESS_WINDOW_MS, type GracefulStop } from '../../cli/operator-stop.js';

const GRACE_MS = 200;
let installed: GracefulStop | null = null;
afterEach(() => {
  installed?.release();
  installed = null;
});

function install(lines: string[]): GracefulStop {
  installed = installGracefulStop((line) => lines.push(line), 'stopping the instance', 'npm run study -- --instance K --out STUDY', GRACE_MS);
  return installed;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('a graceful stop', () => {
  it('asks for the wake boundary at the first press, and cuts the wake when the grace runs out, saying so each time', async () => {
    const lines: string[] = [];
    const stop = install(lines);
    process.emit('SIGTERM', 'SIGTERM');
    expect(stop.atWakeEnd.aborted).toBe(true);
    expect(stop.atWakeEnd.reason).toBe('operator signal SIGTERM');
    expect(stop.signal.aborted).toBe(false);
    expect(lines).toEqual([expect.stringMatching(/^SIGTERM: emergency stop — stopping the instance \(each wake under way finishes first, at most 0\.2 s, then it is cut;/)]);
    await sleep(GRACE_MS * 3);
    expect(stop.signal.aborted).toBe(true);
    expect(stop.signal.reason).toBe('operator signal SIGTERM (the wake under way cut after a 0.2 s grace)');
    expect(lines[1]).toMatch(/^the wake under way did not end within 0\.2 s of SIGTERM: cutting it/);
  });

  it('cuts the wake at a second press after the same-press window, not at a relay of the first', async () => {
    const lines: string[] = [];
    installed = installGracefulStop((line) => lines.push(line), 'stopping the instance', 'npm run study -- --instance K --out STUDY', 60_000);
    const stop = installed;
    process.emit('SIGINT', 'SIGINT');
    process.emit('SIGINT', 'SIGINT'); // npm's relayed copy of the same press
    expect(stop.atWakeEnd.aborted).toBe(true);
    expect(stop.signal.aborted).toBe(false);
    await sleep(SAME_PRESS_WINDOW_MS + 300);
    expect(stop.signal.aborted).toBe(false);
    process.emit('SIGINT', 'SIGINT');
    expect(stop.signal.aborted).toBe(true);
    expect(stop.signal.reason).toBe('operator signal SIGINT (a second press: the wake under way cut)');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^second SIGINT: cutting the wake under way now/);
  });

  it('once released, a signal is no longer taken as a press', () => {
    const lines: string[] = [];
    const stop = install(lines);
    stop.release();
    // emit calls the listeners only (Node's default action is for a real signal): none of ours is left.
    process.emit('SIGTERM', 'SIGTERM');
    expect(stop.atWakeEnd.aborted).toBe(false);
    expect(lines).toEqual([]);
  });
});
