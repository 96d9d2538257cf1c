// Which model an instance thinks with (issue 5 item 3), as the controller records and resolves
// it: `model.json` in the run folder (no secret: an API key is named by its environment
// variable only), the manifest's `model` field, and the runtime's start configuration.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { ModelInfo } from './manifest.js';
import { RUN_FILES } from '../schema/run-files.js';
import { REFERENCE_POLICY_BUILD, REFERENCE_POLICY_MODEL_ID, type RuntimeModelConfig } from '../runtime/protocol.js';
import { recordedCallsFromEvents } from '../runtime/recorded-model-calls.js';
import { EventEnvelope } from '../schema/envelope.js';
import { openStoreReadOnly } from '../writer/store-reader.js';

export const MIN_MODEL_TIMEOUT_MS = 100;
export const MAX_MODEL_TIMEOUT_MS = 600_000;
export const DEFAULT_MODEL_TIMEOUT_MS = 60_000;

const Params = z.strictObject({ temperature: z.number().min(0).max(2).nullable(), top_p: z.number().gt(0).max(1).nullable(), seed: z.number().int().nullable(), max_tokens: z.number().int().min(1).nullable() });

export const ModelChoice = z.discriminatedUnion('adapter', [
  z.strictObject({ adapter: z.literal('reference') }),
  z.strictObject({ adapter: z.literal('openai'), base_url: z.url(), model_id: z.string().min(1).max(200), api_key_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/).nullable(), params: Params, json_mode: z.boolean(), timeout_ms: z.number().int().min(MIN_MODEL_TIMEOUT_MS).max(MAX_MODEL_TIMEOUT_MS) }),
  /** Serve the model calls recorded in another run's store; never calls out. */
  z.strictObject({ adapter: z.literal('replay'), from_run: z.string().min(1).max(4_096) }),
]);
export type ModelChoice = z.infer<typeof ModelChoice>;

export class ModelChoiceError extends Error {
  override readonly name = 'ModelChoiceError';
}

/** Reads the model calls of a finished run (its events.db, read-only): what a replay serves. */
function recordedRun(runDir: string): { modelId: string; calls: ReturnType<typeof recordedCallsFromEvents> } {
  const file = path.join(path.resolve(runDir), RUN_FILES.store);
  let rows: { envelope: string }[];
  try {
    const db = openStoreReadOnly(file);
    try {
      rows = db.prepare("select envelope from events where event_type like 'ModelOutputEvent.%' order by seq").all() as { envelope: string }[];
    } finally {
      db.close();
    }
  } catch (error) {
    throw new ModelChoiceError(`--model replay: cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const envelopes = rows.map((r) => EventEnvelope.parse(JSON.parse(r.envelope)));
  const first = envelopes[0];
  if (!first) throw new ModelChoiceError(`--model replay: ${file} holds no model calls to replay`);
  return { modelId: String(first.payload['model_id']), calls: recordedCallsFromEvents(envelopes) };
}

export function resolveModel(choice: ModelChoice): { runtime: RuntimeModelConfig; info: ModelInfo } {
  switch (choice.adapter) {
    case 'reference':
      return { runtime: { adapter: 'reference' }, info: { adapter: 'reference', model_id: REFERENCE_POLICY_MODEL_ID, build: REFERENCE_POLICY_BUILD, params: null, call_timeout_ms: null } };
    case 'openai': {
      const { adapter, ...rest } = choice;
      return { runtime: { adapter, ...rest }, info: { adapter, model_id: choice.model_id, build: null, params: choice.params, call_timeout_ms: choice.timeout_ms } };
    }
    case 'replay': {
      const recorded = recordedRun(choice.from_run);
      return {
        runtime: { adapter: 'replay', source_model_id: recorded.modelId, calls: recorded.calls },
        info: { adapter: 'replay', model_id: recorded.modelId, build: `replay of ${recorded.calls.length} recorded call(s)`, params: null, call_timeout_ms: null },
      };
    }
    default: {
      const unhandled: never = choice;
      throw new ModelChoiceError(`unknown model ${JSON.stringify(unhandled)}`);
    }
  }
}

export function readModelChoice(runDir: string): ModelChoice {
  return ModelChoice.parse(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.model), 'utf8')));
}
