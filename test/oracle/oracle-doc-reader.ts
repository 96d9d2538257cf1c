// Reads docs/oracle.md the way test/oracle/oracle-doc*.test.ts check it: a section by its
// heading, a list by the constant it names, a pattern by its label and the fenced block after
// it, and the parts of a worked example between stable markers. Each reader returns what it found
// or says plainly what it did not find; the tests forge a drifted doc against each one.

/** The text of `## heading` up to the next `## ` heading (its `###` subsections included). */
export function docSection(doc: string, heading: string): string {
  const lines = doc.split('\n');
  const start = lines.findIndex((l) => l === `## ${heading}`);
  if (start < 0) throw new Error(`docs/oracle.md has no section "## ${heading}"`);
  const end = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  return lines.slice(start, end < 0 ? lines.length : end).join('\n');
}

/**
 * The items of the list line naming `name` — "(`NAME`, `file`): `a`, `b`." — compared with
 * `expected`, in order. Null when equal; else what differs.
 */
export function listMismatch(section: string, name: string, expected: readonly string[]): string | null {
  const lines = section.split('\n').filter((l) => l.includes(`(\`${name}\`,`));
  if (lines.length === 0) return `the list ${name} was not found`;
  if (lines.length > 1) return `the list ${name} is written ${lines.length} times`;
  const line = lines[0]!;
  const after = line.slice(line.indexOf('):', line.indexOf(`(\`${name}\`,`)) + 2);
  const items = [...after.matchAll(/`([^`]*)`/g)].map((m) => m[1]!);
  const same = items.length === expected.length && items.every((item, i) => item === expected[i]);
  return same ? null : `the list ${name} in the doc is [${items.join(' | ')}], the code's is [${expected.join(' | ')}]`;
}

/**
 * The lines of the ```regex block after the line that starts with "`NAME`", compared with each
 * regex's `String()` (source and flags). Null when equal; else what differs.
 */
export function patternMismatch(section: string, name: string, expected: readonly RegExp[]): string | null {
  const lines = section.split('\n');
  const at = lines.findIndex((l) => l.startsWith(`\`${name}\` `));
  if (at < 0) return `the pattern ${name} was not found`;
  const open = lines.findIndex((l, i) => i > at && l === '```regex');
  const close = lines.findIndex((l, i) => i > open && l === '```');
  if (open < 0 || close < 0) return `the pattern ${name} has no \`\`\`regex block after it`;
  const written = lines.slice(open + 1, close);
  const code = expected.map(String);
  const same = written.length === code.length && written.every((w, i) => w === code[i]);
  return same ? null : `the pattern ${name} in the doc is ${written.join(' ; ')}, the code's is ${code.join(' ; ')}`;
}

/** Each "…" and "e.g." in `text`, in order: what a scorer cannot decide by. */
export function undecidedPhrases(text: string): string[] {
  return [...text.matchAll(/…|\be\.g\./g)].map((m) => m[0]);
}

/** The block after `<!-- example:NAME -->`: a fenced block with its fences, or the lines up to the first blank one. */
export function exampleBlock(section: string, name: string): string[] {
  const lines = section.split('\n');
  const at = lines.findIndex((l) => l === `<!-- example:${name} -->`);
  if (at < 0) throw new Error(`the worked example has no block <!-- example:${name} -->`);
  if (lines[at + 1]?.startsWith('```')) {
    const close = lines.findIndex((l, i) => i > at + 1 && l === '```');
    return lines.slice(at + 1, close + 1);
  }
  const end = lines.findIndex((l, i) => i > at && l.trim() === '');
  return lines.slice(at + 1, end < 0 ? lines.length : end);
}

/** round6 exactly as the oracle rounds (oracle/continuity-score.ts, docs/oracle.md "Numbers"). */
const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/** Evaluates + − × / ( ) and round6( ) over decimal numbers, left to right as written, in binary64. */
export function evaluate(expression: string): number {
  const tokens = expression.match(/round6\(|\d+(?:\.\d+)?|[-+×/()]|\S/g) ?? [];
  let i = 0;
  const peek = (): string | undefined => tokens[i];
  const take = (expected?: string): string => {
    const t = tokens[i++];
    if (t === undefined || (expected !== undefined && t !== expected)) throw new Error(`cannot read "${expression}" at token ${i}: expected ${expected ?? 'more'}, found ${t ?? 'the end'}`);
    return t;
  };
  const primary = (): number => {
    const t = take();
    if (t === '(') {
      const v = sum();
      take(')');
      return v;
    }
    if (t === 'round6(') {
      const v = sum();
      take(')');
      return round6(v);
    }
    if (/^\d/.test(t)) return Number(t);
    throw new Error(`cannot read "${expression}": unexpected ${t}`);
  };
  const product = (): number => {
    let v = primary();
    while (peek() === '×' || peek() === '/') v = take() === '×' ? v * primary() : v / primary();
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (peek() === '+' || peek() === '-') v = take() === '+' ? v + product() : v - product();
    return v;
  };
  const value = sum();
  if (i !== tokens.length) throw new Error(`cannot read "${expression}": left over ${tokens.slice(i).join(' ')}`);
  return value;
}

/** Each line `name = expression = value` (or `name = value`) of the figures block: what does not hold, and the figures by name. */
export function checkFigures(block: readonly string[]): { problems: string[]; figures: Map<string, number> } {
  const problems: string[] = [];
  const figures = new Map<string, number>();
  for (const line of block.filter((l) => !l.startsWith('```'))) {
    const parts = line.split(' = ').map((p) => p.trim());
    const name = parts[0]!;
    const written = Number(parts.at(-1));
    if (parts.length < 2 || !Number.isFinite(written)) {
      problems.push(`not a figure line: ${line}`);
      continue;
    }
    for (const expression of parts.slice(1, -1)) {
      const got = evaluate(expression);
      if (got !== written) problems.push(`${name}: ${expression} is ${got}, not ${written}`);
    }
    figures.set(name, written);
  }
  return { problems, figures };
}
