// The JSON Schema a model is constrained by (issue 15 item 1), generated from the zod schema of
// the answer (runtime/model-protocol.ts): one source for the runtime check, the TypeScript type
// and the constraint. What grammar engines need is made here, once, for every dialect:
// - no `$schema` key;
// - no regex `pattern` next to a `format` (zod writes a lookahead-laden regex beside
//   `format: date-time`, which crashed llama.cpp's server; the format alone says it); simple
//   character-class patterns (ids) stay;
// - the seqs a /2 answer may cite become the enum of the seqs this wake showed
//   (`specialised`), so a constrained model cannot cite what it was not shown.
// The base schema (before specialisation) is hashed into the manifest with the dialect: the same
// for every group. The specialisation is a function of the wake's window alone.
import { z } from 'zod';
import { hashCanonical } from '../schema/hash.js';
import { EVENT_SEQ_META, MODEL_PROTOCOL_V1, answerSchemaOf, type ModelProtocol } from './model-protocol.js';

export type JsonSchema = Readonly<Record<string, unknown>>;

function sanitised(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(sanitised);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  const record = node as Record<string, unknown>;
  for (const [key, value] of Object.entries(record)) {
    if (key === '$schema') continue;
    if (key === 'pattern' && typeof record['format'] === 'string') continue;
    out[key] = sanitised(value);
  }
  return out;
}

function generate(protocol: ModelProtocol): JsonSchema {
  // io 'input' would not differ here (no transforms); unrepresentable refinements (the /1
  // INFERENCE rule) are left to the runtime check, which always runs.
  return sanitised(z.toJSONSchema(answerSchemaOf(protocol), { unrepresentable: 'any' })) as JsonSchema;
}

const BASE: Record<ModelProtocol, JsonSchema> = { 'ds-model-output/1': generate(MODEL_PROTOCOL_V1), 'ds-model-output/2': generate('ds-model-output/2') };

/** The base JSON Schema of an answer in `protocol` (what the manifest's hash covers). */
export function answerJsonSchema(protocol: ModelProtocol): JsonSchema {
  return BASE[protocol];
}

/** sha256 of the base schema's canonical JSON: the manifest pins it, identical for every group. */
export function answerSchemaHash(protocol: ModelProtocol): string {
  return hashCanonical(BASE[protocol]);
}

/**
 * The schema for one wake: every event-seq node replaced by the enum of the seqs shown (ascending,
 * deduplicated), the marker key dropped. With nothing shown the node stays an integer; the
 * runtime then fails any cited seq.
 */
export function specialisedAnswerSchema(protocol: ModelProtocol, shownSeqs: readonly number[]): JsonSchema {
  const seqs = [...new Set(shownSeqs)].sort((a, b) => a - b);
  const replace = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(replace);
    if (node === null || typeof node !== 'object') return node;
    const record = node as Record<string, unknown>;
    if (record[EVENT_SEQ_META] === true) {
      if (seqs.length > 0) return { type: 'integer', enum: seqs };
      const { [EVENT_SEQ_META]: _marker, ...rest } = record;
      return rest;
    }
    return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, replace(v)]));
  };
  return replace(BASE[protocol]) as JsonSchema;
}
