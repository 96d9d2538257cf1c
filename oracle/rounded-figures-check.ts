// The check "rounded figures agree with their rule" (issue 32 item 3): every rounded figure of a
// report 2.2.0 recomputed from the unrounded value beside it under the rule the report's own
// rounding section names for its kind — as a scorer reading only report.json would — and, where
// the report holds the inputs, each unrounded value recomputed from the (rounded) figures the
// section says it is computed from. --recompute runs it on the stored report; a figure rounded by
// another rule, or computed from other inputs, is named by its field.
import { DIMENSIONS, type Dimension } from './continuity-score.js';
import { formatByRule, roundByRule, TEXT_ROUNDING_METHOD, type NumberRoundingRule, type TextRoundingRule } from './figure-rounding.js';
import { mean, median, range, sampleSd } from './group-statistics.js';
import type { ComparisonPoint, FigureKind, RoundingSection } from './report-rounding.js';
import { GROUPS, type Group } from '../design/groups.js';
import { type StudyReport } from './study-report.js';

export const ROUNDING_CHECK = 'rounded figures agree with their rule';

/** Problems named one by one up to this many; the rest are counted. */
const MAX_NAMED_PROBLEMS = 100;

export interface RoundingCheck {
  /** Figures held to their rule or to their inputs. */
  readonly checked: number;
  /** Each figure that does not follow (at most MAX_NAMED_PROBLEMS named, then a count). */
  readonly problems: readonly string[];
  /** Why nothing was checked (a report written before the rounding section); null when checked. */
  readonly unchecked: string | null;
}

type Weights = Readonly<Record<Dimension, number>>;

class Tally {
  checked = 0;
  private readonly named: string[] = [];
  private more = 0;
  expect(ok: boolean, problem: () => string): void {
    this.checked += 1;
    if (ok) return;
    if (this.named.length < MAX_NAMED_PROBLEMS) this.named.push(problem());
    else this.more += 1;
  }
  problem(text: string): void {
    this.expect(false, () => text);
  }
  problems(): string[] {
    return this.more === 0 ? [...this.named] : [...this.named, `… and ${this.more} more`];
  }
}

const show = (x: number | null | undefined): string => (x === undefined ? 'absent' : JSON.stringify(x));

/** The number rule the section names for a kind (and dimension); null, with a problem, when it names none or another kind of rule. */
function numberRuleOf(section: RoundingSection, kind: FigureKind, tally: Tally, dimension: Dimension | null = null): NumberRoundingRule | null {
  const figure = section.figures.find((f) => f.kind === kind && f.dimension === dimension);
  const name = figure?.rule ?? null;
  const rule = name === null ? null : section.rules[name];
  if (rule === null || rule.method === TEXT_ROUNDING_METHOD) {
    tally.problem(`rounding.figures: no number rule for ${kind}${dimension === null ? '' : ` ${dimension}`} (${figure === undefined ? 'the kind is not listed' : `rule ${String(name)}`}): its figures cannot be held to one`);
    return null;
  }
  return rule;
}

function textRuleOf(section: RoundingSection, tally: Tally): TextRoundingRule | null {
  const rule = section.rules[section.figures.find((f) => f.kind === 'points_text')?.rule ?? 'points_text'];
  if (rule.method !== TEXT_ROUNDING_METHOD) {
    tally.problem('rounding.figures: points_text names no text rule');
    return null;
  }
  return rule;
}

function checkRounded(tally: Tally, rule: NumberRoundingRule | null, field: string, rounded: number | null | undefined, unrounded: number | null | undefined): void {
  if (rule === null) return;
  if (rounded === null || unrounded === null || rounded === undefined || unrounded === undefined) {
    tally.expect(rounded === null && unrounded === null, () => `${field}: ${show(rounded)} beside an unrounded value ${show(unrounded)}`);
    return;
  }
  const want = roundByRule(rule, unrounded);
  tally.expect(rounded === want, () => `${field}: ${show(rounded)} is not ${rule.formula} of its unrounded ${show(unrounded)}, which is ${show(want)}`);
}

function checkComputed(tally: Tally, field: string, got: number | null | undefined, want: number | null, from: string): void {
  tally.expect(got === want, () => `${field}: ${show(got)}, but computed from ${from} it is ${show(want)}`);
}

function checkInstances(report: StudyReport, section: RoundingSection, tally: Tally, weights: Weights | null): void {
  const wakeRule = numberRuleOf(section, 'wake_value', tally);
  const scoreRule = numberRuleOf(section, 'instance_score', tally);
  const dimensionRules = Object.fromEntries(DIMENSIONS.map((d) => [d, numberRuleOf(section, 'dimension', tally, d)])) as Record<Dimension, NumberRoundingRule | null>;
  for (const i of report.instances) {
    const at = `instances ${i.group}-r${i.replicate}`;
    checkRounded(tally, scoreRule, `${at}.score`, i.score, i.score_unrounded);
    tally.expect(i.counted_score === (i.score === null ? null : i.hard_failures.length > 0 ? 0 : i.score), () => `${at}.counted_score: ${show(i.counted_score)} is neither its score ${show(i.score)} nor 0 under a hard failure`);
    for (const [k, w] of i.per_wake.entries()) checkRounded(tally, wakeRule, `${at}.per_wake[${k}] (${w.wake_id}).value`, w.value, w.value_unrounded);
    if (i.dimensions === null || i.dimensions_unrounded === null || i.dimensions_unrounded === undefined) {
      tally.expect(i.dimensions === null && i.dimensions_unrounded === null, () => `${at}.dimensions: ${i.dimensions === null ? 'none' : 'present'} beside dimensions_unrounded ${i.dimensions_unrounded === null ? 'null' : 'absent'}`);
      continue;
    }
    for (const d of DIMENSIONS) checkRounded(tally, dimensionRules[d], `${at}.dimensions.${d}`, i.dimensions[d], i.dimensions_unrounded[d]);
    // state_recovery is computed from the ROUNDED wake values, which the report holds.
    const wakeSum = i.per_wake.reduce((s, w) => s + w.value, 0);
    checkComputed(tally, `${at}.dimensions_unrounded.state_recovery`, i.dimensions_unrounded.state_recovery, i.per_wake.length === 0 ? 0 : wakeSum / i.per_wake.length, 'its rounded per_wake values');
    // The score is computed from the ROUNDED dimensions with the pre-registered weights (when given: report.json does not hold them).
    if (weights !== null && i.score_unrounded !== null && i.score_unrounded !== undefined) {
      const dims = i.dimensions;
      checkComputed(tally, `${at}.score_unrounded`, i.score_unrounded, DIMENSIONS.reduce((s, d) => s + (weights[d] * dims[d]) / 100, 0), 'its rounded dimensions and the pre-registered weights');
    }
  }
}

/** Group statistics are reported unrounded: each must be exactly the statistic of the listed (rounded) values. */
function checkGroups(report: StudyReport, tally: Tally): void {
  for (const g of GROUPS) {
    const s = report.groups[g];
    const at = `groups.${g}`;
    checkComputed(tally, `${at}.median`, s.median, median(s.scores), 'its scores, unrounded');
    checkComputed(tally, `${at}.min`, s.min, s.scores.length === 0 ? null : Math.min(...s.scores), 'its scores');
    checkComputed(tally, `${at}.max`, s.max, s.scores.length === 0 ? null : Math.max(...s.scores), 'its scores');
    checkComputed(tally, `${at}.range`, s.range, range(s.scores), 'its scores, unrounded');
    for (const d of DIMENSIONS) {
      checkComputed(tally, `${at}.dimensions.${d}.mean`, s.dimensions[d].mean, mean(s.dimensions[d].values), 'its values, unrounded');
      checkComputed(tally, `${at}.dimensions.${d}.sd`, s.dimensions[d].sd, sampleSd(s.dimensions[d].values), 'its values, unrounded');
    }
  }
}

function pointNamed(points: readonly ComparisonPoint[], name: string, tally: Tally, where: string): ComparisonPoint | null {
  const found = points.filter((p) => p.point === name);
  tally.expect(found.length === 1, () => `${where}: ${found.length === 0 ? 'no' : found.length} point(s) ${name} (one expected)`);
  return found[0] ?? null;
}

function checkThresholdPoints(report: StudyReport, section: RoundingSection, tally: Tally): void {
  const rule = numberRuleOf(section, 'threshold_point', tally);
  const text = textRuleOf(section, tally);
  const where = 'rounding.threshold_points';
  const medians = Object.fromEntries(GROUPS.map((g) => [g, pointNamed(section.threshold_points, `median_${g}`, tally, where)])) as Record<Group, ComparisonPoint | null>;
  for (const g of GROUPS) {
    const p = medians[g];
    if (p === null) continue;
    checkComputed(tally, `${where} median_${g}.unrounded`, p.unrounded, report.groups[g].median, `groups.${g}.median`);
    checkRounded(tally, rule, `${where} median_${g}.rounded`, p.rounded, p.unrounded);
  }
  const shown = (id: string, p: ComparisonPoint): void => {
    const threshold = report.thresholds.find((t) => t.id === id);
    if (text === null || threshold === undefined) return;
    const want = formatByRule(text, p.rounded);
    tally.expect(threshold.observed === want, () => `thresholds ${id}.observed: "${threshold.observed}" is not ${text.formula} of its rounded point ${show(p.rounded)}, which is "${want}"`);
  };
  if (medians.C !== null) shown('c_median', medians.C);
  for (const g of ['B', 'A'] as const) {
    const id = `c_minus_${g.toLowerCase()}`;
    const p = pointNamed(section.threshold_points, id, tally, where);
    if (p === null) continue;
    const c = medians.C?.rounded ?? null;
    const other = medians[g]?.rounded ?? null;
    checkComputed(tally, `${where} ${id}.unrounded`, p.unrounded, c === null || other === null ? null : c - other, `the ROUNDED medians of C and ${g}`);
    checkRounded(tally, rule, `${where} ${id}.rounded`, p.rounded, p.unrounded);
    shown(id, p);
  }
}

/** Expansion points, when the rule was applied: each recomputed from the first round's instances, and shown in its reason. */
function checkExpansionPoints(report: StudyReport, section: RoundingSection, tally: Tally): void {
  if (section.expansion_points.length === 0) return;
  const rule = numberRuleOf(section, 'expansion_point', tally);
  const text = textRuleOf(section, tally);
  const where = 'rounding.expansion_points';
  for (const g of GROUPS) {
    const first = report.instances.filter((i) => i.group === g && i.replicate <= report.n_initial);
    const scores = first.flatMap((i) => (i.counted_score === null ? [] : [i.counted_score]));
    const statistics: [string, number | null][] = [[`group ${g}: score range`, range(scores)], ...DIMENSIONS.map((d): [string, number | null] => [`group ${g}: ${d} sample SD`, sampleSd(first.flatMap((i) => (i.dimensions === null ? [] : [i.dimensions[d]])))])];
    for (const [name, want] of statistics) {
      const p = pointNamed(section.expansion_points, name, tally, where);
      if (p === null) continue;
      checkComputed(tally, `${where} "${name}".unrounded`, p.unrounded, want, `the counted scores and rounded dimensions of ${g}'s first ${report.n_initial} replicate(s)`);
      checkRounded(tally, rule, `${where} "${name}".rounded`, p.rounded, p.unrounded);
      if (text === null) continue;
      const written = `${name} ${formatByRule(text, p.rounded)}`;
      tally.expect(report.expansion_reasons.some((r) => r.startsWith(written)), () => `expansion_reasons: none begins "${written}" (${name} written by ${text.formula} of its rounded point)`);
    }
  }
}

function checkBlocks(report: StudyReport, section: RoundingSection, tally: Tally): void {
  if ((report.blocks ?? []).length === 0) return;
  const rule = numberRuleOf(section, 'block_mean_wait', tally);
  for (const b of report.blocks ?? []) for (const g of GROUPS) checkRounded(tally, rule, `blocks r${b.replicate}.turns.mean_wait_ms.${g}`, b.turns.mean_wait_ms[g], b.turns.mean_wait_ms_unrounded?.[g]);
}

/**
 * Holds every rounded figure of a report to its rule and its inputs. `weights` (the pre-registered
 * dimension weights, which report.json does not hold) adds the check that each score was computed
 * from the rounded dimensions; without them that one check is left out.
 */
export function checkRoundedFigures(report: StudyReport, weights: Weights | null): RoundingCheck {
  const section = report.rounding;
  if (section === undefined) return { checked: 0, problems: [], unchecked: `report_version ${report.report_version} carries no rounding section and no unrounded values: its rounded figures can be held only to a recomputation` };
  const tally = new Tally();
  checkInstances(report, section, tally, weights);
  checkGroups(report, tally);
  checkThresholdPoints(report, section, tally);
  checkExpansionPoints(report, section, tally);
  checkBlocks(report, section, tally);
  return { checked: tally.checked, problems: tally.problems(), unchecked: null };
}
