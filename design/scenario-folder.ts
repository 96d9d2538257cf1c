// Where a new instance's scenario comes from (issue 35 item 1): the folder given with
// `--scenario DIR` (any folder, inside the checkout or not; a study's own copy,
// study-contract/study-folder.ts STUDY_FILES.scenario), else the folder of the pre-registration's
// scenario id among the scenarios folder's (experiments/scenario/<id>/ of the code checkout).
// Either way the folder's scenario.json must be the scenario the pre-registration names: a
// mismatch, or no scenario there, is refused saying what to change, before anything is written.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadScenario, SCENARIO_FILE, ScenarioError, type Scenario } from './scenario.js';

/** The flag that names a scenario folder, as every refusal names it. */
export const SCENARIO_FLAG = '--scenario';

export interface ScenarioPlace {
  /** The scenario folders by id (the checkout's experiments/scenario). */
  readonly scenariosDir: string;
  /** The scenario folder itself (--scenario DIR, or a study's copy); absent: scenariosDir/<id>. */
  readonly scenarioDir?: string | undefined;
  /** The hash the scenario must have (a study's, as planned: its copy changed since is refused); absent: any. */
  readonly plannedHash?: string | undefined;
}

/** The folder a new instance of the pre-registered scenario `scenarioId` reads. */
export function scenarioFolderOf(place: ScenarioPlace, scenarioId: string): string {
  return place.scenarioDir !== undefined ? path.resolve(place.scenarioDir) : path.join(place.scenariosDir, scenarioId);
}

/** The scenario of that folder, held to the pre-registration's id; ScenarioError says what to change. */
export function loadPreregisteredScenario(place: ScenarioPlace, scenarioId: string): Scenario {
  const dir = scenarioFolderOf(place, scenarioId);
  const given = place.scenarioDir !== undefined;
  if (!existsSync(path.join(dir, SCENARIO_FILE))) {
    throw new ScenarioError(
      given
        ? `${SCENARIO_FLAG} ${dir} holds no ${SCENARIO_FILE}: give ${SCENARIO_FLAG} the folder of the scenario ${scenarioId} (its ${SCENARIO_FILE} and workspace/; docs/own-study.md); nothing was written`
        : `the pre-registration names the scenario ${scenarioId}, and ${dir} holds no ${SCENARIO_FILE}: give its folder with ${SCENARIO_FLAG} DIR (a folder with ${SCENARIO_FILE} and workspace/, anywhere; docs/own-study.md); nothing was written`,
    );
  }
  const scenario = loadScenario(dir);
  const found = scenario.definition.scenario_id;
  if (found !== scenarioId) {
    throw new ScenarioError(`${path.join(dir, SCENARIO_FILE)} is the scenario ${found}, but the pre-registration names ${scenarioId}: give ${SCENARIO_FLAG} the folder of ${scenarioId}, or set the pre-registration's scenario.id to ${found} and lock it again (npm run prereg -- lock FILE); nothing was written`);
  }
  if (place.plannedHash !== undefined && scenario.scenario_hash !== place.plannedHash) {
    throw new ScenarioError(`${dir} hashes to ${scenario.scenario_hash}, but its study was planned with the scenario ${place.plannedHash}: the study's copy was changed after the plan; put back the scenario the study was planned with (a copy of the folder given to --scenario then), or plan a new study; nothing was written`);
  }
  return scenario;
}
