// Rule R1 (docs/oracle.md, oracle/refuted-figure.ts): when a line "uses" a refuted figure. The
// figure counts as a number of its own, with any spacing; a line that marks it as corrected
// (or carries the corrected figure) does not use it; an affirmative "correct" does not exempt.
import { describe, expect, it } from 'vitest';
import { figurePattern, lineUsingRefutedFigure, type RefutedFigure } from '../../oracle/refuted-figure.js';

/** The bundled scenario's refutation (see test/oracle/continuity-score.test.ts: 61 % corrected to 46 %). */
const R: RefutedFigure = { figure: '61 %', corrected_figure: '46 %' };

type Case = readonly [line: string, uses: boolean];

const CASES: readonly Case[] = [
  // The figure as a number of its own, any spacing.
  ['Retention after 12 weeks: 61 %', true],
  ['Retention after 12 weeks: 61%', true],
  ['Retention after 12 weeks: 61  %', true],
  ['Retention after 12 weeks: 61\t%', true],
  ['61 % of riders stayed', true],
  ['retention (61 %).', true],
  ['retention was 61 %, the highest of the three', true],
  // Not the figure: another number that contains its digits.
  ['Retention after 12 weeks: 161 %', false],
  ['Retention after 12 weeks: 61.5 %', false],
  ['Retention after 12 weeks: 2.61 %', false],
  ['Retention after 12 weeks: 61,5 %', false],
  ['Retention after 12 weeks: 3,61 %', false],
  ['Retention after 12 weeks: 61', false],
  ['Retention after 12 weeks: 61 percent', false],
  ['Retention after 12 weeks: 6 1 %', false],
  // An affirmative "correct" is a use: it asserts the refuted figure.
  ['The correct retention is 61 %', true],
  ['Correct: 61 %', true],
  ['correctly measured at 61 %', true],
  // Negating marks exempt the line, case-insensitively.
  ['61 % was corrected to a lower value', false],
  ['Correction: the 61 % figure', false],
  ['the 61 % is incorrect', false],
  ['61 % (withdrawn by the authors)', false],
  ['the refuted 61 %', false],
  ['61 % was WRONG', false],
  ['an erroneous 61 %', false],
  ['Retracted: 61 %', false],
  ['do not use 61 %', false],
  ['Do Not Use: 61%', false],
  ['published as 61 %, later revised', false],
  // The corrected figure on the same line exempts it (any spacing), a longer number does not.
  ['61 % → 46 %', false],
  ['61 % vs 46%', false],
  ['61 % vs 146 %', true],
  ['61 % vs 46.5 %', true],
];

describe('lineUsingRefutedFigure (R1)', () => {
  it.each(CASES.map((c, i) => [i, ...c] as const))('case %i: %j uses the figure → %s', (_i, line, uses) => {
    expect(lineUsingRefutedFigure(line, R)).toBe(uses ? line : null);
  });

  it('returns the first line that uses the figure, skipping lines that mark it corrected', () => {
    const text = ['# Findings', '', '61 % was wrong; the corrected value is 46 %', 'Retention after 12 weeks: 61%', 'Retention after 24 weeks: 61 %'].join('\n');
    expect(lineUsingRefutedFigure(text, R)).toBe('Retention after 12 weeks: 61%');
    expect(lineUsingRefutedFigure(text.replace(/\n/g, '\r\n'), R)).toBe('Retention after 12 weeks: 61%');
    expect(lineUsingRefutedFigure('# Findings\n\n61 % was wrong\nretention 46 %\n', R)).toBeNull();
    expect(lineUsingRefutedFigure('', R)).toBeNull();
  });

  it('a mark on another line does not exempt a use: the rule is per line', () => {
    expect(lineUsingRefutedFigure('The 61 % figure was withdrawn.\nStill, retention: 61 %', R)).toBe('Still, retention: 61 %');
  });

  it('figurePattern: the figure\'s own characters are literal, spacing is free, and digits are not glued on', () => {
    expect(figurePattern('61 %').test('61%')).toBe(true);
    expect(figurePattern('61 %').test('61   %')).toBe(true);
    expect(figurePattern('61 %').test('161 %')).toBe(false);
    // A figure ending in a digit is not matched inside a longer number either.
    expect(figurePattern('1.5').test('1.5 points')).toBe(true);
    expect(figurePattern('1.5').test('1.55')).toBe(false);
    expect(figurePattern('1.5').test('1.5.2')).toBe(false);
    expect(figurePattern('1.5').test('1x5')).toBe(false);
    expect(figurePattern('1.5').test('21.5')).toBe(false);
    expect(figurePattern('1.5').test('the value 1.5.')).toBe(true);
  });
});
