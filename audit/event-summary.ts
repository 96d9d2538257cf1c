// One line per event for the desk's lists: what an auditor scans for. Each event category says
// how its events read in a map of its own (audit/summary/*-events.ts), typed so that a new event
// type does not compile until it says how it reads (schema/category-handlers.ts).
// The full envelope is always on the event's own page; a summary is never the evidence.
import { dispatcherOf } from '../schema/category-handlers.js';
import { currentPayloadOf } from '../schema/current-payload.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { eventDefinition, type TypedEvent } from '../schema/event-catalog.js';
import { summarizeActionEvents } from './summary/action-events.js';
import { summarizeExperimentEvents } from './summary/experiment-events.js';
import { summarizeMemoryEvents } from './summary/memory-events.js';
import { summarizeModelOutputEvents } from './summary/model-output-events.js';
import { summarizePlanEvents } from './summary/plan-events.js';
import { short } from './summary/short-text.js';
import { summarizeSystemEvents } from './summary/system-events.js';
import { summarizeWorldEvents } from './summary/world-events.js';

const summaryOf = dispatcherOf<void, string>({
  SystemEvent: summarizeSystemEvents,
  WorldEvent: summarizeWorldEvents,
  ModelOutputEvent: summarizeModelOutputEvents,
  ActionEvent: summarizeActionEvents,
  MemoryEvent: summarizeMemoryEvents,
  PlanEvent: summarizePlanEvents,
  ExperimentEvent: summarizeExperimentEvents,
});

/**
 * The payload as the current catalogue reads it, or why it cannot be read as its type: an event
 * of an earlier version is checked against its own schema and lifted by the built-in upcasters
 * (schema/current-payload.ts), so the desk reads it like every other reader of the run does.
 */
export function typedEvent(event: EventEnvelope): { ok: true; event: TypedEvent } | { ok: false; problem: string } {
  const read = currentPayloadOf(event);
  return read.ok ? read : { ok: false, problem: read.reason };
}

/** Says when the summary reads a lifted copy: the envelope as stored is at another version. */
function liftedNote(event: EventEnvelope): string {
  const current = eventDefinition(event.event_type)?.schemaVersion;
  return current === undefined || current === event.schema_version ? '' : ` [recorded as ${event.schema_version}, read as ${current}: what it did not record shows as unknown]`;
}

export function summarizeEvent(event: EventEnvelope): string {
  const typed = typedEvent(event);
  if (!typed.ok) return `⚠ ${short(typed.problem)}`;
  return `${summaryOf(typed.event)}${liftedNote(event)}`;
}
