// The run folder's files against each other, before any event is read:
// - plan.json is an ExperimentPlan whose hashes are the hashes of its own schedule and
//   interventions;
// - the signed manifest pins exactly this plan (hashes, seed, scenario, script version);
// - when prereg.json is there: the manifest pins its hash, its lock copy verifies, and the plan
//   is the one the seed gives (rebuilt from prereg + scenario + seed + start time): a plan
//   re-hashed consistently and re-signed into a manifest is still not the seed's plan.
// Each check adds its failures to the run's Findings and goes on; what a later check needs (the
// manifest's hash, the scenario) is returned, or null when it could not be had.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { buildExperimentPlan, ExperimentPlan } from '../design/experiment-plan.js';
import { checkSignedManifest, type InstanceManifest } from '../design/manifest.js';
import { scenarioOfRun } from '../design/run-scenario.js';
import { PREREG_LOCK_PAYLOAD_TYPE, PreregLock, PreRegistration } from '../design/prereg.js';
import type { Scenario } from '../design/scenario.js';
import { ContentMemo } from '../foundation/content-memo.js';
import { verifyDsse } from '../schema/dsse.js';
import { toHex } from '../schema/ed25519-keys.js';
import { hashCanonical } from '../schema/hash.js';
import { firstDifference } from '../schema/json-difference.js';
import { RUN_FILES } from '../schema/run-files.js';
import type { Findings, PlanConformanceCounts } from './plan-findings.js';

// Bounds on what is read into memory: far above what a real run writes.
const MAX_PLAN_JSON_BYTES = 16 * 1024 * 1024;
const MAX_PREREG_JSON_BYTES = 256 * 1024;
const MAX_SIGNED_FILE_BYTES = 1024 * 1024;

/**
 * What the folders of one study share, read once per content (foundation/content-memo.ts): the
 * pre-registration lock's signature check, and the pre-registration parsed.
 * Keyed by content hashes, never by path; a few entries (a merge reads one study's).
 */
const MEMO_ENTRIES = 4;
const LOCKS_VERIFIED = new ContentMemo<ReturnType<typeof verifyDsse>>(MEMO_ENTRIES);
const PREREGS_PARSED = new ContentMemo<PreRegistration>(MEMO_ENTRIES);

type JsonRead = { readonly ok: true; readonly value: unknown } | { readonly ok: false };

function readJsonFile(runDir: string, name: string, maxBytes: number, out: Findings): JsonRead {
  const file = path.join(runDir, name);
  const size = statSync(file).size;
  if (size > maxBytes) {
    out.fail(name, null, `${name} is ${size} bytes, over the limit of ${maxBytes}`);
    return { ok: false };
  }
  try {
    return { ok: true, value: JSON.parse(readFileSync(file, 'utf8')) as unknown };
  } catch (error) {
    out.fail(name, null, `${name} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
    return { ok: false };
  }
}

/** plan.json as an ExperimentPlan; null (with its failure) when there is none to check the run against. */
export function readPlan(runDir: string, out: Findings): ExperimentPlan | null {
  if (!existsSync(path.join(runDir, RUN_FILES.plan))) {
    out.fail(RUN_FILES.plan, null, `no ${RUN_FILES.plan} in ${runDir}: there is no plan to check the run against`);
    return null;
  }
  const read = readJsonFile(runDir, RUN_FILES.plan, MAX_PLAN_JSON_BYTES, out);
  if (!read.ok) return null;
  const parsed = ExperimentPlan.safeParse(read.value);
  if (!parsed.success) {
    out.fail(RUN_FILES.plan, null, `${RUN_FILES.plan} is not an ExperimentPlan: ${z.prettifyError(parsed.error)}`);
    return null;
  }
  return parsed.data;
}

export function checkPlanHashes(plan: ExperimentPlan, out: Findings): void {
  const scheduleHash = hashCanonical(plan.schedule);
  if (scheduleHash !== plan.schedule_hash) {
    out.fail(RUN_FILES.plan, null, `schedule_hash ${plan.schedule_hash} is not the hash of the schedule in ${RUN_FILES.plan} (${scheduleHash}): the schedule was changed after the plan was hashed`);
  }
  const interventionsHash = hashCanonical(plan.interventions);
  if (interventionsHash !== plan.intervention_plan_hash) {
    out.fail(RUN_FILES.plan, null, `intervention_plan_hash ${plan.intervention_plan_hash} is not the hash of the interventions in ${RUN_FILES.plan} (${interventionsHash}): the interventions were changed after the plan was hashed`);
  }
}

/** The signed manifest and its hash when it checks with `publicKey`; its fields are compared with the plan's. */
export function checkManifest(runDir: string, plan: ExperimentPlan, publicKey: Uint8Array, out: Findings, counts: PlanConformanceCounts): { manifest: InstanceManifest; sha256: string } | null {
  if (!existsSync(path.join(runDir, RUN_FILES.manifest))) {
    out.fail(RUN_FILES.manifest, null, `no ${RUN_FILES.manifest}: nothing signed pins the plan`);
    return null;
  }
  const read = readJsonFile(runDir, RUN_FILES.manifest, MAX_SIGNED_FILE_BYTES, out);
  if (!read.ok) return null;
  const checked = checkSignedManifest(read.value, publicKey);
  if (!checked.ok) {
    out.fail(RUN_FILES.manifest, null, `the signed manifest does not check, so nothing pins the plan: ${checked.reason}`);
    return null;
  }
  counts.manifest_checked = true;
  const m = checked.manifest;
  const pairs: readonly [keyof InstanceManifest, string, string][] = [
    ['wake_schedule_hash', m.wake_schedule_hash, plan.schedule_hash],
    ['intervention_plan_hash', m.intervention_plan_hash, plan.intervention_plan_hash],
    ['random_seed', m.random_seed, plan.seed],
    ['scenario_hash', m.scenario_hash, plan.scenario_hash],
    ['intervention_script_version', m.intervention_script_version, plan.intervention_script_version],
  ];
  const planField: Partial<Record<keyof InstanceManifest, string>> = { wake_schedule_hash: 'schedule_hash', random_seed: 'seed' };
  for (const [field, signed, planned] of pairs) {
    if (signed !== planned) out.fail(RUN_FILES.manifest, null, `the signed manifest's ${field} is ${signed}, ${RUN_FILES.plan} has ${planField[field] ?? field} ${planned}: the run's plan is not the one the manifest pins`);
  }
  return { manifest: m, sha256: checked.sha256 };
}

/** Checks prereg.json and its lock copy; returns the pre-registration when it can be used to rebuild the plan. */
export function checkPrereg(runDir: string, manifest: InstanceManifest | null, publicKey: Uint8Array, out: Findings, counts: PlanConformanceCounts): PreRegistration | null {
  const hasPrereg = existsSync(path.join(runDir, RUN_FILES.prereg));
  const hasLock = existsSync(path.join(runDir, RUN_FILES.preregLock));
  if (!hasPrereg) {
    if (hasLock) out.fail(RUN_FILES.preregLock, null, `${RUN_FILES.preregLock} without ${RUN_FILES.prereg}: the locked pre-registration is missing from the run`);
    else out.note(RUN_FILES.prereg, null, `no ${RUN_FILES.prereg}: the plan was not rebuilt from the seed (only its hashes and the manifest were checked)`);
    return null;
  }
  const read = readJsonFile(runDir, RUN_FILES.prereg, MAX_PREREG_JSON_BYTES, out);
  if (!read.ok) return null;
  counts.prereg_checked = true;
  const content = read.value;
  const sha256 = hashCanonical(content);
  if (manifest && manifest.prereg_sha256 !== sha256) {
    out.fail(RUN_FILES.prereg, null, `${RUN_FILES.prereg} hashes to ${sha256}, the signed manifest's prereg_sha256 is ${manifest.prereg_sha256}: the run did not run under this pre-registration`);
  }
  if (!hasLock) out.fail(RUN_FILES.preregLock, null, `no ${RUN_FILES.preregLock}: the pre-registration's lock was not copied into the run`);
  else {
    const lockRead = readJsonFile(runDir, RUN_FILES.preregLock, MAX_SIGNED_FILE_BYTES, out);
    if (lockRead.ok) {
      // One study's folders carry one lock: its signature is checked once per content and key.
      const verified = LOCKS_VERIFIED.get(`${toHex(publicKey)} ${hashCanonical(lockRead.value)}`, () => verifyDsse(lockRead.value, PREREG_LOCK_PAYLOAD_TYPE, publicKey));
      const lock = verified.ok ? PreregLock.safeParse(verified.body) : null;
      if (!verified.ok) out.fail(RUN_FILES.preregLock, null, `the pre-registration lock does not verify with ${RUN_FILES.publicKey}: ${verified.reason}`);
      else if (!lock?.success) out.fail(RUN_FILES.preregLock, null, `the signed body of ${RUN_FILES.preregLock} is not a pre-registration lock`);
      else if (lock.data.prereg_sha256 !== sha256) {
        out.fail(RUN_FILES.preregLock, null, `the lock signed ${lock.data.prereg_sha256} (for ${lock.data.file}), ${RUN_FILES.prereg} hashes to ${sha256}: the pre-registration changed after it was locked`);
      }
    }
  }
  const known = PREREGS_PARSED.known(sha256);
  if (known !== undefined) return known;
  const parsed = PreRegistration.safeParse(content);
  if (!parsed.success) {
    out.fail(RUN_FILES.prereg, null, `${RUN_FILES.prereg} is not a pre-registration, so the plan cannot be rebuilt: ${z.prettifyError(parsed.error)}`);
    return null;
  }
  return PREREGS_PARSED.get(sha256, () => parsed.data);
}

/**
 * Rebuilds the plan from (prereg, scenario, seed, start time) and requires plan.json to be it.
 * The scenario is the run's own scenario.json (pinned by the manifest), or for a run started
 * before issue 32 the folder in `scenariosDir` by id (design/run-scenario.ts). Returns the scenario.
 */
export function rebuildPlan(runDir: string, plan: ExperimentPlan, prereg: PreRegistration, manifest: InstanceManifest | null, scenariosDir: string, out: Findings, counts: PlanConformanceCounts): Scenario | null {
  const keepsOwn = existsSync(path.join(runDir, RUN_FILES.scenario));
  if (!keepsOwn && !existsSync(path.join(scenariosDir, prereg.scenario.id))) {
    out.fail(RUN_FILES.prereg, null, `the pre-registered scenario ${prereg.scenario.id} is not in ${scenariosDir} (and the run keeps no ${RUN_FILES.scenario}): the plan cannot be rebuilt from the seed`);
    return null;
  }
  let scenario: Scenario;
  let rebuilt: ExperimentPlan;
  try {
    scenario = scenarioOfRun({ runDir, scenariosDir, scenarioId: prereg.scenario.id, planHash: plan.scenario_hash, manifest });
    rebuilt = buildExperimentPlan({ prereg, scenario, seed: plan.seed, startAt: plan.schedule.start_at });
  } catch (error) {
    // Typed errors of the scenario and plan builders, and zod errors of their schemas: all say the plan cannot be rebuilt.
    out.fail(keepsOwn ? RUN_FILES.scenario : RUN_FILES.plan, null, `the plan cannot be rebuilt from ${RUN_FILES.prereg}, scenario ${prereg.scenario.id}${keepsOwn ? ` (the run's ${RUN_FILES.scenario})` : ''} and seed ${plan.seed}: ${error instanceof Error ? error.message : String(error)}`);
    return null;
  }
  counts.plan_rebuilt = true;
  const diff = firstDifference(plan, rebuilt);
  if (diff !== null) {
    out.fail(
      RUN_FILES.plan,
      null,
      `${RUN_FILES.plan} is not the plan seed ${plan.seed} gives (pre-registration ${RUN_FILES.prereg}, scenario ${prereg.scenario.id}, start ${plan.schedule.start_at}): the rebuilt plan differs first at ${diff}`,
    );
  }
  return scenario;
}
