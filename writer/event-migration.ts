// Applies registered upcasters to one stored event until it reads at the catalogue's
// schema_version (spec §10.4). Only the in-memory copy changes: payload_hash and
// event_hash still name the stored event, so evidence that cites an event by hash keeps
// pointing at what was actually recorded.
import { z } from 'zod';
import { JsonObject, type EventEnvelope } from '../schema/envelope.js';
import { eventDefinition } from '../schema/event-catalog.js';
import { SemVer } from '../schema/event-definition.js';
import { upcasterKey, type UpcasterRegistry } from '../schema/upcasters.js';
import { MissingUpcasterError, ReplayRefusal } from './replay-errors.js';

/** More steps than any real chain of schema versions: past it, an upcaster loops. */
const MAX_UPCAST_STEPS = 32;

const UpcastOutput = z.strictObject({ schema_version: SemVer, payload: JsonObject });

/** `event` at the catalogue's schema_version: itself when it already is, else upcast and checked against the schema. */
export function migrateEvent(event: EventEnvelope, upcasters: UpcasterRegistry): EventEnvelope {
  const definition = eventDefinition(event.event_type);
  if (!definition) throw new ReplayRefusal('bad_upcast', `seq ${event.seq}: this build's catalogue has no event type ${event.event_type} to migrate to`);
  let current = event;
  for (let step = 0; current.schema_version !== definition.schemaVersion; step += 1) {
    if (step >= MAX_UPCAST_STEPS) {
      throw new ReplayRefusal('bad_upcast', `seq ${event.seq}: ${event.event_type} still at ${current.schema_version} after ${MAX_UPCAST_STEPS} upcasts (do the upcasters loop?)`);
    }
    const key = upcasterKey(current.event_type, current.schema_version);
    const upcaster = upcasters.get(key);
    if (!upcaster) throw new MissingUpcasterError([{ key, first_seq: event.seq, events: 1 }]);
    const output = UpcastOutput.safeParse(upcaster(current));
    if (!output.success) throw new ReplayRefusal('bad_upcast', `seq ${event.seq}: upcaster ${key} returned ${z.prettifyError(output.error)}`);
    if (output.data.schema_version === current.schema_version) {
      throw new ReplayRefusal('bad_upcast', `seq ${event.seq}: upcaster ${key} returned the version it started from`);
    }
    current = { ...current, schema_version: output.data.schema_version, payload: output.data.payload };
  }
  if (current === event) return event;
  const payload = definition.payload.safeParse(current.payload);
  if (!payload.success) {
    throw new ReplayRefusal('bad_upcast', `seq ${event.seq}: the upcast ${event.event_type} payload does not match schema ${definition.schemaVersion}: ${z.prettifyError(payload.error)}`);
  }
  return current;
}
