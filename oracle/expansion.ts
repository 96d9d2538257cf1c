// Spec §6.2's expansion rule, as pre-registered (expansion_rule): after the first n per group,
// if ANY group's Continuity Score range exceeds max_group_range_points, or ANY dimension's
// within-group sample SD exceeds max_dimension_within_group_sd_points, then ALL three groups are
// run to expanded_n_per_group — never only some — and the verdict rests on the expanded data.
import type { PreRegistration } from '../design/prereg.js';
import { DIMENSIONS, type Dimension } from './continuity-score.js';
import { formatPoints } from './figure-rounding.js';
import { comparable, range, sampleSd } from './group-statistics.js';
import type { ComparisonPoint } from './report-rounding.js';
import type { Group } from '../design/groups.js';

export interface ScoredInstance {
  readonly score: number;
  readonly dimensions: Readonly<Record<Dimension, number>>;
}

export interface ExpansionDecision {
  readonly expand: boolean;
  /** Every rule checked, triggered or not, in words (the report shows them all). */
  readonly reasons: readonly string[];
  /** Each compared point, unrounded and rounded (report.json's rounding.expansion_points); its reason begins `${point} ${rounded as text}`. */
  readonly points: readonly ComparisonPoint[];
}

/**
 * How a reason begins when the rule could not be applied (the study was stopped, paused, or an
 * instance of the first round was not scored): the report's n is then not final, and a resume
 * may still expand it. The exporter refuses such a study (nothing to commit to yet).
 */
export const EXPANSION_NOT_DECIDED = 'not decided: ';

const fmt = formatPoints;

export function decideExpansion(byGroup: Readonly<Record<Group, readonly ScoredInstance[]>>, rule: PreRegistration['expansion_rule']): ExpansionDecision {
  const reasons: string[] = [];
  const points: ComparisonPoint[] = [];
  let expand = false;
  for (const group of Object.keys(byGroup) as Group[]) {
    const scores = byGroup[group].map((i) => i.score);
    const rawRange = range(scores);
    const r = rawRange === null ? null : comparable(rawRange);
    const rangePoint = `group ${group}: score range`;
    points.push({ point: rangePoint, compared_by: 'expansion_rule.max_group_range_points', unrounded: rawRange, rounded: r });
    if (r !== null && r > rule.max_group_range_points) {
      expand = true;
      reasons.push(`${rangePoint} ${fmt(r)} > ${rule.max_group_range_points} (triggers expansion)`);
    } else reasons.push(`${rangePoint} ${fmt(r)} ≤ ${rule.max_group_range_points}`);
    for (const d of DIMENSIONS) {
      const rawSd = sampleSd(byGroup[group].map((i) => i.dimensions[d]));
      const sd = rawSd === null ? null : comparable(rawSd);
      const sdPoint = `group ${group}: ${d} sample SD`;
      points.push({ point: sdPoint, compared_by: 'expansion_rule.max_dimension_within_group_sd_points', unrounded: rawSd, rounded: sd });
      if (sd !== null && sd > rule.max_dimension_within_group_sd_points) {
        expand = true;
        reasons.push(`${sdPoint} ${fmt(sd)} > ${rule.max_dimension_within_group_sd_points} (triggers expansion)`);
      } else reasons.push(`${sdPoint} ${sd === null ? 'n/a (fewer than 2 values)' : `${fmt(sd)} ≤ ${rule.max_dimension_within_group_sd_points}`}`);
    }
  }
  reasons.push(expand ? `expand all groups from n = ${rule.initial_n_per_group} to n = ${rule.expanded_n_per_group}` : `no group's range exceeds ${rule.max_group_range_points} and no dimension's within-group SD exceeds ${rule.max_dimension_within_group_sd_points}: no expansion`);
  return { expand, reasons, points };
}
