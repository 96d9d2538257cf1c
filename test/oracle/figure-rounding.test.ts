// The rounding rules as data (oracle/figure-rounding.ts) against what their functions do: the
// statement a scorer in another language follows is implemented here a second way — without
// Math.round or toFixed — and must give the same double (or text) for every value tried, exact
// ties and the edge cases named in the statement included. The formula text, evaluated, must too.
import { describe, expect, test } from 'vitest';
import { formatByRule, formatPoints, NUMBER_ROUNDING_METHOD, POINTS_ROUNDING, POINTS_TEXT_ROUNDING, roundByRule, roundPoints, TEXT_ROUNDING_METHOD, WHOLE_MS_ROUNDING, type NumberRoundingRule } from '../../oracle/figure-rounding.js';
import { comparable } from '../../oracle/group-statistics.js';

/** The number rule's statement, step by step, with floor instead of Math.round: a tie goes up (toward +∞). */
function byStatement(rule: NumberRoundingRule, x: number): number {
  const scale = 10 ** rule.decimals;
  const y = x * scale;
  const below = Math.floor(y);
  // y − floor(y) is exact (Sterbenz: within a factor 2), except for y in (−0.5, 0), where it is above 0.5 either way.
  const fraction = y - below;
  const n = fraction >= 0.5 ? below + 1 : below;
  return n / scale;
}

/** The text rule's statement with exact arithmetic: |x| = m × 2^e exactly, to the nearest multiple of 10^−d, a tie to the larger. */
function toFixedByStatement(x: number, decimals: number): string {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const bits = view.getBigUint64(0);
  const exponentBits = Number((bits >> 52n) & 0x7ffn);
  const fractionBits = bits & ((1n << 52n) - 1n);
  const m = exponentBits === 0 ? fractionBits : fractionBits | (1n << 52n);
  const e = (exponentBits === 0 ? 1 : exponentBits) - 1075;
  const scaled = m * 10n ** BigInt(decimals);
  let n: bigint;
  if (e >= 0) n = scaled << BigInt(e);
  else {
    const denominator = 1n << BigInt(-e);
    const q = scaled / denominator;
    const r = scaled % denominator;
    n = 2n * r >= denominator ? q + 1n : q;
  }
  const digits = n.toString().padStart(decimals + 1, '0');
  const text = decimals === 0 ? digits : `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
  return x < 0 ? `-${text}` : text;
}

/** A deterministic spread of doubles: many decimals, both signs, the 0–100 range of points and beyond. */
function samples(count: number): number[] {
  let state = 0x9e3779b9;
  const next = (): number => {
    state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return state / 2 ** 32;
  };
  const out: number[] = [];
  for (let k = 0; k < count; k += 1) out.push((next() - 0.2) * 125, next() * 100, (100 * Math.floor(next() * 57)) / 56, (100 * Math.floor(next() * 7)) / 3);
  return out;
}

/** Values whose scaled double is exactly k + 0.5: the ties the statement sends toward +∞. */
function exactTies(decimals: number): number[] {
  const scale = 10 ** decimals;
  const out: number[] = [];
  for (let k = -2000; k <= 2000 && out.length < 200; k += 1) {
    const x = (k + 0.5) / scale;
    if (x * scale === k + 0.5) out.push(x);
  }
  return out;
}

describe('the rounding rules are what their functions do', () => {
  test('the rules as data: points 6 decimals, whole milliseconds, text 2 decimals; method and formula named', () => {
    expect(POINTS_ROUNDING).toMatchObject({ method: NUMBER_ROUNDING_METHOD, decimals: 6, formula: 'Math.round(x * 1e6) / 1e6' });
    expect(WHOLE_MS_ROUNDING).toMatchObject({ method: NUMBER_ROUNDING_METHOD, decimals: 0, formula: 'Math.round(x)' });
    expect(POINTS_TEXT_ROUNDING).toMatchObject({ method: TEXT_ROUNDING_METHOD, decimals: 2, formula: 'x.toFixed(2)' });
    expect(POINTS_ROUNDING.statement).toMatch(/toward \+infinity/);
  });

  test('a number rule: its function, its statement done by hand and its formula text give the same double', () => {
    const values = [...samples(2500), 0.49999999999999994, -0.49999999999999994, 0, -0, 100, 53.571428571428574, 0.1 + 0.2, 80.1 - 60.1];
    for (const rule of [POINTS_ROUNDING, WHOLE_MS_ROUNDING]) {
      const formula = new Function('x', `return ${rule.formula};`) as (x: number) => number;
      for (const x of values) {
        const got = roundByRule(rule, x);
        expect(Object.is(got, byStatement(rule, x)) || got === byStatement(rule, x), `${rule.formula} at ${x}`).toBe(true);
        expect(got, `${rule.formula} (the text) at ${x}`).toBe(formula(x));
      }
    }
    expect(roundPoints).toBeTypeOf('function');
    expect(values.every((x) => roundPoints(x) === roundByRule(POINTS_ROUNDING, x) && comparable(x) === roundPoints(x))).toBe(true);
  });

  test('exact ties go toward +infinity (not away from zero, not to even), as the statement says', () => {
    for (const rule of [POINTS_ROUNDING, WHOLE_MS_ROUNDING]) {
      const ties = exactTies(rule.decimals);
      expect(ties.length, `exact ties at ${rule.decimals} decimals`).toBeGreaterThan(20);
      const scale = 10 ** rule.decimals;
      for (const x of ties) expect(roundByRule(rule, x), `tie ${x}`).toBe(Math.floor(x * scale + 1) / scale);
    }
    expect(roundByRule(WHOLE_MS_ROUNDING, 2.5)).toBe(3);
    expect(roundByRule(WHOLE_MS_ROUNDING, -2.5)).toBe(-2);
    expect(roundByRule(WHOLE_MS_ROUNDING, 0.5)).toBe(1);
    expect(roundByRule(WHOLE_MS_ROUNDING, 0.49999999999999994)).toBe(0);
    // The statement's worked example: printed as the shortest decimal that reads back.
    expect(JSON.stringify(roundPoints(375 / 7))).toBe('53.571429');
    expect(JSON.stringify(roundPoints(-1e-9))).toBe('0');
  });

  test('the text rule: its function and its statement done with exact arithmetic write the same digits', () => {
    const values = [...samples(2500).map(roundPoints), 0.125, 0.375, -0.125, 1.005, 2.675, -0.001, 0, 100, 19.999999999999993];
    for (const x of values) expect(formatByRule(POINTS_TEXT_ROUNDING, x), `${x}`).toBe(toFixedByStatement(x, 2));
    expect(formatPoints(null)).toBe('n/a');
    expect(formatPoints(-0.001)).toBe('-0.00');
    // 0.125 is exact in binary64: a true tie, written with the larger digit.
    expect(formatPoints(0.125)).toBe('0.13');
    // 1.005 is 1.00499999999999989… in binary64: no tie, down.
    expect(formatPoints(1.005)).toBe('1.00');
  });

  test('a figure that is not a finite number is refused, never rounded into one', () => {
    expect(() => roundPoints(Number.NaN)).toThrow(/not a finite number/);
    expect(() => roundByRule(WHOLE_MS_ROUNDING, Number.POSITIVE_INFINITY)).toThrow(/not a finite number/);
  });
});
