// A writer that dies just before the controller stops it (issue 32's mid-suite run: a crash drill's
// writer gone while `child.connected` still read true): the shutdown message's write fails with
// EPIPE after send returns. That is said and left to the exit; before, the 'error' it raised had
// no listener and killed the controller with an uncaught exception. Real writer process.
import { describe, expect, test } from 'vitest';
import { startWriterFixture } from '../support/writer-fixture.js';

describe('stopping a writer that has just died', () => {
  test('stop() right after a SIGKILL: no uncaught EPIPE, the exit says SIGKILL', async () => {
    const f = await startWriterFixture();
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      // Same tick: the IPC channel still reads connected, so stop() sends into a dead pipe.
      process.kill(f.writer.pid, 'SIGKILL');
      const exit = await f.writer.stop(5_000);
      expect(exit.signal).toBe('SIGKILL');
      // Give a late 'error' event its turn: an unhandled one would fail this file.
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      process.stderr.write = write;
    }
    // When the write failed, it was said (whether the kernel let the write through before the exit is a race).
    for (const line of lines.filter((l) => l.includes('[spawnWriter]'))) expect(line).toMatch(/could not send shutdown to the writer \(.*\); its exit says why|writer process error/);
  });
});
