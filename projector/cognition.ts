// The cognitive-activity state machine (spec §11.2) within one wake, as an explicit
// table: (from, trigger) → to. A trigger in a state with no row is illegal.
import { z } from 'zod';
import type { EventType, PayloadOf } from '../schema/event-catalog.js';
import type { PermissionDecided } from '../schema/events/action-events.js';

/** A permission decision's trigger: its event type with the decision it records. */
type DecisionTrigger = `${typeof PermissionDecided.type}:${PayloadOf<typeof PermissionDecided.type>['decision']}`;

export const COGNITIVE_STATES = ['IDLE', 'OBSERVING', 'DELIBERATING', 'AWAITING_PERMISSION', 'EXECUTING', 'REFLECTING'] as const;
export const CognitiveState = z.enum(COGNITIVE_STATES);
export type CognitiveState = z.infer<typeof CognitiveState>;

/** Triggers are event types, except that a permission decision splits by its outcome. */
export const COGNITIVE_TRIGGERS = [
  'ExperimentEvent.WakeStarted',
  'ExperimentEvent.WakeEnded',
  'ModelOutputEvent.ModelAnswered',
  'ModelOutputEvent.ModelCallFailed',
  'ActionEvent.ActionProposed',
  'ActionEvent.PermissionDecided:allow',
  'ActionEvent.PermissionDecided:deny',
  'ActionEvent.ExecutionIntentRecorded',
  'ActionEvent.ToolSucceeded',
  'ActionEvent.ToolFailed',
  'ActionEvent.ToolOutcomeUnknown',
  'MemoryEvent.TaskBoardChanged',
  'MemoryEvent.JournalEntryWritten',
  'MemoryEvent.ClaimRecorded',
  'MemoryEvent.FocusUpdated',
  'PlanEvent.PlanRevisionProposed',
  'PlanEvent.PlanRevisionAccepted',
  'PlanEvent.PlanRevisionRejected',
] as const satisfies readonly (EventType | DecisionTrigger)[];
export type CognitiveTrigger = (typeof COGNITIVE_TRIGGERS)[number];

type Row = readonly [from: readonly CognitiveState[], trigger: CognitiveTrigger, to: CognitiveState];

const THINKING: readonly CognitiveState[] = ['DELIBERATING', 'REFLECTING'];
const IN_WAKE: readonly CognitiveState[] = ['OBSERVING', 'DELIBERATING', 'AWAITING_PERMISSION', 'EXECUTING', 'REFLECTING'];

const ROWS: readonly Row[] = [
  [['IDLE'], 'ExperimentEvent.WakeStarted', 'OBSERVING'],
  // A wake may end anywhere (budget exhausted, crash, stop); open intents outlive it.
  [IN_WAKE, 'ExperimentEvent.WakeEnded', 'IDLE'],
  [['OBSERVING', 'DELIBERATING', 'REFLECTING'], 'ModelOutputEvent.ModelAnswered', 'DELIBERATING'],
  [['OBSERVING', 'DELIBERATING', 'REFLECTING'], 'ModelOutputEvent.ModelCallFailed', 'DELIBERATING'],
  [THINKING, 'ActionEvent.ActionProposed', 'AWAITING_PERMISSION'],
  [['AWAITING_PERMISSION'], 'ActionEvent.PermissionDecided:allow', 'EXECUTING'],
  [['AWAITING_PERMISSION'], 'ActionEvent.PermissionDecided:deny', 'DELIBERATING'],
  [['EXECUTING'], 'ActionEvent.ExecutionIntentRecorded', 'EXECUTING'],
  [['EXECUTING'], 'ActionEvent.ToolSucceeded', 'REFLECTING'],
  [['EXECUTING'], 'ActionEvent.ToolFailed', 'REFLECTING'],
  [['EXECUTING'], 'ActionEvent.ToolOutcomeUnknown', 'REFLECTING'],
  [['EXECUTING'], 'MemoryEvent.TaskBoardChanged', 'REFLECTING'],
  [['EXECUTING'], 'MemoryEvent.JournalEntryWritten', 'REFLECTING'],
  [THINKING, 'MemoryEvent.ClaimRecorded', 'REFLECTING'],
  [THINKING, 'MemoryEvent.FocusUpdated', 'REFLECTING'],
  [THINKING, 'PlanEvent.PlanRevisionProposed', 'REFLECTING'],
  [THINKING, 'PlanEvent.PlanRevisionAccepted', 'REFLECTING'],
  [THINKING, 'PlanEvent.PlanRevisionRejected', 'REFLECTING'],
];

const TABLE: ReadonlyMap<string, CognitiveState> = new Map(ROWS.flatMap(([from, trigger, to]) => from.map((f) => [`${f}|${trigger}`, to] as const)));

export const COGNITIVE_TABLE = ROWS;

/** The next cognitive state, or null when the trigger is illegal in `from`. */
export function cognitiveNext(from: CognitiveState, trigger: CognitiveTrigger): CognitiveState | null {
  return TABLE.get(`${from}|${trigger}`) ?? null;
}
