// expected_checkpoints.json of a package: the oracle's expected checkpoint of every scored wake,
// which is what the scorecard's "equal to the oracle's" compares a recorded checkpoint with
// (issue 32). The very call the scorer makes (oracle/instance-evaluation.ts: computeOracle with
// the run's pre-registered rules, its scenario and its plan), so the reviewer compares with what
// the oracle compared with, written in the package's neutral names: wake ids become W01…, minutes
// simulated times.
//
// Why this reveals nothing: computeOracle has no parameter for a subject's events or its
// settings, and the plan it reads is built from the pre-registration, the scenario, the
// replicate's seed and the study's start only (design/experiment-plan.ts; a replicate's seed is
// the same for its three instances, study-contract/study-replicates.ts). The leak check does not take
// that on trust: it recomputes the file for every instance of the study and holds the instances
// of each replicate to one and the same text (leak-check.ts, kind oracle_differs_in_replicate).
import { computeOracle } from '../oracle/expected-checkpoints.js';
import type { RunRecord } from '../oracle/run-record.js';
import { NormalizeError, wakeRefOfIndex } from './event-normalizer.js';
import { ExpectedCheckpoints } from './package-format.js';
import { formatSimMinute } from './sim-time.js';

/** A wake id of the schedule inside the oracle's words ("delivered at wake-0005"). */
const WAKE_ID_IN_TEXT = /\bwake-\d{4,}\b/g;

/** The expected checkpoints of a run, in the package's names. Pure: the same record gives the same file. */
export function expectedCheckpointsOf(record: RunRecord): ExpectedCheckpoints {
  const oracle = computeOracle({ rules: record.prereg.scoring.oracle, scenario: record.scenario.definition, plan: record.plan });
  const wakes = record.plan.schedule.wakes;
  const refOf = new Map(wakes.map((w, i) => [w.wake_id, wakeRefOfIndex(i)] as const));
  const minuteOf = new Map(wakes.map((w) => [w.wake_id, w.at_minute] as const));
  const wake = (id: string): string => {
    const ref = refOf.get(id);
    if (ref === undefined) throw new NormalizeError(`the oracle names ${id}, which the run's schedule does not hold`);
    return ref;
  };
  const words = (text: string): string => text.replace(WAKE_ID_IN_TEXT, (id) => refOf.get(id) ?? '[wake]');
  const at = (id: string): string => formatSimMinute(minuteOf.get(id) ?? 0);
  return ExpectedCheckpoints.parse({
    oracle_rules_version: oracle.oracle_rules_version,
    checkpoints: oracle.checkpoints.map((c) => ({
      wake: wake(c.wake_id),
      t: formatSimMinute(c.at_minute),
      current_goal_id: c.current_goal_id,
      goal_status: c.goal_status,
      attention_target: c.attention_target,
      waiting_condition: c.waiting_condition,
      next_action: c.next_action.kind === 'task' ? { kind: 'task', id: c.next_action.task_id } : c.next_action.kind === 'wait' ? { kind: 'wait', id: c.next_action.thread_id } : { kind: 'none', id: null },
      because: c.because.map(words),
    })),
    unscored_wakes: oracle.unscored_wakes.map((u) => ({ wake: wake(u.wake_id), t: at(u.wake_id), reason: words(u.reason) })),
    tasks_done_at: Object.entries(oracle.task_done_at).map(([taskId, w]) => ({ task_id: taskId, wake: w === null ? null : wake(w) })),
    submission_wake: oracle.submission_wake_id === null ? null : wake(oracle.submission_wake_id),
  });
}

/** The file's text: the same bytes for the same expectations (the leak check compares texts). */
export function expectedCheckpointsText(expected: ExpectedCheckpoints): string {
  return `${JSON.stringify(expected, null, 2)}\n`;
}
