// Ollama's OpenAI-compatible endpoint (dialect `ollama`): `response_format` json_schema is turned
// into Ollama's own `format`, and that into a grammar by llama.cpp's json-schema-to-grammar (the
// converter Ollama vendors): the same subset as llamacpp.ts, skipped keywords as silent.
import { LLAMACPP_GRAMMAR_KEYWORDS, LLAMACPP_GRAMMAR_RULES, LLAMACPP_GRAMMAR_SOURCE } from './llamacpp.js';
import { NO_DEMANDS, type SchemaSubset } from './schema-subset.js';

export const OLLAMA_SUBSET: SchemaSubset = {
  dialect: 'ollama',
  sendsSchema: true,
  requestForm: 'response_format: {type: "json_schema", json_schema: {name, schema}} on /v1/chat/completions (Ollama reads json_schema.schema into its format; strict is not read)',
  sources: [
    { title: 'Ollama docs, OpenAI compatibility', url: 'https://github.com/ollama/ollama/blob/main/docs/openai.md', says: '/v1/chat/completions supports response_format (json_object, json_schema); the schema becomes the request\'s format' },
    { title: 'Ollama blog, Structured outputs (December 2024)', url: 'https://ollama.com/blog/structured-outputs', says: 'format takes a JSON schema that constrains the output; no list of supported keywords is given' },
    LLAMACPP_GRAMMAR_SOURCE,
  ],
  documentation: 'THIN: Ollama documents no keyword subset of its own; the subset is llama.cpp\'s converter\'s, which Ollama vendors (its documentation does not say so in words; its source does). Ollama Cloud was reported to accept the schema without enforcing it (ollama/ollama#12362): the preflight probe is what catches that.',
  outsideSubset: 'ignored_silently',
  keywords: LLAMACPP_GRAMMAR_KEYWORDS,
  rules: LLAMACPP_GRAMMAR_RULES,
  demands: NO_DEMANDS,
};
