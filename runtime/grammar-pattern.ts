// A JSON Schema string's `pattern` as GBNF (answer-grammar.ts): the subset of regular expressions
// the answer schema uses — a sequence of character classes, each with a count — parsed into atoms,
// each class as code-point ranges (intersected with the characters a JSON string may hold), and
// written back as GBNF character classes. Anything outside the subset is refused, never guessed.
import { ANSWER_GRAMMAR_LIMITS, AnswerGrammarError, STRING_CHARS } from './answer-grammar-limits.js';

/**
 * A pattern of the simple anchored form `^atom atom … $`, where an atom is a character class
 * `[…]` (ranges and escaped characters, no negation), an escaped character or a plain
 * letter/digit, optionally followed by `?`, `{n}` or `{m,n}`. Anything else (alternation,
 * groups, `.`, `*`, `+`, lookarounds) is refused.
 */
export function patternAtoms(pattern: string, path: string): { readonly cls: string; readonly min: number; readonly max: number }[] {
  if (!pattern.startsWith('^') || !pattern.endsWith('$') || pattern.endsWith('\\$')) throw new AnswerGrammarError(`${path}: ${JSON.stringify(pattern)} must be anchored with ^ and $`);
  const body = pattern.slice(1, -1);
  const atoms: { cls: string; min: number; max: number }[] = [];
  let i = 0;
  const fail = (why: string): never => {
    throw new AnswerGrammarError(`${path}: ${JSON.stringify(pattern)} at offset ${i + 1}: ${why}; only ^, character classes, escaped or plain characters and the bounded quantifiers ?, {n}, {m,n} are supported`);
  };
  while (i < body.length) {
    let ranges: (readonly [number, number])[];
    const c = body[i]!;
    if (c === '[') {
      const end = findClassEnd(body, i);
      if (end < 0) fail('an unclosed character class');
      ranges = classRanges(body.slice(i + 1, end), fail);
      i = end + 1;
    } else if (c === '\\') {
      const next = body[i + 1];
      if (next === undefined) fail('a trailing backslash');
      if (next === 'd') ranges = [[0x30, 0x39]];
      else if (/[A-Za-z0-9]/.test(next!)) fail(`the escape \\${next}`);
      else ranges = [[next!.codePointAt(0)!, next!.codePointAt(0)!]];
      i += 2;
    } else if (/[A-Za-z0-9_:\-/@# ]/.test(c)) {
      ranges = [[c.codePointAt(0)!, c.codePointAt(0)!]];
      i += 1;
    } else {
      fail(`the character ${JSON.stringify(c)}`);
    }
    let min = 1;
    let max = 1;
    const q = body[i];
    if (q === '?') {
      min = 0;
      i += 1;
    } else if (q === '{') {
      const m = /^\{(\d+)(?:,(\d+))?\}/.exec(body.slice(i));
      if (m === null) fail('an unbounded or malformed {…} quantifier');
      min = Number(m![1]);
      max = m![2] === undefined ? min : Number(m![2]);
      if (min > max || max > ANSWER_GRAMMAR_LIMITS.maxRepetition) fail(`the quantifier ${m![0]} (needs min <= max <= maxRepetition ${ANSWER_GRAMMAR_LIMITS.maxRepetition})`);
      i += m![0].length;
    } else if (q === '*' || q === '+') {
      fail(`the unbounded quantifier ${q}`);
    }
    const allowed = intersect(ranges!, STRING_CHARS);
    if (allowed.length === 0) fail('a class with no character a JSON string can hold unescaped');
    if (max > 0) atoms.push({ cls: charClass(allowed), min, max });
  }
  if (atoms.length === 0) throw new AnswerGrammarError(`${path}: ${JSON.stringify(pattern)} matches only the empty string`);
  return atoms;
}

function findClassEnd(body: string, open: number): number {
  for (let j = open + 1; j < body.length; j++) {
    if (body[j] === '\\') j++;
    else if (body[j] === ']') return j;
  }
  return -1;
}

function classRanges(inner: string, fail: (why: string) => never): (readonly [number, number])[] {
  if (inner.startsWith('^')) fail('a negated character class');
  const chars: number[] = [];
  const isRangeDash: boolean[] = [];
  for (let j = 0; j < inner.length; j++) {
    const ch = inner[j]!;
    if (ch === '\\') {
      const next = inner[j + 1];
      if (next === undefined) fail('a trailing backslash in a class');
      if (/[A-Za-z0-9]/.test(next!)) fail(`the escape \\${next} in a class`);
      chars.push(next!.codePointAt(0)!);
      isRangeDash.push(false);
      j++;
    } else if (ch === '[') {
      fail('a nested [ in a class');
    } else {
      chars.push(ch.codePointAt(0)!);
      // A '-' between two characters is a range; first or last it is the character itself.
      isRangeDash.push(ch === '-' && j > 0 && j < inner.length - 1);
    }
  }
  const ranges: [number, number][] = [];
  for (let k = 0; k < chars.length; k++) {
    if (isRangeDash[k + 1] === true && k + 2 < chars.length) {
      const lo = chars[k]!;
      const hi = chars[k + 2]!;
      if (lo > hi) fail(`the reversed range ${String.fromCodePoint(lo)}-${String.fromCodePoint(hi)}`);
      ranges.push([lo, hi]);
      k += 2;
    } else {
      ranges.push([chars[k]!, chars[k]!]);
    }
  }
  return ranges;
}

/** Sorted, merged intersection of two sets of inclusive code-point ranges. */
function intersect(a: readonly (readonly [number, number])[], b: readonly (readonly [number, number])[]): (readonly [number, number])[] {
  const out: [number, number][] = [];
  for (const [alo, ahi] of a) {
    for (const [blo, bhi] of b) {
      const lo = Math.max(alo, blo);
      const hi = Math.min(ahi, bhi);
      if (lo <= hi) out.push([lo, hi]);
    }
  }
  out.sort((x, y) => x[0] - y[0]);
  const merged: [number, number][] = [];
  for (const r of out) {
    const last = merged[merged.length - 1];
    if (last !== undefined && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  return merged;
}

export function charClass(ranges: readonly (readonly [number, number])[]): string {
  return `[${ranges.map(([lo, hi]) => (lo === hi ? classChar(lo) : `${classChar(lo)}-${classChar(hi)}`)).join('')}]`;
}

function classChar(cp: number): string {
  if (/[A-Za-z0-9]/.test(String.fromCodePoint(cp))) return String.fromCodePoint(cp);
  return hexEscape(cp);
}

export function hexEscape(cp: number): string {
  if (cp <= 0xff) return `\\x${cp.toString(16).toUpperCase().padStart(2, '0')}`;
  if (cp <= 0xffff) return `\\u${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  return `\\U${cp.toString(16).toUpperCase().padStart(8, '0')}`;
}
