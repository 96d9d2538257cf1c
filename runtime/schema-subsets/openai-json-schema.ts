// OpenAI's strict Structured Outputs (dialect `json_schema`): the subset its documentation lists
// under "Supported schemas". A schema outside it is answered with HTTP 400 at the first call.
import { CONDITIONALS, formatsOnly, ONE_OF_AS_ANY_OF, refused, UNGRAMMATICAL } from './common-rules.js';
import { ANNOTATION_KEYWORDS, type SchemaSubset } from './schema-subset.js';

const SOURCE = 'https://platform.openai.com/docs/guides/structured-outputs#supported-schemas';

export const OPENAI_JSON_SCHEMA_SUBSET: SchemaSubset = {
  dialect: 'json_schema',
  sendsSchema: true,
  requestForm: 'response_format: {type: "json_schema", json_schema: {name, strict: true, schema}}',
  sources: [
    {
      title: 'OpenAI API, Structured model outputs — Supported schemas',
      url: SOURCE,
      says: 'types string, number, boolean, integer, object, array, enum, anyOf; string: pattern, format (date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid); number: multipleOf, minimum, maximum, exclusiveMinimum, exclusiveMaximum; array: minItems, maxItems; every property required, additionalProperties: false on every object, the root an object and not anyOf; allOf, not, if/then/else, dependentRequired, dependentSchemas unsupported; minLength, maxLength, patternProperties, unevaluatedProperties, propertyNames, minProperties, maxProperties, unevaluatedItems, contains, minContains, maxContains, uniqueItems not yet supported',
    },
  ],
  documentation: 'Documented keyword by keyword; the page itself could not be fetched from this machine (no hosted API or its site is reachable): the list is the page as known to this project and secondary sources found by search that quote it. Its size limits (5000 properties, 10 levels of nesting, 1000 enum values) are not checked here; the answer schema is far below them.',
  outsideSubset: 'http_400',
  keywords: [...ANNOTATION_KEYWORDS, 'type', 'properties', 'required', 'additionalProperties', 'items', 'anyOf', 'enum', 'const', '$ref', '$defs', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems'],
  rules: [
    ...refused(['minLength', 'maxLength'], 'string lengths are not yet supported in strict mode'),
    ...refused(['allOf', ...CONDITIONALS], 'composition and conditionals are not supported in strict mode'),
    ...refused(UNGRAMMATICAL, 'not yet supported in strict mode'),
    ONE_OF_AS_ANY_OF,
    formatsOnly(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid'], 'OpenAI strict mode'),
  ],
  demands: { everyPropertyRequired: true, additionalPropertiesFalse: true, rootObject: true, maxUnionNodes: null },
};
