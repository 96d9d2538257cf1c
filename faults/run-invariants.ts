// The invariants a fault run is judged by: the runner's own (here) and the store's
// (invariants.ts), one list, and one verdict's shape.
import { STORE_INVARIANTS } from './invariants.js';

/** Invariants the runner itself decides, after the store's (faults/invariants.ts). */
export const RUN_INVARIANTS = ['fault_fired', 'run_finished', 'processes_exit', 'disk_full_stop', 'bad_file_verdict'] as const;

export const INVARIANTS = [...RUN_INVARIANTS, ...STORE_INVARIANTS] as const;

export type Invariant = (typeof INVARIANTS)[number];

/** One invariant's verdict on a run; details say why it failed (and `note:` lines, kept when it held). */
export interface RunInvariantResult {
  readonly invariant: Invariant;
  readonly ok: boolean;
  readonly details: string[];
}
