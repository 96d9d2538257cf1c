// Keyword rules several dialects document alike, stated once (each dialect's file says which it
// takes and cites where it read them).
import { branchesExclusive } from './subset-check.js';
import type { KeywordRule } from './schema-subset.js';

/** Rules that refuse each of `keywords` outright (dropped under strip), for `why`. */
export function refused(keywords: readonly string[], why: string): KeywordRule[] {
  return keywords.map((keyword) => ({ keyword, rule: `${keyword}: ${why}`, remedy: 'remove' }));
}

/** `oneOf` not accepted: sent as `anyOf` (what it says where the branches are exclusive; the runtime still checks exactly one). */
export const ONE_OF_AS_ANY_OF: KeywordRule = { keyword: 'oneOf', rule: 'oneOf is not in the subset; it is sent as anyOf (the same where the branches are exclusive by a const)', remedy: 'as_anyOf' };

/** `oneOf` read as `anyOf` by the engine: a break only where the branches may overlap ("exactly one" is then not enforced). */
export const ONE_OF_READ_AS_ANY_OF: KeywordRule = {
  keyword: 'oneOf',
  rule: 'oneOf is enforced as anyOf: branches that may overlap lose "exactly one"',
  remedy: 'as_anyOf',
  breaks: (value) => !branchesExclusive(value),
};

/** A `format` value outside `formats`. */
export function formatsOnly(formats: readonly string[], source: string): KeywordRule {
  return { keyword: 'format', rule: `format must be one of ${formats.join(', ')} (${source})`, remedy: 'remove', breaks: (value) => typeof value !== 'string' || !formats.includes(value) };
}

/** Composition and conditional keywords no decoder here documents. */
export const CONDITIONALS = ['not', 'if', 'then', 'else', 'dependentRequired', 'dependentSchemas'] as const;
/** Object and array keywords a grammar cannot state (uniqueness, counting matches, keys by pattern). */
export const UNGRAMMATICAL = ['patternProperties', 'unevaluatedProperties', 'propertyNames', 'minProperties', 'maxProperties', 'unevaluatedItems', 'contains', 'minContains', 'maxContains', 'uniqueItems'] as const;
