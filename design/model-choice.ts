// Which model an instance thinks with (issue 5 item 3, issue 15), as the controller records and
// resolves it: `model.json` in the run folder (no secret: an API key is named by its environment
// variable only), the manifest's `model` field, and the runtime's start configuration.
import { createHash } from 'node:crypto';
import { closeSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { checkSignedManifest, type ModelInfo } from './manifest.js';
import { ExperimentPlan } from './experiment-plan.js';
import type { Capabilities } from '../schema/capabilities.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { RUN_FILES } from '../schema/run-files.js';
import { hashCanonical, HashString } from '../schema/hash.js';
import { ANTHROPIC_DIALECTS, GEMINI_DIALECTS, STRUCTURED_OUTPUT_DIALECTS, type AnswerSchemaDialect, type SchemaSubsetPolicy, type TransportRetryPolicy } from '../schema/model-call-policy.js';
import { subsetBeforeStart, type SubsetChoice } from '../runtime/schema-subsets/schema-to-send.js';
import { answerSchemaHash } from '../runtime/answer-schema.js';
import { MODEL_PROTOCOL, type ModelProtocol } from '../runtime/model-protocol.js';
import { AnthropicModelConfig, GeminiModelConfig, LocalModelConfig, OpenAiModelConfig, REFERENCE_POLICY_BUILD, REFERENCE_POLICY_MODEL_ID, type RuntimeModelConfig } from '../runtime/protocol.js';
import { recordedCallsFromEvents, recordedProtocolOf } from '../runtime/recorded-model-calls.js';
import type { ModelAdapterName } from '../runtime/model-adapter.js';
import { adapterOf } from '../runtime/model-adapters/adapter-list.js';
import { EventEnvelope } from '../schema/envelope.js';
import { eventIs } from '../schema/typed-event.js';
import { openStoreReadOnly } from '../writer/store-reader.js';


/** Where a model configured by a file came from: its sha256 (of the bytes), pinned in the manifest; the runner copies the file and checks it still hashes so. */
const ConfigProvenance = { config_file: z.string().min(1).max(4_096).nullable(), config_sha256: HashString.nullable() };

/** The most parallel slots a model configuration may declare (a study's blocks are three instances). */
export const MAX_PARALLEL_SLOTS = 64;
/**
 * How many model calls the model's server takes at once (llama-server --parallel, vLLM's
 * concurrency): a study's block lets that many of its members' calls run together (issue 31 item
 * 1, controller/lockstep-block.ts). Absent: 1, one call at a time. A scheduling fact of the
 * study, not the instance's model: it is not in the manifest's model info (a model configuration
 * file that declares it is pinned there by its hash).
 */
export const ParallelSlots = z.number().int().min(1).max(MAX_PARALLEL_SLOTS);
const Scheduling = { parallel_slots: ParallelSlots.optional() };

export const ModelChoice = z.discriminatedUnion('adapter', [
  /** The scripted reference policy; named by flags (no provenance) or by a model configuration file (issue 35: a dry run from a file, pinned like any). */
  z.strictObject({ adapter: z.literal('reference'), config_file: ConfigProvenance.config_file.optional(), config_sha256: ConfigProvenance.config_sha256.optional() }),
  OpenAiModelConfig.extend({ ...ConfigProvenance, ...Scheduling }),
  AnthropicModelConfig.extend({ ...ConfigProvenance, ...Scheduling }),
  /** Google's Gemini API, natively (issue 36); its key named by api_key_env, never written. */
  GeminiModelConfig.extend({ ...ConfigProvenance, ...Scheduling }),
  LocalModelConfig.extend({ ...ConfigProvenance, ...Scheduling }),
  /** Serve the model calls recorded in another run's store; never calls out. */
  z.strictObject({ adapter: z.literal('replay'), from_run: z.string().min(1).max(4_096) }),
]);
export type ModelChoice = z.infer<typeof ModelChoice>;

/**
 * A choice for every adapter of the list and no other (runtime/model-adapters/adapter-list.ts),
 * and every one a name the manifest's model may hold (design/manifest.ts ModelAdapter, a stored
 * format: a new name there is a new manifest version): both held by the compiler.
 */
export type ChoicesCoverAdapters = Holds<[ModelChoice['adapter']] extends [ModelAdapterName] ? ([ModelAdapterName] extends [ModelChoice['adapter']] ? true : false) : false>;
export type AdaptersInManifest = Holds<[ModelAdapterName] extends [ModelInfo['adapter']] ? true : false>;
type Holds<T extends true> = T;

export class ModelChoiceError extends TypedErrorOf('model_choice', EXIT_CODES.failed) {
  override readonly name = 'ModelChoiceError';
}

/** Reads the model calls of a finished run (its events.db, read-only): what a replay serves, and the protocol they were made in. */
function recordedRun(runDir: string): { modelId: string; calls: ReturnType<typeof recordedCallsFromEvents>; protocol: ModelProtocol } {
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
  const first = envelopes.find((e) => !eventIs(e, 'ModelOutputEvent.ModelCallAttemptFailed'));
  if (!first) throw new ModelChoiceError(`--model replay: ${file} holds no model calls to replay`);
  const protocol = recordedProtocolOf(envelopes);
  if (protocol === null) throw new ModelChoiceError(`--model replay: ${file} holds no model calls to replay`);
  return { modelId: String(first.payload['model_id']), calls: recordedCallsFromEvents(envelopes), protocol };
}

/**
 * What a replay must share with its source run to reproduce it, read from the source's signed
 * manifest and its plan (checked against the manifest's hashes): event ids derive from the
 * subject id, `subject-<experiment id>-r<replicate>`; the wakes, their seqs and what each window
 * shows from the seed, the start time, the pre-registration and the group's capabilities. A
 * replay under other values serves the same recorded answers into another history, where the
 * seqs and ids they cite name other events (its FACT claims are refused, issue 16 item 5).
 */
export interface ReplaySource {
  readonly runDir: string;
  readonly experimentId: string;
  readonly replicate: number;
  readonly capabilities: Capabilities;
  readonly seed: string;
  readonly startAt: string;
  readonly preregSha256: HashString;
  /** The protocol its calls were made in: /1 answers cite event ids, /2 answers cite seqs. */
  readonly protocol: ModelProtocol;
}

/** Reads a --replay-from run's settings (its own controller.pub verifies its manifest); ModelChoiceError when they cannot be read or do not verify. */
export function readReplaySource(runDir: string): ReplaySource {
  const dir = path.resolve(runDir);
  const read = (file: string): string => {
    try {
      return readFileSync(path.join(dir, file), 'utf8');
    } catch (error) {
      throw new ModelChoiceError(`--replay-from ${dir}: cannot read its ${file} (${error instanceof Error ? error.message : String(error)}): give the folder of a run made by npm run experiment; nothing was written`);
    }
  };
  const parsedJson = (file: string): unknown => {
    try {
      return JSON.parse(read(file));
    } catch (error) {
      if (error instanceof ModelChoiceError) throw error;
      throw new ModelChoiceError(`--replay-from ${dir}: its ${file} is not JSON; nothing was written`);
    }
  };
  let publicKey: Uint8Array;
  try {
    publicKey = parsePublicKeyHex(read(RUN_FILES.publicKey));
  } catch (error) {
    if (error instanceof ModelChoiceError) throw error;
    throw new ModelChoiceError(`--replay-from ${dir}: its ${RUN_FILES.publicKey} is not a public key (${error instanceof Error ? error.message : String(error)}); nothing was written`);
  }
  const signed = checkSignedManifest(parsedJson(RUN_FILES.manifest), publicKey);
  if (!signed.ok) throw new ModelChoiceError(`--replay-from ${dir}: its ${RUN_FILES.manifest} does not verify (${signed.reason}); a replay takes its settings only from a signed manifest; nothing was written`);
  const plan = ExperimentPlan.safeParse(parsedJson(RUN_FILES.plan));
  const manifest = signed.manifest;
  if (!plan.success || hashCanonical(plan.data.schedule) !== manifest.wake_schedule_hash || plan.data.seed !== manifest.random_seed) {
    throw new ModelChoiceError(`--replay-from ${dir}: its ${RUN_FILES.plan} is not the plan its signed manifest names (schedule hash or seed differ, or it does not parse); nothing was written`);
  }
  return {
    runDir: dir,
    experimentId: manifest.experiment_id,
    replicate: manifest.replicate,
    capabilities: manifest.capabilities,
    seed: manifest.random_seed,
    startAt: plan.data.schedule.start_at,
    preregSha256: manifest.prereg_sha256,
    protocol: recordedRun(dir).protocol,
  };
}

/** The GGUF file's sha256, read in 1 MiB pieces (a model of many GiB is never held in memory): the local model's build. */
export function ggufBuildOf(file: string): string {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    throw new ModelChoiceError(`--model local: cannot read the model file ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return `gguf-sha256:${hash.digest('hex')}`;
}

/**
 * How many members of a block may be at the model at once: the declared parallel slots of a
 * model its members share (a server or a local model, runtime/model-adapter.ts callsModel;
 * default 1); an adapter that calls no model (the reference policy, a replay) shares nothing, so
 * every member may go at once (still in lockstep).
 */
export function blockSlotsOf(choice: ModelChoice, members: number): number {
  if (!adapterOf(choice.adapter).callsModel) return members;
  return Math.min(members, ('parallel_slots' in choice ? choice.parallel_slots : undefined) ?? 1);
}

export interface ResolvedModel {
  readonly runtime: RuntimeModelConfig;
  readonly info: ModelInfo;
  /** The protocol the runtime asks and checks answers in. */
  readonly protocol: ModelProtocol;
  /** What the schema subset check decided, for the screen and preflight.jsonl. */
  readonly subsetLines: readonly string[];
  /** The dialect and policy every schema the run sends goes through (runtime/schema-subsets/schema-to-send.ts). */
  readonly subsetChoice: SubsetChoice;
}

/** The dialects of each adapter that sends a schema over HTTP: one adapter takes every dialect of its family. */
const DIALECT_FAMILIES: readonly (readonly AnswerSchemaDialect[])[] = [STRUCTURED_OUTPUT_DIALECTS, ANTHROPIC_DIALECTS, GEMINI_DIALECTS];

/** The dialects a choice's model could be asked in: what a subset refusal may advise instead. */
function alternativeDialects(choice: ModelChoice): readonly AnswerSchemaDialect[] {
  // A choice may switch to another dialect of its own family: the adapter that takes one takes them all.
  if (!('dialect' in choice)) return [];
  return DIALECT_FAMILIES.find((family) => (family as readonly string[]).includes(choice.dialect)) ?? [];
}

/**
 * The runtime's configuration and the manifest's record of a choice. `retry` is the
 * pre-registration's transport policy: what an openai or anthropic call may retry, the same for every group;
 * `subsetPolicy` its schema_subset: the answer schema is held to the dialect's subset here,
 * before anything is written (runtime/schema-subsets/schema-to-send.ts; SchemaSubsetError).
 */
export function resolveModel(choice: ModelChoice, retry: TransportRetryPolicy, subsetPolicy: SchemaSubsetPolicy): ResolvedModel {
  let subsetLines: readonly string[] = [];
  let subsetChoice: SubsetChoice = { dialect: 'none', policy: subsetPolicy };
  // `alternatives`: the dialects the same model could be asked in, which a subset refusal may advise instead.
  const structured = (dialect: AnswerSchemaDialect, protocol: ModelProtocol = MODEL_PROTOCOL, alternatives: readonly AnswerSchemaDialect[] = []) => {
    subsetChoice = { dialect, policy: subsetPolicy };
    const decision = subsetBeforeStart(subsetChoice, protocol, alternatives);
    subsetLines = decision.lines;
    return { protocol, dialect, schema_sha256: answerSchemaHash(protocol), sent_schema_sha256: decision.sent_schema_sha256, subset: decision.subset };
  };
  switch (choice.adapter) {
    case 'reference':
      return {
        runtime: { adapter: 'reference' },
        info: { adapter: 'reference', model_id: REFERENCE_POLICY_MODEL_ID, build: REFERENCE_POLICY_BUILD, params: null, call_timeout_ms: null, structured_output: structured('none'), config_sha256: choice.config_sha256 ?? null, context_size: null, prices: null },
        protocol: MODEL_PROTOCOL,
        subsetLines,
        subsetChoice,
      };
    // The adapters that call a server over HTTP: the same record, each under its own name and dialect.
    case 'openai':
    case 'anthropic':
    case 'gemini': {
      const { config_file: _file, config_sha256, parallel_slots: _slots, ...runtime } = choice;
      return {
        runtime: { ...runtime, retry },
        info: { adapter: choice.adapter, model_id: choice.model_id, build: null, params: choice.params, call_timeout_ms: choice.timeout_ms, structured_output: structured(choice.dialect, MODEL_PROTOCOL, alternativeDialects(choice)), config_sha256, context_size: choice.context_size, prices: choice.prices ?? null },
        protocol: MODEL_PROTOCOL,
        subsetLines,
        subsetChoice,
      };
    }
    case 'local': {
      const { config_file: _file, config_sha256, parallel_slots: _slots, ...runtime } = choice;
      return {
        runtime,
        info: { adapter: 'local', model_id: choice.model_id, build: ggufBuildOf(choice.model_file), params: choice.params, call_timeout_ms: choice.timeout_ms, structured_output: structured('gbnf'), config_sha256, context_size: choice.context_size, prices: choice.prices ?? null },
        protocol: MODEL_PROTOCOL,
        subsetLines,
        subsetChoice,
      };
    }
    case 'replay': {
      const recorded = recordedRun(choice.from_run);
      return {
        runtime: { adapter: 'replay', source_model_id: recorded.modelId, calls: recorded.calls },
        info: { adapter: 'replay', model_id: recorded.modelId, build: `replay of ${recorded.calls.length} recorded call(s)`, params: null, call_timeout_ms: null, structured_output: structured('none', recorded.protocol), config_sha256: null, context_size: null, prices: null },
        protocol: recorded.protocol,
        subsetLines,
        subsetChoice,
      };
    }
    default: {
      const unhandled: never = choice;
      throw new ModelChoiceError(`unknown model ${JSON.stringify(unhandled)}`);
    }
  }
}

/**
 * The bytes of the model configuration file a choice came from (null for a choice made by flags),
 * checked to still hash to the sha256 the choice pinned when it was read (a study reads it once
 * and starts many instances: a file edited in between is refused, not half-used). Called before
 * a run folder is written, so that the refusal leaves nothing behind.
 */
export function modelConfigBytes(choice: ModelChoice): Buffer | null {
  if (!('config_file' in choice) || choice.config_file === null || choice.config_file === undefined) return null;
  let bytes: Buffer;
  try {
    bytes = readFileSync(choice.config_file);
  } catch (error) {
    throw new ModelChoiceError(`cannot read the model configuration ${choice.config_file} again to copy it into the run folder: ${error instanceof Error ? error.message : String(error)}`);
  }
  const sha256 = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  if (sha256 !== choice.config_sha256) throw new ModelChoiceError(`${choice.config_file} changed after it was read (sha256 ${sha256}, read as ${String(choice.config_sha256)}): refusing to start an instance on another configuration than its study's`);
  return bytes;
}

/** Copies the configuration file into the run folder byte for byte (the bytes modelConfigBytes checked; by default, checked now). */
export function copyModelConfig(choice: ModelChoice, runDir: string, bytes: Buffer | null = modelConfigBytes(choice)): void {
  if (bytes !== null) writeFileSync(path.join(runDir, RUN_FILES.modelConfig), bytes, { flag: 'wx' });
}

export function readModelChoice(runDir: string): ModelChoice {
  return ModelChoice.parse(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.model), 'utf8')));
}
