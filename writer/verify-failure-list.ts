// The list a verify fills (writer/verify-store.ts): every failure or warning with the file it is
// about, relative to the verified folder, and its seq. It never stops at the first; past
// MAX_FAILURES_PER_FILE for one file it counts instead of listing, and says how many it left
// out, so a badly damaged store neither floods the report nor is cut silently. Its own file
// because each check of a verify (store-chain-check.ts, signed-files-check.ts) adds to it.
import path from 'node:path';

export interface VerifyFailure {
  /** The events.db or signed file the failure is about, relative to the verified folder. */
  readonly store: string;
  readonly seq: number | null;
  readonly reason: string;
}

const MAX_FAILURES_PER_FILE = 1_000;

export class FailureList {
  readonly failures: VerifyFailure[] = [];
  private readonly counts = new Map<string, number>();
  constructor(private readonly root: string) {}
  add(file: string, seq: number | null, reason: string): void {
    const store = path.relative(this.root, file) || path.basename(file);
    const count = (this.counts.get(store) ?? 0) + 1;
    this.counts.set(store, count);
    if (count <= MAX_FAILURES_PER_FILE) this.failures.push({ store, seq, reason });
  }
  /** Whether any failure was listed for `file`. */
  has(file: string): boolean {
    return (this.counts.get(path.relative(this.root, file) || path.basename(file)) ?? 0) > 0;
  }
  /** Says how many failures were not listed, so a long list is never cut silently. */
  finish(): VerifyFailure[] {
    for (const [store, count] of this.counts) {
      if (count > MAX_FAILURES_PER_FILE) this.failures.push({ store, seq: null, reason: `${count - MAX_FAILURES_PER_FILE} more failures in this file were not listed (limit ${MAX_FAILURES_PER_FILE})` });
    }
    return this.failures;
  }
}
