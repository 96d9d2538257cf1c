// The events of one store as a verify walk read them (issue 34 item 4): each row's stored text
// and its envelope, parsed and schema-checked once, so the checks that follow a verify on the
// same folder (the plan walk, the run record the scoring reads, the replay) work on exactly the
// bytes whose chain was just checked instead of reading and parsing the store three more times.
// Kept only for a store the walk found nothing wrong with: a store with any failure is left to
// each check's own read, which names what it meets there, as before. What was kept describes the
// store when it was verified; changedSince re-reads the stored texts (no parse) and says whether
// the store still holds them byte for byte: a store changed or swapped after its verify must not
// be scored as if it were the store that was verified.
import { deepFrozen } from '../foundation/deep-frozen.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { openStoreReadOnly } from './store-reader.js';

export class VerifiedEvents {
  private readonly texts: string[] = [];
  private readonly envelopes: EventEnvelope[] = [];
  private sound = true;

  constructor(readonly file: string) {}

  /** The row at the next seq: its stored text and the envelope the walk parsed from it, frozen (every check after reads the same one; none may change it). */
  add(text: string, envelope: EventEnvelope): void {
    if (envelope.seq !== this.envelopes.length + 1) this.sound = false;
    this.texts.push(text);
    this.envelopes.push(deepFrozen(envelope));
  }

  /** The walk found something wrong with the store: nothing kept is handed on. */
  spoil(): void {
    this.sound = false;
    this.texts.length = 0;
    this.envelopes.length = 0;
  }

  /** Every event, seq 1 to the head, when the store verified clean; null otherwise (read it yourself). */
  get events(): readonly EventEnvelope[] | null {
    return this.sound ? this.envelopes : null;
  }

  /** null: the store holds, byte for byte, the rows that were verified; else what differs. */
  changedSince(): string | null {
    if (!this.sound) return 'its events were not kept when it was verified (the store had a failure)';
    let db;
    try {
      db = openStoreReadOnly(this.file);
    } catch (error) {
      return `it can no longer be read as a store: ${error instanceof Error ? error.message : String(error)}`;
    }
    try {
      const now = (db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
      if (now !== this.texts.length) return `${this.texts.length} event(s) verified, ${now} in its store now`;
      let seq = 0;
      // Bounded: the count was just read, and the loop stops at the texts kept.
      for (const row of db.prepare('SELECT seq, envelope FROM events ORDER BY seq').iterate() as IterableIterator<{ seq: number; envelope: string }>) {
        seq += 1;
        if (seq > this.texts.length) return `more events in its store than the ${this.texts.length} verified`;
        if (row.seq !== seq || row.envelope !== this.texts[seq - 1]) return `the event at seq ${seq} is not the one verified`;
      }
      return null;
    } catch (error) {
      return `it could not be read again: ${error instanceof Error ? error.message : String(error)}`;
    } finally {
      db.close();
    }
  }
}
