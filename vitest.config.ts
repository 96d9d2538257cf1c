import { defineConfig } from 'vitest/config';
import SlowestFirstSequencer from './test/support/slowest-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: on CI's 2 cores, one file at a time
    // (the suite took ~10.5 min serially). The tests wait on real processes, timeouts and disks
    // for much of their time (a file's wall time is often twice its CPU time), so three files at
    // once keep both cores busy; every test's deadline is far above its time.
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One temporary folder per run on tmpfs (durable commits without a disk's fsync), which
    // also holds the fixtures several files share: test/support/suite-temp-dir.ts.
    globalSetup: ['./test/support/suite-temp-dir.ts'],
    // The slowest files first, also on a clean clone without Vitest's cache of durations.
    sequence: { sequencer: SlowestFirstSequencer },
  },
});
