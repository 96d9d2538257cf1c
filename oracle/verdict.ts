// Spec §8.2 thresholds and §17.3's verdict. Three outcomes only:
// - insufficient evidence: the batch is void (§19.1), or an instance of the n the verdict rests
//   on was not scored, or (rule 8, issue 15) had no usable data — a verdict never rests on fewer
//   instances than pre-registered;
// - supported: every pre-registered threshold is met;
// - rejected: the data are complete and valid, and at least one threshold is not met.
// The words never claim statistical significance, and never read "the system ran" as "the
// subject is continuous"; a dry run (reference policy) says so first.
import type { PreRegistration } from '../design/prereg.js';
import { formatPoints } from './figure-rounding.js';
import { comparable, median } from './group-statistics.js';
import type { ComparisonPoint } from './report-rounding.js';
import { GROUPS, type Group } from '../design/groups.js';
import type { ThresholdCheck, Verdict } from './study-report.js';
import { formatShare } from '../schema/usable-data.js';

export interface GroupResult {
  /** Scores of the instances the verdict rests on; null = not scored. */
  readonly scores: readonly (number | null)[];
  readonly hardFailures: number;
}

/** Rule 8 (docs/oracle.md "Usable data"): which instances count as data (oracle/usable-data.ts). */
export interface UsableDataInput {
  /** The pre-registered model_calls.usable_data.min_accepted_share; null when none is pre-registered. */
  readonly minAcceptedShare: number | null;
  /** Per group, one entry per instance the verdict rests on (unscored ones are never usable); fewer true entries than n fall short. */
  readonly usable: Readonly<Record<Group, readonly boolean[]>>;
}

export interface VerdictInput {
  readonly thresholds: PreRegistration['thresholds'];
  readonly n: number;
  readonly groups: Readonly<Record<Group, GroupResult>>;
  readonly usableData: UsableDataInput;
  readonly voidReasons: readonly string[];
  readonly dryRun: boolean;
  /** An exploratory study's own words (study.json `exploratory`): it knowingly departs from the pre-registration, and its verdict says so first. Absent: none. */
  readonly exploratory?: string | null;
}

export interface VerdictResult {
  readonly verdict: Verdict;
  readonly statement: string;
  readonly thresholds: ThresholdCheck[];
  readonly dryRunStatement: string | null;
  /** Rule 8: one entry per group with fewer than n usable instances ("group B: 1 of 3 instances have usable data"); empty when met. */
  readonly usableDataShortfalls: string[];
  /** The points the thresholds compare, unrounded and rounded (report.json's rounding.threshold_points). */
  readonly points: ComparisonPoint[];
}

const GROUP_ORDER: readonly Group[] = GROUPS;

/**
 * Rule 8: each group needs all n of its instances usable. Not "at least one": an instance dropped
 * for unusable data is attrition that can differ by group (a group whose subject fails more often
 * would be judged on its survivors), so no group may rest on fewer than the pre-registered n.
 */
export function usableDataShortfalls(n: number, usable: UsableDataInput['usable']): string[] {
  return GROUP_ORDER.flatMap((g) => {
    const count = usable[g].filter((u) => u).length;
    return count < n ? [`group ${g}: ${count} of ${n} instances have usable data`] : [];
  });
}

export const DRY_RUN_STATEMENT =
  'Apparatus dry run: the model was the scripted reference policy, not a subject. These numbers show whether the apparatus measures what it claims and whether the groups differ for the stated reasons; they are NOT evidence about the continuity of any subject. Evidence needs a real model run under the same locked pre-registration.';

const fmt = formatPoints;

/** The pre-registered c_instances_passing row the verdict at `n` per group is judged by; null: none, so that threshold cannot be judged at `n`. */
export function passingRowFor(thresholds: PreRegistration['thresholds'], n: number): { readonly n: number; readonly at_least: number } | null {
  return thresholds.c_instances_passing.find((r) => r.n === n) ?? null;
}

export function decideVerdict(input: VerdictInput): VerdictResult {
  const t = input.thresholds;
  const scored = (g: Group): number[] => input.groups[g].scores.filter((s): s is number => s !== null);
  const points: ComparisonPoint[] = [];
  const medianOf = (g: Group): number | null => {
    const m = median(scored(g));
    const rounded = m === null ? null : comparable(m);
    points.push({ point: `median_${g}`, compared_by: g === 'C' ? 'c_median, c_minus_b, c_minus_a' : `c_minus_${g.toLowerCase()}`, unrounded: m, rounded });
    return rounded;
  };
  const medians = { A: medianOf('A'), B: medianOf('B'), C: medianOf('C') };
  const passingRow = passingRowFor(t, input.n);
  const cPassing = scored('C').filter((s) => s >= t.instance_pass_score).length;
  // The difference of the ROUNDED medians, rounded again.
  const diff = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : comparable(a - b));
  for (const g of ['B', 'A'] as const) {
    const a = medians.C;
    const b = medians[g];
    points.push({ point: `c_minus_${g.toLowerCase()}`, compared_by: `c_minus_${g.toLowerCase()}`, unrounded: a === null || b === null ? null : a - b, rounded: diff(a, b) });
  }
  const checks: ThresholdCheck[] = [
    { id: 'c_median', description: 'median Continuity Score of C', required: `≥ ${t.c_median_min_score}`, observed: fmt(medians.C), met: medians.C === null ? null : medians.C >= t.c_median_min_score },
    { id: 'c_minus_b', description: 'median C − median B', required: `≥ ${t.c_minus_b_min_points}`, observed: fmt(diff(medians.C, medians.B)), met: diff(medians.C, medians.B) === null ? null : diff(medians.C, medians.B)! >= t.c_minus_b_min_points },
    { id: 'c_minus_a', description: 'median C − median A', required: `≥ ${t.c_minus_a_min_points}`, observed: fmt(diff(medians.C, medians.A)), met: diff(medians.C, medians.A) === null ? null : diff(medians.C, medians.A)! >= t.c_minus_a_min_points },
    {
      id: 'c_instances_passing',
      description: `C instances scoring ≥ ${t.instance_pass_score}`,
      required: passingRow ? `at least ${passingRow.at_least} of ${passingRow.n}` : `a pre-registered count for n = ${input.n} (none)`,
      observed: `${cPassing} of ${input.n}`,
      met: passingRow ? cPassing >= passingRow.at_least : null,
    },
    { id: 'c_hard_failures', description: 'hard failures in C instances', required: `≤ ${t.c_hard_failures_max}`, observed: String(input.groups.C.hardFailures), met: input.groups.C.hardFailures <= t.c_hard_failures_max },
  ];
  const unscored = GROUPS.flatMap((g) => {
    const missing = input.groups[g].scores.filter((s) => s === null).length + Math.max(0, input.n - input.groups[g].scores.length);
    return missing > 0 ? [`${missing} ${g} instance(s) not scored`] : [];
  });
  const shortfalls = usableDataShortfalls(input.n, input.usableData.usable);
  const share = input.usableData.minAcceptedShare;
  const usableRule = share === null ? 'no minimum share of accepted model answers is pre-registered, so no instance counts as data' : `an instance counts as data only when at least ${formatShare(share)} of its model calls gave accepted answers`;
  const usableText = shortfalls.length === 0 ? [] : [`too few instances with usable data (${shortfalls.join('; ')}; ${usableRule}, and the verdict needs all n = ${input.n} of each group)`];
  const dryRunStatement = input.dryRun ? DRY_RUN_STATEMENT : null;
  const exploratory = input.exploratory ? `Exploratory study, not the pre-registered one (${input.exploratory}): ` : '';
  const prefix = `${exploratory}${input.dryRun ? 'Dry run of the apparatus (not evidence about subjects): ' : ''}`;
  let verdict: Verdict;
  let statement: string;
  if (input.voidReasons.length > 0) {
    verdict = 'insufficient evidence';
    statement = `${prefix}insufficient evidence — the batch is void (${input.voidReasons.join('; ')}); no instance of it may be scored together with other batches.`;
  } else if (unscored.length > 0 || usableText.length > 0 || checks.some((c) => c.met === null)) {
    verdict = 'insufficient evidence';
    statement = `${prefix}insufficient evidence — ${[...unscored, ...usableText, ...checks.filter((c) => c.met === null).map((c) => `${c.id} cannot be judged`)].join('; ')}.`;
  } else if (checks.every((c) => c.met === true)) {
    verdict = 'supported';
    statement = `${prefix}supported — every pre-registered exploratory threshold of spec §8.2 is met at n = ${input.n} per group (C median ${fmt(medians.C)}, C − B ${fmt(diff(medians.C, medians.B))}, C − A ${fmt(diff(medians.C, medians.A))}). These are effect thresholds, not a test of statistical significance; that the system ran is not itself evidence that the subject is continuous.`;
  } else {
    verdict = 'rejected';
    statement = `${prefix}rejected — not met: ${checks.filter((c) => c.met === false).map((c) => `${c.description} ${c.observed} (required ${c.required})`).join('; ')}, at n = ${input.n} per group. These are exploratory effect thresholds, not significance tests.`;
  }
  return { verdict, statement, thresholds: checks, dryRunStatement, usableDataShortfalls: shortfalls, points };
}
