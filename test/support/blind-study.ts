// A small real study for the blind-review tests: one real instance per group (A, B and C of one
// seed, each a real run with real ds-writer and ds-runtime processes, so the three really differ
// by group), made into a study folder by runStudy with n = 1 and a stand-in that copies them
// (as test/study/study-runner.test.ts does). copyStudy gives each test a fresh folder, since an
// export seals a map into the study folder and a second export of it is refused.
import Database from 'better-sqlite3';
import { cpSync } from 'node:fs';
import path from 'node:path';
import type { Group } from '../../controller/instance-runner.js';
import { runStudy } from '../../study/study-runner.js';
import { controllerSetup, newInstanceOptions, reopenControllerSetup, runInstance, SCENARIOS_DIR, TEST_START_AT, type ControllerSetup } from './controller-run.js';
import { copyingRunner } from './copying-runner.js';
import { cachedFolder } from './fixture-cache.js';
import { tempDir } from './writer-fixture.js';

export const BLIND_SEED = 'blind-seed-7';
export const BLIND_STUDY_ID = 'exp-blind-review-test';

export interface BlindStudy {
  readonly setup: ControllerSetup;
  /** A study folder with instances A-r1, B-r1, C-r1: never exported itself (use copyStudy). */
  readonly studyDir: string;
  /** The folder the runs and the study were made in (the shared fixture's, not this copy's): no export may name it either. */
  readonly builtIn: string;
}

/** The study folder inside a built (or copied) fixture folder. */
const STUDY_FOLDER = 'study';

/**
 * Three real runs (in parallel, ~25 s) and the study folder made of them: built once per test
 * run (fixture-cache.ts) and copied for the caller, who may use its setup's key folder freely.
 */
export async function makeBlindStudy(): Promise<BlindStudy> {
  const { dir, builtIn } = await cachedFolder('blind-study', buildBlindStudy);
  return { setup: reopenControllerSetup(dir), studyDir: path.join(dir, STUDY_FOLDER), builtIn };
}

async function buildBlindStudy(dir: string): Promise<void> {
  const setup = controllerSetup(dir);
  const source: Partial<Record<Group, string>> = {};
  await Promise.all(
    (['A', 'B', 'C'] as const).map(async (group) => {
      const run = newInstanceOptions(setup, { group, name: `source-${group}`, seed: `${BLIND_SEED}-r1`, experimentId: BLIND_STUDY_ID, groupBlindId: `inst-src${group.toLowerCase()}x` });
      const result = await runInstance(run);
      if (result.status !== 'finished') throw new Error(`test setup: the ${group} run did not finish (${result.status}: ${result.stopReason ?? ''})`);
      source[group] = result.runDir;
    }),
  );
  await runStudy({
    outDir: path.join(dir, STUDY_FOLDER),
    seed: BLIND_SEED,
    preregFile: setup.preregFile,
    keyDir: setup.keyDir,
    scenariosDir: SCENARIOS_DIR,
    concurrency: 3,
    n: 1,
    // One replicate under the default pre-registration (3): a short fixture, said so (issue 35: refused otherwise).
    exploratory: 'test fixture: one replicate per group keeps the blind review tests short',
    startAt: TEST_START_AT,
    model: { adapter: 'reference' },
    studyId: BLIND_STUDY_ID,
    operator: 'test',
    signal: new AbortController().signal,
    log: () => {},
    onProgress: () => {},
    runInstance: copyingRunner([], (group) => source[group]!),
  });
}

/** A fresh copy of a study folder (its own path, no sealed map unless the source has one). */
export function copyStudy(studyDir: string): string {
  const copy = path.join(tempDir('ds-blind-copy-'), 'study');
  cpSync(studyDir, copy, { recursive: true });
  return copy;
}

/** Makes a finished run folder unfinished: its StoreSealed is deleted (the store's triggers dropped first: a forgery). */
export function unseal(runDir: string): void {
  const db = new Database(path.join(runDir, 'events.db'));
  try {
    for (const t of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as { name: string }[]) db.exec(`DROP TRIGGER ${t.name}`);
    db.prepare("DELETE FROM events WHERE event_type = 'SystemEvent.StoreSealed'").run();
  } finally {
    db.close();
  }
}
