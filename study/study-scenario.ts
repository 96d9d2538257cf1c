// A study's own copy of its scenario (issue 35 item 1; study-contract/study-folder.ts
// STUDY_FILES.scenario): copied at plan time from the folder given (--scenario DIR, or the
// checkout's folder of the pre-registration's scenario id), so that every instance — on this
// machine, resumed later, or a batch task on any node — starts from the study folder and the code
// alone. Written from the scenario as loaded and checked (its definition and the bytes of every
// starting file, nothing else), then read back: the copy must hash as the scenario did.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadPreregisteredScenario, type ScenarioPlace } from '../design/scenario-folder.js';
import { loadScenario, SCENARIO_FILE, WORKSPACE_DIR, type Scenario } from '../design/scenario.js';
import { STUDY_FILES, StudyError, type StudyPlan } from '../study-contract/study-folder.js';

/**
 * Where the instances of the study in `outDir` find their scenario: its copy, held to the hash
 * the study was planned with; for a study planned before issue 35, the scenarios folder by id.
 * A study whose plan pins a scenario never falls back to the checkout's: a missing copy is refused.
 */
export function studyScenarioPlace(outDir: string, scenariosDir: string, plan: StudyPlan): ScenarioPlace {
  const own = path.join(outDir, STUDY_FILES.scenario);
  if (plan.scenario_hash !== undefined) return { scenariosDir, scenarioDir: own, plannedHash: plan.scenario_hash };
  return existsSync(own) ? { scenariosDir, scenarioDir: own } : { scenariosDir };
}

/**
 * The scenario a new study plans with (refused before anything is written: not found, or not the
 * pre-registered one; design/scenario-folder.ts), and the study's plan pinning its hash.
 */
export function plannedWithScenario(plan: StudyPlan, place: ScenarioPlace, scenarioId: string): { readonly plan: StudyPlan; readonly scenario: Scenario } {
  const scenario = loadPreregisteredScenario(place, scenarioId);
  return { plan: { ...plan, scenario_hash: scenario.scenario_hash }, scenario };
}

/**
 * Writes the scenario into the new study folder; a copy that does not read back as the same
 * scenario is removed, `undo` takes back what the caller made, and the study is refused.
 * Returns the copy's folder.
 */
export function copyScenarioInto(outDir: string, scenario: Scenario, undo: () => void): string {
  const dir = path.join(outDir, STUDY_FILES.scenario);
  try {
    mkdirSync(dir, { recursive: false });
    writeFileSync(path.join(dir, SCENARIO_FILE), `${JSON.stringify(scenario.definition, null, 2)}\n`, { flag: 'wx' });
    for (const file of scenario.files) {
      const target = path.join(dir, WORKSPACE_DIR, ...file.path.split('/'));
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, file.bytes, { flag: 'wx' });
    }
    const copy = loadScenario(dir);
    if (copy.scenario_hash !== scenario.scenario_hash) throw new Error(`the copy hashes to ${copy.scenario_hash}, the scenario to ${scenario.scenario_hash}`);
  } catch (error) {
    removeScenarioCopy(outDir);
    undo();
    throw new StudyError('out_unwritable', `cannot copy the scenario ${scenario.definition.scenario_id} into ${dir} (${error instanceof Error ? error.message : String(error)}); nothing of the study was left behind`);
  }
  return dir;
}

/** Takes back a copy this plan wrote (a study refused after it). */
export function removeScenarioCopy(outDir: string): void {
  rmSync(path.join(outDir, STUDY_FILES.scenario), { recursive: true, force: true });
}
