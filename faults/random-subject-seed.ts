// The model seed a random_subject run samples with (issue 20 item 4). Under the answer grammar at
// temperature 0.8, about one seed in three makes stories260K's answer run on past its cap without
// closing the grammar (measured: 4 of 12 seeds at a 1,024-token cap, 3 of 12 at 2,048), and the
// model check before hour 0 then rightly refuses the model: such a run would try nothing. So the
// harness asks the model check itself — the very probe the runtime makes, with the run's model,
// sampling, cap and context — for the plan's seed first, then for seeds drawn from the plan's in
// a fixed order, and runs with the first the check accepts. Same plan, same build: same seed.
// Every seed passed over is named in the run's notes.
import { DEFAULT_LOCAL_CONTEXT_TOKENS } from '../controller/model-config-file.js';
import { seededRandom } from '../design/seeded-random.js';
import { specialisedAnswerSchema } from '../runtime/answer-schema.js';
import { LocalAdapter } from '../runtime/model-adapters/local-adapter.js';
import { MODEL_PROTOCOL_V2 } from '../runtime/model-protocol.js';
import { RANDOM_SUBJECT_MAX_MODEL_SEED, type FaultRunPlan } from './fault-plan.js';

/** Seeds asked at most (at one in three refused, eight refusals in a row happen once in ~6,500 runs): then the run is tried with none. */
export const MAX_MODEL_SEED_CANDIDATES = 8;
/** The model check's own bound on its probe (a probe at a 1,024-token cap takes 1–4 s here). */
const PROBE_TIMEOUT_MS = 60_000;

export interface SamplingOfRun {
  readonly modelFile: string;
  readonly temperature: number;
  readonly maxTokens: number;
}

/** The i-th seed a run may sample with: the plan's first, then drawn from the plan in a fixed order. */
export function candidateModelSeed(plan: FaultRunPlan, i: number): number {
  if (plan.model_seed === undefined) throw new Error(`bug: the random_subject plan of run ${plan.index} carries no model_seed (planFaultRun draws it)`);
  return i === 0 ? plan.model_seed : seededRandom(`${plan.seed}/model/${plan.index}/${i}`).intBetween(1, RANDOM_SUBJECT_MAX_MODEL_SEED);
}

/** The first candidate seed the model check accepts, or null when none of MAX_MODEL_SEED_CANDIDATES did; each refusal noted. */
export async function firstAcceptedModelSeed(plan: FaultRunPlan, sampling: SamplingOfRun, notes: string[]): Promise<number | null> {
  for (let i = 0; i < MAX_MODEL_SEED_CANDIDATES; i += 1) {
    const seed = candidateModelSeed(plan, i);
    const adapter = new LocalAdapter({ modelFile: sampling.modelFile, params: { temperature: sampling.temperature, top_p: null, seed, max_tokens: sampling.maxTokens }, threads: 1, contextSize: DEFAULT_LOCAL_CONTEXT_TOKENS });
    try {
      // The runtime's own probe schema (runtime/main.ts preflight).
      const check = await adapter.preflight(specialisedAnswerSchema(MODEL_PROTOCOL_V2, [1]), PROBE_TIMEOUT_MS);
      if (check.ok) return seed;
      notes.push(`random_subject: model seed ${seed} passed over, the model check refuses it: ${check.reason.slice(0, 300)}`);
    } finally {
      await adapter.close();
    }
  }
  notes.push(`random_subject: none of ${MAX_MODEL_SEED_CANDIDATES} model seeds passed the model check; the run is tried with the plan's, and its check refuses the start`);
  return null;
}
