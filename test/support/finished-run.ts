// One real finished instance for tests that read a run (the audit desk's): the in-process
// controller with a real ds-writer and ds-runtime on a real SQLite file, sealed with its final
// head, and its events as stored.
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { Group } from '../../controller/instance-runner.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { controllerSetup, newInstanceOptions, runInstance, type ControllerSetup } from './controller-run.js';
import { storedEvents } from './stored-events.js';

export interface FinishedRun {
  readonly setup: ControllerSetup;
  readonly runDir: string;
  readonly dbPath: string;
  /** Every event as stored, read with better-sqlite3, not through the code under test. */
  readonly events: EventEnvelope[];
  cleanup(): void;
}

export async function finishedRun(group: Group = 'C', name = 'audited'): Promise<FinishedRun> {
  const setup = controllerSetup();
  const run = newInstanceOptions(setup, { group, name });
  const result = await runInstance(run);
  if (result.status !== 'finished') throw new Error(`test setup: the reference run did not finish: ${result.status}`);
  const runDir = run.options.runDir;
  return { setup, runDir, dbPath: path.join(runDir, RUN_FILES.store), events: storedEvents(runDir), cleanup: () => rmSync(setup.dir, { recursive: true, force: true }) };
}
