import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: on CI's 2 cores, one file at a time
    // (the suite took ~10.5 min serially). The tests wait on real processes and disks far more
    // than they compute, so two files at once; every test's deadline is far above its time.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
