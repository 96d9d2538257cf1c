// vLLM's OpenAI-compatible server (dialect `vllm`): `response_format` json_schema decoded by its
// structured-output backend, xgrammar by default. vLLM refuses (HTTP 400) a schema with features
// xgrammar does not support, or in `auto` mode falls back to the guidance backend; either way the
// keywords below are what the default backend is documented not to enforce.
import { formatsOnly, ONE_OF_READ_AS_ANY_OF, refused } from './common-rules.js';
import { ANNOTATION_KEYWORDS, NO_DEMANDS, type SchemaSubset } from './schema-subset.js';

const XGRAMMAR_FORMATS = ['email', 'date', 'time', 'date-time', 'duration', 'ipv4', 'ipv6', 'hostname', 'uuid', 'uri', 'uri-reference', 'uri-template', 'json-pointer', 'relative-json-pointer'];

export const VLLM_SUBSET: SchemaSubset = {
  dialect: 'vllm',
  sendsSchema: true,
  requestForm: 'response_format: {type: "json_schema", json_schema: {name, schema}} on /v1/chat/completions',
  sources: [
    { title: 'vLLM docs, Structured Outputs', url: 'https://docs.vllm.ai/en/latest/features/structured_outputs/', says: 'the OpenAI-compatible server takes response_format json_schema; structured outputs use xgrammar or guidance as backends; the backend is chosen per request in auto mode' },
    { title: 'vLLM source, vllm/v1/structured_output/backend_xgrammar.py has_xgrammar_unsupported_json_features', url: 'https://github.com/vllm-project/vllm/blob/main/vllm/v1/structured_output/backend_xgrammar.py', says: 'unsupported by xgrammar: multipleOf on numbers; uniqueItems, contains, minContains, maxContains on arrays; a string format outside its list; pattern or format together with minLength/maxLength (the lengths would be dropped silently); propertyNames or several patternProperties beside properties' },
  ],
  documentation: 'THIN in the documentation pages: they name the backends but list no keywords; the list is vLLM\'s own check in its source (named above), which is what refuses a request. Which backend served a request is not reported in the answer.',
  outsideSubset: 'http_400',
  keywords: [...ANNOTATION_KEYWORDS, 'type', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'anyOf', 'oneOf', 'allOf', 'enum', 'const', '$ref', '$defs', 'definitions', 'pattern', 'format', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minItems', 'maxItems', 'minProperties', 'maxProperties'],
  rules: [
    ...refused(['multipleOf', 'uniqueItems', 'contains', 'minContains', 'maxContains', 'propertyNames', 'patternProperties'], 'not supported by xgrammar (vLLM refuses the request or changes backend)'),
    formatsOnly(XGRAMMAR_FORMATS, 'xgrammar\'s formats'),
    ...['minLength', 'maxLength'].map((keyword) => ({ keyword, rule: `${keyword} beside a pattern or format is dropped by xgrammar`, remedy: 'remove' as const, breaks: (_v: unknown, node: Readonly<Record<string, unknown>>) => node['pattern'] !== undefined || node['format'] !== undefined })),
    ONE_OF_READ_AS_ANY_OF,
  ],
  demands: NO_DEMANDS,
};
