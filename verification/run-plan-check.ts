// Does a run follow its plan? Checks, from the run folder's files alone, that its files agree
// with each other (run-files-check.ts: plan hashes, signed manifest, pre-registration and lock,
// the plan rebuilt from the seed), that StoreOpened names the manifest, and that events.db
// follows the plan the way the controller writes it (store-walk.ts, against the run contract of
// design/run-contract.ts), and that every model call's recorded cost is its counts at the
// manifest's prices (call-cost-check.ts). Every failure is listed with its file and seq; the checker never
// stops at the first. Reads only: a sibling of writer/verify-store.ts, and what npm run verify,
// the oracle's hard-failure check and the audit desk report as "plan conformance".
import { subjectInitializedPayload } from '../design/scenario.js';
import path from 'node:path';
import { RUN_FILES } from '../schema/run-files.js';
import type { VerifiedEvents } from '../writer/verified-events.js';
import { emptyCounts, Findings, type PlanConformanceReport } from './plan-findings.js';
import { checkManifest, checkPlanHashes, checkPrereg, readPlan, rebuildPlan } from './run-files-check.js';
import { checkStore } from './store-walk.js';
import { checkCallCosts } from './call-cost-check.js';
import { CostAccount } from '../design/cost-cap.js';
import type { InstanceManifest } from '../design/manifest.js';
import type { PreRegistration } from '../design/prereg.js';

export interface PlanConformanceOptions {
  /**
   * The folder holding scenario folders by id, where `prereg.scenario.id` is looked up to rebuild
   * the plan. An input, not a path known here: the commands (cli/) know where the scenarios are and give
   * its commands their default (cli/run-defaults.ts SCENARIOS_DIR).
   */
  readonly scenariosDir: string;
  /**
   * The stores' events as a verify of the same folder just read them, by events.db path
   * (writer/verified-events.ts): the walk uses them instead of reading the store again. A store
   * not in it, or kept spoiled, is read here.
   */
  readonly verifiedEvents?: ReadonlyMap<string, VerifiedEvents>;
}

/**
 * Checks that the run in `runDir` follows its plan.json (see the file comment), with the
 * controller key `publicKey` for the manifest and the pre-registration lock. Reads only.
 */
export function checkRunFollowsPlan(runDir: string, publicKey: Uint8Array, options: PlanConformanceOptions): PlanConformanceReport {
  const out = new Findings();
  const counts = emptyCounts();
  const report = (): PlanConformanceReport => {
    const failures = out.finish();
    return { ok: failures.length === 0, failures, notes: out.notes, checked: counts };
  };
  const plan = readPlan(runDir, out);
  if (plan === null) return report();
  checkPlanHashes(plan, out);
  const signed = checkManifest(runDir, plan, publicKey, out, counts);
  const prereg = checkPrereg(runDir, signed?.manifest ?? null, publicKey, out, counts);
  const scenario = prereg ? rebuildPlan(runDir, plan, prereg, signed?.manifest ?? null, options.scenariosDir, out, counts) : null;
  if (!scenario) out.note(RUN_FILES.store, null, 'SubjectInitialized payload not compared: no scenario was loaded (it comes from prereg.json)');
  const subjectInitialized = scenario ? subjectInitializedPayload(scenario.definition, plan.schedule.start_at) : null;
  const verified = options.verifiedEvents?.get(path.join(runDir, RUN_FILES.store))?.events ?? null;
  checkStore(runDir, plan, subjectInitialized, signed?.sha256 ?? null, out, counts, verified, costAccountOf(prereg, signed?.manifest ?? null, out));
  checkCallCosts(runDir, signed?.manifest ?? null, out);
  return report();
}

/**
 * The cost cap's account for the walk (issue 36 item 4): the pre-registered cap at the manifest's
 * prices; null without a cap. A cap without prices is a failure: the start refuses it, so a run
 * holding one was not started by this controller, and nothing could have held its calls.
 */
function costAccountOf(prereg: PreRegistration | null, manifest: InstanceManifest | null, out: Findings): CostAccount | null {
  const capUsd = prereg?.model_calls?.cost_cap_usd_per_instance;
  if (capUsd === undefined || manifest === null) return null;
  if (manifest.model.prices === null) {
    out.fail(RUN_FILES.manifest, null, `the pre-registration caps each instance's cost at $${capUsd} but the manifest's model has no prices: no call's cost could be counted against the cap`);
    return null;
  }
  return new CostAccount(capUsd, manifest.model.prices);
}
