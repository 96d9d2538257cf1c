// The dialects' documented JSON Schema subsets (issue 36 item 2; runtime/schema-subsets/): for
// every dialect that sends a schema, a forged schema with a keyword the dialect refuses is caught
// by the check, left out under strip (the schema sent lacks it, and is then inside the subset),
// and refused under refuse with advice the tool accepts; a structural demand leaving keywords
// out cannot meet is refused under both policies; json_object and none send nothing to check.
import { describe, expect, it } from 'vitest';
import { AnswerSchemaDialect, STRUCTURED_OUTPUT_DIALECTS, type SchemaSubsetPolicy } from '../../schema/model-call-policy.js';
import { SCHEMA_SUBSETS } from '../../runtime/schema-subsets/subsets.js';
import { checkSubset, stripSubset } from '../../runtime/schema-subsets/subset-check.js';
import { answerSchemaToSend, decideSubset, SchemaSubsetError, sentForms } from '../../runtime/schema-subsets/schema-to-send.js';
import type { JsonSchema } from '../../runtime/answer-schema.js';

const DIALECTS = AnswerSchemaDialect.options.flatMap((o) => ('options' in o ? o.options : [o.value])) as AnswerSchemaDialect[];

/** An object schema every subset's structural demands accept, with `leaf` as its one property. */
function forged(leaf: Record<string, unknown>): JsonSchema {
  return { type: 'object', properties: { x: leaf }, required: ['x'], additionalProperties: false };
}

/** Per sending dialect: a leaf with a keyword that dialect refuses (from its documented subset), and that keyword. */
const FORGED: Record<string, { leaf: Record<string, unknown>; keyword: string }> = {
  json_schema: { leaf: { type: 'string', maxLength: 5 }, keyword: 'maxLength' },
  vllm: { leaf: { type: 'array', items: { type: 'integer' }, uniqueItems: true }, keyword: 'uniqueItems' },
  ollama: { leaf: { type: 'number', minimum: 0 }, keyword: 'minimum' },
  llamacpp: { leaf: { type: 'string', pattern: '[a-z]+' }, keyword: 'pattern' },
  gbnf: { leaf: { type: 'string', maxLength: 5, uniqueItems: true }, keyword: 'uniqueItems' },
  anthropic_json: { leaf: { type: 'integer', minimum: 0 }, keyword: 'minimum' },
  anthropic_tool: { leaf: { type: 'array', items: { type: 'string' }, minItems: 2 }, keyword: 'minItems' },
  gemini_json_schema: { leaf: { type: 'string', pattern: '^a$' }, keyword: 'pattern' },
};

const hasKeyword = (schema: unknown, keyword: string): boolean => JSON.stringify(schema).includes(`"${keyword}"`);

describe('every dialect has its subset, with a source', () => {
  it('the list is keyed by every dialect the manifest may name, and each sending subset cites a source', () => {
    expect(Object.keys(SCHEMA_SUBSETS).sort()).toEqual([...DIALECTS].sort());
    for (const d of DIALECTS) {
      const subset = SCHEMA_SUBSETS[d];
      expect(subset.dialect).toBe(d);
      if (subset.sendsSchema) expect(subset.sources.length, d).toBeGreaterThan(0);
      for (const source of subset.sources) expect(source.url.length * source.says.length, d).toBeGreaterThan(0);
    }
  });
});

describe.each(Object.entries(FORGED))('%s: a forged schema with a keyword the dialect refuses', (dialect, { leaf, keyword }) => {
  const d = dialect as AnswerSchemaDialect;
  const schema = forged(leaf);

  it('is caught by the check, named by path and keyword', () => {
    const violations = checkSubset(schema, SCHEMA_SUBSETS[d]);
    expect(violations).toContainEqual(expect.objectContaining({ path: '/properties/x', keyword, remedy: 'remove' }));
  });

  it('under refuse: the start is refused (SchemaSubsetError), the keyword named, strip advised', () => {
    expect(() => decideSubset({ dialect: d, policy: 'refuse' }, [schema], [])).toThrow(SchemaSubsetError);
    try {
      decideSubset({ dialect: d, policy: 'refuse' }, [schema], []);
    } catch (error) {
      expect((error as Error).message).toContain(`/properties/x ${keyword}`);
      expect((error as Error).message).toContain('schema_subset "strip"');
    }
  });

  it('under strip: the schema sent lacks it, is inside the subset, and the record lists it', () => {
    const sent = answerSchemaToSend({ dialect: d, policy: 'strip' }, schema);
    expect(hasKeyword(sent, keyword)).toBe(false);
    expect(checkSubset(sent, SCHEMA_SUBSETS[d])).toEqual([]);
    const decision = decideSubset({ dialect: d, policy: 'strip' }, [schema], []);
    expect(decision.subset).toEqual({ policy: 'strip', removed: expect.arrayContaining([{ path: '/properties/x', keyword, sent_as: null }]) });
    expect(decision.sent_schema_sha256).toMatch(/^sha256:/);
    expect(decision.lines.join('\n')).toContain('weaker');
  });
});

describe('structural demands leaving keywords out cannot meet', () => {
  const optional: JsonSchema = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a'], additionalProperties: false };
  const open: JsonSchema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
  it.each([
    ['json_schema', optional, 'required'],
    ['json_schema', open, 'additionalProperties'],
    ['anthropic_json', open, 'additionalProperties'],
    ['gbnf', optional, 'required'],
  ] as const)('%s: a forged schema breaking one is refused under both policies (%#)', (dialect, schema, keyword) => {
    for (const policy of ['refuse', 'strip'] as SchemaSubsetPolicy[]) {
      expect(() => decideSubset({ dialect, policy }, [schema], []), `${dialect} ${policy}`).toThrow(/leaving keywords out cannot meet/);
    }
    expect(stripSubset(schema, SCHEMA_SUBSETS[dialect]).remaining).toContainEqual(expect.objectContaining({ keyword, remedy: null }));
  });

  it('anthropic: more than 16 union nodes is refused under strip', () => {
    const properties = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`p${i}`, { anyOf: [{ type: 'string' }, { type: 'null' }] }]));
    const schema: JsonSchema = { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
    expect(() => decideSubset({ dialect: 'anthropic_tool', policy: 'strip' }, [schema], [])).toThrow(/at most 16 nodes/);
  });
});

describe('rewrites rather than drops', () => {
  it('oneOf is sent as anyOf (json_schema), const as a one-value enum (gemini)', () => {
    const schema = forged({ oneOf: [{ type: 'string', const: 'a' }, { type: 'null' }] });
    expect(JSON.stringify(answerSchemaToSend({ dialect: 'json_schema', policy: 'strip' }, schema))).toContain('"anyOf"');
    const gemini = answerSchemaToSend({ dialect: 'gemini_json_schema', policy: 'strip' }, schema);
    expect(hasKeyword(gemini, 'const')).toBe(false);
    expect(JSON.stringify(gemini)).toContain('"enum":["a"]');
  });
  it('llamacpp: oneOf with branches exclusive by a const is inside the subset; overlapping branches are not', () => {
    const exclusive = forged({ oneOf: [0, 1].map((i) => ({ type: 'object', properties: { k: { type: 'integer', const: i } }, required: ['k'], additionalProperties: false })) });
    const overlapping = forged({ oneOf: [{ type: 'integer' }, { type: 'integer' }] });
    expect(checkSubset(exclusive, SCHEMA_SUBSETS.llamacpp)).toEqual([]);
    expect(checkSubset(overlapping, SCHEMA_SUBSETS.llamacpp)).toContainEqual(expect.objectContaining({ keyword: 'oneOf', remedy: 'as_anyOf' }));
  });
});

describe('the answer schema itself (ds-model-output/2)', () => {
  const forms = sentForms('ds-model-output/2');
  it('json_object and none send no schema: nothing to check, said so', () => {
    for (const dialect of ['json_object', 'none'] as const) {
      const decision = decideSubset({ dialect, policy: 'refuse' }, forms, STRUCTURED_OUTPUT_DIALECTS);
      expect(decision).toMatchObject({ sent_schema_sha256: null, subset: null });
      expect(decision.lines[0]).toContain('sends no schema');
    }
  });
  it('json_schema under refuse is refused with advice naming the dialects whose subset holds it; that advice is accepted', () => {
    let message = '';
    try {
      decideSubset({ dialect: 'json_schema', policy: 'refuse' }, forms, STRUCTURED_OUTPUT_DIALECTS);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('minLength');
    expect(message).toContain('vllm');
    expect(message).not.toMatch(/\(.*llamacpp.*: --structured-output/);
    expect(decideSubset({ dialect: 'vllm', policy: 'refuse' }, forms, STRUCTURED_OUTPUT_DIALECTS).subset).toEqual({ policy: 'refuse', removed: [] });
    expect(decideSubset({ dialect: 'gbnf', policy: 'refuse' }, forms, []).subset).toEqual({ policy: 'refuse', removed: [] });
  });
});
