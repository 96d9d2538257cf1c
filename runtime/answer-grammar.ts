// Why one file: one translator, schema keyword by keyword into GBNF; its cases share one rule table and one refusal path, and read apart they would hide which keywords are enforced and which refused.
// The answer's JSON Schema as a GBNF grammar for llama.cpp (issue 15 items 1 and 6): what the
// `local` adapter constrains decoding with. The schema comes from runtime/answer-schema.ts
// (generated from the zod schema), so the zod schema stays the one source: this file only
// translates, and refuses what it cannot translate exactly.
//
// Why our own translator: node-llama-cpp's JSON-schema grammar drops `pattern`, number
// bounds and anyOf, i.e. it would silently let through answers the runtime then rejects.
// Here every keyword is either enforced or refused with AnswerGrammarError, so a schema
// change can never quietly lose a constraint.
//
// What the grammar produces is a strict subset of what the schema allows, chosen so that a
// small model has as few free choices as possible (each free choice is a chance to wander
// off and never finish):
// - compact JSON: no whitespace anywhere, keys in the schema's property order, every
//   property present (the subset requires all properties to be required);
// - strings hold no escapes: no `"`, no `\`, no control characters (C0, DEL, C1), only
//   code points of the Basic Multilingual Plane outside the surrogates, so that the
//   schema's lengths (zod counts UTF-16 code units) equal the grammar's character counts;
// - numbers with bounds [lo, hi] (integers) are written with at most
//   GRAMMAR_LIMITS.fractionDigits decimals; `date-time` is `YYYY-MM-DDTHH:MM:SSZ` with real
//   calendar days (29 February excluded), the form zod's `z.iso.datetime()` accepts;
// - integers are exact: [minimum, maximum] becomes digit alternatives that match exactly
//   the integers of the range, without leading zeros.
// Pure and deterministic: the same schema gives the same text (rule names come from the
// schema's paths, identical rule bodies are shared under the first name).
import { ANSWER_GRAMMAR_LIMITS, AnswerGrammarError, STRING_CHARS } from './answer-grammar-limits.js';
import { charClass, hexEscape, patternAtoms } from './grammar-pattern.js';
import { EVENT_SEQ_META } from './model-protocol.js';

type Node = Readonly<Record<string, unknown>>;

/** Keywords that say nothing about which values are valid; ignored wherever they appear. */
const ANNOTATIONS: ReadonlySet<string> = new Set(['description', 'title', EVENT_SEQ_META]);

/** Keywords each form may carry besides the annotations; any other keyword is refused. */
const ALLOWED: Readonly<Record<string, ReadonlySet<string>>> = {
  anyOf: new Set(['anyOf']),
  oneOf: new Set(['oneOf']),
  const: new Set(['const', 'type']),
  enum: new Set(['enum', 'type']),
  object: new Set(['type', 'properties', 'required', 'additionalProperties']),
  array: new Set(['type', 'items', 'minItems', 'maxItems']),
  string: new Set(['type', 'minLength', 'maxLength', 'pattern', 'format']),
  integer: new Set(['type', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']),
  number: new Set(['type', 'minimum', 'maximum']),
  boolean: new Set(['type']),
  null: new Set(['type']),
};

/** Every keyword the translator reads (annotations included): the `gbnf` dialect's subset (runtime/schema-subsets/gbnf.ts). */
export const GRAMMAR_KEYWORDS: readonly string[] = [...new Set([...ANNOTATIONS, ...Object.values(ALLOWED).flatMap((keys) => [...keys])])];

/**
 * GBNF for llama.cpp from an answer JSON Schema (the subset answer-schema.ts produces; see
 * ALLOWED). Throws AnswerGrammarError for anything outside it.
 */
export function answerGrammar(schema: Readonly<Record<string, unknown>>): string {
  const builder = new GrammarBuilder();
  const rootExpr = builder.value(schema, '#', 0, 'root');
  const text = builder.render(rootExpr);
  if (text.length > ANSWER_GRAMMAR_LIMITS.maxGrammarChars) {
    throw new AnswerGrammarError(`the grammar would be ${text.length} characters, over maxGrammarChars ${ANSWER_GRAMMAR_LIMITS.maxGrammarChars}: tighten the schema's bounds (fewer enum values, shorter lists)`);
  }
  return text;
}

class GrammarBuilder {
  /** name → body, in creation order (root is rendered first). */
  private readonly rules = new Map<string, string>();
  private readonly nameOfBody = new Map<string, string>();

  render(rootExpr: string): string {
    // The root rule first, then the others in the order they were made.
    const lines = rootExpr === 'root' ? [] : [`root ::= ${rootExpr}`];
    const ordered = [...this.rules].sort(([a], [b]) => (a === 'root' ? -1 : b === 'root' ? 1 : 0));
    for (const [name, body] of ordered) lines.push(`${name} ::= ${body}`);
    return `${lines.join('\n')}\n`;
  }

  /** A named rule for `body` (shared with any earlier rule of the same body); returns its name. */
  private rule(hint: string, body: string): string {
    const existing = this.nameOfBody.get(body);
    if (existing !== undefined) return existing;
    const base = hint.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '') || 'r';
    let name = base;
    for (let i = 2; this.rules.has(name); i++) name = `${base}-${i}`;
    if (this.rules.size >= ANSWER_GRAMMAR_LIMITS.maxRules) throw new AnswerGrammarError(`the grammar needs more than maxRules ${ANSWER_GRAMMAR_LIMITS.maxRules} rules: the schema is too large to constrain`);
    this.rules.set(name, body);
    this.nameOfBody.set(body, name);
    return name;
  }

  /** The GBNF expression for one schema node at `path` (a JSON pointer, for messages). */
  value(raw: unknown, path: string, depth: number, hint: string): string {
    if (depth > ANSWER_GRAMMAR_LIMITS.maxDepth) throw new AnswerGrammarError(`${path}: nested deeper than maxDepth ${ANSWER_GRAMMAR_LIMITS.maxDepth}`);
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new AnswerGrammarError(`${path}: a schema node must be an object, got ${JSON.stringify(raw)}`);
    const node = raw as Node;
    const form = formOf(node, path);
    refuseUnknownKeywords(node, form, path);
    switch (form) {
      case 'anyOf':
      case 'oneOf':
        return this.alternatives(node, form, path, depth, hint);
      case 'const':
        return literalValue(checkedPrimitive(node['const'], node['type'], `${path}/const`));
      case 'enum':
        return this.alternativesRule(hint, enumAlternatives(node, path));
      case 'object':
        return this.object(node, path, depth, hint);
      case 'array':
        return this.array(node, path, depth, hint);
      case 'string':
        return this.string(node, path);
      case 'integer': {
        const [lo, hi] = integerBounds(node, path);
        return this.alternativesRule(`integer-${lo}-${hi}`, integerAlternatives(lo, hi));
      }
      case 'number':
        return this.rule(`number-${node['minimum']}-${node['maximum']}`, numberBody(node, path));
      case 'boolean':
        return '("true" | "false")';
      case 'null':
        return '"null"';
      default: {
        const unhandled: never = form;
        throw new AnswerGrammarError(`${path}: unknown form ${String(unhandled)}`);
      }
    }
  }

  /**
   * `atom` (a rule name or a parenthesised group: one element for llama.cpp) repeated min to
   * max times, exactly. Large counts become blocks (see ANSWER_GRAMMAR_LIMITS.repetitionSplit):
   * a length q·B + r is q blocks of B and r single atoms, split into at most three
   * alternatives by q so that no length outside [min, max] is possible.
   */
  private bounded(atom: string, min: number, max: number, hint: string): string {
    if (max < ANSWER_GRAMMAR_LIMITS.repetitionSplit) return repeat(atom, min, max);
    const B = ANSWER_GRAMMAR_LIMITS.repetitionBlock;
    const block = this.rule(`${hint}-x${B}`, `${atom}{${B}}`);
    const qMin = Math.floor(min / B);
    const rMin = min % B;
    const qMax = Math.floor(max / B);
    const rMax = max % B;
    const seq = (q0: number, q1: number, r0: number, r1: number): string => [repeat(block, q0, q1), repeat(atom, r0, r1)].filter((x) => x !== '').join(' ') || '""';
    const alts =
      qMin === qMax
        ? [seq(qMin, qMin, rMin, rMax)]
        : [seq(qMin, qMin, rMin, B - 1), ...(qMin + 1 <= qMax - 1 ? [seq(qMin + 1, qMax - 1, 0, B - 1)] : []), seq(qMax, qMax, 0, rMax)];
    return this.rule(`${hint}-${min}-${max}`, alts.join(' | '));
  }

  /** One alternative inline; several as a named rule (so that a repetition applies to all of them). */
  private alternativesRule(hint: string, alts: readonly string[]): string {
    return alts.length === 1 ? alts[0]! : this.rule(hint, alts.join(' | '));
  }

  private alternatives(node: Node, form: 'anyOf' | 'oneOf', path: string, depth: number, hint: string): string {
    const branches = node[form];
    if (!Array.isArray(branches) || branches.length === 0) throw new AnswerGrammarError(`${path}/${form}: must be a non-empty array`);
    if (form === 'oneOf') {
      // The grammar lets any branch match; "exactly one" holds only when no value can match two.
      for (let i = 0; i < branches.length; i++) {
        for (let j = i + 1; j < branches.length; j++) {
          if (!provablyDisjoint(branches[i], branches[j])) {
            throw new AnswerGrammarError(`${path}/oneOf: branches ${i} and ${j} may both match one value, so a grammar cannot enforce "exactly one"; use anyOf, or give the branches a distinguishing const`);
          }
        }
      }
    }
    const exprs = branches.map((b, i) => this.value(b, `${path}/${form}/${i}`, depth + 1, `${hint}-${i}`));
    if (exprs.length === 1) return exprs[0]!;
    return this.rule(hint, exprs.join(' | '));
  }

  private object(node: Node, path: string, depth: number, hint: string): string {
    if (node['additionalProperties'] !== false) throw new AnswerGrammarError(`${path}: an object must say additionalProperties: false (the grammar writes exactly the listed keys)`);
    const properties = node['properties'] ?? {};
    if (properties === null || typeof properties !== 'object' || Array.isArray(properties)) throw new AnswerGrammarError(`${path}/properties: must be an object`);
    const keys = Object.keys(properties);
    const required = node['required'] ?? [];
    if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) throw new AnswerGrammarError(`${path}/required: must be an array of strings`);
    const missing = keys.filter((k) => !required.includes(k));
    if (missing.length > 0) throw new AnswerGrammarError(`${path}: optional properties (${missing.join(', ')}) are outside the grammar's subset; make them required (nullable where they may be absent)`);
    const unknown = (required as string[]).filter((r) => !keys.includes(r));
    if (unknown.length > 0) throw new AnswerGrammarError(`${path}/required: names ${unknown.join(', ')}, which properties does not define`);
    if (keys.length === 0) return '"{}"';
    const parts = keys.map((key, i) => {
      const valueExpr = this.value((properties as Node)[key], `${path}/properties/${key}`, depth + 1, `${hint}-${key}`);
      return `${gbnfLiteral(`${i === 0 ? '{' : ','}${JSON.stringify(key)}:`)} ${valueExpr}`;
    });
    return this.rule(hint, `${parts.join(' ')} "}"`);
  }

  private array(node: Node, path: string, depth: number, hint: string): string {
    const min = boundInt(node['minItems'] ?? 0, `${path}/minItems`);
    if (node['maxItems'] === undefined) throw new AnswerGrammarError(`${path}: an array needs maxItems (an unbounded list cannot be bounded in tokens)`);
    const max = boundInt(node['maxItems'], `${path}/maxItems`);
    if (min > max) throw new AnswerGrammarError(`${path}: minItems ${min} > maxItems ${max}`);
    if (max === 0) return '"[]"';
    if (Array.isArray(node['items']) || node['items'] === undefined) throw new AnswerGrammarError(`${path}/items: must be one schema (tuples are outside the subset)`);
    const item = this.value(node['items'], `${path}/items`, depth + 1, `${hint}-item`);
    const rest = this.bounded(`("," ${item})`, Math.max(0, min - 1), max - 1, `${hint}-rest`);
    const body = min === 0 ? `"[" (${item}${rest === '' ? '' : ` ${rest}`})? "]"` : `"[" ${item}${rest === '' ? '' : ` ${rest}`} "]"`;
    return this.rule(hint, body);
  }

  private string(node: Node, path: string): string {
    const format = node['format'];
    const pattern = node['pattern'];
    const hasLength = node['minLength'] !== undefined || node['maxLength'] !== undefined;
    if ((format !== undefined ? 1 : 0) + (pattern !== undefined ? 1 : 0) + (hasLength ? 1 : 0) > 1) {
      throw new AnswerGrammarError(`${path}: a string with more than one of format, pattern and min/maxLength is outside the subset`);
    }
    if (format !== undefined) {
      if (format === 'date-time') return this.rule('date-time', `"\\"" ${DATE_TIME} "\\""`);
      if (format === 'uuid') return this.rule('uuid', `"\\"" ${UUID} "\\""`);
      throw new AnswerGrammarError(`${path}/format: ${JSON.stringify(format)} is outside the subset (date-time, uuid)`);
    }
    if (pattern !== undefined) {
      if (typeof pattern !== 'string') throw new AnswerGrammarError(`${path}/pattern: must be a string`);
      const atoms = patternAtoms(pattern, `${path}/pattern`).map(({ cls, min, max }) => (max > 1 ? this.bounded(this.rule(`class-${checksum(cls)}`, cls), min, max, `class-${checksum(cls)}`) : repeat(cls, min, max)));
      return this.rule(`pattern-${checksum(pattern)}`, `"\\"" ${atoms.join(' ')} "\\""`);
    }
    if (node['maxLength'] === undefined) throw new AnswerGrammarError(`${path}: a string needs maxLength, a pattern or a format (an unbounded string cannot be bounded in tokens)`);
    const min = boundInt(node['minLength'] ?? 0, `${path}/minLength`);
    const max = boundInt(node['maxLength'], `${path}/maxLength`);
    if (min > max) throw new AnswerGrammarError(`${path}: minLength ${min} > maxLength ${max}`);
    const chars = this.bounded(this.rule('char', charClass(STRING_CHARS)), min, max, 'char');
    return this.rule(`string-${min}-${max}`, chars === '' ? '"\\"\\""' : `"\\"" ${chars} "\\""`);
  }
}

type Form = 'anyOf' | 'oneOf' | 'const' | 'enum' | 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'null';

function formOf(node: Node, path: string): Form {
  const combinators = (['anyOf', 'oneOf', 'const', 'enum'] as const).filter((k) => k in node);
  if (combinators.length > 1) throw new AnswerGrammarError(`${path}: ${combinators.join(' and ')} together are outside the subset`);
  if (combinators.length === 1) return combinators[0]!;
  const type = node['type'];
  if (type === undefined) throw new AnswerGrammarError(`${path}: a node without type, const, enum, anyOf or oneOf allows anything, which a grammar cannot bound; give it a type`);
  if (typeof type !== 'string') throw new AnswerGrammarError(`${path}/type: ${JSON.stringify(type)} — a list of types is outside the subset; use anyOf`);
  if (!['object', 'array', 'string', 'integer', 'number', 'boolean', 'null'].includes(type)) throw new AnswerGrammarError(`${path}/type: unknown type ${JSON.stringify(type)}`);
  return type as Form;
}

function refuseUnknownKeywords(node: Node, form: Form, path: string): void {
  const allowed = ALLOWED[form]!;
  for (const key of Object.keys(node)) {
    if (!allowed.has(key) && !ANNOTATIONS.has(key)) throw new AnswerGrammarError(`${path}: keyword ${JSON.stringify(key)} is outside the grammar's subset for a ${form} node; it would not be enforced, so the schema is refused (extend runtime/answer-grammar.ts to support it)`);
  }
}

type Primitive = string | number | boolean | null;

function checkedPrimitive(value: unknown, type: unknown, path: string): Primitive {
  const ok = value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
  if (!ok) throw new AnswerGrammarError(`${path}: only strings, finite numbers, booleans and null are supported, got ${JSON.stringify(value)}`);
  if (type !== undefined) {
    const matches =
      (type === 'string' && typeof value === 'string') ||
      (type === 'integer' && Number.isSafeInteger(value)) ||
      (type === 'number' && typeof value === 'number') ||
      (type === 'boolean' && typeof value === 'boolean') ||
      (type === 'null' && value === null);
    if (!matches) throw new AnswerGrammarError(`${path}: value ${JSON.stringify(value)} is not of the node's type ${JSON.stringify(type)}`);
  }
  return value as Primitive;
}

function enumAlternatives(node: Node, path: string): string[] {
  const values = node['enum'];
  if (!Array.isArray(values) || values.length === 0) throw new AnswerGrammarError(`${path}/enum: must be a non-empty array`);
  if (values.length > ANSWER_GRAMMAR_LIMITS.maxEnumValues) throw new AnswerGrammarError(`${path}/enum: ${values.length} values, over maxEnumValues ${ANSWER_GRAMMAR_LIMITS.maxEnumValues}`);
  return [...new Set(values.map((v, i) => literalValue(checkedPrimitive(v, node['type'], `${path}/enum/${i}`))))];
}

/** The JSON text of a value as a GBNF literal. */
function literalValue(value: Primitive): string {
  return gbnfLiteral(JSON.stringify(value));
}

function boundInt(value: unknown, path: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0) throw new AnswerGrammarError(`${path}: must be a non-negative integer, got ${JSON.stringify(value)}`);
  if ((value as number) > ANSWER_GRAMMAR_LIMITS.maxRepetition) throw new AnswerGrammarError(`${path}: ${value} is over maxRepetition ${ANSWER_GRAMMAR_LIMITS.maxRepetition}`);
  return value as number;
}

/** `expr` repeated between min and max times (GBNF's bounded repetition); '' for zero times. */
function repeat(expr: string, min: number, max: number): string {
  if (max === 0) return '';
  if (min === max) return min === 1 ? expr : `${expr}{${min}}`;
  if (min === 0 && max === 1) return `${expr}?`;
  return `${expr}{${min},${max}}`;
}

// ---------------------------------------------------------------------------------------
// integers and numbers

function integerBounds(node: Node, path: string): [number, number] {
  const bound = (key: 'minimum' | 'maximum', exclusiveKey: 'exclusiveMinimum' | 'exclusiveMaximum'): number => {
    const inclusive = node[key];
    const exclusive = node[exclusiveKey];
    if (inclusive !== undefined && exclusive !== undefined) throw new AnswerGrammarError(`${path}: both ${key} and ${exclusiveKey}`);
    const raw = inclusive ?? exclusive;
    if (raw === undefined) throw new AnswerGrammarError(`${path}: an integer needs ${key} (an unbounded integer cannot be bounded in tokens)`);
    if (typeof raw !== 'number' || !Number.isFinite(raw)) throw new AnswerGrammarError(`${path}/${inclusive !== undefined ? key : exclusiveKey}: must be a finite number`);
    const isMin = key === 'minimum';
    let value = isMin ? Math.ceil(raw) : Math.floor(raw);
    if (exclusive !== undefined && value === raw) value += isMin ? 1 : -1;
    if (!Number.isSafeInteger(value)) throw new AnswerGrammarError(`${path}/${key}: ${raw} is outside the safe integers`);
    return value;
  };
  const lo = bound('minimum', 'exclusiveMinimum');
  const hi = bound('maximum', 'exclusiveMaximum');
  if (lo > hi) throw new AnswerGrammarError(`${path}: no integer lies in [${lo}, ${hi}]`);
  return [lo, hi];
}

/** Alternatives as one GBNF expression (grouped when there are several). */
function group(alts: readonly string[]): string {
  return alts.length === 1 ? alts[0]! : `(${alts.join(' | ')})`;
}

/**
 * A GBNF expression matching exactly the decimal integers in [lo, hi] (JSON form: no leading
 * zeros, no "+", no "-0"). Exported for its test, which checks it against every integer of
 * many ranges.
 */
export function integerAlternatives(lo: number, hi: number): string[] {
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || lo > hi) throw new AnswerGrammarError(`integer range [${lo}, ${hi}]: bounds must be safe integers, lo <= hi`);
  const alts: string[] = [];
  if (lo < 0) alts.push(`"-" ${group(nonNegativeRange(hi < 0 ? String(-hi) : '1', String(-lo)))}`);
  if (hi >= 0) alts.push(...nonNegativeRange(String(Math.max(lo, 0)), String(hi)));
  return alts;
}

/** [lo, hi] as digit strings (lo <= hi, both non-negative, no leading zeros), split by length. */
function nonNegativeRange(lo: string, hi: string): string[] {
  const alts: string[] = [];
  for (let digits = lo.length; digits <= hi.length; digits++) {
    const from = digits === lo.length ? lo : digits === 1 ? '0' : `1${'0'.repeat(digits - 1)}`;
    const to = digits === hi.length ? hi : '9'.repeat(digits);
    alts.push(sameLengthRange(from, to));
  }
  return alts;
}

/** Every digit string of the same length between a and b (a <= b), as a GBNF expression. */
function sameLengthRange(a: string, b: string): string {
  if (a === b) return `"${a}"`;
  const n = a.length;
  if (n === 1) return `[${a}-${b}]`;
  let common = 0;
  while (a[common] === b[common]) common++;
  if (common > 0) return `"${a.slice(0, common)}" ${sameLengthRange(a.slice(common), b.slice(common))}`;
  const alts: string[] = [];
  const restA = a.slice(1);
  const restB = b.slice(1);
  const lowFull = /^0*$/.test(restA);
  const highFull = /^9*$/.test(restB);
  if (!lowFull) alts.push(`"${a[0]}" ${sameLengthRange(restA, '9'.repeat(n - 1))}`);
  const first = Number(a[0]) + (lowFull ? 0 : 1);
  const last = Number(b[0]) - (highFull ? 0 : 1);
  if (first <= last) alts.push(`${first === last ? `"${first}"` : `[${first}-${last}]`} ${repeat('[0-9]', n - 1, n - 1)}`);
  if (!highFull) alts.push(`"${b[0]}" ${sameLengthRange('0'.repeat(n - 1), restB)}`);
  return group(alts);
}

/** A `number` with integer bounds lo >= 0 (e.g. a confidence in [0, 1]): up to fractionDigits decimals, never above hi. */
function numberBody(node: Node, path: string): string {
  const lo = node['minimum'];
  const hi = node['maximum'];
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || (lo as number) < 0 || (lo as number) > (hi as number)) {
    throw new AnswerGrammarError(`${path}: a number needs integer bounds 0 <= minimum <= maximum (got ${JSON.stringify(lo)}, ${JSON.stringify(hi)}); other numbers are outside the subset`);
  }
  const d = ANSWER_GRAMMAR_LIMITS.fractionDigits;
  const top = `"${hi}" ("." ${repeat('"0"', 1, d)})?`;
  if (lo === hi) return top;
  return `${group(integerAlternatives(lo as number, (hi as number) - 1))} ("." ${repeat('[0-9]', 1, d)})? | ${top}`;
}

// ---------------------------------------------------------------------------------------
// strings: formats and patterns

/** YYYY-MM-DDTHH:MM:SSZ with real days of each month (29 February left out: it needs the year). */
const DATE_TIME = [
  '[0-9]{4} "-"',
  '(("01" | "03" | "05" | "07" | "08" | "10" | "12") "-" ("0" [1-9] | [12] [0-9] | "3" [01])',
  '| ("04" | "06" | "09" | "11") "-" ("0" [1-9] | [12] [0-9] | "30")',
  '| "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8]))',
  '"T" ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] "Z"',
].join(' ');

/** A lower-case RFC 9562 UUID of versions 1-8 (what zod's z.uuid() accepts). */
const UUID = '[0-9a-f]{8} "-" [0-9a-f]{4} "-" [1-8] [0-9a-f]{3} "-" [89ab] [0-9a-f]{3} "-" [0-9a-f]{12}';

function checksum(text: string): string {
  // A deterministic rule-name suffix for a pattern.
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0;
  return h.toString(36);
}

/** `text` as a GBNF string literal: printable ASCII as itself, `"` and `\` escaped, the rest as hex escapes. */
export function gbnfLiteral(text: string): string {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (cp >= 0x20 && cp <= 0x7e) out += ch;
    else out += hexEscape(cp);
  }
  return `${out}"`;
}

// ---------------------------------------------------------------------------------------
// oneOf

/** True when no JSON value can satisfy both schemas (judged from types and consts only; false when unsure). */
function provablyDisjoint(a: unknown, b: unknown): boolean {
  if (!isNode(a) || !isNode(b)) return false;
  const ka = kindsOf(a);
  const kb = kindsOf(b);
  if (ka !== null && kb !== null && ![...ka].some((k) => kb.has(k))) return true;
  const va = valuesOf(a);
  const vb = valuesOf(b);
  if (va !== null && vb !== null && ![...va].some((v) => vb.has(v))) return true;
  if (a['type'] === 'object' && b['type'] === 'object' && isNode(a['properties']) && isNode(b['properties'])) {
    const pa = a['properties'];
    const pb = b['properties'];
    // Every property is required in the subset, so one key whose values cannot agree separates them.
    return Object.keys(pa).some((key) => key in pb && provablyDisjoint(pa[key], pb[key]));
  }
  return false;
}

function isNode(v: unknown): v is Node {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The JSON kinds a node can take (integer counted as number), or null when not evident. */
function kindsOf(node: Node): Set<string> | null {
  const values = valuesOf(node);
  if (values !== null) return new Set([...values].map((v) => { const parsed: unknown = JSON.parse(v); return parsed === null ? 'null' : typeof parsed; }));
  const type = node['type'];
  if (typeof type !== 'string') return null;
  return new Set([type === 'integer' ? 'number' : type === 'array' ? 'array' : type]);
}

/** The JSON texts a const/enum node allows, or null for other nodes. */
function valuesOf(node: Node): Set<string> | null {
  if ('const' in node) return new Set([JSON.stringify(node['const'])]);
  if (Array.isArray(node['enum'])) return new Set(node['enum'].map((v) => JSON.stringify(v)));
  return null;
}
