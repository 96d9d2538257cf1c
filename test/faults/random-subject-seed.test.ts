// The model seed of a random_subject run (faults/random-subject-seed.ts), with the real
// test model and the runtime's own model check: a seed whose probe runs past the cap is passed
// over, named, for the next candidate drawn from the plan; the choice is the same every time.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import type { FaultRunPlan } from '../../faults/fault-plan.js';
import { RANDOM_SUBJECT_MAX_TOKENS, RANDOM_SUBJECT_TEMPERATURE } from '../../faults/fault-run.js';
import { candidateModelSeed, firstAcceptedModelSeed, MAX_MODEL_SEED_CANDIDATES } from '../../faults/random-subject-seed.js';

const MODEL_FILE = fileURLToPath(new URL('../../../shared/models/stories260K.gguf', import.meta.url));
/** Seen in a 1,000-run batch (seed hour-1, run 124): at temperature 0.8 its probe ran to the 1,024-token cap and the model check refused the start. */
const RUNS_ON_SEED = 927_739_128;
const plan = (modelSeed: number): FaultRunPlan => ({ index: 124, seed: 'hour-1', group: 'A', instance_seed: 'faults-hour-1', point: 'runtime.model_call.in_flight', kind: 'random_subject', hit: 1, hits_in_calibration: 30, model_seed: modelSeed });
const sampling = { modelFile: MODEL_FILE, temperature: RANDOM_SUBJECT_TEMPERATURE, maxTokens: RANDOM_SUBJECT_MAX_TOKENS };

describe('the model seed of a random subject', () => {
  test('candidates: the plan\'s seed first, then seeds drawn from the plan, the same every time, all different', () => {
    const seeds = Array.from({ length: MAX_MODEL_SEED_CANDIDATES }, (_, i) => candidateModelSeed(plan(RUNS_ON_SEED), i));
    expect(seeds[0]).toBe(RUNS_ON_SEED);
    expect(new Set(seeds).size).toBe(seeds.length);
    expect(Array.from({ length: MAX_MODEL_SEED_CANDIDATES }, (_, i) => candidateModelSeed(plan(RUNS_ON_SEED), i))).toEqual(seeds);
  });

  test('a seed the model check refuses (its probe runs past the cap) is passed over and named; the next accepted one is chosen, again on a second ask', async () => {
    expect(existsSync(MODEL_FILE), MODEL_FILE).toBe(true);
    const notes: string[] = [];
    const chosen = await firstAcceptedModelSeed(plan(RUNS_ON_SEED), sampling, notes);
    expect(chosen).not.toBeNull();
    expect(chosen).not.toBe(RUNS_ON_SEED);
    expect(notes[0]).toMatch(new RegExp(`^random_subject: model seed ${RUNS_ON_SEED} passed over, the model check refuses it: the probe answer reached its cap \\(${RANDOM_SUBJECT_MAX_TOKENS} tokens, finish_reason length\\)`));
    const again: string[] = [];
    expect(await firstAcceptedModelSeed(plan(RUNS_ON_SEED), sampling, again)).toBe(chosen);
    expect(again).toEqual(notes);
  }, 120_000);
});
