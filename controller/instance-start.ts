// The two ways into an instance (issue 4; DESIGN §2, §8), everything they check and write before
// the writer starts:
//   new:    pre-registration lock checked → plan built from the seed → isolation decided → run
//           folder (controller.pub, plan.json, prereg copy + lock, model.json, manifest.dsse.json
//           signed BEFORE the writer starts, so StoreOpened can carry its hash) → workspace;
//   resume: the folder's key and signed manifest; heads.jsonl (every line a signed head, none
//           torn) and the store read-only against that manifest (resume-checks.ts: StoreOpened
//           names it, the WAL is the store's own); plan, prereg and model checked against each
//           other and against this code's versions (no configuration drift after start), the
//           isolation as the instance started.
// Either refusal leaves the folder as it was. Then instance.ts runs it.
import { schemaSubsetPolicyOf } from '../schema/model-call-policy.js';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildExperimentPlan, ExperimentPlan } from '../design/experiment-plan.js';
import { buildInstanceManifest, checkSignedManifest, GROUP_CAPABILITIES, promptDriftOf, RUNTIME_VERSION, type InstanceManifest, type ModelInfo } from '../design/manifest.js';
import { copyModelConfig, ModelChoice, modelConfigBytes, readModelChoice, resolveModel } from '../design/model-choice.js';
import { requirePricesForCap, type CostCapRaise } from '../design/cost-cap.js';
import { checkCostCapBeforeResume } from './cost-cap-resume.js';
import { lockFileOf, MODEL_CALLS_MISSING_MESSAGE, modelCallRulesOf, PreRegistration, readLockedPrereg, type ModelCallRules } from '../design/prereg.js';
import { SchemaSubsetError } from '../runtime/schema-subsets/schema-to-send.js';
import { scenarioOfRun, type RunScenarioInput } from '../design/run-scenario.js';
import { loadPreregisteredScenario } from '../design/scenario-folder.js';
import { runScenarioText, ScenarioError, type Scenario } from '../design/scenario.js';
import { STATE_MACHINE_VERSION, SUBJECT_PROJECTOR_VERSION } from '../projector/versions.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { keyIdOf, parsePublicKeyHex, toHex } from '../schema/ed25519-keys.js';
import { EVENT_SCHEMA_VERSION } from '../schema/event-catalog.js';
import { hashCanonical, hashText } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { WRITER_VERSION } from '../writer/event-store.js';
import { Instance } from './instance.js';
import { InstanceError } from './instance-error.js';
import type { CommonOptions, InstanceResult, NewInstanceOptions, ResumeOptions } from './instance-options.js';
import { IsolationError, planIsolation, prepareRunDir, type IsolationPlan } from './isolation.js';
import { copyPublicKeyInto, loadOrCreateControllerKey } from './key-store.js';
import { checkHeadsBeforeResume, checkStoreBeforeResume } from './resume-checks.js';
import { writeSignedManifest } from './run-signatures.js';
import { materializeWorkspace, WORKSPACE_FOLDER } from './workspace.js';
import { checkModelBeforeStart, type ModelCheck } from './model-check.js';


function resumedScenario(input: RunScenarioInput): Scenario {
  try {
    return scenarioOfRun(input);
  } catch (error) {
    if (error instanceof ScenarioError) throw new InstanceError('resume', `refusing to resume: ${error.message}`);
    throw error;
  }
}

/** Isolation, downgraded to same-uid (and said so) when the writer's uid cannot use the run folder. */
function isolationFor(runDir: string, options: CommonOptions): IsolationPlan {
  const planned = planIsolation(options.isolation ?? {});
  try {
    prepareRunDir(runDir, planned);
    return planned;
  } catch (error) {
    if (!(error instanceof IsolationError) || error.problem !== 'run-dir-unreachable') throw error;
    planned.cleanup();
    const fallback = planIsolation({ ...options.isolation, forceSameUid: error.message });
    prepareRunDir(runDir, fallback);
    return fallback;
  }
}

export async function runNewInstance(options: NewInstanceOptions): Promise<InstanceResult> {
  const runDir = path.resolve(options.runDir);
  if (existsSync(runDir) && readdirSync(runDir).length > 0) throw new InstanceError('run_dir', `${runDir} exists and is not empty: a new instance needs a new folder (or continue that one with --resume ${runDir})`);
  const key = loadOrCreateControllerKey(options.keyDir, { runDirs: [runDir] });
  const locked = readLockedPrereg(options.preregFile, key.keys.publicKey);
  if (!locked.ok) throw new InstanceError('prereg', `refusing to run: ${locked.check.failures.map((f) => f.message).join('; ')}`);
  const { prereg } = locked;
  const scenario = loadPreregisteredScenario(options, prereg.scenario.id);
  const plan = buildExperimentPlan({ prereg, scenario, seed: options.seed, startAt: options.startAt });
  const rules = modelCallRulesOf(prereg);
  if (rules === null) throw new InstanceError('prereg', `refusing to run: ${MODEL_CALLS_MISSING_MESSAGE}`);
  const choice = ModelChoice.parse(options.model);
  // The answer schema held to its dialect's subset (issue 36): refused here, nothing is written.
  const model = resolveModel(choice, rules.transport_retry, schemaSubsetPolicyOf(rules));
  for (const line of model.subsetLines) options.log(line);
  requirePricesForCap(rules.cost_cap_usd_per_instance, model.info.prices, 'run');
  // Checked before anything is written: a configuration file changed since it was read refuses the start with the folder untouched.
  const modelConfig = modelConfigBytes(choice);
  // The model against the plan (issue 31 item 3): refused here, nothing is written.
  const modelCheck = options.modelCheck !== undefined ? options.modelCheck : await checkModelBeforeStart({ plan, scenario, prereg, model: model.runtime, protocol: model.protocol, schemaSubset: model.subsetChoice, log: options.log });

  mkdirSync(runDir, { recursive: true });
  const isolation = isolationFor(runDir, options);
  options.log(isolation.summary);
  copyPublicKeyInto(runDir, key.keys);
  writeFileSync(path.join(runDir, RUN_FILES.plan), `${JSON.stringify(plan, null, 2)}\n`, { flag: 'wx' });
  writeFileSync(path.join(runDir, RUN_FILES.prereg), `${JSON.stringify(prereg, null, 2)}\n`, { flag: 'wx' });
  // Every scenario input of the oracle, in the folder and pinned by the manifest (issue 32 item 2).
  const scenarioBytes = runScenarioText(scenario);
  writeFileSync(path.join(runDir, RUN_FILES.scenario), scenarioBytes, { flag: 'wx' });
  copyFileSync(lockFileOf(options.preregFile), path.join(runDir, RUN_FILES.preregLock));
  writeFileSync(path.join(runDir, RUN_FILES.model), `${JSON.stringify(options.model, null, 2)}\n`, { flag: 'wx' });
  copyModelConfig(choice, runDir, modelConfig);
  if (modelCheck !== null) recordModelCheck(runDir, model.info, modelCheck);
  recordSubsetCheck(runDir, model.info, model.subsetLines);
  const manifest = buildInstanceManifest({
    experimentId: options.experimentId,
    groupBlindId: options.groupBlindId,
    capabilities: GROUP_CAPABILITIES[options.group],
    replicate: options.replicate,
    plan,
    prereg,
    retrievalPolicy: prereg.retrieval_policy,
    model: model.info,
    isolation: isolation.manifest,
    startedAt: options.startedAt,
    forecast: modelCheck?.forecast ?? null,
    scenarioSha256: hashText(scenarioBytes),
  });
  // Signed before the writer exists: StoreOpened, seq 1, carries this hash.
  const manifestHash = writeSignedManifest(runDir, manifest, key.keys);
  // The subject's files are the runtime's (its uid under separate-uids).
  materializeWorkspace(path.join(runDir, WORKSPACE_FOLDER), scenario, isolation.runtime);
  options.log(`manifest signed (${manifestHash.slice(0, 23)}…), key ${key.keyId.slice(0, 16)}…${key.created ? ' (new key)' : ''}; plan: ${plan.schedule.wakes.length} wakes, ${plan.interventions.length} interventions, schedule ${plan.schedule_hash.slice(0, 23)}…`);

  const instance = new Instance({ options, runDir, key, plan, manifest, manifestHash, prereg, isolation, scenario, model: model.runtime, protocol: model.protocol, rules });
  return instance.run('create');
}

/** The schema subset check (issue 36) as a line of preflight.jsonl: the dialect, the policy, what was left out of the schema sent and its hash. */
function recordSubsetCheck(runDir: string, info: ModelInfo, lines: readonly string[]): void {
  const structured = info.structured_output;
  if (structured === null) return;
  const line = { checked_at: new Date().toISOString(), stage: 'before hour 0, schema subset (controller)', adapter: info.adapter, model_id: info.model_id, ok: true, dialect: structured.dialect, subset: structured.subset, schema_sha256: structured.schema_sha256, sent_schema_sha256: structured.sent_schema_sha256, lines };
  appendFileSync(path.join(runDir, RUN_FILES.preflight), `${JSON.stringify(line)}\n`);
}

/** The check before hour 0 as the first line of preflight.jsonl (each runtime start appends its own after it). */
function recordModelCheck(runDir: string, info: ModelInfo, check: ModelCheck): void {
  const line = { checked_at: new Date().toISOString(), stage: 'before hour 0, with the plan (controller)', adapter: info.adapter, model_id: info.model_id, ok: true, facts: check.facts, forecast: check.forecast, lines: check.lines.slice(0, 128) };
  appendFileSync(path.join(runDir, RUN_FILES.preflight), `${JSON.stringify(line)}\n`);
}

export async function resumeInstance(options: ResumeOptions): Promise<InstanceResult> {
  const runDir = path.resolve(options.runDir);
  const need = (file: string): string => {
    const full = path.join(runDir, file);
    if (!existsSync(full)) throw new InstanceError('resume', `${full} is missing: ${runDir} is not a run folder this controller can resume`);
    return full;
  };
  const key = loadOrCreateControllerKey(options.keyDir, { runDirs: [runDir], create: false });
  const runKey = parsePublicKeyHex(readFileSync(need(RUN_FILES.publicKey), 'utf8'));
  if (toHex(runKey) !== toHex(key.keys.publicKey)) throw new InstanceError('resume', `${runDir} was signed by key ${keyIdOf(runKey).slice(0, 16)}…, not this controller's ${key.keyId.slice(0, 16)}…; pass the --key-dir of the key that started it`);
  const signed = checkSignedManifest(JSON.parse(readFileSync(need(RUN_FILES.manifest), 'utf8')), key.keys.publicKey);
  if (!signed.ok) throw new InstanceError('resume', `${RUN_FILES.manifest} does not verify: ${signed.reason}`);
  const manifest = signed.manifest;
  // The files a resume appends to or trusts, before anything else is read from them (issue 20 item 5): heads.jsonl, and the store against this manifest.
  checkHeadsBeforeResume(runDir, key.keys.publicKey);
  const storeWarnings = checkStoreBeforeResume(runDir, need(RUN_FILES.store), key.keys.publicKey, { sha256: signed.sha256, experiment_id: manifest.experiment_id });
  const plan = ExperimentPlan.parse(JSON.parse(readFileSync(need(RUN_FILES.plan), 'utf8')));
  if (hashCanonical(plan.schedule) !== manifest.wake_schedule_hash || hashCanonical(plan.interventions) !== manifest.intervention_plan_hash) {
    throw new InstanceError('resume', `${RUN_FILES.plan} does not hash to the schedule/intervention hashes of the signed manifest: it was changed after the start`);
  }
  const prereg = PreRegistration.parse(JSON.parse(readFileSync(need(RUN_FILES.prereg), 'utf8')));
  if (hashCanonical(prereg) !== manifest.prereg_sha256) throw new InstanceError('resume', `${RUN_FILES.prereg} does not hash to the manifest's prereg_sha256: it was changed after the start`);
  // Configuration drift after start is a hard failure (spec §8.4): never resume under other code.
  const versions = { runtime: RUNTIME_VERSION, writer: WRITER_VERSION, event_schema: EVENT_SCHEMA_VERSION, projector: SUBJECT_PROJECTOR_VERSION, state_machine: STATE_MACHINE_VERSION };
  const drift = Object.entries(versions).filter(([name, version]) => manifest.versions[name as keyof typeof versions] !== version);
  if (drift.length > 0) throw new InstanceError('resume', `refusing to resume under other versions than the instance started with (${drift.map(([n, v]) => `${n} ${manifest.versions[n as keyof typeof versions]} → ${v}`).join(', ')}): that would be configuration drift after start`);
  // The prompt its groups were shown (layout, retrieval rule) is part of what every group got alike: never resumed under another.
  const promptDrift = promptDriftOf(manifest.prompt);
  if (promptDrift !== null) throw new InstanceError('resume', `refusing to resume under another prompt: ${promptDrift}; that would be configuration drift after start`);
  const isolation = isolationFor(runDir, options);
  if (isolation.manifest.mode !== manifest.isolation.mode) {
    isolation.cleanup();
    throw new InstanceError('isolation', `the instance started with isolation ${manifest.isolation.mode} and would resume with ${isolation.manifest.mode} (${isolation.summary}); resume it the way it started (as root for separate-uids)`);
  }
  options.log(isolation.summary);
  for (const warning of storeWarnings) options.log(warning);
  // The scenario it started with: its own scenario.json (held to the manifest), or for a run started before issue 32 the scenarios folder's by the plan's hash.
  const scenario = resumedScenario({ runDir, scenariosDir: options.scenariosDir, scenarioId: prereg.scenario.id, planHash: plan.scenario_hash, manifest });
  const rules = modelCallRulesOf(prereg);
  if (rules === null) throw new InstanceError('resume', `refusing to resume: ${RUN_FILES.prereg} predates the pre-registered model-call rules (${MODEL_CALLS_MISSING_MESSAGE})`);
  const model = resolvedForResume(runDir, rules, manifest, () => isolation.cleanup());
  let costCapRaise: CostCapRaise | null;
  try {
    costCapRaise = checkCostCapBeforeResume({ runDir, storeFile: need(RUN_FILES.store), rules, prices: manifest.model.prices, raise: options.costCapRaise ?? null });
  } catch (error) {
    isolation.cleanup();
    throw error;
  }
  // The hash of the body as signed (what StoreOpened carries), not of the parsed manifest (which may fill defaults).
  const instance = new Instance({ options, runDir, key, plan, manifest, manifestHash: signed.sha256, prereg, isolation, scenario, model: model.runtime, protocol: model.protocol, rules, costCapRaise });
  return instance.run('open');
}

/**
 * The model a resume goes on with, held to the signed manifest's. An instance started before
 * issue 36 sent its answer schema whole (its manifest has no sent_schema_sha256): it goes on only
 * where this build sends the very same schema (the dialect's subset holds it, nothing left out);
 * otherwise its calls would change constraint halfway, so the resume is refused, saying why.
 */
export function resolvedForResume(runDir: string, rules: ModelCallRules, manifest: InstanceManifest, cleanup: () => void): ReturnType<typeof resolveModel> {
  const recorded = manifest.model.structured_output;
  const beforeSubsets = recorded !== null && recorded.sent_schema_sha256 === null;
  const refuse = (why: string): never => {
    cleanup();
    throw new InstanceError('resume', why);
  };
  let model: ReturnType<typeof resolveModel>;
  try {
    model = resolveModel(readModelChoice(runDir), rules.transport_retry, schemaSubsetPolicyOf(rules));
  } catch (error) {
    if (!beforeSubsets || !(error instanceof SchemaSubsetError)) throw error;
    return refuse(`this instance started before answer schemas were held to their dialect's subset (issue 36) and sent its schema whole; this build would refuse that schema in dialect ${recorded.dialect} (${error.message}), so its calls cannot go on under the same constraint: finish it with the build that started it`);
  }
  const info = model.info.structured_output;
  const sameAsBefore = beforeSubsets && info !== null && (info.subset?.removed.length ?? 0) === 0;
  const comparable = sameAsBefore ? { ...model.info, structured_output: { ...info, sent_schema_sha256: null, subset: null } } : model.info;
  if (beforeSubsets && !sameAsBefore) return refuse(`this instance started before answer schemas were held to their dialect's subset (issue 36) and sent its schema whole; this build would leave keywords out of it in dialect ${recorded.dialect}, so its calls cannot go on under the same constraint: finish it with the build that started it`);
  if (canonicalJson(comparable) !== canonicalJson(manifest.model)) return refuse(`${RUN_FILES.model} no longer resolves to the signed manifest's model (${manifest.model.adapter} ${manifest.model.model_id}): configuration drift after start`);
  return model;
}
