// Handlers per event category (issue 33 item 5). Code that does one thing per event type — the
// projector's fold, the blind-review normalizer, the audit desk's one-line summary — keeps one map
// per category of the catalogue, each in a file of its own, instead of one switch over every type.
// The types here keep what the switch gave: the compiler demands a handler for every type of a
// category and refuses one for a type outside it (a mapped type over the category's types, which
// come from the catalogue's definitions), and the categories together are checked against the
// catalogue, at compile time below and once more when a dispatcher is made (dispatcherOf).
import { EVENT_CATEGORIES, type EventCategory } from './event-definition.js';
import { EVENT_TYPES, type EventType, type PayloadOf, type TypedEvent } from './event-catalog.js';

/** The catalogue's event types of category C: a definition's type is `${category}.${name}` (schema/event-definition.ts). */
export type EventTypeIn<C extends EventCategory> = Extract<EventType, `${C}.${string}`>;

/** One handler per event type of category C, and none for any other type. */
export type CategoryHandlers<C extends EventCategory, Context, Result> = {
  readonly [T in EventTypeIn<C>]: (payload: PayloadOf<T>, context: Context) => Result;
};

/** A handler map for every category. */
export type HandlersByCategory<Context, Result> = { readonly [C in EventCategory]: CategoryHandlers<C, Context, Result> };

/** `true` when A and B are the same set of types, else `false`. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Types that two categories would both claim (none, unless a category's name were a prefix of another's type). */
type InTwoCategories = { [C in EventCategory]: EventTypeIn<C> & EventTypeIn<Exclude<EventCategory, C>> }[EventCategory];

// The compile-time check of the catalogue: every event type is in one category, and in no second
// one, so a HandlersByCategory has exactly one handler for each. Either line fails to compile otherwise.
true satisfies Same<EventTypeIn<EventCategory>, EventType>;
true satisfies Same<InTwoCategories, never>;

/** Calls the handler of `event`'s type with its payload. */
export type EventDispatcher<Context, Result> = (event: TypedEvent, context: Context) => Result;

type AnyHandler<Context, Result> = (payload: unknown, context: Context) => Result;

/**
 * The dispatcher over the category maps. It checks again what the types promise, for a map that
 * reached here past the compiler (a cast): each handler is under its own category (so no type has
 * two), every type of the catalogue has one, and none is for a type the catalogue lacks; otherwise
 * it throws (a bug, found when the module that makes the dispatcher loads).
 */
export function dispatcherOf<Context, Result>(byCategory: HandlersByCategory<Context, Result>): EventDispatcher<Context, Result> {
  const handlers = new Map<string, AnyHandler<Context, Result>>();
  for (const category of EVENT_CATEGORIES) {
    for (const [type, handler] of Object.entries(byCategory[category] as Record<string, AnyHandler<Context, Result>>)) {
      if (!type.startsWith(`${category}.`)) throw new Error(`the ${category} handlers list ${type}, a type of another category`);
      handlers.set(type, handler);
    }
  }
  const missing = EVENT_TYPES.filter((type) => !handlers.has(type));
  if (missing.length > 0) throw new Error(`no handler for ${missing.join(', ')}`);
  const unknown = [...handlers.keys()].filter((type) => !(EVENT_TYPES as readonly string[]).includes(type));
  if (unknown.length > 0) throw new Error(`handlers for types the catalogue lacks: ${unknown.join(', ')}`);
  return (event, context) => {
    const handler = handlers.get(event.event_type);
    if (handler === undefined) throw new Error(`no handler for ${event.event_type}: not a type of the catalogue`);
    return handler(event.payload, context);
  };
}
