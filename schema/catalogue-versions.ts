// Which version of each event type a store opened under each event catalogue holds (issue 15).
// StoreOpened records the catalogue (event_schema_version) the writer ran with, and a writer
// writes only its catalogue's version of a type (writer/draft-validation.ts). So in a store of
// catalogue X every event of type T is at X's version of T: an older version in a store of the
// current catalogue, or a newer type or version in a store of an older one, came from another
// writer or a forger. verify holds every event to this (writer/verify-store.ts).
import type { EventDefinition } from './event-definition.js';
import { EVENT_SCHEMA_VERSION, EVENT_TYPES, eventDefinition, type EventType } from './event-catalog.js';
import { BUILT_IN_UPCASTERS, upcasterKey } from './upcasters.js';

/**
 * Per earlier catalogue whose stores this build reads: the version of each type that differs
 * from the current catalogue's, null for a type it did not have. A type not listed was at its
 * current version. When a catalogue bump changes a type, add its old version to every earlier
 * entry here (with its schema in the definition's `earlier` and an upcaster).
 */
export type EarlierCatalogues = Readonly<Record<string, Readonly<Record<string, string | null>>>>;

/** One earlier catalogue's changed versions, keyed by types the compiler checks against the catalogue. */
type CatalogueChanges = Readonly<Partial<Record<EventType, string | null>>>;

export const EARLIER_CATALOGUES: EarlierCatalogues = {
  // Before issue 15: the /1 call records; the transport attempts were not recorded.
  '1.0.0': {
    'ModelOutputEvent.ModelAnswered': '1.2.0',
    'ModelOutputEvent.ModelCallFailed': '1.1.0',
    'ModelOutputEvent.ModelCallAttemptFailed': null,
    'ExperimentEvent.BudgetLedgerRecorded': '1.0.0',
    'SystemEvent.Resumed': '1.0.0',
  },
  // Before issue 34: the call records without prompt_reuse.
  '1.1.0': {
    'ModelOutputEvent.ModelAnswered': '1.3.0',
    'ModelOutputEvent.ModelCallFailed': '1.2.0',
    'ExperimentEvent.BudgetLedgerRecorded': '1.0.0',
    'SystemEvent.Resumed': '1.0.0',
  },
  // Before issue 36: the call records without the provider's finish reason, cache counts and cost; the ledger without the wake's cost; resumes without a raised cost cap.
  '1.2.0': {
    'ModelOutputEvent.ModelAnswered': '1.4.0',
    'ModelOutputEvent.ModelCallFailed': '1.3.0',
    'ExperimentEvent.BudgetLedgerRecorded': '1.0.0',
    'SystemEvent.Resumed': '1.0.0',
  },
} satisfies Readonly<Record<string, CatalogueChanges>>;

/** Every catalogue whose stores this build reads, oldest first; the last is EVENT_SCHEMA_VERSION. */
export const KNOWN_CATALOGUES: readonly string[] = [...Object.keys(EARLIER_CATALOGUES), EVENT_SCHEMA_VERSION];

/**
 * The schema_version `definition`'s type has in a store of `catalogue`: a version, null when the
 * type did not exist in that catalogue, undefined when this build does not know the catalogue.
 */
export function versionInCatalogue(catalogue: string, definition: EventDefinition, earlier: EarlierCatalogues = EARLIER_CATALOGUES): string | null | undefined {
  if (catalogue === EVENT_SCHEMA_VERSION) return definition.schemaVersion;
  const changed = earlier[catalogue];
  if (changed === undefined) return undefined;
  const version = changed[definition.type];
  return version === undefined ? definition.schemaVersion : version;
}

/**
 * What is wrong with a table of earlier catalogues, [] when nothing: every version it names is
 * one this build reads and lifts (an `earlier` schema and an upcaster), every type it names is in
 * the catalogue, and every `earlier` schema belongs to some catalogue (else verify would refuse
 * every store holding it, or accept a version no writer ever wrote).
 */
export function earlierCataloguesProblems(earlier: EarlierCatalogues): string[] {
  const problems: string[] = [];
  const named = new Set<string>();
  for (const [catalogue, changed] of Object.entries(earlier)) {
    if (catalogue === EVENT_SCHEMA_VERSION) problems.push(`catalogue ${catalogue} is the current one: list only earlier ones`);
    for (const [type, version] of Object.entries(changed)) {
      const definition = eventDefinition(type);
      if (!definition) {
        problems.push(`catalogue ${catalogue} names ${type}, which is not in the event catalogue`);
        continue;
      }
      if (version === null) continue;
      named.add(upcasterKey(type, version));
      if (version === definition.schemaVersion) problems.push(`catalogue ${catalogue} lists ${type} at its current version ${version}: list only versions that differ`);
      else if (!(version in definition.earlier)) problems.push(`catalogue ${catalogue} holds ${type} ${version}, which this build has no schema for (the definition's earlier map)`);
      else if (!BUILT_IN_UPCASTERS.has(upcasterKey(type, version))) problems.push(`catalogue ${catalogue} holds ${type} ${version}, which no built-in upcaster lifts`);
    }
  }
  for (const type of EVENT_TYPES) {
    for (const version of Object.keys(eventDefinition(type)!.earlier)) {
      if (!named.has(upcasterKey(type, version))) problems.push(`${type} ${version} has a schema in the catalogue but no earlier catalogue holds it`);
    }
  }
  return problems;
}

// Checked at load, like the catalogue's own list: a wrong table would fail honest stores or pass forged ones.
const problems = earlierCataloguesProblems(EARLIER_CATALOGUES);
if (problems.length > 0) throw new Error(`schema/catalogue-versions.ts: ${problems.join('; ')}`);
