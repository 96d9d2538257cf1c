// The dialects that send no schema (`json_object`: JSON, but not the schema; `none`: the prompt
// alone): there is nothing sent to hold to a subset, so nothing to check; the runtime checks
// every answer against the full schema as for every dialect.
import { NO_DEMANDS, type SchemaSubset } from './schema-subset.js';

const NOTHING_SENT = {
  sendsSchema: false,
  sources: [],
  documentation: 'No schema is sent, so no subset applies: the constraint is only what the dialect names (any JSON object, or nothing).',
  outsideSubset: 'nothing_sent',
  keywords: [],
  rules: [],
  demands: NO_DEMANDS,
} as const;

export const JSON_OBJECT_SUBSET: SchemaSubset = { dialect: 'json_object', requestForm: 'response_format: {type: "json_object"}', ...NOTHING_SENT };
export const NONE_SUBSET: SchemaSubset = { dialect: 'none', requestForm: 'nothing', ...NOTHING_SENT };
