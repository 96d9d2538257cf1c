// The one list of event types. Adding a type here makes every exhaustive `switch` over
// EventType that does not handle it a compile error.
import type { z } from 'zod';
import * as action from './events/action-events.js';
import * as experiment from './events/experiment-events.js';
import * as memory from './events/memory-events.js';
import * as modelOutput from './events/model-output-events.js';
import * as plan from './events/plan-events.js';
import * as system from './events/system-events.js';
import * as world from './events/world-events.js';
import type { EventDefinition } from './event-definition.js';

/** Version of the catalogue as a whole: recorded in StoreOpened and in manifests. */
// 1.1.0 (issue 15): ModelAnswered 1.3.0, ModelCallFailed 1.2.0, ModelCallAttemptFailed.
// 1.2.0 (issue 34): ModelAnswered 1.4.0, ModelCallFailed 1.3.0 (prompt_reuse).
// 1.3.0 (issue 36): ModelAnswered 1.5.0, ModelCallFailed 1.4.0 (adapters anthropic and gemini, provider_finish_reason, cache_read_tokens, cache_write_tokens, cost_nano_usd); BudgetLedgerRecorded 1.1.0 (used.cost_nano_usd).
export const EVENT_SCHEMA_VERSION = '1.3.0';

const DEFINITIONS = [
  system.StoreOpened,
  system.AppendRejected,
  system.StoreSealed,
  system.SubjectInitialized,
  system.Paused,
  system.Resumed,
  system.ChainHeadSigned,
  system.ProcessRestarted,
  system.EmergencyStopped,
  system.OperatorResolved,
  world.MessageReceived,
  world.GoalChanged,
  world.FileChangedExternally,
  world.InformationPublished,
  world.DistractorOccurred,
  modelOutput.ModelAnswered,
  modelOutput.ModelCallFailed,
  modelOutput.ModelCallAttemptFailed,
  action.ActionProposed,
  action.PermissionDecided,
  action.ExecutionIntentRecorded,
  action.ToolSucceeded,
  action.ToolFailed,
  action.ToolOutcomeUnknown,
  action.ToolReconciled,
  memory.ClaimRecorded,
  memory.FocusUpdated,
  memory.JournalEntryWritten,
  memory.TaskBoardChanged,
  plan.PlanRevisionProposed,
  plan.PlanRevisionAccepted,
  plan.PlanRevisionRejected,
  experiment.WakeScheduled,
  experiment.WakeStarted,
  experiment.WakeEnded,
  experiment.InterventionDelivered,
  experiment.CheckpointRecorded,
  experiment.BudgetLedgerRecorded,
] as const;

type Definition = (typeof DEFINITIONS)[number];
export type EventType = Definition['type'];
export type PayloadOf<T extends EventType> = z.infer<Extract<Definition, { type: T }>['payload']>;
/** A type-safe (event_type, payload) pair; switch on `event_type` to narrow `payload`. */
export type TypedEvent = { [T in EventType]: { event_type: T; payload: PayloadOf<T> } }[EventType];

const BY_TYPE: ReadonlyMap<string, EventDefinition> = new Map(DEFINITIONS.map((d) => [d.type, d as EventDefinition]));
if (BY_TYPE.size !== DEFINITIONS.length) throw new Error('event catalogue lists a type twice');

export const EVENT_TYPES: readonly EventType[] = DEFINITIONS.map((d) => d.type);

export function eventDefinition(type: string): EventDefinition | undefined {
  return BY_TYPE.get(type);
}

export function isEventType(type: string): type is EventType {
  return BY_TYPE.has(type);
}

export function schemaVersionOf(type: EventType): string {
  const definition = BY_TYPE.get(type);
  if (!definition) throw new Error(`catalogue lacks ${type}`);
  return definition.schemaVersion;
}
