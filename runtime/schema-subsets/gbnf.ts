// The local adapter's grammar (dialect `gbnf`): runtime/answer-grammar.ts translates the schema
// into GBNF keyword by keyword and refuses what it cannot enforce exactly (not node-llama-cpp's
// own JSON-schema grammar, which drops pattern, number bounds and anyOf: see that file's head).
// Its keyword lists are this subset's one source.
import { GRAMMAR_KEYWORDS } from '../answer-grammar.js';
import type { SchemaSubset } from './schema-subset.js';

export const GBNF_SUBSET: SchemaSubset = {
  dialect: 'gbnf',
  sendsSchema: true,
  requestForm: 'a GBNF grammar made from the schema by runtime/answer-grammar.ts, decoded by node-llama-cpp inside the runtime',
  sources: [{ title: 'This project, runtime/answer-grammar.ts (ALLOWED)', url: 'runtime/answer-grammar.ts', says: 'keywords per form; objects with additionalProperties false and every property required; arrays with maxItems; anything else refused with AnswerGrammarError' }],
  documentation: 'The translator is this project\'s: its keyword table is the subset, and what else it refuses (unbounded strings, arrays and integers; overlapping oneOf branches) it refuses at the preflight, before hour 0.',
  outsideSubset: 'refused_at_preflight',
  keywords: GRAMMAR_KEYWORDS,
  rules: [],
  demands: { everyPropertyRequired: true, additionalPropertiesFalse: true, rootObject: false, maxUnionNodes: null },
};
