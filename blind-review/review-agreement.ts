// How far the blind review agrees with the oracle and with itself (issue 32), computed at
// unblinding from the locked scorecards and the study's report.json (the one the commitment
// names), and written into review/unblinded.json:
//   reviewer–oracle, per dimension (and the total against the oracle's Continuity Score): pairs of
//     (scorecard, instance), the mean and largest |difference|, how many are within the tolerance,
//     Cohen's kappa over bands of 20 points, and every pair further apart than the tolerance,
//     named (package, group, replicate, reviewer);
//   reviewer–oracle, per hard failure: pairs, agreement, who found it how often, kappa over
//     found / not found, and every pair that decided otherwise than the oracle, named;
//   reviewer–reviewer, per two reviewers who scored the same packages: kappa over their
//     hard-failure decisions and over their dimension bands, and every differing decision and
//     every dimension further apart than the tolerance, named.
// The tolerance is the review's own arbitration gap (review-state.ts MAX_SCORE_GAP_POINTS): a
// difference a review would not let two reviewers average over is a disagreement here too.
// Every arbiter's scorecard counts as a scorecard against the oracle (role "arbiter"); only
// reviewers are paired with each other (an arbiter only scores where the two disagreed).
import { z } from 'zod';
import { GROUPS } from '../design/groups.js';
import { HARD_FAILURE_IDS, HardFailureId } from '../design/prereg.js';
import { DIMENSIONS, type Dimension } from '../oracle/continuity-score.js';
import { StudyReport } from '../oracle/study-report.js';
import { cohensKappa, Kappa } from './cohens-kappa.js';
import { BlindId, type ReviewerScores } from './package-format.js';
import { MAX_SCORE_GAP_POINTS, reviewerKey, round6, totalOf, type DimensionWeights } from './review-state.js';

type HardFailure = (typeof HARD_FAILURE_IDS)[number];
/** A disagreement further apart than this many points (not at it) is flagged. */
export const AGREEMENT_TOLERANCE_POINTS = MAX_SCORE_GAP_POINTS;
/** Dimension values are compared for kappa in bands this wide: 0–<20, 20–<40, …, 80–100. */
export const KAPPA_BAND_POINTS = 20;
/** Disagreements listed per row; the rest are counted (each list is bounded). */
export const MAX_LISTED_DISAGREEMENTS = 100;
/** Notes of hard-failure disagreements; the rest are counted in one more. */
export const MAX_DISAGREEMENT_NOTES = 100;

const Where = { blind_id: BlindId, group: z.enum(GROUPS), replicate: z.number().int().min(1) };
const Role = z.enum(['reviewer', 'arbiter']);
const Diff = z.number().min(-100).max(100);
const Points = z.number().min(0).max(100);

export const DimensionAgreement = z.strictObject({
  /** A pre-registered dimension, or "total" (the reviewer's weighted total against the oracle's Continuity Score). */
  dimension: z.enum([...DIMENSIONS, 'total']),
  pairs: z.number().int().min(0),
  mean_abs_diff: Points.nullable(),
  max_abs_diff: Points.nullable(),
  within_tolerance: z.number().int().min(0),
  kappa: Kappa,
  disagreements: z.array(z.strictObject({ ...Where, reviewer: z.string(), role: Role, reviewer_value: Points, oracle_value: Points, diff: Diff })).max(MAX_LISTED_DISAGREEMENTS),
  disagreements_not_listed: z.number().int().min(0),
});
export type DimensionAgreement = z.infer<typeof DimensionAgreement>;

export const HardFailureAgreement = z.strictObject({
  id: HardFailureId,
  pairs: z.number().int().min(0),
  agree: z.number().int().min(0),
  /** Pairs in which the reviewer found it, and in which the oracle did. */
  reviewer_found: z.number().int().min(0),
  oracle_found: z.number().int().min(0),
  kappa: Kappa,
  disagreements: z.array(z.strictObject({ ...Where, reviewer: z.string(), role: Role, reviewer_found: z.boolean(), oracle_found: z.boolean(), oracle_entries: z.number().int().min(0) })).max(MAX_LISTED_DISAGREEMENTS),
  disagreements_not_listed: z.number().int().min(0),
});
export type HardFailureAgreement = z.infer<typeof HardFailureAgreement>;

export const ReviewerPairAgreement = z.strictObject({
  /** The two reviewers, as the first of their scorecards names them. */
  reviewers: z.tuple([z.string(), z.string()]),
  packages: z.number().int().min(1),
  hard_failures: z.strictObject({
    kappa: Kappa,
    disagreements: z.array(z.strictObject({ ...Where, id: HardFailureId, found_by: z.string(), not_found_by: z.string() })).max(MAX_LISTED_DISAGREEMENTS),
    disagreements_not_listed: z.number().int().min(0),
  }),
  dimensions: z.strictObject({
    mean_abs_diff: Points.nullable(),
    within_tolerance: z.number().int().min(0),
    kappa: Kappa,
    disagreements: z.array(z.strictObject({ ...Where, dimension: z.enum(DIMENSIONS), first: Points, second: Points })).max(MAX_LISTED_DISAGREEMENTS),
    disagreements_not_listed: z.number().int().min(0),
  }),
});
export type ReviewerPairAgreement = z.infer<typeof ReviewerPairAgreement>;

/** The oracle's figures of one instance, from report.json. */
export const OracleFigures = z.strictObject({
  score: Points,
  dimensions: z.strictObject(Object.fromEntries(DIMENSIONS.map((d) => [d, Points])) as Record<Dimension, typeof Points>),
  /** Entries the oracle listed per hard failure (0: not found). */
  hard_failures: z.strictObject(Object.fromEntries(HARD_FAILURE_IDS.map((id) => [id, z.number().int().min(0)])) as Record<HardFailure, z.ZodNumber>),
});
export type OracleFigures = z.infer<typeof OracleFigures>;

export const Agreement = z.strictObject({
  tolerance_points: z.number(),
  kappa_bands: z.array(z.string()),
  /** Where the oracle's figures came from, and the instances without them (not compared, each with why). */
  oracle: z.strictObject({ source: z.string(), instances: z.number().int().min(0), missing: z.array(z.strictObject({ ...Where, reason: z.string() })) }),
  reviewer_oracle: z.strictObject({ dimensions: z.array(DimensionAgreement), hard_failures: z.array(HardFailureAgreement) }),
  reviewer_reviewer: z.array(ReviewerPairAgreement),
});
export type Agreement = z.infer<typeof Agreement>;

export interface MapEntry {
  readonly blind_id: BlindId;
  readonly group: (typeof GROUPS)[number];
  readonly replicate: number;
}

export interface Scorecard {
  readonly role: z.infer<typeof Role>;
  readonly scores: ReviewerScores;
}

export interface OracleSource {
  /** One line: where the figures came from, or why there are none. */
  readonly source: string;
  /** By blind id: the figures, or why there are none. */
  readonly byBlindId: ReadonlyMap<string, OracleFigures | { readonly missing: string }>;
}

/** The oracle's figures of each map entry from report.json's text (the committed report). */
export function oracleFromReport(reportText: string, reportFile: string, entries: readonly MapEntry[]): OracleSource {
  let json: unknown;
  try {
    json = JSON.parse(reportText);
  } catch (error) {
    return noOracle(`not compared: ${reportFile} is not JSON (${error instanceof Error ? error.message : String(error)})`, entries);
  }
  const parsed = StudyReport.safeParse(json);
  if (!parsed.success) return noOracle(`not compared: ${reportFile} is not a study report this build reads (${parsed.error.issues.slice(0, 2).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')})`, entries);
  const report = parsed.data;
  const byBlindId = new Map<string, OracleFigures | { missing: string }>();
  for (const e of entries) {
    const inst = report.instances.find((i) => i.group === e.group && i.replicate === e.replicate);
    if (inst === undefined) byBlindId.set(e.blind_id, { missing: `${reportFile} has no instance ${e.group} replicate ${e.replicate}` });
    else if (inst.score === null || inst.dimensions === null) byBlindId.set(e.blind_id, { missing: `the oracle did not score it (status ${inst.status}${inst.status_detail ? `: ${inst.status_detail}` : ''})` });
    else {
      const counts = Object.fromEntries(HARD_FAILURE_IDS.map((id) => [id, inst.hard_failures.filter((h) => h.id === id).length]));
      byBlindId.set(e.blind_id, OracleFigures.parse({ score: inst.score, dimensions: inst.dimensions, hard_failures: counts }));
    }
  }
  return { source: `${reportFile} (report ${report.report_version}, scoring ${report.prereg.scoring_spec_version}, oracle rules ${report.prereg.oracle_rules_version})`, byBlindId };
}

function noOracle(source: string, entries: readonly MapEntry[]): OracleSource {
  return { source, byBlindId: new Map(entries.map((e) => [e.blind_id, { missing: source }])) };
}

function band(value: number): string {
  const top = 100 / KAPPA_BAND_POINTS - 1;
  const b = Math.min(top, Math.floor(value / KAPPA_BAND_POINTS));
  return `${b * KAPPA_BAND_POINTS}`;
}

function bandNames(): string[] {
  const n = 100 / KAPPA_BAND_POINTS;
  return Array.from({ length: n }, (_, i) => (i === n - 1 ? `${i * KAPPA_BAND_POINTS}–100` : `${i * KAPPA_BAND_POINTS}–<${(i + 1) * KAPPA_BAND_POINTS}`));
}

/** A bounded list: the first MAX_LISTED_DISAGREEMENTS, and how many more. */
function listed<T>(items: readonly T[]): { disagreements: T[]; disagreements_not_listed: number } {
  return { disagreements: items.slice(0, MAX_LISTED_DISAGREEMENTS), disagreements_not_listed: Math.max(0, items.length - MAX_LISTED_DISAGREEMENTS) };
}

const mean = (values: readonly number[]): number | null => (values.length === 0 ? null : round6(values.reduce((s, v) => s + v, 0) / values.length));

interface Pair {
  readonly entry: MapEntry;
  readonly card: Scorecard;
  readonly oracle: OracleFigures;
}

function dimensionRow(dimension: Dimension | 'total', pairs: readonly Pair[], weights: DimensionWeights): DimensionAgreement {
  const rows = pairs.map((p) => {
    const reviewer = dimension === 'total' ? totalOf(p.card.scores.dimensions, weights) : p.card.scores.dimensions[dimension];
    const oracle = dimension === 'total' ? p.oracle.score : p.oracle.dimensions[dimension];
    return { p, reviewer, oracle, diff: round6(reviewer - oracle) };
  });
  const abs = rows.map((r) => Math.abs(r.diff));
  const far = rows.filter((r) => Math.abs(r.diff) > AGREEMENT_TOLERANCE_POINTS);
  return {
    dimension,
    pairs: rows.length,
    mean_abs_diff: mean(abs),
    max_abs_diff: abs.length === 0 ? null : Math.max(...abs),
    within_tolerance: rows.length - far.length,
    kappa: cohensKappa(rows.map((r) => [band(r.reviewer), band(r.oracle)] as const)),
    ...listed(far.map((r) => ({ ...whereOf(r.p.entry), reviewer: r.p.card.scores.reviewer, role: r.p.card.role, reviewer_value: r.reviewer, oracle_value: r.oracle, diff: r.diff }))),
  };
}

function hardFailureRow(id: HardFailure, pairs: readonly Pair[]): HardFailureAgreement {
  const rows = pairs.map((p) => ({ p, reviewer: p.card.scores.hard_failures[id], oracle: p.oracle.hard_failures[id] > 0 }));
  const differing = rows.filter((r) => r.reviewer !== r.oracle);
  return {
    id,
    pairs: rows.length,
    agree: rows.length - differing.length,
    reviewer_found: rows.filter((r) => r.reviewer).length,
    oracle_found: rows.filter((r) => r.oracle).length,
    kappa: cohensKappa(rows.map((r) => [String(r.reviewer), String(r.oracle)] as const)),
    ...listed(differing.map((r) => ({ ...whereOf(r.p.entry), reviewer: r.p.card.scores.reviewer, role: r.p.card.role, reviewer_found: r.reviewer, oracle_found: r.oracle, oracle_entries: r.p.oracle.hard_failures[id] }))),
  };
}

const whereOf = (e: MapEntry): { blind_id: BlindId; group: MapEntry['group']; replicate: number } => ({ blind_id: e.blind_id, group: e.group, replicate: e.replicate });

/** Every two reviewers (by reviewerKey) who scored at least one package both, in name order. */
function reviewerPairs(entries: readonly MapEntry[], cards: readonly Scorecard[]): ReviewerPairAgreement[] {
  const reviewers = cards.filter((c) => c.role === 'reviewer');
  const names = new Map<string, string>();
  for (const c of reviewers) if (!names.has(reviewerKey(c.scores.reviewer))) names.set(reviewerKey(c.scores.reviewer), c.scores.reviewer);
  const keys = [...names.keys()].sort();
  const entryOf = new Map(entries.map((e) => [e.blind_id, e] as const));
  const out: ReviewerPairAgreement[] = [];
  for (const [i, a] of keys.entries()) {
    for (const b of keys.slice(i + 1)) {
      const both = entries.flatMap((e) => {
        const first = reviewers.find((c) => c.scores.blind_id === e.blind_id && reviewerKey(c.scores.reviewer) === a);
        const second = reviewers.find((c) => c.scores.blind_id === e.blind_id && reviewerKey(c.scores.reviewer) === b);
        return first && second ? [{ entry: entryOf.get(e.blind_id)!, first: first.scores, second: second.scores }] : [];
      });
      if (both.length === 0) continue;
      const decisions = both.flatMap((x) => HARD_FAILURE_IDS.map((id) => ({ x, id, first: x.first.hard_failures[id], second: x.second.hard_failures[id] })));
      const values = both.flatMap((x) => DIMENSIONS.map((d) => ({ x, d, first: x.first.dimensions[d], second: x.second.dimensions[d] })));
      const far = values.filter((v) => Math.abs(v.first - v.second) > AGREEMENT_TOLERANCE_POINTS);
      out.push({
        reviewers: [names.get(a)!, names.get(b)!],
        packages: both.length,
        hard_failures: {
          kappa: cohensKappa(decisions.map((d) => [String(d.first), String(d.second)] as const)),
          ...listed(decisions.filter((d) => d.first !== d.second).map((d) => ({ ...whereOf(d.x.entry), id: d.id, found_by: d.first ? d.x.first.reviewer : d.x.second.reviewer, not_found_by: d.first ? d.x.second.reviewer : d.x.first.reviewer }))),
        },
        dimensions: {
          mean_abs_diff: mean(values.map((v) => Math.abs(v.first - v.second))),
          within_tolerance: values.length - far.length,
          kappa: cohensKappa(values.map((v) => [band(v.first), band(v.second)] as const)),
          ...listed(far.map((v) => ({ ...whereOf(v.x.entry), dimension: v.d, first: v.first, second: v.second }))),
        },
      });
    }
  }
  return out;
}

/** The agreement of a locked review: every scorecard against the oracle, and reviewers with each other. */
export function reviewAgreement(entries: readonly MapEntry[], cards: readonly Scorecard[], weights: DimensionWeights, oracle: OracleSource): Agreement {
  const sorted = [...entries].sort((a, b) => (a.blind_id < b.blind_id ? -1 : a.blind_id > b.blind_id ? 1 : 0));
  const missing: Agreement['oracle']['missing'] = [];
  const pairs: Pair[] = [];
  for (const entry of sorted) {
    const figures = oracle.byBlindId.get(entry.blind_id) ?? { missing: 'no figures' };
    if ('missing' in figures) {
      missing.push({ ...whereOf(entry), reason: figures.missing });
      continue;
    }
    const mine = cards.filter((c) => c.scores.blind_id === entry.blind_id).sort((a, b) => (a.role === b.role ? (reviewerKey(a.scores.reviewer) < reviewerKey(b.scores.reviewer) ? -1 : 1) : a.role === 'reviewer' ? -1 : 1));
    for (const card of mine) pairs.push({ entry, card, oracle: figures });
  }
  return Agreement.parse({
    tolerance_points: AGREEMENT_TOLERANCE_POINTS,
    kappa_bands: bandNames(),
    oracle: { source: oracle.source, instances: sorted.length - missing.length, missing },
    reviewer_oracle: {
      dimensions: [...DIMENSIONS, 'total' as const].map((d) => dimensionRow(d, pairs, weights)),
      hard_failures: HARD_FAILURE_IDS.map((id) => hardFailureRow(id, pairs)),
    },
    reviewer_reviewer: reviewerPairs(sorted, cards),
  });
}

/**
 * The notes unblinded.json must carry about agreement: every scorecard that decided a hard failure
 * otherwise than the oracle (by name; bounded), every locked decision of no hard failure where the
 * oracle found some, and where the figures are missing. Empty only when there is nothing to say.
 */
export function agreementNotes(agreement: Agreement, locked: ReadonlyArray<MapEntry & { readonly hard_failures: Readonly<Record<string, boolean>> }>, oracle: OracleSource): string[] {
  const notes: string[] = [];
  const at = (w: { blind_id: string; group: string; replicate: number }): string => `${w.blind_id} (group ${w.group}, replicate ${w.replicate})`;
  if (agreement.oracle.instances === 0) notes.push(`reviewer–oracle agreement ${oracle.source}`);
  else for (const m of agreement.oracle.missing) notes.push(`${at(m)}: not compared with the oracle: ${m.reason}`);
  const differing = agreement.reviewer_oracle.hard_failures.flatMap((row) => row.disagreements.map((d) => ({ row, d })));
  const unlisted = agreement.reviewer_oracle.hard_failures.reduce((s, row) => s + row.disagreements_not_listed, 0);
  for (const { row, d } of differing.slice(0, MAX_DISAGREEMENT_NOTES)) {
    notes.push(`${at(d)}: ${d.role} ${JSON.stringify(d.reviewer)} marked ${row.id} ${d.reviewer_found ? 'found' : 'not found'}; the oracle ${d.oracle_found ? `found it (${d.oracle_entries} entr${d.oracle_entries === 1 ? 'y' : 'ies'})` : 'did not'}`);
  }
  const more = Math.max(0, differing.length - MAX_DISAGREEMENT_NOTES) + unlisted;
  if (more > 0) notes.push(`${more} more scorecard–oracle hard-failure disagreement(s) not noted here: see agreement.reviewer_oracle.hard_failures`);
  for (const decided of locked) {
    const figures = oracle.byBlindId.get(decided.blind_id);
    if (figures === undefined || 'missing' in figures) continue;
    const found = HARD_FAILURE_IDS.filter((id) => figures.hard_failures[id] > 0);
    if (found.length === 0 || HARD_FAILURE_IDS.some((id) => decided.hard_failures[id])) continue;
    const total = found.reduce((s, id) => s + figures.hard_failures[id], 0);
    notes.push(`${at(decided)}: the locked review decision finds no hard failure; the oracle found ${total} entr${total === 1 ? 'y' : 'ies'} (${found.map((id) => `${id} ${figures.hard_failures[id]}`).join(', ')})`);
  }
  const far = agreement.reviewer_oracle.dimensions.reduce((s, row) => s + row.pairs - row.within_tolerance, 0);
  if (far > 0) notes.push(`${far} scorecard value(s) differ from the oracle's by more than ${agreement.tolerance_points} points: see agreement.reviewer_oracle.dimensions`);
  return notes;
}
