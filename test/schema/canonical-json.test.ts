import canonicalize from 'canonicalize';
import seedrandom from 'seedrandom';
import { describe, expect, test } from 'vitest';
import { canonicalJson, NotJsonError } from '../../schema/canonical-json.js';
import { GENESIS_HASH, hashCanonical, hashText, HashString } from '../../schema/hash.js';

describe('RFC 8785 canonical JSON', () => {
  test('sorts keys by UTF-16 code units and drops insignificant whitespace', () => {
    // RFC 8785 §3.2.3 sorting example, abridged: "\u20ac" sorts after "\r" and "1", and
    // "\ud83d\ude00" (an astral character) sorts by its surrogate pair, before "\ufb33".
    const input = { '\u20ac': 'Euro Sign', '\r': 'Carriage Return', '\ufb33': 'Hebrew Letter Dalet With Dagesh', '1': 'One', '\ud83d\ude00': 'Emoji: Grinning Face', '\u0080': 'Control', '\u00f6': 'Latin Small Letter O With Diaeresis' };
    // Read the order from the text: parsing it back would put the integer-like key first.
    const text = canonicalJson(input);
    const order = ['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'].map((k) => text.indexOf(`${JSON.stringify(k)}:`));
    expect(order.every((at) => at > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(text.startsWith('{"\\r":"Carriage Return","1":"One",')).toBe(true);
  });

  test('serialises numbers the ECMAScript way (RFC 8785 §3.2.2.3)', () => {
    expect(canonicalJson([1e21, 1e-7, 0.000001, -0, 100, 4.5, 2 ** 53])).toBe('[1e+21,1e-7,0.000001,0,100,4.5,9007199254740992]');
  });

  test('escapes only what JSON requires', () => {
    expect(canonicalJson({ s: '\u0000\u001f"\\/é€😀' })).toBe('{"s":"\\u0000\\u001f\\"\\\\/é€😀"}');
  });

  test.each([
    ['undefined member', { a: undefined }, '$.a'],
    ['NaN', { a: Number.NaN }, '$.a'],
    ['Infinity', [Number.POSITIVE_INFINITY], '$[0]'],
    ['a Date', { when: new Date(0) }, '$.when'],
    ['a Map', { m: new Map() }, '$.m'],
    ['a bigint', { n: 1n }, '$.n'],
    ['a function', { f: () => 1 }, '$.f'],
  ])('refuses %s instead of silently changing it', (_name, value, where) => {
    expect(() => canonicalJson(value)).toThrow(NotJsonError);
    expect(() => canonicalJson(value)).toThrow(where);
  });

  test('refuses lone surrogates, which have no UTF-8 form', () => {
    expect(() => canonicalJson({ s: '\ud800' })).toThrow(NotJsonError);
    expect(() => canonicalJson({ s: 'a\udc00b' })).toThrow(/\$\.s is a string with a lone surrogate/);
    expect(() => canonicalJson({ '\ud800': 1 })).toThrow(/key with a lone surrogate/);
  });
});

describe('sha256 hash strings', () => {
  test('known vectors', () => {
    expect(hashText('')).toBe('sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hashText('abc')).toBe('sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashCanonical({ b: 1, a: 2 })).toBe(hashText('{"a":2,"b":1}'));
  });

  test('format is checked', () => {
    expect(HashString.safeParse(GENESIS_HASH).success).toBe(true);
    expect(HashString.safeParse(`sha256:${'A'.repeat(64)}`).success).toBe(false);
    expect(HashString.safeParse(`sha256:${'0'.repeat(63)}`).success).toBe(false);
    expect(HashString.safeParse('0'.repeat(64)).success).toBe(false);
  });
});

describe('the one-pass serialisation against the canonicalize package (RFC 8785 for JavaScript)', () => {
  // Seeded, so a difference is reproducible: strings with escapes, astral characters and
  // non-ASCII keys that sort by UTF-16 code units; numbers across the ranges where the ECMAScript
  // form changes (integers, exponents, tiny, huge, -0); nesting in objects and arrays.
  const random = seedrandom('canonical-json-equivalence');
  const pick = <T,>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const CHARS = ['a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\u0000', '\u001f', '\u007f', 'é', '€', '\u2028', '\u2029', '😀', '\ud83d\ude00', '\ufb33', '\u0080', '\uffff'];
  const text = (): string => Array.from({ length: Math.floor(random() * 8) }, () => pick(CHARS)).join('');
  const NUMBERS = [0, -0, 1, -1, 4.5, 0.1, 1e21, 1e-7, 0.000001, 2 ** 53, -(2 ** 53), 1.7976931348623157e308, 5e-324, 123456789.123, 1e20, 3.14159];
  const value = (depth: number): unknown => {
    const kind = depth > 4 ? Math.floor(random() * 4) : Math.floor(random() * 6);
    switch (kind) {
      case 0:
        return text();
      case 1:
        return random() < 0.5 ? pick(NUMBERS) : (random() - 0.5) * 10 ** Math.floor(random() * 30 - 10);
      case 2:
        return pick([true, false, null]);
      case 3:
        return Math.floor(random() * 1e6);
      case 4:
        return Array.from({ length: Math.floor(random() * 5) }, () => value(depth + 1));
      default:
        return Object.fromEntries(Array.from({ length: Math.floor(random() * 6) }, () => [text(), value(depth + 1)]));
    }
  };

  test('10,000 generated values serialise byte for byte as the package does', () => {
    let compared = 0;
    for (let i = 0; i < 10_000; i += 1) {
      const v = value(0);
      expect(canonicalJson(v)).toBe(canonicalize(v));
      compared += 1;
    }
    expect(compared).toBe(10_000);
  });

  test('a hole in a sparse array is refused, where the package would write invalid JSON', () => {
    // eslint-disable-next-line no-sparse-arrays
    const sparse = [1, , 2];
    expect(canonicalize(sparse)).toBe('[1,,2]');
    expect(() => canonicalJson(sparse)).toThrow(NotJsonError);
  });
});
