// llama.cpp's JSON Schema → GBNF converter (dialect `llamacpp`; Ollama's `format` goes through
// the same converter, ollama.ts): grammars/README.md "JSON Schemas → GBNF" lists its known
// limitations. What it does not support it skips SILENTLY: the server answers 200 and the
// constraint is weaker than the schema, which is why a skipped keyword is a violation here.
import { CONDITIONALS, formatsOnly, ONE_OF_READ_AS_ANY_OF, refused, UNGRAMMATICAL } from './common-rules.js';
import { ANNOTATION_KEYWORDS, NO_DEMANDS, type KeywordRule, type SchemaSubset, type SubsetSource } from './schema-subset.js';

export const LLAMACPP_GRAMMAR_SOURCE: SubsetSource = {
  title: 'llama.cpp grammars/README.md, "JSON Schemas → GBNF" (known limitations)',
  url: 'https://github.com/ggml-org/llama.cpp/blob/master/grammars/README.md#json-schemas--gbnf',
  says: 'unsupported features are skipped silently; minimum, exclusiveMinimum, maximum, exclusiveMaximum only for type integer, not number; patterns must start with ^ and end with $; string formats lack uri and email; prefixItems is broken; no patternProperties; properties cannot be mixed with anyOf/oneOf in one node; uniqueItems, contains/minContains, $anchor, not, if/then/else/dependentSchemas unsupported; additionalProperties defaults to false',
};

const notInteger = (_value: unknown, node: Readonly<Record<string, unknown>>): boolean => node['type'] !== 'integer';

/** The converter's rules, shared with the ollama dialect (the same converter). */
export const LLAMACPP_GRAMMAR_RULES: readonly KeywordRule[] = [
  ...['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].map((keyword): KeywordRule => ({ keyword, rule: `${keyword} is enforced only for type integer, skipped silently for number`, remedy: 'remove', breaks: notInteger })),
  { keyword: 'pattern', rule: 'a pattern must start with ^ and end with $', remedy: 'remove', breaks: (value) => typeof value !== 'string' || !value.startsWith('^') || !value.endsWith('$') },
  formatsOnly(['date', 'time', 'date-time', 'uuid'], 'the formats llama.cpp converts; uri and email are lacking'),
  ...refused(['prefixItems'], 'broken in the converter'),
  ...refused([...UNGRAMMATICAL, ...CONDITIONALS, '$anchor'], 'not supported by the converter (skipped silently)'),
  { keyword: 'anyOf', rule: 'properties cannot be mixed with anyOf/oneOf in one node', remedy: null, breaks: (_value, node) => node['properties'] !== undefined },
  ONE_OF_READ_AS_ANY_OF,
];

export const LLAMACPP_GRAMMAR_KEYWORDS: readonly string[] = [...ANNOTATION_KEYWORDS, 'type', 'properties', 'required', 'additionalProperties', 'items', 'anyOf', 'oneOf', 'allOf', 'enum', 'const', '$ref', '$defs', 'definitions', 'pattern', 'format', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minItems', 'maxItems'];

export const LLAMACPP_SUBSET: SchemaSubset = {
  dialect: 'llamacpp',
  sendsSchema: true,
  requestForm: 'response_format: {type: "json_object", schema} and a top-level json_schema: schema (both read by llama-server, runtime/model-adapters/structured-output.ts)',
  sources: [LLAMACPP_GRAMMAR_SOURCE],
  documentation: 'Documented as a list of known limitations ("non-exhaustive"); read from the repository (ggml-org/llama.cpp, grammars/README.md as of build b4748, February 2025). tests/test-json-schema-to-grammar.cpp is named there as the fuller account.',
  outsideSubset: 'ignored_silently',
  keywords: LLAMACPP_GRAMMAR_KEYWORDS,
  rules: LLAMACPP_GRAMMAR_RULES,
  demands: NO_DEMANDS,
};
