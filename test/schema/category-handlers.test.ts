// Handlers per event category (schema/category-handlers.ts): the compiler demands one handler for
// every type of a category and none for another's, and the dispatcher checks the maps against the
// catalogue again at run time. The compile-time checks are held by `@ts-expect-error` lines: were
// a forged map below accepted, `tsc` would fail on the unused directive. The run-time checks are
// held by forged maps cast past the compiler.
import { describe, expect, test } from 'vitest';
import { summarizeActionEvents } from '../../audit/summary/action-events.js';
import { summarizeExperimentEvents } from '../../audit/summary/experiment-events.js';
import { summarizeMemoryEvents } from '../../audit/summary/memory-events.js';
import { summarizeModelOutputEvents } from '../../audit/summary/model-output-events.js';
import { summarizePlanEvents } from '../../audit/summary/plan-events.js';
import { summarizeSystemEvents } from '../../audit/summary/system-events.js';
import { summarizeWorldEvents } from '../../audit/summary/world-events.js';
import { dispatcherOf, type CategoryHandlers, type EventTypeIn, type HandlersByCategory } from '../../schema/category-handlers.js';
import { EVENT_TYPES, type EventType, type TypedEvent } from '../../schema/event-catalog.js';
import { EVENT_CATEGORIES, type EventCategory } from '../../schema/event-definition.js';

/** A handler map for every category whose handlers answer their own type's name. */
function namingMaps(): Record<EventCategory, Record<string, () => string>> {
  const maps = Object.fromEntries(EVENT_CATEGORIES.map((c) => [c, {} as Record<string, () => string>])) as Record<EventCategory, Record<string, () => string>>;
  for (const type of EVENT_TYPES) {
    const category = type.split('.')[0] as EventCategory;
    maps[category][type] = () => type;
  }
  return maps;
}

function asHandlers(maps: Record<EventCategory, Record<string, unknown>>): HandlersByCategory<void, string> {
  return maps as unknown as HandlersByCategory<void, string>;
}

describe('the compiler demands exactly one handler per type of a category', () => {
  test('a complete map compiles; a missing type, a type of another category, and a misread payload do not', () => {
    const plan: CategoryHandlers<'PlanEvent', void, string> = {
      'PlanEvent.PlanRevisionProposed': (p) => p.goal_id,
      'PlanEvent.PlanRevisionAccepted': (p) => p.proposal_id,
      'PlanEvent.PlanRevisionRejected': (p) => p.reason_code,
    };
    // @ts-expect-error forged: PlanRevisionRejected has no handler
    const missing: CategoryHandlers<'PlanEvent', void, string> = {
      'PlanEvent.PlanRevisionProposed': (p) => p.goal_id,
      'PlanEvent.PlanRevisionAccepted': (p) => p.proposal_id,
    };
    const foreign: CategoryHandlers<'PlanEvent', void, string> = {
      ...plan,
      // @ts-expect-error forged: a WorldEvent type in the PlanEvent map
      'WorldEvent.GoalChanged': (p: { goal_id: string }) => p.goal_id,
    };
    const misread: CategoryHandlers<'PlanEvent', void, string> = {
      ...plan,
      // @ts-expect-error forged: an accepted revision's payload has no goal_id
      'PlanEvent.PlanRevisionAccepted': (p) => p.goal_id,
    };
    // The category's types are the catalogue's: every PlanEvent type, and only those.
    const planTypes: EventTypeIn<'PlanEvent'>[] = ['PlanEvent.PlanRevisionProposed', 'PlanEvent.PlanRevisionAccepted', 'PlanEvent.PlanRevisionRejected'];
    expect(Object.keys(plan).sort()).toEqual([...planTypes].sort());
    expect(EVENT_TYPES.filter((t) => t.startsWith('PlanEvent.')).sort()).toEqual([...planTypes].sort());
    // The forged maps exist only for the compiler; at run time they are what they say.
    expect(Object.keys(missing)).toHaveLength(2);
    expect(Object.keys(foreign)).toHaveLength(4);
    expect(misread['PlanEvent.PlanRevisionAccepted']({ proposal_id: 'p1' }, undefined)).toBeUndefined();
  });

  test("a map for every category is needed (the audit desk's summary maps, one left out)", () => {
    const all: HandlersByCategory<void, string> = {
      SystemEvent: summarizeSystemEvents,
      WorldEvent: summarizeWorldEvents,
      ModelOutputEvent: summarizeModelOutputEvents,
      ActionEvent: summarizeActionEvents,
      MemoryEvent: summarizeMemoryEvents,
      PlanEvent: summarizePlanEvents,
      ExperimentEvent: summarizeExperimentEvents,
    };
    // @ts-expect-error forged: no ExperimentEvent map
    const lacking: HandlersByCategory<void, string> = { SystemEvent: all.SystemEvent, WorldEvent: all.WorldEvent, ModelOutputEvent: all.ModelOutputEvent, ActionEvent: all.ActionEvent, MemoryEvent: all.MemoryEvent, PlanEvent: all.PlanEvent };
    expect(Object.keys(lacking)).toHaveLength(EVENT_CATEGORIES.length - 1);
    // With the map given back, it dispatches.
    expect(dispatcherOf(all)({ event_type: 'PlanEvent.PlanRevisionAccepted', payload: { proposal_id: 'p1' } })).toBe('plan revision p1 accepted');
  });
});

describe('the dispatcher', () => {
  test('calls the handler of each catalogue type with its payload and the context', () => {
    const seen: unknown[] = [];
    const maps = namingMaps();
    for (const category of EVENT_CATEGORIES) {
      for (const type of Object.keys(maps[category])) maps[category][type] = ((payload: unknown, context: unknown) => (seen.push([payload, context]), type)) as () => string;
    }
    const dispatch = dispatcherOf(asHandlers(maps) as unknown as HandlersByCategory<string, string>);
    for (const type of EVENT_TYPES) expect(dispatch({ event_type: type, payload: { of: type } } as unknown as TypedEvent, `context of ${type}`)).toBe(type);
    expect(seen).toEqual(EVENT_TYPES.map((type) => [{ of: type }, `context of ${type}`]));
  });

  test('forged: a map lacking a type is refused when the dispatcher is made, naming the type', () => {
    const maps = namingMaps();
    delete maps.ActionEvent['ActionEvent.ToolReconciled'];
    expect(() => dispatcherOf(asHandlers(maps))).toThrow('no handler for ActionEvent.ToolReconciled');
  });

  test('forged: a handler under another category is refused (so no type can have two)', () => {
    const maps = namingMaps();
    maps.WorldEvent['SystemEvent.Paused'] = () => 'twice';
    expect(() => dispatcherOf(asHandlers(maps))).toThrow('the WorldEvent handlers list SystemEvent.Paused, a type of another category');
  });

  test('forged: a handler for a type the catalogue lacks is refused', () => {
    const maps = namingMaps();
    maps.WorldEvent['WorldEvent.Earthquake'] = () => 'new';
    expect(() => dispatcherOf(asHandlers(maps))).toThrow('handlers for types the catalogue lacks: WorldEvent.Earthquake');
  });

  test('forged: an event whose type is not in the catalogue reaches no handler', () => {
    const dispatch = dispatcherOf(asHandlers(namingMaps()));
    expect(() => dispatch({ event_type: 'WorldEvent.Earthquake' as EventType, payload: {} } as TypedEvent)).toThrow('no handler for WorldEvent.Earthquake: not a type of the catalogue');
  });
});
