// The order Vitest starts test files in: the slowest first, so that two workers finish
// together instead of one running a long file alone at the end.
//
// Vitest does this itself from the durations it cached on an earlier run; a clean clone (CI)
// has no cache, and Vitest then starts the largest files first, which is not the same order
// (test/runtime/context-and-policy.test.ts is the largest and takes seconds). Without a cached
// duration a file's measured one from file-durations.json is used; a file in neither (a new
// one) starts first, since nothing says it is quick.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { z } from 'zod';

/** Seconds per file (repo-relative), measured on the 2-core machine: an order, not a bound. */
const FileDurations = z.record(z.string(), z.number().nonnegative());
const DURATIONS_FILE = path.join(path.dirname(new URL(import.meta.url).pathname), 'file-durations.json');

export default class SlowestFirstSequencer extends BaseSequencer {
  private readonly measuredSeconds = FileDurations.parse(JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')));

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const secondsOf = (spec: TestSpecification): number => {
      const relative = path.relative(root, spec.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative}`);
      if (cached) return cached.duration / 1_000;
      return this.measuredSeconds[relative] ?? Number.POSITIVE_INFINITY;
    };
    return [...files].sort((a, b) => secondsOf(b) - secondsOf(a));
  }
}
