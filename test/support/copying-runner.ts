// A stand-in for runNewInstance in study tests: instead of running an instance, copies a prepared
// real run folder into the instance's folder. The study then scores real, signed runs, in seconds.
// In its block it takes the turns the copied run's wakes would have taken (its start, then each
// wake: take, release, ended), so the block's record is that of members run side by side.
import { cpSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Group, InstanceResult, NewInstanceOptions } from '../../controller/instance-runner.js';
import { START_TURN_INDEX } from '../../design/block-turn-order.js';
import { ExperimentPlan } from '../../design/experiment-plan.js';
import { RUN_FILES } from '../../schema/run-files.js';
import type { StudyOptions } from '../../study/study-runner.js';
import { SCENARIOS_DIR, TEST_START_AT, type ControllerSetup } from './controller-run.js';

/** The copied run's turns in its block, as its wakes would have taken them. */
async function takeTheCopysTurns(o: NewInstanceOptions): Promise<void> {
  const seat = o.block;
  if (seat === undefined) return;
  const plan = ExperimentPlan.parse(JSON.parse(readFileSync(path.join(o.runDir, RUN_FILES.plan), 'utf8')));
  const ids = ['start', ...plan.schedule.wakes.map((w) => w.wake_id)];
  // The copied run ran every wake, whatever stop comes now: its turns are taken whole.
  const never = new AbortController().signal;
  for (let k = START_TURN_INDEX; k < plan.schedule.wakes.length; k += 1) {
    const turn = (await seat.takeTurn(k, ids[k + 1]!, never))!;
    turn.release();
    if (k >= 0) seat.wakeEnded(k);
  }
}

export interface CopyCall {
  readonly group: Group;
  readonly replicate: number;
}

/** `from` names the run to copy; every call is pushed to `calls`; `afterCopy` may forge the copy. */
export function copyingRunner(calls: CopyCall[], from: (group: Group, replicate: number) => string, afterCopy?: (dir: string, call: CopyCall) => void) {
  return async (o: NewInstanceOptions): Promise<InstanceResult> => {
    const call = { group: o.group, replicate: o.replicate };
    calls.push(call);
    cpSync(from(o.group, o.replicate), o.runDir, { recursive: true });
    afterCopy?.(o.runDir, call);
    await takeTheCopysTurns(o);
    o.log(`wake-0001 at h00:00 (copied)`);
    return {
      status: 'finished',
      runDir: o.runDir,
      experimentId: o.experimentId,
      groupBlindId: o.groupBlindId,
      isolation: { mode: 'same-uid', reason: 'copied in a test' },
      isolationSummary: 'copied',
      wakesTotal: 0,
      wakesRun: 0,
      head: { seq: 1, event_hash: `sha256:${'0'.repeat(64)}` },
      finalHead: null,
      stopReason: null,
      notes: [],
      forecast: null,
    };
  };
}

/** A reference-policy study of `setup`'s pre-registration into `outDir` whose instances `runInstance` gives (copyingRunner, usually): everything else as the study tests share it. */
export function copiedStudyOptions(setup: Pick<ControllerSetup, 'preregFile' | 'keyDir'>, outDir: string, seed: string, studyId: string, overrides: Partial<StudyOptions> & Pick<StudyOptions, 'runInstance'>): StudyOptions {
  return {
    outDir,
    seed,
    preregFile: setup.preregFile,
    keyDir: setup.keyDir,
    scenariosDir: SCENARIOS_DIR,
    concurrency: 2,
    n: null,
    startAt: TEST_START_AT,
    model: { adapter: 'reference' },
    studyId,
    operator: 'test',
    signal: new AbortController().signal,
    log: () => {},
    onProgress: () => {},
    ...overrides,
  };
}
