// The answer schema as a dialect is sent it (issue 36 item 2): checked against the dialect's
// subset before hour 0 (`subsetBeforeStart`, called by design/model-choice.ts resolveModel before
// anything of an instance or a study is written), and as each call sends it
// (`answerSchemaToSend`, the one function every adapter's caller uses: the wake loop, the
// runtime's preflight probe, the controller's check). Under `refuse` a schema outside the subset
// never starts; under `strip` what is outside is left out of every schema sent, the same way for
// every group, and the runtime's zod check still holds every answer to the full schema.
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { TypedErrorOf } from '../../foundation/typed-error.js';
import { hashCanonical, type HashString } from '../../schema/hash.js';
import type { AnswerSchemaDialect, SchemaSubsetPolicy, SchemaSubsetRecord } from '../../schema/model-call-policy.js';
import { specialisedAnswerSchema, type JsonSchema } from '../answer-schema.js';
import type { ModelProtocol } from '../model-protocol.js';
import { checkSubset, stripSubset, type SubsetViolation } from './subset-check.js';
import { subsetOf } from './subsets.js';

export class SchemaSubsetError extends TypedErrorOf('schema_subset', EXIT_CODES.failed) {
  override readonly name = 'SchemaSubsetError';
}

/** The dialect a schema is sent in and what a start does with keywords outside its subset (pre-registered). */
export interface SubsetChoice {
  readonly dialect: AnswerSchemaDialect;
  readonly policy: SchemaSubsetPolicy;
}

/** The schema `schema` as sent in `choice.dialect`: unchanged under refuse (checked before hour 0), stripped under strip. */
export function answerSchemaToSend(choice: SubsetChoice, schema: JsonSchema): JsonSchema {
  if (choice.policy === 'refuse') return schema;
  return stripSubset(schema, subsetOf(choice.dialect)).schema as JsonSchema;
}

/**
 * The forms of the answer schema a run sends: its base form (the event-seq marker off, as a wake
 * that showed nothing sends it) and a wake's that showed an event (seqs as an enum). Together
 * they hold every keyword any call sends.
 */
export function sentForms(protocol: ModelProtocol): JsonSchema[] {
  return [specialisedAnswerSchema(protocol, []), specialisedAnswerSchema(protocol, [1])];
}

/** What the manifest records of the check (design/manifest.ts StructuredOutputInfo), and the lines the start says. */
export interface SubsetDecision {
  /** sha256 of the base form as sent; null where the dialect sends no schema. */
  readonly sent_schema_sha256: HashString | null;
  readonly subset: SchemaSubsetRecord | null;
  readonly lines: readonly string[];
}

const shown = (v: SubsetViolation): string => `${v.path || '(root)'} ${v.keyword} — ${v.rule}`;
const MAX_LISTED = 12;

function listed(violations: readonly SubsetViolation[]): string {
  const head = violations.slice(0, MAX_LISTED).map(shown).join('; ');
  return violations.length > MAX_LISTED ? `${head}; and ${violations.length - MAX_LISTED} more of the same kinds` : head;
}

function unique(violations: readonly SubsetViolation[]): SubsetViolation[] {
  const seen = new Map<string, SubsetViolation>();
  for (const v of violations) seen.set(`${v.path}\u0000${v.keyword}\u0000${v.rule}`, v);
  return [...seen.values()];
}

/**
 * Holds `forms` (the schemas a run sends) to `choice.dialect`'s subset: SchemaSubsetError under
 * refuse when any keyword is outside it, and under either policy when leaving keywords out
 * cannot meet it; otherwise what is sent. `alternatives`: the dialects the same model could be
 * asked in, offered where their subset holds the schema (advice the tool accepts).
 */
export function decideSubset(choice: SubsetChoice, forms: readonly JsonSchema[], alternatives: readonly AnswerSchemaDialect[]): SubsetDecision {
  const subset = subsetOf(choice.dialect);
  if (!subset.sendsSchema) return { sent_schema_sha256: null, subset: null, lines: [`schema subset: dialect ${choice.dialect} sends no schema, so no subset applies (the runtime checks every answer against the full schema)`] };
  const violations = unique(forms.flatMap((f) => checkSubset(f, subset)));
  const stripped = forms.map((f) => stripSubset(f, subset));
  const unfixable = unique(stripped.flatMap((s) => s.remaining));
  const fits = alternatives.filter((d) => d !== choice.dialect && forms.every((f) => checkSubset(f, subsetOf(d)).length === 0));
  const elsewhere = fits.length > 0 ? `ask the model in a dialect whose subset holds the schema (${fits.join(', ')}: --structured-output or structured_output in the model configuration file)` : null;
  const where = `the ${choice.dialect} subset (${subset.sources[0]?.url ?? 'no source'})`;
  if (unfixable.length > 0) {
    throw new SchemaSubsetError(`refusing to start: the answer schema breaks ${where} in ways leaving keywords out cannot meet, under either schema_subset policy: ${listed(unfixable)}. ${elsewhere === null ? 'No dialect of this model holds the schema: choose another model.' : `To go on, ${elsewhere}.`} Nothing was written`);
  }
  if (choice.policy === 'refuse' && violations.length > 0) {
    const strip = 'pre-register model_calls.schema_subset "strip" in a copy of the pre-registration, locked (npm run prereg -- lock FILE; see docs/own-study.md), to leave them out of what is sent while the runtime still checks every answer against the full schema';
    throw new SchemaSubsetError(`refusing to start: ${violations.length} keyword(s) of the answer schema are outside ${where}, and the pre-registration says schema_subset "refuse": ${listed(violations)}. To go on, ${elsewhere === null ? strip : `${elsewhere}, or ${strip}`}. Nothing was written`);
  }
  const removed = unique(violations).length === 0 ? [] : [...new Map(stripped.flatMap((s) => s.removed).map((r) => [`${r.path}\u0000${r.keyword}`, r])).values()];
  const sent = stripped[0]!.schema;
  const lines = removed.length === 0
    ? [`schema subset: the answer schema is inside ${where} (policy ${choice.policy}); sent as is`]
    : [`schema subset: ${removed.length} keyword(s) outside ${where} left out of the schema sent (pre-registered schema_subset "strip"): ${[...new Set(removed.map((r) => r.keyword))].join(', ')}; the constraint the server applies is weaker than the schema, and the runtime checks every answer against the full schema`];
  return { sent_schema_sha256: hashCanonical(sent), subset: { policy: choice.policy, removed }, lines };
}

/** The check before hour 0 for a run's protocol (sentForms). */
export function subsetBeforeStart(choice: SubsetChoice, protocol: ModelProtocol, alternatives: readonly AnswerSchemaDialect[]): SubsetDecision {
  return decideSubset(choice, sentForms(protocol), alternatives);
}
