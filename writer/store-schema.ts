// The SQL layout of events.db (DESIGN §4). The triggers guard against accidents by
// anyone holding the file; tampering by someone who drops them is caught by the chain.
// 2: snapshots table, version columns on the projection row, partial idempotency index.
// 3: trigger events_refuse_after_seal (a format-2 store lacks it, so it cannot be trusted
//    to stay sealed, and is refused rather than silently upgraded).
// A trigger cannot take a bound parameter, so the sealed type is the catalogue's constant spelt
// into the text (the text is what it always was; the compiler checks the name).
import { StoreSealed } from '../schema/events/system-events.js';

export const STORE_FORMAT_VERSION = 3;
/** PRAGMA application_id: "DSS1", so the writer never mistakes another file for a store. */
export const STORE_APPLICATION_ID = 0x44535331;

export const CREATE_STORE_SQL = `
CREATE TABLE events (
  seq             INTEGER PRIMARY KEY,
  event_id        TEXT NOT NULL UNIQUE,
  event_type      TEXT NOT NULL,
  idempotency_key TEXT,
  envelope        TEXT NOT NULL
) STRICT;
CREATE INDEX events_by_type ON events (event_type, seq);
-- Partial: most events carry no key, and their inserts then leave this index alone.
CREATE UNIQUE INDEX events_by_idempotency_key ON events (idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events is append-only: UPDATE refused'); END;

CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events is append-only: DELETE refused'); END;

-- INSERT OR REPLACE deletes the clashing row without firing delete triggers (unless
-- recursive_triggers is on), so refuse any insert that would clash at all.
CREATE TRIGGER events_refuse_overwrite BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq)
  OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id)
  OR (NEW.idempotency_key IS NOT NULL AND EXISTS (SELECT 1 FROM events WHERE idempotency_key = NEW.idempotency_key))
BEGIN SELECT RAISE(ABORT, 'events is append-only: seq, event_id or idempotency_key exists'); END;

-- Nothing follows SystemEvent.StoreSealed: the writer refuses appends after it, and this
-- refuses them even to someone who bypasses the writer (events_by_type makes it a lookup).
CREATE TRIGGER events_refuse_after_seal BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE event_type = '${StoreSealed.type}')
BEGIN SELECT RAISE(ABORT, 'events is sealed: nothing may be inserted after SystemEvent.StoreSealed'); END;

-- The projection of all events up to last_applied_event_seq, committed with them, and
-- the versions that computed it (DESIGN §5): \`version\` is the projector_version.
CREATE TABLE projection (
  id                     INTEGER PRIMARY KEY CHECK (id = 1),
  name                   TEXT NOT NULL,
  version                TEXT NOT NULL,
  state_machine_version  TEXT NOT NULL,
  event_schema_version   TEXT NOT NULL,
  state                  TEXT NOT NULL,
  state_hash             TEXT NOT NULL,
  last_applied_event_seq INTEGER NOT NULL
) STRICT;

-- Snapshots are a cache (spec §12.1): the projected state after the event at \`seq\`,
-- with the versions that computed it. Deliberately not append-only-protected: losing or
-- rewriting them loses nothing, a restore checks state against state_hash and the
-- versions before using one, and the writer overwrites a stale row at a seq it snapshots.
CREATE TABLE snapshots (
  seq                   INTEGER PRIMARY KEY,
  projection            TEXT NOT NULL,
  projector_version     TEXT NOT NULL,
  state_machine_version TEXT NOT NULL,
  event_schema_version  TEXT NOT NULL,
  state                 TEXT NOT NULL,
  state_hash            TEXT NOT NULL
) STRICT;
`;
