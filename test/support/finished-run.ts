// One real finished instance for tests that read a run (the audit desk's): the in-process
// controller with a real ds-writer and ds-runtime on a real SQLite file, sealed with its final
// head, and its events as stored.
import path from 'node:path';
import type { Group } from '../../controller/instance-runner.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { controllerSetup, newInstanceOptions, reopenControllerSetup, runInstance, type ControllerSetup } from './controller-run.js';
import { cachedFolder, removeCopy } from './fixture-cache.js';
import { storedEvents } from './stored-events.js';

export interface FinishedRun {
  readonly setup: ControllerSetup;
  readonly runDir: string;
  readonly dbPath: string;
  /** Every event as stored, read with better-sqlite3, not through the code under test. */
  readonly events: EventEnvelope[];
  cleanup(): void;
}

/**
 * A finished run of `group`, named `name`: built once per test run for each (group, name)
 * (fixture-cache.ts) and copied for the caller, setup folder and all, so the caller may change
 * its copy (a stopped run beside it, say) without another file seeing it.
 */
export async function finishedRun(group: Group = 'C', name = 'audited'): Promise<FinishedRun> {
  const { dir: copy } = await cachedFolder(`finished-run-${group}-${name}`, async (dir) => {
    const setup = controllerSetup(dir);
    const result = await runInstance(newInstanceOptions(setup, { group, name }));
    if (result.status !== 'finished') throw new Error(`test setup: the reference run did not finish: ${result.status}`);
  });
  const setup = reopenControllerSetup(copy);
  const runDir = path.join(setup.dir, 'runs', name);
  return { setup, runDir, dbPath: path.join(runDir, RUN_FILES.store), events: storedEvents(runDir), cleanup: () => removeCopy(copy) };
}
