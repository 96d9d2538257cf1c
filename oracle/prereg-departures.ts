// Where a study's plan departs from its pre-registration so that the verdict cannot be the
// pre-registered one (issue 35 item 2). One source for the report (study-report-builder.ts: a
// departure from the pre-registered n voids the batch unless the study said it was exploratory)
// and for the plan (study/plan-validity.ts: refused before anything is written, with what to change).
import type { PreRegistration } from '../design/prereg.js';
import { passingRowFor } from './verdict.js';

/** The ways a plan can depart: another first-round n, or an n whose passing count is not pre-registered. */
export type DepartureKind = 'n_initial' | 'passing_row';

export interface PreregDeparture {
  readonly kind: DepartureKind;
  /** The n per group it concerns. */
  readonly n: number;
  /** In words, as the plan and an exploratory report state it. */
  readonly statement: string;
  /** The report's void reason when the study did not say it departs (null: it does not void the batch; the verdict says what it cannot judge). */
  readonly voidReason: string | null;
}

/** The n per group a plan runs first and at most (after the pre-registered expansion rule). */
export interface PlannedN {
  readonly nInitial: number;
  readonly nExpanded: number;
}

/**
 * Every departure of the plan from its pre-registration that takes its verdict away:
 * - spec §6.2: the first round has the pre-registered initial_n_per_group; another is not the
 *   pre-registered study, and its batch is void (the report builder's void reason);
 * - §8.2: "C instances passing" is judged by the row of thresholds.c_instances_passing for the n
 *   the verdict rests on (oracle/verdict.ts passingRowFor) — n_initial, or n_expanded after the
 *   rule expands; without one the threshold cannot be judged and the verdict is insufficient evidence.
 */
export function preregDepartures(planned: PlannedN, prereg: PreRegistration): PreregDeparture[] {
  const out: PreregDeparture[] = [];
  const initial = prereg.expansion_rule.initial_n_per_group;
  if (planned.nInitial !== initial) {
    out.push({ kind: 'n_initial', n: planned.nInitial, statement: `n = ${planned.nInitial} per group in round 1, not the pre-registered initial_n_per_group = ${initial}`, voidReason: nInitialVoidReason(planned.nInitial, initial) });
  }
  for (const n of new Set([planned.nInitial, planned.nExpanded])) {
    if (passingRowFor(prereg.thresholds, n) === null) out.push({ kind: 'passing_row', n, statement: `thresholds.c_instances_passing has no row for n = ${n}, so "C instances scoring ≥ ${prereg.thresholds.instance_pass_score}" cannot be judged at n = ${n} (the pre-registered rows: ${prereg.thresholds.c_instances_passing.map((r) => `n = ${r.n}`).join(', ')})`, voidReason: null });
  }
  return out;
}

/** The void reason of a first round of another n (the words every report since issue 18 gives). */
function nInitialVoidReason(nInitial: number, preregistered: number): string {
  return `the study ran n = ${nInitial} per group first, not the pre-registered initial_n_per_group = ${preregistered}`;
}
