// Every dialect's subset, keyed by dialect: the compiler refuses a dialect without one.
import type { AnswerSchemaDialect } from '../../schema/model-call-policy.js';
import { ANTHROPIC_JSON_SUBSET, ANTHROPIC_TOOL_SUBSET } from './anthropic.js';
import { GBNF_SUBSET } from './gbnf.js';
import { GEMINI_JSON_SCHEMA_SUBSET } from './gemini.js';
import { LLAMACPP_SUBSET } from './llamacpp.js';
import { JSON_OBJECT_SUBSET, NONE_SUBSET } from './no-schema.js';
import { OLLAMA_SUBSET } from './ollama.js';
import { OPENAI_JSON_SCHEMA_SUBSET } from './openai-json-schema.js';
import type { SchemaSubset } from './schema-subset.js';
import { VLLM_SUBSET } from './vllm.js';

export const SCHEMA_SUBSETS: { readonly [D in AnswerSchemaDialect]: SchemaSubset & { readonly dialect: D } } = {
  json_schema: { ...OPENAI_JSON_SCHEMA_SUBSET, dialect: 'json_schema' },
  vllm: { ...VLLM_SUBSET, dialect: 'vllm' },
  ollama: { ...OLLAMA_SUBSET, dialect: 'ollama' },
  llamacpp: { ...LLAMACPP_SUBSET, dialect: 'llamacpp' },
  json_object: { ...JSON_OBJECT_SUBSET, dialect: 'json_object' },
  none: { ...NONE_SUBSET, dialect: 'none' },
  gbnf: { ...GBNF_SUBSET, dialect: 'gbnf' },
  anthropic_json: { ...ANTHROPIC_JSON_SUBSET, dialect: 'anthropic_json' },
  anthropic_tool: { ...ANTHROPIC_TOOL_SUBSET, dialect: 'anthropic_tool' },
  gemini_json_schema: { ...GEMINI_JSON_SCHEMA_SUBSET, dialect: 'gemini_json_schema' },
};

export function subsetOf(dialect: AnswerSchemaDialect): SchemaSubset {
  return SCHEMA_SUBSETS[dialect];
}
