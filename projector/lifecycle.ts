// The lifecycle state machine (spec §11.1) as an explicit table: (from, trigger) → the
// states the projector may move to. Anything not listed is an illegal transition and
// the event that implies it is refused at append time.
import { z } from 'zod';
import type { EventType } from '../schema/event-catalog.js';

export const LIFECYCLE_STATES = ['CREATED', 'DORMANT', 'AWAKE', 'RECOVERING', 'PAUSED', 'STOPPED'] as const;
export const LifecycleState = z.enum(LIFECYCLE_STATES);
export type LifecycleState = z.infer<typeof LifecycleState>;

export const LIFECYCLE_TRIGGERS = [
  'SystemEvent.SubjectInitialized',
  'ExperimentEvent.WakeStarted',
  'ExperimentEvent.WakeEnded',
  'ActionEvent.ToolOutcomeUnknown',
  'SystemEvent.OperatorResolved',
  'SystemEvent.Paused',
  'SystemEvent.Resumed',
  'SystemEvent.EmergencyStopped',
] as const satisfies readonly EventType[];
export type LifecycleTrigger = (typeof LIFECYCLE_TRIGGERS)[number];

type Row = readonly [from: LifecycleState, trigger: LifecycleTrigger, to: readonly LifecycleState[]];

const ROWS: readonly Row[] = [
  ['CREATED', 'SystemEvent.SubjectInitialized', ['DORMANT']],
  ['DORMANT', 'ExperimentEvent.WakeStarted', ['AWAKE']],
  ['AWAKE', 'ExperimentEvent.WakeEnded', ['DORMANT']],
  // An unconfirmable side effect: read-only until an operator resolves it (DESIGN §7).
  ['DORMANT', 'ActionEvent.ToolOutcomeUnknown', ['RECOVERING']],
  ['AWAKE', 'ActionEvent.ToolOutcomeUnknown', ['RECOVERING']],
  ['RECOVERING', 'ActionEvent.ToolOutcomeUnknown', ['RECOVERING']],
  // Wakes still happen while recovering (the schedule is shared); the subject only observes.
  ['RECOVERING', 'ExperimentEvent.WakeStarted', ['RECOVERING']],
  ['RECOVERING', 'ExperimentEvent.WakeEnded', ['RECOVERING']],
  // Resolving the last unknown outcome returns to where the schedule is.
  ['RECOVERING', 'SystemEvent.OperatorResolved', ['RECOVERING', 'AWAKE', 'DORMANT']],
  ['DORMANT', 'SystemEvent.Paused', ['PAUSED']],
  ['AWAKE', 'SystemEvent.Paused', ['PAUSED']],
  ['RECOVERING', 'SystemEvent.Paused', ['PAUSED']],
  // A wake may end while paused (the schedule goes on); resuming returns to where it is.
  ['PAUSED', 'ExperimentEvent.WakeEnded', ['PAUSED']],
  ['PAUSED', 'SystemEvent.Resumed', ['DORMANT', 'AWAKE', 'RECOVERING']],
  ['CREATED', 'SystemEvent.EmergencyStopped', ['STOPPED']],
  ['DORMANT', 'SystemEvent.EmergencyStopped', ['STOPPED']],
  ['AWAKE', 'SystemEvent.EmergencyStopped', ['STOPPED']],
  ['RECOVERING', 'SystemEvent.EmergencyStopped', ['STOPPED']],
  ['PAUSED', 'SystemEvent.EmergencyStopped', ['STOPPED']],
  // An operator may resume an emergency-stopped instance (`--resume`, issue 4 item 9).
  // The stop ended any wake, so it resumes between wakes — read-only (RECOVERING) while an
  // unknown tool outcome is still open: stopping does not resolve it, and refusing the resume
  // left such an instance unable ever to finish (found while building the fault harness's invariants, issue 8).
  ['STOPPED', 'SystemEvent.Resumed', ['DORMANT', 'RECOVERING']],
  // An operator settles an unknown outcome while the run is stopped or paused (`npm run repair`,
  // issue 9): the subject stays where it is, and the resume finds nothing left open. Refusing
  // it there left no moment for a repair: a resume goes on with the next wake at once.
  ['STOPPED', 'SystemEvent.OperatorResolved', ['STOPPED']],
  ['PAUSED', 'SystemEvent.OperatorResolved', ['PAUSED']],
];

const TABLE: ReadonlyMap<string, ReadonlySet<LifecycleState>> = new Map(ROWS.map(([from, trigger, to]) => [`${from}|${trigger}`, new Set(to)]));

/** The lifecycle transition table as data, for docs and tests. */
export const LIFECYCLE_TABLE = ROWS;

export function lifecycleAllows(from: LifecycleState, trigger: LifecycleTrigger, to: LifecycleState): boolean {
  return TABLE.get(`${from}|${trigger}`)?.has(to) ?? false;
}
