// What a dialect's documented JSON Schema subset is, as data (issue 36 item 2): the type every
// file of this folder fills in, one file per dialect, listed once in subsets.ts. The check and
// the strip (subset-check.ts) read nothing else, so a subset is changed in one place.
import type { AnswerSchemaDialect } from '../../schema/model-call-policy.js';

/** Where a subset was read: the page's title, its address, and what it says, in short. */
export interface SubsetSource {
  readonly title: string;
  readonly url: string;
  readonly says: string;
}

/**
 * What leaving a keyword out of the schema sent means:
 * - remove: dropped (the constraint it states is then enforced only by the runtime's check);
 * - as_anyOf: `oneOf` sent as `anyOf` (the same where the branches are exclusive);
 * - as_enum: `const: v` sent as `enum: [v]` (the same values).
 */
export type Remedy = 'remove' | 'as_anyOf' | 'as_enum';

/** A keyword the subset refuses, or accepts only with some values. */
export interface KeywordRule {
  readonly keyword: string;
  /** The rule as the documentation states it. */
  readonly rule: string;
  /** null: leaving keywords out cannot meet the rule (the start is refused under either policy). */
  readonly remedy: Remedy | null;
  /** Whether the rule is broken by this value in this node; absent: by any use of the keyword. */
  readonly breaks?: (value: unknown, node: Readonly<Record<string, unknown>>) => boolean;
}

/** Demands on the schema's shape that leaving keywords out cannot meet: broken, the start is refused under either policy. */
export interface StructuralDemands {
  /** Every object lists each of its properties in `required`. */
  readonly everyPropertyRequired: boolean;
  /** Every object says `additionalProperties: false`. */
  readonly additionalPropertiesFalse: boolean;
  /** The root is an object, not a union. */
  readonly rootObject: boolean;
  /** At most this many nodes hold a union (anyOf, oneOf, a list of types); null: no limit documented. */
  readonly maxUnionNodes: number | null;
}

/** What the provider does with a schema outside the subset: how a study would (or would not) learn of it. */
export type OutsideSubset = 'http_400' | 'ignored_silently' | 'refused_at_preflight' | 'nothing_sent';

export interface SchemaSubset {
  readonly dialect: AnswerSchemaDialect;
  /** False for dialects that send no schema (json_object, none): nothing to check. */
  readonly sendsSchema: boolean;
  /** The request fields, as the provider documents them (runtime/model-adapters/structured-output.ts builds the openai adapter's). */
  readonly requestForm: string;
  readonly sources: readonly SubsetSource[];
  /** How complete the documentation is, and what of the subset rests on what (said in docs/model-protocol.md). */
  readonly documentation: string;
  readonly outsideSubset: OutsideSubset;
  /** Every keyword the subset accepts, annotations included; any other keyword is outside it (left out under strip). */
  readonly keywords: readonly string[];
  /** Refused keywords named by the documentation, and limits on accepted keywords' values. */
  readonly rules: readonly KeywordRule[];
  readonly demands: StructuralDemands;
}

/** Annotations every subset accepts: they state nothing about which values are valid. */
export const ANNOTATION_KEYWORDS = ['title', 'description'] as const;

/** No structural demand: the subset takes any shape its keywords can state. */
export const NO_DEMANDS: StructuralDemands = { everyPropertyRequired: false, additionalPropertiesFalse: false, rootObject: false, maxUnionNodes: null };
