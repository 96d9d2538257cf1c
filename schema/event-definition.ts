// What every event type declares: its category, its payload schema, the version of
// that schema, and which writer roles may append it. The catalogue (event-catalog.ts)
// is the single list of these; nothing else names event types by hand.
import { z } from 'zod';

export const EVENT_CATEGORIES = [
  'WorldEvent',
  'SystemEvent',
  'ModelOutputEvent',
  'ActionEvent',
  'MemoryEvent',
  'PlanEvent',
  'ExperimentEvent',
] as const;
export const EventCategory = z.enum(EVENT_CATEGORIES);
export type EventCategory = z.infer<typeof EventCategory>;

/** Roles a writer connection can authenticate as (DESIGN §2). */
export const WriterRole = z.enum(['runtime', 'experiment']);
export type WriterRole = z.infer<typeof WriterRole>;

/**
 * Who may append a category. The runtime writes what the subject did; the controller
 * ("experiment") writes what happened to it. Event types that only the writer itself
 * produces (StoreOpened, AppendRejected) list no role at all.
 */
export const DEFAULT_WRITERS: Record<EventCategory, readonly WriterRole[]> = {
  WorldEvent: ['experiment'],
  SystemEvent: ['experiment'],
  ExperimentEvent: ['experiment'],
  ModelOutputEvent: ['runtime'],
  ActionEvent: ['runtime'],
  MemoryEvent: ['runtime'],
  PlanEvent: ['runtime'],
};

export const SemVer = z.string().regex(/^\d+\.\d+\.\d+$/, 'expected MAJOR.MINOR.PATCH');

export interface EventDefinition<
  C extends EventCategory = EventCategory,
  N extends string = string,
  P extends z.ZodType = z.ZodType,
> {
  readonly category: C;
  readonly name: N;
  readonly type: `${C}.${N}`;
  readonly schemaVersion: string;
  readonly payload: P;
  readonly writers: readonly WriterRole[];
  /**
   * Payload schemas of earlier versions this build still reads (verify checks a stored event
   * against the schema of its own version; a replay lifts it with an upcaster, schema/upcasters.ts).
   */
  readonly earlier: Readonly<Record<string, z.ZodType>>;
}

export function defineEvent<C extends EventCategory, N extends string, P extends z.ZodType>(
  category: C,
  name: N,
  schemaVersion: string,
  payload: P,
  writers: readonly WriterRole[] = DEFAULT_WRITERS[category],
  earlier: Readonly<Record<string, z.ZodType>> = {},
): EventDefinition<C, N, P> {
  SemVer.parse(schemaVersion);
  for (const version of Object.keys(earlier)) {
    SemVer.parse(version);
    if (version === schemaVersion) throw new Error(`${category}.${name}: an earlier version equals the current one (${version})`);
  }
  return { category, name, type: `${category}.${name}`, schemaVersion, payload, writers, earlier };
}

/** Bounded building blocks shared by payload schemas. */
export const ShortText = z.string().min(1).max(200);
export const LongText = z.string().max(16_384);
export const Identifier = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'expected an identifier [A-Za-z0-9._:-], at most 128 characters');
export const EventId = z.uuid();
export const Timestamp = z.iso.datetime();
