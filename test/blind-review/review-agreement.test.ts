// The review's agreement figures (blind-review/review-agreement.ts, cohens-kappa.ts) on small
// inputs whose answers are worked out by hand here: Cohen's kappa on a textbook table, its
// undefined cases, the tolerance at and just past its edge (a disagreement is flagged by name only
// past it), and the oracle's figures read from a real-shaped report (a report that is not one is
// said, never silently skipped). The end-to-end test (end-to-end.test.ts) runs the same on a real
// study's packages and scorecards.
import { describe, expect, test } from 'vitest';
import { cohensKappa } from '../../blind-review/cohens-kappa.js';
import { agreementNotes, AGREEMENT_TOLERANCE_POINTS, oracleFromReport, reviewAgreement, type MapEntry, type OracleFigures, type OracleSource, type Scorecard } from '../../blind-review/review-agreement.js';
import type { ReviewerScores } from '../../blind-review/package-format.js';
import { HARD_FAILURE_IDS } from '../../design/prereg.js';
import { DIMENSIONS } from '../../oracle/continuity-score.js';

const WEIGHTS = { state_recovery: 40, re_planning: 15, experience_influence: 15, evidence_integrity: 20, recovery: 10 };
const ENTRIES: MapEntry[] = [
  { blind_id: 'R-00000A', group: 'A', replicate: 1 },
  { blind_id: 'R-00000B', group: 'B', replicate: 1 },
];

function card(blindId: string, reviewer: string, value: number, found: Partial<ReviewerScores['hard_failures']> = {}, role: Scorecard['role'] = 'reviewer'): Scorecard {
  return {
    role,
    scores: {
      score_format_version: '1.0.0',
      blind_id: blindId,
      reviewer,
      dimensions: Object.fromEntries(DIMENSIONS.map((d) => [d, value])) as ReviewerScores['dimensions'],
      hard_failures: { ...(Object.fromEntries(HARD_FAILURE_IDS.map((id) => [id, false])) as ReviewerScores['hard_failures']), ...found },
      comments: '',
      saved_at: '2026-03-06T09:00:00.000Z',
    },
  };
}

function figures(value: number, found: Partial<OracleFigures['hard_failures']> = {}): OracleFigures {
  return { score: value, dimensions: Object.fromEntries(DIMENSIONS.map((d) => [d, value])) as OracleFigures['dimensions'], hard_failures: { ...(Object.fromEntries(HARD_FAILURE_IDS.map((id) => [id, 0])) as OracleFigures['hard_failures']), ...found } };
}

const oracleOf = (byId: Record<string, OracleFigures>): OracleSource => ({ source: 'report.json (test)', byBlindId: new Map(Object.entries(byId)) });

describe("Cohen's kappa", () => {
  test('a textbook 2 × 2 table: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no gives p_o 0.7, p_e 0.5, κ 0.4', () => {
    const pairs = [...Array(20).fill(['yes', 'yes']), ...Array(5).fill(['yes', 'no']), ...Array(10).fill(['no', 'yes']), ...Array(15).fill(['no', 'no'])] as Array<[string, string]>;
    expect(cohensKappa(pairs)).toEqual({ items: 50, observed: 0.7, expected: 0.5, kappa: 0.4, note: '' });
  });

  test('agreement no better than chance is 0, systematic disagreement negative, full agreement over two categories 1', () => {
    expect(cohensKappa([['a', 'a'], ['a', 'b'], ['b', 'a'], ['b', 'b']]).kappa).toBe(0);
    expect(cohensKappa([['a', 'b'], ['b', 'a']]).kappa).toBe(-1);
    expect(cohensKappa([['a', 'a'], ['b', 'b'], ['c', 'c']]).kappa).toBe(1);
  });

  test('undefined, and said why: no items; both raters always in one and the same category', () => {
    expect(cohensKappa([])).toEqual({ items: 0, observed: null, expected: null, kappa: null, note: 'no item was rated by both' });
    const one = cohensKappa([['false', 'false'], ['false', 'false']]);
    expect(one).toMatchObject({ items: 2, observed: 1, expected: 1, kappa: null });
    expect(one.note).toMatch(/^undefined: both put all 2 item\(s\) in one category \(false\)/);
  });
});

describe('reviewAgreement', () => {
  test(`a difference of exactly ${AGREEMENT_TOLERANCE_POINTS} points is within the tolerance; just past it is a disagreement, named`, () => {
    const cards = [card('R-00000A', 'ada', 50 + AGREEMENT_TOLERANCE_POINTS), card('R-00000A', 'bo', 50 - AGREEMENT_TOLERANCE_POINTS - 0.5), card('R-00000B', 'ada', 70), card('R-00000B', 'bo', 70)];
    const a = reviewAgreement(ENTRIES, cards, WEIGHTS, oracleOf({ 'R-00000A': figures(50), 'R-00000B': figures(70) }));
    for (const row of a.reviewer_oracle.dimensions) {
      expect(row.pairs, row.dimension).toBe(4);
      expect(row.within_tolerance, row.dimension).toBe(3);
      expect(row.disagreements, row.dimension).toEqual([{ blind_id: 'R-00000A', group: 'A', replicate: 1, reviewer: 'bo', role: 'reviewer', reviewer_value: 34.5, oracle_value: 50, diff: -15.5 }]);
      expect(row.max_abs_diff).toBe(15.5);
      expect(row.mean_abs_diff).toBe(7.625);
    }
    // Between the two reviewers: 30.5 points apart on every dimension of R-00000A.
    expect(a.reviewer_reviewer[0]!.dimensions).toMatchObject({ within_tolerance: 5, mean_abs_diff: 15.25 });
    expect(a.reviewer_reviewer[0]!.dimensions.disagreements.map((d) => [d.blind_id, d.dimension, d.first, d.second])).toEqual(DIMENSIONS.map((d) => ['R-00000A', d, 65, 34.5]));
  });

  test('a hard failure decided otherwise than the oracle is flagged by name and noted, either way; a locked "none" the oracle contradicts is noted', () => {
    const cards = [card('R-00000A', 'ada', 60), card('R-00000A', 'bo', 60), card('R-00000B', 'ada', 60, { duplicate_side_effect: true }), card('R-00000B', 'bo', 60), card('R-00000B', 'cy', 60, {}, 'arbiter')];
    const oracle = oracleOf({ 'R-00000A': figures(60, { unauthorized_tool_execution: 7 }), 'R-00000B': figures(60) });
    const a = reviewAgreement(ENTRIES, cards, WEIGHTS, oracle);
    const unauthorized = a.reviewer_oracle.hard_failures.find((r) => r.id === 'unauthorized_tool_execution')!;
    expect(unauthorized).toMatchObject({ pairs: 5, agree: 3, reviewer_found: 0, oracle_found: 2 });
    expect(unauthorized.disagreements.map((d) => d.reviewer)).toEqual(['ada', 'bo']);
    const duplicate = a.reviewer_oracle.hard_failures.find((r) => r.id === 'duplicate_side_effect')!;
    expect(duplicate.disagreements).toEqual([{ blind_id: 'R-00000B', group: 'B', replicate: 1, reviewer: 'ada', role: 'reviewer', reviewer_found: true, oracle_found: false, oracle_entries: 0 }]);
    // κ over found / not found: 5 pairs, the oracle found it in 2, the reviewers in none.
    expect(unauthorized.kappa).toMatchObject({ items: 5, observed: 0.6, expected: 0.6, kappa: 0 });
    const notes = agreementNotes(a, [ENTRIES[0]!, ENTRIES[1]!].map((e) => ({ ...e, hard_failures: Object.fromEntries(HARD_FAILURE_IDS.map((id) => [id, false])) })), oracle);
    expect(notes).toEqual([
      'R-00000A (group A, replicate 1): reviewer "ada" marked unauthorized_tool_execution not found; the oracle found it (7 entries)',
      'R-00000A (group A, replicate 1): reviewer "bo" marked unauthorized_tool_execution not found; the oracle found it (7 entries)',
      'R-00000B (group B, replicate 1): reviewer "ada" marked duplicate_side_effect found; the oracle did not',
      'R-00000A (group A, replicate 1): the locked review decision finds no hard failure; the oracle found 7 entries (unauthorized_tool_execution 7)',
    ]);
    // The arbiter is compared with the oracle, never paired with the reviewers.
    expect(a.reviewer_reviewer.map((p) => p.reviewers)).toEqual([['ada', 'bo']]);
  });

  test('no notes only when there is nothing to say: every scorecard agrees with the oracle on every hard failure and within the tolerance', () => {
    const cards = [card('R-00000A', 'ada', 60), card('R-00000A', 'bo', 62)];
    const oracle = oracleOf({ 'R-00000A': figures(61), 'R-00000B': figures(61) });
    const a = reviewAgreement(ENTRIES, cards, WEIGHTS, oracle);
    expect(agreementNotes(a, [], oracle)).toEqual([]);
  });

  test('the oracle figures from a report: a file that is not a study report is said, and every instance is left uncompared with that reason', () => {
    const none = oracleFromReport('{"report": 1}', '/s/report.json', ENTRIES);
    expect(none.source).toMatch(/^not compared: \/s\/report\.json is not a study report this build reads/);
    const a = reviewAgreement(ENTRIES, [card('R-00000A', 'ada', 60)], WEIGHTS, none);
    expect(a.oracle.instances).toBe(0);
    expect(a.oracle.missing.map((m) => m.reason)).toEqual([none.source, none.source]);
    expect(agreementNotes(a, [], none)).toEqual([`reviewer–oracle agreement ${none.source}`]);
    expect(oracleFromReport('not json', '/s/report.json', ENTRIES).source).toMatch(/^not compared: \/s\/report\.json is not JSON/);
  });
});
