// Anthropic's structured outputs (dialects `anthropic_json`, output_config.format, and
// `anthropic_tool`, one strict forced tool's input_schema): one documented subset for both, the
// page's "JSON Schema limitations", so one file. A schema outside it is answered with HTTP 400
// naming the keyword (e.g. "For 'integer' type, property 'minimum' is not supported").
import { formatsOnly, ONE_OF_AS_ANY_OF, refused, UNGRAMMATICAL } from './common-rules.js';
import { ANNOTATION_KEYWORDS, type SchemaSubset } from './schema-subset.js';

const BASE = {
  sendsSchema: true,
  sources: [
    {
      title: 'Claude docs, Structured outputs — JSON Schema limitations',
      url: 'https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations',
      says: 'supported: all basic types, enum (primitives), const, anyOf, allOf (limited), local $ref/$defs/definitions, default, required, additionalProperties false, string formats date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid, minItems 0 or 1, pattern (simple regex); not supported: recursive schemas, numeric constraints (minimum, maximum, multipleOf), string lengths (minLength, maxLength), array constraints beyond minItems 0/1, additionalProperties other than false; at most 16 properties with union types across the strict schemas of a request',
    },
    { title: 'An Anthropic 400 as reported (agentjido/req_llm#302)', url: 'https://github.com/agentjido/req_llm/issues/302', says: 'output_format.schema: For \'integer\' type, property \'minimum\' is not supported (invalid_request_error)' },
  ],
  documentation: 'Documented as a list of supported and unsupported features; the page could not be fetched from this machine (no hosted API or its site is reachable): the list is the page as quoted by secondary sources found by search. Recursion is not checked (the answer schema has no $ref). The union limit is documented for strict tools; it is applied to both dialects.',
  outsideSubset: 'http_400',
  keywords: [...ANNOTATION_KEYWORDS, 'type', 'properties', 'required', 'additionalProperties', 'items', 'anyOf', 'allOf', 'enum', 'const', '$ref', '$defs', 'definitions', 'default', 'format', 'pattern', 'minItems'],
  rules: [
    ...refused(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'], 'numeric constraints are not supported'),
    ...refused(['minLength', 'maxLength'], 'string length constraints are not supported'),
    ...refused(['maxItems', ...UNGRAMMATICAL], 'array and object constraints beyond minItems 0/1 are not supported'),
    { keyword: 'minItems', rule: 'minItems may only be 0 or 1', remedy: 'remove', breaks: (value: unknown) => value !== 0 && value !== 1 },
    ONE_OF_AS_ANY_OF,
    formatsOnly(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'uri', 'ipv4', 'ipv6', 'uuid'], 'Anthropic structured outputs'),
  ],
  demands: { everyPropertyRequired: false, additionalPropertiesFalse: true, rootObject: true, maxUnionNodes: 16 },
} as const;

export const ANTHROPIC_JSON_SUBSET: SchemaSubset = { dialect: 'anthropic_json', requestForm: 'output_config: {format: {type: "json_schema", schema}} (Messages API; earlier the beta output_format with anthropic-beta: structured-outputs-2025-11-13)', ...BASE };
export const ANTHROPIC_TOOL_SUBSET: SchemaSubset = { dialect: 'anthropic_tool', requestForm: 'tools: [{name, strict: true, input_schema: schema}], tool_choice: {type: "tool", name}', ...BASE };
