// Gemini's responseJsonSchema (dialect `gemini_json_schema`): the structured-output page lists
// the keywords it supports and says others are IGNORED — no error, the constraint silently
// weaker — which is why a keyword not on the list is a violation here.
import { ONE_OF_AS_ANY_OF, refused } from './common-rules.js';
import { ANNOTATION_KEYWORDS, NO_DEMANDS, type SchemaSubset } from './schema-subset.js';

export const GEMINI_JSON_SCHEMA_SUBSET: SchemaSubset = {
  dialect: 'gemini_json_schema',
  sendsSchema: true,
  requestForm: 'generationConfig: {responseMimeType: "application/json", responseJsonSchema: schema} (generateContent)',
  sources: [
    {
      title: 'Gemini API docs, Structured output — JSON Schema support',
      url: 'https://ai.google.dev/gemini-api/docs/structured-output#json-schema',
      says: 'supported: type, title, description, enum, format (string: date-time, date, time), minimum, maximum (number, integer), items, prefixItems, minItems, maxItems (array), properties, required, additionalProperties (object), anyOf, $ref, $defs, $id, $anchor, propertyOrdering; unsupported properties are ignored',
    },
  ],
  documentation: 'Documented as a list of supported keywords; what it leaves out is ignored silently, so the list is read as the whole subset. THIN on const, oneOf and string lengths/pattern: the page does not list them (secondary sources disagree on lengths), so they count as outside. The page could not be fetched from this machine.',
  outsideSubset: 'ignored_silently',
  keywords: [...ANNOTATION_KEYWORDS, 'type', 'enum', 'format', 'minimum', 'maximum', 'items', 'prefixItems', 'minItems', 'maxItems', 'properties', 'required', 'additionalProperties', 'anyOf', '$ref', '$defs', '$id', '$anchor', 'propertyOrdering'],
  rules: [
    { keyword: 'const', rule: 'const is not among the listed keywords (ignored); it is sent as a one-value enum', remedy: 'as_enum' },
    ONE_OF_AS_ANY_OF,
    ...refused(['minLength', 'maxLength', 'pattern'], 'not among the listed keywords: ignored silently'),
    { keyword: 'format', rule: 'format must be date-time, date or time', remedy: 'remove', breaks: (value) => typeof value !== 'string' || !['date-time', 'date', 'time'].includes(value) },
  ],
  demands: NO_DEMANDS,
};
