// The scenario a run folder ran with (issue 32 item 2; docs/format.md "scenario.json"): its own
// scenario.json when it keeps one — held to the signed manifest's scenario_sha256 and to the
// plan's scenario_hash, every starting file to its hash — else (a run started before issue 32)
// the scenario folder the plan's hash names, from the scenarios folder given. Scoring
// (oracle/run-record.ts) and the plan check (verification/run-files-check.ts) read it here alike.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { RUN_FILES } from '../schema/run-files.js';
import { hashText, type HashString } from '../schema/hash.js';
import type { InstanceManifest } from './manifest.js';
import { loadScenario, RunScenario, SCENARIO_FILE, ScenarioError, scenarioOfRecord, type Scenario } from './scenario.js';

/** A run's scenario.json is ~30 KB for the default scenario; 32 files of 64 KB in base64 stay under this. */
const MAX_RUN_SCENARIO_BYTES = 4 * 1024 * 1024;

export interface RunScenarioInput {
  readonly runDir: string;
  /** Where scenario folders are, by id: read only for a run that keeps no scenario.json. */
  readonly scenariosDir: string;
  readonly scenarioId: string;
  /** The plan's scenario_hash. */
  readonly planHash: HashString;
  /** The verified manifest, or null when it does not verify (its scenario_sha256 then pins nothing). */
  readonly manifest: InstanceManifest | null;
}

/** The run's scenario; ScenarioError says what disagrees (a changed or missing record, another scenario). */
export function scenarioOfRun(input: RunScenarioInput): Scenario {
  const file = path.join(input.runDir, RUN_FILES.scenario);
  const pinned = input.manifest?.scenario_sha256 ?? null;
  if (!existsSync(file)) {
    if (pinned !== null) throw new ScenarioError(`${file} is missing, but the signed manifest pins one (scenario_sha256 ${pinned}): the run folder is incomplete`);
    const folder = path.join(input.scenariosDir, input.scenarioId);
    // A run of before issue 32 keeps no record of its scenario: it is read from the scenarios folder by its id, and its absence is said as such.
    if (!existsSync(path.join(folder, SCENARIO_FILE))) throw new ScenarioError(`${file} is missing (the run started before runs kept their scenario) and its scenario ${input.scenarioId} is not at ${folder}: put the scenario folder ${input.scenarioId} it ran with there (its ${SCENARIO_FILE} and workspace/), then run the command again; the run folder itself may be whole`);
    const scenario = loadScenario(folder);
    if (scenario.scenario_hash !== input.planHash) throw new ScenarioError(`the scenario ${input.scenarioId} in ${input.scenariosDir} hashes to ${scenario.scenario_hash}, the run's plan names ${input.planHash}: use the scenario it ran with`);
    return scenario;
  }
  const size = statSync(file).size;
  if (size > MAX_RUN_SCENARIO_BYTES) throw new ScenarioError(`${file} is ${size} bytes, over the ${MAX_RUN_SCENARIO_BYTES}-byte limit`);
  const bytes = readFileSync(file);
  if (pinned !== null && hashText(bytes) !== pinned) throw new ScenarioError(`${file} hashes to ${hashText(bytes)}, not the signed manifest's scenario_sha256 ${pinned}: it was changed after the start`);
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new ScenarioError(`${file} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = RunScenario.safeParse(json);
  if (!parsed.success) throw new ScenarioError(`${file} is not a run's scenario record: ${parsed.error.issues.slice(0, 4).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  const scenario = scenarioOfRecord(parsed.data);
  if (scenario.scenario_hash !== input.planHash) throw new ScenarioError(`${file} is the scenario ${scenario.scenario_hash}, the run's plan names ${input.planHash}`);
  return scenario;
}
