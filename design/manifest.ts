// The instance manifest (issue 4 item 5, DESIGN §4 and §8, spec §6.4): the reproducibility
// metadata of one experiment instance, signed into the run folder as manifest.dsse.json
// before the first wake; SystemEvent.StoreOpened carries sha256(JCS(manifest)).
//
// Pure: buildInstanceManifest reads no clock, file or environment; started_at comes in as
// data. Nothing here is wired into a process yet.
//
// Fairness (spec §5.2, §7.1): the ONLY group-dependent fields are `group_blind_id`,
// `capabilities` and `group_config_hash` (= sha256(JCS(capabilities))). Everything else of
// the A/B/C instances of one replicate — plan hashes, seed, pre-registration hash, model,
// versions, isolation — must be identical; manifestsDifferOnlyByGroup lists the differing
// leaf paths so a fairness check can assert exactly that. `started_at` is the one
// per-instance field that may also differ (wall clock at instance start, when the three
// instances are not started in the same millisecond); it is data, not configuration.
//
// experiment_id: one per batch (spec §6.4's "exp-20260720-001"), the SAME for A/B/C of a
// replicate, so it is not a group field and never reveals the group. An instance is named
// by (experiment_id, replicate, group_blind_id). Binding a store to its own instance does
// not need a per-instance id: StoreOpened carries this manifest's hash, which differs per
// instance because group_blind_id does.
//
// random_seed: spec §6.4 shows a number; the project's seeds are strings (controller/
// experiment-plan.ts Seed), so the manifest records the seed string the plan was built from.
import { PROMPT_LAYOUT } from '../runtime/prompt.js';
import { RETRIEVAL_RULE_VERSION } from '../runtime/retrieval-window.js';
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { ExperimentPlan } from './experiment-plan.js';
import { ModelForecast } from './model-forecast.js';
import { PreRegistration } from './prereg.js';
import { STATE_MACHINE_VERSION, SUBJECT_PROJECTOR_VERSION } from '../projector/versions.js';
import { Capabilities } from '../schema/capabilities.js';
import { AnswerSchemaDialect, SchemaSubsetRecord } from '../schema/model-call-policy.js';
import { ModelPrices } from '../schema/model-prices.js';
import { AnswerProtocol } from '../schema/events/model-output-events.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { verifyDsse } from '../schema/dsse.js';
import { EVENT_SCHEMA_VERSION } from '../schema/event-catalog.js';
import { Identifier, SemVer } from '../schema/event-definition.js';
import { hashCanonical, HashString } from '../schema/hash.js';
import { MANIFEST_PAYLOAD_TYPE } from '../schema/run-files.js';
import { WRITER_VERSION } from '../writer/event-store.js';
import type { Group } from './groups.js';

/** Version of the runtime as a whole; kept equal to package.json "version" (a test checks). */
export const RUNTIME_VERSION = '0.1.0';
// 1.2.0 (issue 31): forecast — what the preflight measured and predicted before hour 0 (design/model-forecast.ts).
// 1.1.0 (issue 15): model.structured_output, model.config_sha256, model.context_size; adapter local.
// 1.5.0 (issue 36): adapters anthropic and gemini; what a dialect's schema subset left out of the schema sent, and that schema's hash; the prices calls are costed at.
export const MANIFEST_VERSION = '1.5.0';

/** The fields that may (and must be the only ones to) differ between groups of one replicate. */
export const GROUP_FIELDS = ['group_blind_id', 'capabilities', 'group_config_hash'] as const;
/**
 * Per-instance data that may differ between groups without being configuration: the start time,
 * and the preflight's forecast — a measurement of the server at that moment, never shown to the
 * subject (a study shares one; a batch's tasks each measure their own).
 */
export const PER_INSTANCE_FIELDS = ['started_at', 'forecast'] as const;

export { Capabilities };

export const GROUP_CAPABILITIES = {
  A: { persistent_state: false, autonomous_replanning: false },
  B: { persistent_state: true, autonomous_replanning: false },
  C: { persistent_state: true, autonomous_replanning: true },
} as const satisfies Record<Group, Capabilities>;

/** A blind id must not be a bare group letter (spec §8.5): that would unblind on sight. */
export const GroupBlindId = Identifier.refine((id) => !/^[abc]$/i.test(id), { message: 'a blind id must not be a group letter' });

export const Isolation = z.discriminatedUnion('mode', [
  z.strictObject({ mode: z.literal('separate-uids') }),
  /** Not started as root (issue 4 item 7): still runs, and says why here and on screen. */
  z.strictObject({ mode: z.literal('same-uid'), reason: z.string().min(1).max(500) }),
]);
export type Isolation = z.infer<typeof Isolation>;

/**
 * `none`: the runtime calls no model — this build's observe-only runtime (the wake loop with
 * the model is issue 5), or an apparatus check that must not think. Never silently a model.
 */
export const ModelAdapter = z.enum(['reference', 'openai', 'anthropic', 'gemini', 'local', 'replay', 'none']);

/** null = not set: the server's default applies (and is not known to us). */
export const ModelParams = z.strictObject({
  temperature: z.number().min(0).max(2).nullable(),
  top_p: z.number().gt(0).max(1).nullable(),
  seed: z.number().int().nullable(),
  max_tokens: z.number().int().min(1).nullable(),
});

/**
 * How the answer is asked for (issue 15 item 1): the protocol, the dialect its JSON Schema is sent
 * in (`gbnf`: the local adapter's grammar generated from it; `none`: the prompt alone) and the
 * schema's hash — the same for every group of a study.
 */
export const StructuredOutputInfo = z.strictObject({
  protocol: AnswerProtocol,
  dialect: AnswerSchemaDialect,
  schema_sha256: HashString,
  /** 1.5.0 (issue 36): sha256 of the schema actually sent, in its base form (runtime/schema-subsets/schema-to-send.ts sentBaseSchema); null where the dialect sends none (json_object, none), and in manifests before. */
  sent_schema_sha256: HashString.nullable().default(null),
  /** 1.5.0 (issue 36): the pre-registered subset policy and the keywords it left out of the schema sent (the runtime still checks every answer against the full schema); null where no schema is sent, and in manifests before. */
  subset: SchemaSubsetRecord.nullable().default(null),
});
export type StructuredOutputInfo = z.infer<typeof StructuredOutputInfo>;

/** Adapters that sample and are waited for: they have parameters, a call timeout and a structured-output dialect of their own. */
const SAMPLING_ADAPTERS: ReadonlySet<string> = new Set(['openai', 'anthropic', 'gemini', 'local']);

export const ModelInfo = z.strictObject({
  adapter: ModelAdapter,
  model_id: z.string().min(1).max(200),
  /** The model build or server fingerprint, when the adapter can name one (local: the GGUF file's sha256). */
  build: z.string().min(1).max(200).nullable(),
  /** Sampling parameters of an `openai`, `anthropic` or `local` model; null for the others (reference and replay are deterministic, none calls nothing). */
  params: ModelParams.nullable(),
  /** How long one call may take before it is recorded as a timeout (openai, anthropic, local); null for models that are not waited for. */
  call_timeout_ms: z.number().int().min(1).nullable().default(null),
  /** Null only in manifests written before issue 15 (ds-model-output/1, no constraint). */
  structured_output: StructuredOutputInfo.nullable().default(null),
  /** The sha256 of the model configuration file's bytes when the model was configured by one (--model-config), copied byte for byte into the run folder as model-config.json. */
  config_sha256: HashString.nullable().default(null),
  /** The context in tokens as configured (local: explicit; openai, anthropic: the configured fallback or null — what a server reports is in preflight.jsonl). */
  context_size: z.number().int().min(1).nullable().default(null),
  /** 1.5.0 (issue 36): the prices its calls are costed at (schema/model-prices.ts); null: not priced, and in manifests before. */
  prices: ModelPrices.nullable().default(null),
})
  .refine((m) => SAMPLING_ADAPTERS.has(m.adapter) === (m.params !== null), { message: 'params are given exactly for an openai, anthropic, gemini or local model', path: ['params'] })
  .refine((m) => SAMPLING_ADAPTERS.has(m.adapter) === (m.call_timeout_ms !== null), { message: 'call_timeout_ms is given exactly for an openai, anthropic, gemini or local model', path: ['call_timeout_ms'] });
export type ModelInfo = z.infer<typeof ModelInfo>;

/**
 * How the runtime lays out the prompt (runtime/prompt.ts PROMPT_LAYOUT) and which retrieval rule
 * cuts its window (runtime/retrieval-window.ts RETRIEVAL_RULE_VERSION): the same for every group.
 */
export const PromptInfo = z.strictObject({ layout: z.string().min(1).max(64), retrieval_rule: SemVer });
export type PromptInfo = z.infer<typeof PromptInfo>;

/** The prompt this build shows. */
export const CURRENT_PROMPT: PromptInfo = { layout: PROMPT_LAYOUT, retrieval_rule: RETRIEVAL_RULE_VERSION };

/** What a manifest without `prompt` (before 1.4.0) was shown. */
const PROMPT_BEFORE_34: PromptInfo = { layout: 'ds-prompt/1', retrieval_rule: '1.0.0' };

/** Why an instance recorded with `recorded` must not go on under `current` (a resume), or null when they agree. */
export function promptDriftOf(recorded: PromptInfo | null, current: PromptInfo = CURRENT_PROMPT): string | null {
  const was = recorded ?? PROMPT_BEFORE_34;
  if (was.layout === current.layout && was.retrieval_rule === current.retrieval_rule) return null;
  return `the instance started with prompt ${was.layout} and retrieval rule ${was.retrieval_rule}, this build shows ${current.layout} and rule ${current.retrieval_rule}: its groups would be shown another prompt mid-run`;
}

export const ManifestVersions = z.strictObject({ runtime: SemVer, writer: SemVer, event_schema: SemVer, projector: SemVer, state_machine: SemVer });

export const InstanceManifest = z
  .strictObject({
    manifest_version: SemVer,
    // spec §6.4
    experiment_id: Identifier,
    group_blind_id: GroupBlindId,
    group_config_hash: HashString,
    wake_schedule_hash: HashString,
    retrieval_policy_hash: HashString,
    random_seed: z.string().min(1).max(128),
    intervention_script_version: SemVer,
    scoring_spec_version: SemVer,
    runtime_version: SemVer,
    event_schema_version: SemVer,
    projector_version: SemVer,
    state_machine_version: SemVer,
    model_id: z.string().min(1).max(200),
    started_at: z.iso.datetime(),
    // issue 4 item 5 / DESIGN §8
    replicate: z.number().int().min(1),
    prereg_sha256: HashString,
    scenario_hash: HashString,
    intervention_plan_hash: HashString,
    capabilities: Capabilities,
    isolation: Isolation,
    model: ModelInfo,
    versions: ManifestVersions,
    /** 1.2.0: the preflight's forecast (prompt sizes against the context, speed against the timeout, predicted duration, warnings); null for a model with nothing to measure (reference, replay) and in manifests before issue 31. */
    forecast: ModelForecast.nullable().default(null),
    /** 1.3.0: sha256 of the run folder's scenario.json (design/scenario.ts RunScenario, canonical JSON): every oracle input of the scenario, pinned; null in manifests before issue 32. */
    scenario_sha256: HashString.nullable().default(null),
    /** 1.4.0 (issue 34): the prompt layout and retrieval rule; null in manifests before (ds-prompt/1, rule 1.0.0). */
    prompt: PromptInfo.nullable().default(null),
  })
  .superRefine((m, ctx) => {
    if (m.group_config_hash !== hashCanonical(m.capabilities)) ctx.addIssue({ code: 'custom', path: ['group_config_hash'], message: 'group_config_hash must be sha256(JCS(capabilities))' });
    if (m.model_id !== m.model.model_id) ctx.addIssue({ code: 'custom', path: ['model_id'], message: 'model_id must equal model.model_id' });
    const pairs = [
      ['runtime_version', 'runtime'],
      ['event_schema_version', 'event_schema'],
      ['projector_version', 'projector'],
      ['state_machine_version', 'state_machine'],
    ] as const;
    for (const [flat, nested] of pairs) {
      if (m[flat] !== m.versions[nested]) ctx.addIssue({ code: 'custom', path: [flat], message: `${flat} must equal versions.${nested}` });
    }
  });
export type InstanceManifest = z.infer<typeof InstanceManifest>;

export interface InstanceManifestInput {
  readonly experimentId: string;
  readonly groupBlindId: string;
  readonly capabilities: Capabilities;
  /** 1-based index of the replicate (batch) within the experiment. */
  readonly replicate: number;
  readonly plan: ExperimentPlan;
  readonly prereg: PreRegistration;
  /** The retrieval policy the runtime is given; must be the pre-registered one. */
  readonly retrievalPolicy: PreRegistration['retrieval_policy'];
  readonly model: z.input<typeof ModelInfo>;
  readonly isolation: Isolation;
  /** ISO-8601 UTC wall clock at instance start. */
  readonly startedAt: string;
  /** The preflight's forecast; null (or absent) when the model has nothing to measure. */
  readonly forecast?: ModelForecast | null;
  /** sha256 of the run folder's scenario.json; null (or absent) for a manifest that pins none. */
  readonly scenarioSha256?: HashString | null;
}

export class ManifestError extends TypedErrorOf('manifest', EXIT_CODES.failed) {
  override readonly name = 'ManifestError';
}

/** sha256(JCS(pre-registration)): the hash the lock signs (design/prereg.ts). */
export function preregSha256(prereg: PreRegistration): HashString {
  return hashCanonical(PreRegistration.parse(prereg));
}

export function buildInstanceManifest(input: InstanceManifestInput): InstanceManifest {
  const prereg = PreRegistration.parse(input.prereg);
  const plan = ExperimentPlan.parse(input.plan);
  const capabilities = Capabilities.parse(input.capabilities);
  if (canonicalJson(input.retrievalPolicy) !== canonicalJson(prereg.retrieval_policy)) {
    throw new ManifestError('the retrieval policy differs from the pre-registered one (prereg.retrieval_policy); a run uses the pre-registered policy only');
  }
  const model = ModelInfo.parse(input.model);
  const versions = { runtime: RUNTIME_VERSION, writer: WRITER_VERSION, event_schema: EVENT_SCHEMA_VERSION, projector: SUBJECT_PROJECTOR_VERSION, state_machine: STATE_MACHINE_VERSION };
  return InstanceManifest.parse({
    manifest_version: MANIFEST_VERSION,
    experiment_id: input.experimentId,
    group_blind_id: input.groupBlindId,
    group_config_hash: hashCanonical(capabilities),
    wake_schedule_hash: plan.schedule_hash,
    retrieval_policy_hash: hashCanonical(prereg.retrieval_policy),
    random_seed: plan.seed,
    intervention_script_version: plan.intervention_script_version,
    scoring_spec_version: prereg.scoring.scoring_spec_version,
    runtime_version: versions.runtime,
    event_schema_version: versions.event_schema,
    projector_version: versions.projector,
    state_machine_version: versions.state_machine,
    model_id: model.model_id,
    started_at: input.startedAt,
    replicate: input.replicate,
    prereg_sha256: preregSha256(prereg),
    scenario_hash: plan.scenario_hash,
    intervention_plan_hash: plan.intervention_plan_hash,
    capabilities,
    isolation: input.isolation,
    model,
    versions,
    forecast: input.forecast ?? null,
    scenario_sha256: input.scenarioSha256 ?? null,
    prompt: CURRENT_PROMPT,
  });
}

/** The hash StoreOpened carries; equal to what writeSignedManifest returns. */
export function manifestSha256(manifest: InstanceManifest): HashString {
  return hashCanonical(manifest);
}

function leafDifferences(a: unknown, b: unknown, at: string, out: string[]): void {
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObj(a) && isObj(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) leafDifferences(a[key], b[key], at === '' ? key : `${at}.${key}`, out);
    return;
  }
  if (a === undefined || b === undefined ? a !== b : canonicalJson(a) !== canonicalJson(b)) out.push(at === '' ? '(root)' : at);
}

/**
 * The dotted leaf paths at which two manifests differ, sorted. For the A/B/C manifests of
 * one replicate every path must start with a GROUP_FIELDS key (or be a PER_INSTANCE_FIELDS
 * key); anything else is a group-dependent difference that voids the batch.
 */
export function manifestsDifferOnlyByGroup(a: InstanceManifest, b: InstanceManifest): string[] {
  const out: string[] = [];
  leafDifferences(a, b, '', out);
  return out.sort();
}

/** The differing paths that are neither group fields nor per-instance data: must be empty. */
export function nonGroupDifferences(a: InstanceManifest, b: InstanceManifest): string[] {
  const allowed = new Set<string>([...GROUP_FIELDS, ...PER_INSTANCE_FIELDS]);
  return manifestsDifferOnlyByGroup(a, b).filter((p) => !allowed.has(p.split('.')[0]!));
}

export type SignedManifestCheck =
  | { readonly ok: true; readonly manifest: InstanceManifest; readonly sha256: HashString }
  | { readonly ok: false; readonly reason: string };

/** Checks a manifest.dsse.json envelope (already JSON-parsed) against the controller key and the schema. */
export function checkSignedManifest(envelope: unknown, publicKey: Uint8Array): SignedManifestCheck {
  const verified = verifyDsse(envelope, MANIFEST_PAYLOAD_TYPE, publicKey);
  if (!verified.ok) return { ok: false, reason: verified.reason };
  const parsed = InstanceManifest.safeParse(verified.body);
  if (!parsed.success) return { ok: false, reason: `the signed body is not an instance manifest: ${z.prettifyError(parsed.error)}` };
  return { ok: true, manifest: parsed.data, sha256: hashCanonical(verified.body) };
}
