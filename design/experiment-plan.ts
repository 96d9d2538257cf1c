// The experiment plan of one instance: the wake schedule and the intervention plan, built from
// the pre-registration, the scenario, the seed and the start time only — there is no group
// parameter, so every group of a batch gets the same plan by construction (spec §5.2, §7.1).
// Hashes are sha256(JCS(...)) and go into the manifest (spec §6.4: wake_schedule_hash,
// intervention_script_version).
//
// Random streams: the schedule draws from seedrandom(seed), the interventions from
// seedrandom(`${seed}/interventions`): a change of the intervention script never moves a wake.
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { INTERVENTION_SCRIPT_VERSION, InterventionPlan, buildInterventionPlan } from './intervention-plan.js';
import { planProblems } from './plan-invariants.js';
import type { PreRegistration } from './prereg.js';
import type { Scenario } from './scenario.js';
import { seededRandom } from './seeded-random.js';
import { WakeSchedule, buildWakeSchedule } from './wake-schedule.js';
import { SemVer } from '../schema/event-definition.js';
import { hashCanonical, HashString } from '../schema/hash.js';

export const INTERVENTION_STREAM_SUFFIX = '/interventions';

/** A seed is data written into the manifest: a bounded printable string. */
export const Seed = z.string().min(1).max(128).regex(/^[\x21-\x7e]+$/, 'expected printable ASCII without spaces');

export const ExperimentPlan = z.strictObject({
  seed: Seed,
  schedule: WakeSchedule,
  interventions: InterventionPlan,
  schedule_hash: HashString,
  intervention_plan_hash: HashString,
  scenario_hash: HashString,
  intervention_script_version: SemVer,
});
export type ExperimentPlan = z.infer<typeof ExperimentPlan>;

export interface ExperimentPlanInput {
  readonly prereg: PreRegistration;
  readonly scenario: Scenario;
  readonly seed: string;
  /** ISO-8601 UTC; the virtual time of hour 0. */
  readonly startAt: string;
}

export class ExperimentPlanError extends TypedErrorOf('experiment_plan', EXIT_CODES.failed) {
  override readonly name = 'ExperimentPlanError';
}

export function buildExperimentPlan({ prereg, scenario, seed, startAt }: ExperimentPlanInput): ExperimentPlan {
  const seedText = Seed.parse(seed);
  if (scenario.definition.scenario_id !== prereg.scenario.id) throw new ExperimentPlanError(`scenario ${scenario.definition.scenario_id} is not the pre-registered ${prereg.scenario.id}`);
  const schedule = buildWakeSchedule(prereg, seededRandom(seedText), startAt);
  const interventions = buildInterventionPlan(prereg, scenario, schedule, seededRandom(`${seedText}${INTERVENTION_STREAM_SUFFIX}`));
  const problems = planProblems(prereg, schedule, interventions);
  if (problems.length > 0) throw new ExperimentPlanError(`the built plan breaks its own rules: ${problems.join('; ')}`);
  return ExperimentPlan.parse({
    seed: seedText,
    schedule,
    interventions,
    schedule_hash: hashCanonical(schedule),
    intervention_plan_hash: hashCanonical(interventions),
    scenario_hash: scenario.scenario_hash,
    intervention_script_version: INTERVENTION_SCRIPT_VERSION,
  });
}
