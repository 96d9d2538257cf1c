// The answer's JSON Schema as a GBNF grammar (runtime/answer-grammar.ts; issue 15 items 1
// and 6). Three kinds of check:
// - what the grammar means, independently of llama.cpp: the grammar is translated here into a
//   JavaScript regular expression (its rules are not recursive), which must accept valid
//   answers and refuse forged ones the zod schema refuses (a string one over its bound, a seq
//   the wake did not show, 30 February, a sixth action, …);
// - what it refuses to translate: forged schemas with a keyword it cannot enforce must throw;
// - the real thing: llama.cpp compiles the grammar, and the real tiny model
//   (../shared/models/stories260K.gguf) decoding under it writes answers that all pass
//   ModelAnswerV2.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EMPTY_ANSWER } from '../../faults/scripted-model-server.js';
import { answerGrammar, integerAlternatives } from '../../runtime/answer-grammar.js';
import { AnswerGrammarError, ANSWER_GRAMMAR_LIMITS } from '../../runtime/answer-grammar-limits.js';
import { answerJsonSchema, specialisedAnswerSchema } from '../../runtime/answer-schema.js';
import { loadLocalEngine, type EngineContext, type EngineLlama, type EngineModel, type LocalEngine } from '../../runtime/model-adapters/load-engine.js';
import { MODEL_OUTPUT_V2_LIMITS, MODEL_PROTOCOL_V1, MODEL_PROTOCOL_V2, ModelAnswerV2 } from '../../runtime/model-protocol.js';
import { Timestamp } from '../../schema/event-definition.js';

const MODEL_FILE = fileURLToPath(new URL('../../../shared/models/stories260K.gguf', import.meta.url));
const SHOWN = [3, 17, 40, 41, 250];
const CONTEXT_TOKENS = 8_192;
const V2 = specialisedAnswerSchema(MODEL_PROTOCOL_V2, SHOWN);

// ---------------------------------------------------------------------------------------
// GBNF → RegExp, for the grammars answer-grammar.ts writes (literals, classes, groups,
// alternatives, ?, {n}, {m,n}, rule references without recursion).

function gbnfToRegExp(grammar: string): RegExp {
  const rules = new Map<string, string>();
  for (const line of grammar.split('\n')) {
    if (line.trim() === '') continue;
    const m = /^([a-z0-9-]+) ::= (.*)$/.exec(line);
    if (m === null) throw new Error(`not a rule line: ${line}`);
    rules.set(m[1]!, m[2]!);
  }
  const done = new Map<string, string>();
  const ruleSource = (name: string, stack: readonly string[]): string => {
    const cached = done.get(name);
    if (cached !== undefined) return cached;
    if (stack.includes(name)) throw new Error(`recursive rule ${name}`);
    const body = rules.get(name);
    if (body === undefined) throw new Error(`undefined rule ${name}`);
    const source = parseAlternatives(body, { at: 0 }, [...stack, name], ruleSource);
    done.set(name, source);
    return source;
  };
  return new RegExp(`^(?:${ruleSource('root', [])})$`, 'u');
}

const cp = (n: number): string => `\\u{${n.toString(16)}}`;

function readEscape(text: string, pos: { at: number }): number {
  const c = text[pos.at]!;
  if (c !== '\\') {
    pos.at += 1;
    return c.codePointAt(0)!;
  }
  const e = text[pos.at + 1]!;
  const hex = (len: number): number => {
    const v = Number.parseInt(text.slice(pos.at + 2, pos.at + 2 + len), 16);
    pos.at += 2 + len;
    return v;
  };
  if (e === 'x') return hex(2);
  if (e === 'u') return hex(4);
  if (e === 'U') return hex(8);
  pos.at += 2;
  return ({ n: 10, r: 13, t: 9 } as Record<string, number>)[e] ?? e.codePointAt(0)!;
}

function parseAlternatives(text: string, pos: { at: number }, stack: readonly string[], ruleSource: (name: string, stack: readonly string[]) => string): string {
  const alts: string[] = [];
  let seq: string[] = [];
  for (;;) {
    while (text[pos.at] === ' ') pos.at++;
    const c = text[pos.at];
    if (c === undefined || c === ')') break;
    if (c === '|') {
      alts.push(seq.join(''));
      seq = [];
      pos.at++;
      continue;
    }
    let atom: string;
    if (c === '"') {
      pos.at++;
      let lit = '';
      while (text[pos.at] !== '"') lit += cp(readEscape(text, pos));
      pos.at++;
      atom = `(?:${lit})`;
    } else if (c === '[') {
      pos.at++;
      let cls = '';
      while (text[pos.at] !== ']') {
        if (text[pos.at] === '-') {
          cls += '-';
          pos.at++;
        } else cls += cp(readEscape(text, pos));
      }
      pos.at++;
      atom = `[${cls}]`;
    } else if (c === '(') {
      pos.at++;
      atom = `(?:${parseAlternatives(text, pos, stack, ruleSource)})`;
      if (text[pos.at] !== ')') throw new Error('unclosed group');
      pos.at++;
    } else {
      const m = /^[a-z0-9-]+/.exec(text.slice(pos.at));
      if (m === null) throw new Error(`unexpected ${JSON.stringify(text.slice(pos.at, pos.at + 20))}`);
      pos.at += m[0].length;
      atom = `(?:${ruleSource(m[0], stack)})`;
    }
    const q = /^(\?|\{\d+\}|\{\d+,\d+\})/.exec(text.slice(pos.at));
    if (q !== null) {
      atom += q[0];
      pos.at += q[0].length;
    }
    seq.push(atom);
  }
  alts.push(seq.join(''));
  return alts.join('|');
}

// ---------------------------------------------------------------------------------------
// answers

const RICH = {
  protocol: 'ds-model-output/2',
  focus: { attention_target: 'Friday report', waiting_condition: null },
  actions: [
    { tool: 'files', op: 'read', path: 'notes.md', rationale: 'See what is there.' },
    { tool: 'files', op: 'write', path: 'draft.md', content: '', rationale: 'Start the draft.' },
    { tool: 'task_board', op: 'add', task_id: 'task-2.b:x', title: 'Analyse', status: 'todo', priority: 9, depends_on: ['task-1'], rationale: 'Needed.' },
    { tool: 'journal', op: 'write', text: 'Über die Daten — noch nichts.', rationale: 'Note it.' },
  ],
  claims: [
    { claim_type: 'FACT', statement: 'The dataset arrives Thursday.', evidence_seqs: [40, 250] },
    { claim_type: 'PLAN', statement: 'Draft first.' },
    { claim_type: 'INFERENCE', statement: 'It will be late.', confidence: 0.6, alternatives: ['It will not.'] },
  ],
  plan_revision: { reason: 'The data is late.', goal_id: 'goal-1', goal_description: 'Report by Friday', deadline_at: '2026-07-31T17:00:00Z', steps: [{ task_id: 'task-1', title: 'Collect notes' }] },
  checkpoint: { current_goal_id: 'goal-1', goal_status: 'active', attention_target: 'report', waiting_condition: 'data', next_action: 'draft', evidence_seqs: [3, 17, 41] },
};
const MINIMAL = EMPTY_ANSWER;

type Answer = typeof RICH;
const clone = (a: unknown): Answer => structuredClone(a) as Answer;

/** Forged answers, each one change away from RICH; the zod schema (with the wake's seqs) refuses every one. */
const FORGED: readonly [string, (a: Answer) => unknown][] = [
  ['a string one over its maxLength', (a) => { a.focus.attention_target = 'x'.repeat(101); return a; }],
  ['an empty string where minLength is 1', (a) => { a.claims[1]!.statement = ''; return a; }],
  ['an extra key', (a) => ({ ...a, mood: 'fine' })],
  ['a missing key', (a) => { const { plan_revision: _p, ...rest } = a; return rest; }],
  ['another protocol', (a) => ({ ...a, protocol: 'ds-model-output/1' })],
  ['a seq the wake did not show', (a) => { (a.claims[0] as { evidence_seqs: number[] }).evidence_seqs = [42]; return a; }],
  ['a FACT without evidence', (a) => { (a.claims[0] as { evidence_seqs: number[] }).evidence_seqs = []; return a; }],
  ['an INFERENCE without confidence', (a) => { delete (a.claims[2] as Record<string, unknown>)['confidence']; return a; }],
  ['a confidence above 1', (a) => { (a.claims[2] as { confidence: number }).confidence = 1.5; return a; }],
  ['a priority of 10', (a) => { (a.actions[2] as { priority: number }).priority = 10; return a; }],
  ['an id starting with "-"', (a) => { a.plan_revision.goal_id = '-goal'; return a; }],
  ['an id of 41 characters', (a) => { a.plan_revision.goal_id = 'g'.repeat(41); return a; }],
  ['30 February', (a) => { a.plan_revision.deadline_at = '2026-02-30T00:00:00Z'; return a; }],
  ['one action more than maxActions', (a) => { a.actions = Array.from({ length: MODEL_OUTPUT_V2_LIMITS.maxActions + 1 }, (_, i) => a.actions[i % a.actions.length]!); return a; }],
  ['one claim more than maxClaims', (a) => { a.claims = Array.from({ length: MODEL_OUTPUT_V2_LIMITS.maxClaims + 1 }, (_, i) => a.claims[i % a.claims.length]!); return a; }],
  ['an unknown tool', (a) => { a.actions[0] = { ...a.actions[0]!, tool: 'shell' }; return a; }],
  ['a plan without steps', (a) => { a.plan_revision.steps = []; return a; }],
  ['an unknown goal status', (a) => { a.checkpoint.goal_status = 'paused'; return a; }],
];

describe('the grammar accepts what the schema accepts, and only that', () => {
  const regexp = gbnfToRegExp(answerGrammar(V2));
  const shownSchemaAccepts = (a: unknown): boolean => {
    const parsed = ModelAnswerV2.safeParse(a);
    if (!parsed.success) return false;
    const seqs = [...parsed.data.claims.flatMap((c) => (c.claim_type === 'FACT' ? c.evidence_seqs : [])), ...parsed.data.checkpoint.evidence_seqs];
    return seqs.every((s) => SHOWN.includes(s));
  };

  test('valid answers, written compactly, match; the same answers with whitespace do not (the grammar writes compact JSON)', () => {
    for (const answer of [RICH, MINIMAL]) {
      expect(shownSchemaAccepts(answer)).toBe(true);
      expect(regexp.test(JSON.stringify(answer))).toBe(true);
      expect(regexp.test(JSON.stringify(answer, null, 1))).toBe(false);
    }
  });

  test.each(FORGED)('forged: %s — the schema refuses it, and so does the grammar', (_what, forge) => {
    const forged = forge(clone(RICH));
    expect(shownSchemaAccepts(forged)).toBe(false);
    expect(regexp.test(JSON.stringify(forged))).toBe(false);
  });

  test('strings hold no escapes: a quote, a backslash or a control character cannot be written', () => {
    for (const s of ['say "hi"', 'a\\b', 'line\nbreak', 'tab\there', '\u0085']) {
      const a = clone(RICH);
      a.focus.attention_target = s;
      expect(ModelAnswerV2.safeParse(a).success).toBe(true); // the schema would take it …
      expect(regexp.test(JSON.stringify(a))).toBe(false); // … the grammar writes a strict subset
    }
  });

  test('the grammar is deterministic and starts with its root rule', () => {
    const a = answerGrammar(V2);
    expect(answerGrammar(specialisedAnswerSchema(MODEL_PROTOCOL_V2, [...SHOWN].reverse()))).toBe(a);
    expect(a.startsWith('root ::= "{\\"protocol\\":" "\\"ds-model-output/2\\""')).toBe(true);
    // The base schema (seqs as integers 1..2^53-1) and the /1 schema convert too.
    expect(gbnfToRegExp(answerGrammar(answerJsonSchema(MODEL_PROTOCOL_V2))).test(JSON.stringify({ ...RICH, checkpoint: { ...RICH.checkpoint, evidence_seqs: [9_007_199_254_740_991] } }))).toBe(true);
    expect(gbnfToRegExp(answerGrammar(answerJsonSchema(MODEL_PROTOCOL_V2))).test(JSON.stringify({ ...RICH, checkpoint: { ...RICH.checkpoint, evidence_seqs: [9_007_199_254_740_992] } }))).toBe(false);
    expect(answerGrammar(answerJsonSchema(MODEL_PROTOCOL_V1))).toContain('[1-8]');
  });
});

describe('numbers, dates and long repetitions are exact', () => {
  test('integer ranges match exactly their integers, without leading zeros', () => {
    const ranges: [number, number][] = [[0, 0], [0, 9], [1, 9], [0, 10], [5, 123], [10, 99], [17, 1_234], [99, 100], [100, 999], [-15, 1_234], [-300, -7], [-9, 9], [1_000, 1_299], [0, 1_300]];
    const candidates = Array.from({ length: 1_700 }, (_, i) => i - 350);
    for (const [lo, hi] of ranges) {
      const re = gbnfToRegExp(`root ::= ${integerAlternatives(lo, hi).join(' | ')}`);
      for (const n of candidates) expect(re.test(String(n)), `${n} in [${lo}, ${hi}]`).toBe(n >= lo && n <= hi);
      for (const bad of ['01', '-0', '+1', '00', '1.0', '']) expect(re.test(bad), `${JSON.stringify(bad)} in [${lo}, ${hi}]`).toBe(false);
    }
    const safe = gbnfToRegExp(`root ::= ${integerAlternatives(1, Number.MAX_SAFE_INTEGER).join(' | ')}`);
    for (const n of ['1', '9007199254740991', '9007199254740990', '8999999999999999', '9007199254740899']) expect(safe.test(n), n).toBe(true);
    for (const n of ['0', '9007199254740992', '9007199254741000', '10000000000000000']) expect(safe.test(n), n).toBe(false);
  });

  test('a number in [0, 1] has at most four decimals and never exceeds 1', () => {
    const re = gbnfToRegExp(answerGrammar({ type: 'number', minimum: 0, maximum: 1 }));
    for (const ok of ['0', '1', '0.5', '0.0001', '0.9999', '1.0', '1.0000']) expect(re.test(ok), ok).toBe(true);
    for (const bad of ['1.5', '1.01', '1.00001', '-0', '00.1', '.5', '0.', '0.12345', '2']) expect(re.test(bad), bad).toBe(false);
  });

  test('every date-time the grammar writes is one zod accepts, and every real day (but 29 February) can be written', () => {
    const re = gbnfToRegExp(answerGrammar({ type: 'string', format: 'date-time' }));
    let written = 0;
    for (let month = 0; month <= 13; month++) {
      for (let day = 0; day <= 32; day++) {
        const text = `2027-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}T23:59:59Z`;
        const grammarTakes = re.test(JSON.stringify(text));
        if (grammarTakes) {
          written += 1;
          expect(Timestamp.safeParse(text).success, text).toBe(true);
        }
        const real = month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(2027, month, 0)).getUTCDate();
        expect(grammarTakes, text).toBe(real);
      }
    }
    expect(written).toBe(365);
    for (const bad of ['2027-01-01T24:00:00Z', '2027-01-01T12:60:00Z', '2027-01-01T12:00:00', '2027-01-01T12:00:00+01:00', '2024-02-29T00:00:00Z']) expect(re.test(JSON.stringify(bad)), bad).toBe(false);
  });

  test('a repetition of 1,000 or more is written in blocks llama.cpp accepts, with exact lengths', () => {
    const grammar = answerGrammar({ type: 'string', minLength: 150, maxLength: 2_345 });
    // llama.cpp refuses x{m,n} once n times the size of x reaches 2,000.
    for (const m of grammar.matchAll(/\{(\d+)(?:,(\d+))?\}/g)) expect(Number(m[2] ?? m[1])).toBeLessThan(ANSWER_GRAMMAR_LIMITS.repetitionSplit);
    const re = gbnfToRegExp(grammar);
    for (const n of [0, 149, 150, 199, 200, 250, 999, 1_000, 2_300, 2_345, 2_346, 3_000]) expect(re.test(JSON.stringify('a'.repeat(n))), `length ${n}`).toBe(n >= 150 && n <= 2_345);
  });
});

describe('a schema the grammar cannot enforce is refused', () => {
  /** V2 with one node changed, at a depth a careless translator would not look. */
  const forgedV2 = (change: (node: Record<string, unknown>) => void): Record<string, unknown> => {
    const s = structuredClone(V2) as { properties: { actions: { items: { anyOf: { properties: Record<string, Record<string, unknown>> }[] } } } };
    change(s.properties.actions.items.anyOf[4]!.properties);
    return s as unknown as Record<string, unknown>;
  };
  const cases: readonly [string, Record<string, unknown>, RegExp][] = [
    ['an unsupported keyword deep inside /2 (multipleOf)', forgedV2((p) => ((p['priority'] = { anyOf: [{ type: 'integer', minimum: 0, maximum: 9, multipleOf: 2 }, { type: 'null' }] }), undefined)), /properties\/priority\/anyOf\/0: keyword "multipleOf"/],
    ['a string without maxLength', forgedV2((p) => ((p['rationale'] = { type: 'string', minLength: 1 }), undefined)), /rationale: a string needs maxLength/],
    ['an array without maxItems', forgedV2((p) => ((p['depends_on'] = { type: 'array', items: { type: 'string', maxLength: 3 } }), undefined)), /depends_on: an array needs maxItems/],
    ['an unbounded integer', { type: 'integer', minimum: 0 }, /an integer needs maximum/],
    ['an optional property', { type: 'object', properties: { a: { type: 'null' } }, required: [], additionalProperties: false }, /optional properties \(a\)/],
    ['additional properties allowed', { type: 'object', properties: {}, required: [] }, /additionalProperties: false/],
    ['an overlapping oneOf', { oneOf: [{ type: 'string', maxLength: 3 }, { type: 'string', maxLength: 5 }] }, /branches 0 and 1 may both match/],
    ['a pattern with +', { type: 'string', pattern: '^[a-z]+$' }, /unbounded quantifier \+/],
    ['a pattern with a lookahead', { type: 'string', pattern: '^(?!x)[a-z]{1,3}$' }, /the character "\("/],
    ['an unanchored pattern', { type: 'string', pattern: '[a-z]{1,3}' }, /must be anchored/],
    ['a format it does not know', { type: 'string', format: 'email' }, /"email" is outside the subset/],
    ['a list of types', { type: ['string', 'null'] }, /a list of types/],
    ['a node that allows anything', { type: 'object', properties: { a: {} }, required: ['a'], additionalProperties: false }, /allows anything/],
    ['a $ref', { $ref: '#/$defs/x' }, /allows anything|keyword "\$ref"/],
    ['a number with fractional bounds', { type: 'number', minimum: 0.5, maximum: 1 }, /integer bounds/],
    ['a repetition over the limit', { type: 'string', maxLength: ANSWER_GRAMMAR_LIMITS.maxRepetition + 1 }, /over maxRepetition/],
    ['an enum over the limit', { type: 'integer', enum: Array.from({ length: ANSWER_GRAMMAR_LIMITS.maxEnumValues + 1 }, (_, i) => i) }, /over maxEnumValues/],
    ['a const of another type', { type: 'string', const: 3 }, /not of the node's type/],
  ];
  test.each(cases)('%s', (_what, schema, message) => {
    expect(() => answerGrammar(schema)).toThrow(AnswerGrammarError);
    expect(() => answerGrammar(schema)).toThrow(message);
  });
});

// ---------------------------------------------------------------------------------------
// the real engine and the real model

describe('llama.cpp and the real tiny model under the grammar', () => {
  let engine: LocalEngine;
  let llama: EngineLlama;
  let model: EngineModel;
  let context: EngineContext;

  beforeAll(async () => {
    // Throws LocalEngineMissingError (naming `npm run setup:local-model`) when the engine is not installed.
    engine = await loadLocalEngine();
    llama = await engine.getLlama({ gpu: false, build: 'never', logLevel: 'error', logger: () => undefined, progressLogs: false, skipDownload: true, maxThreads: 1 });
    model = await llama.loadModel({ modelPath: MODEL_FILE, gpuLayers: 0 });
    // Room for the longest answers seen (~4,000 tokens): the answer's positions may go past the
    // model's 2,048-token training context, which the grammar does not mind.
    context = await model.createContext({ contextSize: CONTEXT_TOKENS, threads: 1, sequences: 1, flashAttention: false });
  });
  afterAll(async () => {
    await context?.dispose();
    await model?.dispose();
    await llama?.dispose();
  });

  test('llama.cpp compiles the grammars of /2 (base and specialised) and of /1', async () => {
    for (const schema of [V2, answerJsonSchema(MODEL_PROTOCOL_V2), answerJsonSchema(MODEL_PROTOCOL_V1)]) {
      const grammar = await llama.createGrammar({ grammar: answerGrammar(schema) });
      expect(grammar.grammar.length).toBeGreaterThan(1_000);
    }
    // And the engine really parses what it is given: a broken grammar is refused.
    await expect(llama.createGrammar({ grammar: 'root ::= "a" missing-rule' })).rejects.toThrow();
  });

  test('30 answers of the real model under the /2 grammar all pass ModelAnswerV2', { timeout: 900_000 }, async () => {
    const N = 30;
    const grammar = await llama.createGrammar({ grammar: answerGrammar(V2) });
    const prompt = [model.tokens.bos!, ...model.tokenize('You are a digital subject. Answer with one JSON object.\n\nWindow: seq 3, 17, 40, 41, 250.\n\n', false)];
    const results: { valid: boolean; tokens: number; ms: number; finish: string; text: string }[] = [];
    for (let i = 0; i < N; i++) {
      const sequence = context.getSequence();
      const tokens: number[] = [];
      let finish = 'ended';
      const started = performance.now();
      for await (const token of sequence.evaluate(prompt, { temperature: 0.8, topK: 40, topP: 0.95, minP: 0, seed: i + 1, grammarEvaluationState: engine.grammarState(model, grammar), yieldEogToken: true })) {
        if (model.isEogToken(token)) {
          finish = 'stop';
          break;
        }
        tokens.push(token);
        if (prompt.length + tokens.length >= context.contextSize - 1) {
          finish = 'length';
          break;
        }
      }
      const ms = performance.now() - started;
      await sequence.dispose();
      const text = model.detokenize(tokens);
      let valid = false;
      try {
        valid = ModelAnswerV2.safeParse(JSON.parse(text)).success;
      } catch {
        valid = false;
      }
      results.push({ valid, tokens: tokens.length, ms, finish, text });
    }
    const valid = results.filter((r) => r.valid).length;
    const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
    // The figures docs/local-model.md quotes.
    console.log(`answer-grammar: ${valid}/${N} schema-valid; finish ${JSON.stringify(Object.fromEntries(['stop', 'length', 'ended'].map((f) => [f, results.filter((r) => r.finish === f).length])))}; tokens per answer mean ${mean(results.map((r) => r.tokens)).toFixed(0)} (min ${Math.min(...results.map((r) => r.tokens))}, max ${Math.max(...results.map((r) => r.tokens))}); ms per answer mean ${mean(results.map((r) => r.ms)).toFixed(0)}; ms per token ${(results.reduce((a, r) => a + r.ms, 0) / results.reduce((a, r) => a + r.tokens, 0)).toFixed(2)}`);
    for (const r of results) if (!r.valid) console.log(`invalid (${r.finish}, ${r.tokens} tokens): ${r.text.slice(0, 300)}`);
    expect(results.filter((r) => r.finish !== 'stop')).toEqual([]);
    expect(valid).toBe(N);
    // The answers differ (the seeds do something) and use the grammar's freedom: actions, claims.
    expect(new Set(results.map((r) => r.text)).size).toBe(N);
  });
});
