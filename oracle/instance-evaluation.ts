// One instance's evaluation from its run folder alone: the oracle from its plan, the FACT and
// side-effect checks, the hard failures and the Continuity Score. The study calls this after
// each instance and again with --recompute; nothing it returns depends on anything but the
// folder (and the scenario folder the plan's hash pins).
import path from 'node:path';
import { checkFacts } from './fact-check.js';
import { computeOracle, type Oracle } from './expected-checkpoints.js';
import { detectHardFailures, type HardFailure, type RunChecks } from './hard-failures.js';
import { scoreInstance, type InstanceScore } from './continuity-score.js';
import { loadRunRecord, type RunRecord } from './run-record.js';
import { checkSideEffects } from './side-effects.js';
import type { EventEnvelope } from '../schema/envelope.js';
import type { HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';

export interface InstanceEvaluation {
  readonly record: RunRecord;
  readonly oracle: Oracle;
  readonly score: InstanceScore;
  readonly hardFailures: readonly HardFailure[];
  /** What the checks could not look at (e.g. a workspace folder missing): shown with the instance. */
  readonly notes: readonly string[];
}

export interface EvaluationOptions {
  readonly scenariosDir: string;
  /** The study's locked pre-registration: an instance under another one is a configuration change. */
  readonly expectedPreregSha256: HashString | null;
  /** The folder's verify and plan-check results, made by the caller just now (hard-failures.ts RunChecks). */
  readonly checks?: RunChecks;
  /**
   * The store's events as the verify behind `checks` read them (writer/verified-events.ts): the
   * run record and the replay check use them instead of reading and parsing the store again.
   */
  readonly verifiedEvents?: readonly EventEnvelope[];
}

export function evaluateInstance(runDir: string, options: EvaluationOptions): InstanceEvaluation {
  const verified = options.verifiedEvents ?? null;
  const record = loadRunRecord(runDir, options.scenariosDir, verified);
  const oracle = computeOracle({ rules: record.prereg.scoring.oracle, scenario: record.scenario.definition, plan: record.plan });
  const workspaceDir = path.join(runDir, RUN_FILES.workspace);
  const facts = checkFacts(record);
  const unsoundFacts = new Map(facts.filter((f) => !f.ok).map((f) => [f.claim_id, f.problems.map((p) => `${p.kind}: ${p.detail}`).join('; ')]));
  const sideEffects = checkSideEffects(record, workspaceDir);
  const score = scoreInstance({ record, oracle, unsoundFacts, sideEffectProblems: sideEffects.problems, workspaceDir });
  // The FACT and side-effect checks just made are the hard-failure check's too: made once.
  const hardFailures = detectHardFailures(record, { expectedPreregSha256: options.expectedPreregSha256, scenariosDir: options.scenariosDir, ...(options.checks ? { checks: options.checks } : {}), eventsVerified: verified !== null, made: { facts, sideEffects } });
  return { record, oracle, score, hardFailures, notes: [...sideEffects.notes] };
}

/**
 * The score the study's statistics use: a hard failure overrides the Continuity Score (spec §8.4,
 * DESIGN §9) and the instance counts 0, by the same rule for every group. The computed score
 * stays in the report beside it.
 */
export function countedScore(evaluation: { readonly score: Pick<InstanceScore, 'score'>; readonly hardFailures: readonly unknown[] }): number {
  return evaluation.hardFailures.length > 0 ? 0 : evaluation.score.score;
}
