// A small memo of answers computed from content, keyed by that content's hash (issue 34 item 4):
// the folders of one study carry the same pre-registration, lock and scenario, and a merge
// checking thousands of them need not parse and verify each of those again. Keyed by the hash
// of the bytes just read — never by a path, so a file that differs is computed afresh — and
// holding only pure answers, deep-frozen so that no reader can change one for the next. An
// answer that throws is not kept. Bounded: beyond `limit` entries the oldest is dropped.
import { deepFrozen } from './deep-frozen.js';

export class ContentMemo<V> {
  private readonly entries = new Map<string, V>();
  private hitCount = 0;

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`ContentMemo: limit must be a positive integer, got ${limit}`);
  }

  /** The answer for `contentKey` (a hash of the content `compute` reads), computed once while it is kept. */
  get(contentKey: string, compute: () => V): V {
    const kept = this.known(contentKey);
    if (kept !== undefined) return kept;
    const answer = deepFrozen(compute());
    if (this.entries.size >= this.limit) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(contentKey, answer);
    return answer;
  }

  /** The answer kept for `contentKey`, if one is (undefined: none). */
  known(contentKey: string): V | undefined {
    const hit = this.entries.get(contentKey);
    if (hit !== undefined) this.hitCount += 1;
    return hit;
  }

  /** How many answers were given from the memo (for tests that show it is used). */
  get hits(): number {
    return this.hitCount;
  }
}
