// How a model server is asked to constrain its answer to the answer's JSON Schema (issue 15
// item 1, docs/model-protocol.md "openai"): the dialect, chosen with `--structured-output D`
// (the same key in the model configuration file), pinned in the manifest with the schema's hash
// and identical for every group. This file holds the dialect, the request fields each dialect
// sends, and the check the preflight probe applies to an answer to see whether the server
// honoured the constraint.
//
// The request fields, and why:
// - `json_schema`: OpenAI's form (also vLLM's, and read by current llama.cpp servers):
//   `response_format: {type: "json_schema", json_schema: {name, strict: true, schema}}`.
// - `llamacpp`: llama.cpp's own fields. Its server's chat parser (tools/server, the
//   `oaicompat_chat_params_parse` of every build since early 2025) reads a top-level
//   `json_schema` first, then lets `response_format: {type: "json_object", schema}` replace it;
//   both are sent, carrying the same schema, so whichever a build reads constrains the answer.
//   Not the flat `{type: "json_schema", schema}` the server's README shows: the parser reads
//   that type's schema only from `json_schema.schema`, so the flat form is accepted and ignored
//   (HTTP 200, unconstrained) — as build b4748 was seen to do with the OpenAI form (issue 15).
// - `vllm`, `ollama` (issue 36): the same `response_format` without `strict`, as vLLM's and
//   Ollama's documentation show it (neither reads `strict`); named apart from `json_schema` because
//   each decodes under a different documented schema subset (runtime/schema-subsets/).
// - `json_object`: `response_format: {type: "json_object"}`: JSON, but not the schema.
// - `none`: nothing; the answer relies on the model and the prompt alone.
import { assertNever } from '../../foundation/assert-never.js';
import { z } from 'zod';
import { StructuredOutputDialect, type AnthropicDialect } from '../../schema/model-call-policy.js';
import { answerSchemaOf, ModelProtocol } from '../model-protocol.js';


/** What the preflight probe of every HTTP adapter asks. The schema is NOT shown: only the constraint can make the answer valid, so a capable model cannot mask a server that ignores it. */
export const PROBE_MESSAGES = {
  system: 'You are checked before a study starts.',
  user: 'Reply with one JSON object and nothing else.',
} as const;

/** The `name` OpenAI's form requires; a constant, so the request is the same for every group. */
export const JSON_SCHEMA_NAME = 'ds_model_output';

/** The request-body fields that ask for the constraint in `dialect` (none for `none`). */
export function structuredOutputFields(dialect: StructuredOutputDialect, schema: Readonly<Record<string, unknown>>): Record<string, unknown> {
  switch (dialect) {
    case 'json_schema':
      return { response_format: { type: 'json_schema', json_schema: { name: JSON_SCHEMA_NAME, strict: true, schema } } };
    case 'vllm':
    case 'ollama':
      return { response_format: { type: 'json_schema', json_schema: { name: JSON_SCHEMA_NAME, schema } } };
    case 'llamacpp':
      return { response_format: { type: 'json_object', schema }, json_schema: schema };
    case 'json_object':
      return { response_format: { type: 'json_object' } };
    case 'none':
      return {};
    default: {
      assertNever(dialect, 'structured-output dialect');
    }
  }
}

export type ConstraintVerdict =
  | {
      readonly honoured: true;
      /** Whether the answer satisfies the schema (for json_object a fact, not a requirement). */
      readonly schema_valid: boolean;
      /** How the schema was checked, for the preflight's lines. */
      readonly checked_with: string;
      readonly detail: string;
    }
  | { readonly honoured: false; readonly schema_valid: boolean; readonly checked_with: string; readonly reason: string };

/** How much of a bad answer a reason quotes. */
const QUOTED_CHARS = 200;

/**
 * Does `raw` (the probe answer of a server asked in `dialect`) show the constraint honoured?
 * - json_schema / llamacpp / anthropic_json / anthropic_tool: the whole text is one JSON value that satisfies `schema`;
 * - json_object: the whole text is one JSON object (the schema is reported, not required: the
 *   dialect does not promise it; the runtime checks every answer against the protocol anyway);
 * - none: nothing is promised, so nothing can be seen honoured (the preflight skips the probe).
 * The text must be bare JSON: a constrained decoder writes no prose and no ``` fence, so either
 * is evidence the constraint was not applied. The schema check is zod's reading of the very
 * JSON Schema that was sent (`z.fromJSONSchema`), plus the protocol's own zod schema when the
 * schema names a protocol (it holds refinements a JSON Schema cannot state).
 */
export function checkConstrainedAnswer(dialect: StructuredOutputDialect | AnthropicDialect, schema: Readonly<Record<string, unknown>>, raw: string): ConstraintVerdict {
  const quoted = JSON.stringify(raw.slice(0, QUOTED_CHARS));
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    const validity = { schema_valid: false, checked_with: 'JSON.parse' };
    if (dialect === 'none') return { honoured: false, ...validity, reason: 'dialect none asks for no constraint: there is nothing to see honoured' };
    return { honoured: false, ...validity, reason: `the server ignored the constraint (dialect ${dialect}): the answer is not JSON (${error instanceof Error ? error.message : String(error)}); it begins ${quoted}` };
  }
  const schemaCheck = checkAgainstSchema(schema, json);
  const validity = { schema_valid: schemaCheck.valid, checked_with: schemaCheck.checked_with };
  switch (dialect) {
    case 'none':
      return { honoured: false, ...validity, reason: 'dialect none asks for no constraint: there is nothing to see honoured' };
    case 'json_object':
      if (json === null || typeof json !== 'object' || Array.isArray(json)) {
        return { honoured: false, ...validity, reason: `the server ignored the constraint (dialect json_object): the answer is JSON but not an object; it begins ${quoted}` };
      }
      return { honoured: true, ...validity, detail: `the answer is a JSON object; ${schemaCheck.valid ? 'it also satisfies the schema' : `it does not satisfy the schema (${schemaCheck.issues}) — json_object does not promise the schema, the runtime checks every answer`}` };
    case 'json_schema':
    case 'vllm':
    case 'ollama':
    case 'llamacpp':
    // Anthropic's JSON outputs and strict tool both promise the schema (anthropic-request.ts).
    case 'anthropic_json':
    case 'anthropic_tool':
      if (schemaCheck.unreadable) {
        return { honoured: false, ...validity, reason: `the answer is JSON, but the schema could not be read to check it, so the constraint (dialect ${dialect}) cannot be confirmed` };
      }
      if (!schemaCheck.valid) {
        return { honoured: false, ...validity, reason: `the server ignored the constraint (dialect ${dialect}): the answer is JSON but does not satisfy the schema it was sent (${schemaCheck.issues}); it begins ${quoted}` };
      }
      return { honoured: true, ...validity, detail: `the answer satisfies the schema (checked with ${schemaCheck.checked_with})` };
    default: {
      assertNever(dialect, 'structured-output dialect');
    }
  }
}

interface SchemaCheck {
  readonly valid: boolean;
  /** Neither the JSON Schema nor a protocol schema could be read: nothing was checked. */
  readonly unreadable: boolean;
  readonly checked_with: string;
  readonly issues: string;
}

function issuesOf(error: z.ZodError): string {
  const shown = error.issues.slice(0, 4).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  return `${shown.join('; ')}${error.issues.length > 4 ? ` (+${error.issues.length - 4} more)` : ''}`;
}

function checkAgainstSchema(schema: Readonly<Record<string, unknown>>, json: unknown): SchemaCheck {
  const checks: string[] = [];
  let fromSchema: z.ZodType | null = null;
  try {
    fromSchema = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    // A construct zod cannot read: the protocol's schema (below) is then the only check, and the lines say which ran.
    fromSchema = null;
  }
  if (fromSchema !== null) {
    checks.push('the JSON Schema sent');
    const r = fromSchema.safeParse(json);
    if (!r.success) return { valid: false, unreadable: false, checked_with: checks.join(' and '), issues: issuesOf(r.error) };
  }
  const properties = (schema as { properties?: { protocol?: { const?: unknown } } }).properties;
  const protocol = ModelProtocol.safeParse(properties?.protocol?.const);
  if (protocol.success) {
    checks.push(`the ${protocol.data} zod schema`);
    const r = answerSchemaOf(protocol.data).safeParse(json);
    if (!r.success) return { valid: false, unreadable: false, checked_with: checks.join(' and '), issues: issuesOf(r.error) };
  }
  if (checks.length === 0) return { valid: false, unreadable: true, checked_with: 'nothing (the schema could not be read)', issues: 'the schema could not be read' };
  return { valid: true, unreadable: false, checked_with: checks.join(' and '), issues: '' };
}
