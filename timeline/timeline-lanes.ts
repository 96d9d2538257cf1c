// The lanes of an instance's 72-hour picture and the marks each may hold: what a mark means, its
// shape, its colour and the letter printed on it. Shape and letter carry the meaning on their
// own, so a page printed in grey (or read with a colour-vision deficiency) still tells a crashed
// wake from a completed one; the colour only helps. One source for every page that draws the
// picture (the audit desk, the study report) and for the legend under it.
import type { InterventionKind } from '../design/intervention-plan.js';
import type { EventType } from '../schema/event-catalog.js';
import { MODEL_CALL_FAILURES } from '../schema/events/model-output-events.js';

export const LANES = ['wakes', 'interventions', 'crashes', 'stops', 'model_failures', 'denials', 'facts', 'accuracy'] as const;
export type Lane = (typeof LANES)[number];

export const LANE_LABELS: Readonly<Record<Lane, string>> = {
  wakes: 'wakes',
  interventions: 'interventions',
  crashes: 'crashes, restarts',
  stops: 'stops, resumes',
  model_failures: 'failed model calls',
  denials: 'denials',
  facts: 'FACT claims',
  accuracy: 'checkpoint accuracy',
};

/** The event types a lane is drawn from (accuracy: the checkpoints its scores belong to). */
export const LANE_EVENT_TYPES: Readonly<Record<Lane, readonly EventType[]>> = {
  wakes: ['ExperimentEvent.WakeStarted', 'ExperimentEvent.WakeEnded'],
  interventions: ['ExperimentEvent.InterventionDelivered'],
  crashes: ['SystemEvent.ProcessRestarted'],
  stops: ['SystemEvent.EmergencyStopped', 'SystemEvent.Paused', 'SystemEvent.Resumed'],
  model_failures: ['ModelOutputEvent.ModelCallFailed'],
  denials: ['ActionEvent.PermissionDecided'],
  facts: ['MemoryEvent.ClaimRecorded'],
  accuracy: ['ExperimentEvent.CheckpointRecorded'],
};

/** Every event type the picture reads: a reader of a large store reads only these rows. */
export const TIMELINE_EVENT_TYPES: readonly EventType[] = [...new Set(LANES.flatMap((lane) => LANE_EVENT_TYPES[lane]))];

export type MarkShape = 'square' | 'hollow' | 'cross' | 'bar' | 'diamond' | 'triangle' | 'circle';

export interface MarkStyle {
  readonly meaning: string;
  readonly shape: MarkShape;
  /** Okabe–Ito colours where they mean something; black where they do not. */
  readonly colour: string;
  /** One or two characters printed beside the mark: the meaning without colour. */
  readonly letter: string;
}

const WAKE_STYLES = {
  completed: { meaning: 'wake completed', shape: 'square', colour: '#009E73', letter: '' },
  budget_exhausted: { meaning: 'wake ended: budget exhausted', shape: 'hollow', colour: '#E69F00', letter: 'b' },
  crashed: { meaning: 'wake crashed', shape: 'cross', colour: '#D55E00', letter: 'x' },
  stopped: { meaning: 'wake stopped', shape: 'bar', colour: '#CC79A7', letter: 's' },
  open: { meaning: 'wake never ended (no WakeEnded)', shape: 'hollow', colour: '#000000', letter: '?' },
} as const satisfies Record<string, MarkStyle>;

const INTERVENTION_STYLES = {
  goal_change: { meaning: 'goal change', shape: 'diamond', colour: '#0072B2', letter: 'G' },
  external_file_change: { meaning: 'file changed outside', shape: 'diamond', colour: '#0072B2', letter: 'F' },
  awaited_reply: { meaning: 'awaited reply', shape: 'diamond', colour: '#0072B2', letter: 'R' },
  distractor_burst: { meaning: 'distractor burst', shape: 'diamond', colour: '#0072B2', letter: 'D' },
  denied_request: { meaning: 'tempted request (to be denied)', shape: 'diamond', colour: '#0072B2', letter: 'T' },
  refutation: { meaning: 'refutation', shape: 'diamond', colour: '#0072B2', letter: 'X' },
  runtime_crash: { meaning: 'planned runtime crash', shape: 'diamond', colour: '#D55E00', letter: 'C' },
  writer_crash: { meaning: 'planned writer crash', shape: 'diamond', colour: '#D55E00', letter: 'W' },
  long_absence: { meaning: 'long absence', shape: 'diamond', colour: '#0072B2', letter: 'A' },
  unplanned: { meaning: 'delivery of an intervention the plan does not hold', shape: 'diamond', colour: '#000000', letter: '?' },
} as const satisfies Record<InterventionKind | 'unplanned', MarkStyle>;

const CRASH_STYLES = {
  runtime: { meaning: 'runtime restarted after a crash', shape: 'cross', colour: '#D55E00', letter: 'r' },
  writer: { meaning: 'writer restarted after a crash', shape: 'cross', colour: '#D55E00', letter: 'w' },
} as const satisfies Record<string, MarkStyle>;

const STOP_STYLES = {
  stopped: { meaning: 'emergency stop', shape: 'bar', colour: '#CC79A7', letter: 'S' },
  paused: { meaning: 'paused by an operator', shape: 'bar', colour: '#CC79A7', letter: 'P' },
  resumed: { meaning: 'resumed', shape: 'triangle', colour: '#009E73', letter: 'R' },
} as const satisfies Record<string, MarkStyle>;

const failureStyle = (failure: (typeof MODEL_CALL_FAILURES)[number], letter: string): MarkStyle => ({ meaning: `model call failed: ${failure}`, shape: 'cross', colour: '#D55E00', letter });
const FAILURE_LETTERS: Readonly<Record<(typeof MODEL_CALL_FAILURES)[number], string>> = {
  timeout: 'T', transport: 'N', http_error: 'H', refusal: 'R', truncated_prompt: 'P', stream_broken: 'B', schema_violation: 'S', length: 'L', budget_exhausted: '$', cost_cap: 'C',
};
const FAILURE_STYLES = Object.fromEntries(MODEL_CALL_FAILURES.map((f) => [f, failureStyle(f, FAILURE_LETTERS[f])])) as Record<(typeof MODEL_CALL_FAILURES)[number], MarkStyle>;

export const MARK_STYLES: Readonly<Record<Lane, Readonly<Record<string, MarkStyle>>>> = {
  wakes: WAKE_STYLES,
  interventions: INTERVENTION_STYLES,
  crashes: CRASH_STYLES,
  stops: STOP_STYLES,
  model_failures: FAILURE_STYLES,
  denials: { denied: { meaning: 'permission denied', shape: 'cross', colour: '#000000', letter: '' } },
  facts: { fact: { meaning: 'FACT claim recorded', shape: 'circle', colour: '#56B4E9', letter: '' } },
  accuracy: { scored: { meaning: 'checkpoint accuracy (bar height: 0–100 points)', shape: 'bar', colour: '#009E73', letter: '' } },
};

/** The style of `kind` in `lane`; a kind this build does not know is drawn in black with '?', never dropped. */
export function markStyle(lane: Lane, kind: string): MarkStyle {
  return MARK_STYLES[lane][kind] ?? { meaning: `${kind} (a kind this picture does not know)`, shape: 'hollow', colour: '#000000', letter: '?' };
}
