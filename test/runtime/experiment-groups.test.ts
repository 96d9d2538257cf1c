// The main job end to end (issue 5): one seed, groups A, B and C with the reference policy,
// real ds-controller/ds-writer/ds-runtime processes. Fairness is read from the stores (ledgers,
// deliveries), every run verifies and replays, and the same seed twice gives the same state.
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { InstanceResult } from '../../controller/instance-runner.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { checkReplay } from '../../writer/replay-check.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { controllerSetup, newInstanceOptions, runInstance, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';
import { storedEvents as stored, ofType, type StoredEvent as Stored } from '../support/stored-events.js';



describe('one seed, three groups, the reference policy', () => {
  let setup: ControllerSetup;
  const runs: Record<'A' | 'B' | 'C', InstanceResult> = {} as never;
  const events: Record<'A' | 'B' | 'C', Stored[]> = {} as never;

  beforeAll(async () => {
    setup = controllerSetup();
    for (const group of ['A', 'B', 'C'] as const) {
      runs[group] = await runInstance(newInstanceOptions(setup, { name: `group-${group}`, group, model: { adapter: 'reference' } }));
      events[group] = stored(runs[group].runDir);
    }
  }, 240_000);

  it('each run finishes, verifies (chain, signatures, plan, ledgers) and replays to its stored state', () => {
    for (const group of ['A', 'B', 'C'] as const) {
      const run = runs[group];
      expect(run.status, group).toBe('finished');
      expect(verifyDirectory(run.runDir).failures, group).toEqual([]);
      const plan = checkRunFollowsPlan(run.runDir, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR });
      expect(plan.failures, group).toEqual([]);
      const replay = checkReplay(path.join(run.runDir, RUN_FILES.store));
      expect(replay.match, group).toBe(true);
    }
  });

  it('gives every group the same schedule, deliveries and budgets, and the same number of model calls (from the ledgers)', () => {
    const ledgers = (g: 'A' | 'B' | 'C') => ofType(events[g], 'ExperimentEvent.BudgetLedgerRecorded').map((e) => ({ wake: e.payload['wake_id'], granted: e.payload['granted'], model_calls: (e.payload['used'] as { model_calls: number }).model_calls }));
    const deliveries = (g: 'A' | 'B' | 'C') => ofType(events[g], 'ExperimentEvent.InterventionDelivered').map((e) => [e.payload['wake_id'], e.payload['intervention_id']]);
    const wakes = (g: 'A' | 'B' | 'C') => ofType(events[g], 'ExperimentEvent.WakeStarted').map((e) => [e.payload['wake_id'], e.payload['budget']]);
    for (const g of ['B', 'C'] as const) {
      expect(ledgers(g)).toEqual(ledgers('A'));
      expect(deliveries(g)).toEqual(deliveries('A'));
      expect(wakes(g)).toEqual(wakes('A'));
    }
    expect(ledgers('A').length).toBe(runs.A.wakesTotal);
  });

  it('the subject works: model calls recorded before use, executions, claims with evidence, checkpoints every completed wake', () => {
    for (const group of ['A', 'B', 'C'] as const) {
      const e = events[group];
      expect(ofType(e, 'ModelOutputEvent.ModelAnswered').length, group).toBeGreaterThan(0);
      expect(ofType(e, 'ActionEvent.ToolSucceeded').length, group).toBeGreaterThan(0);
      expect(ofType(e, 'ExperimentEvent.CheckpointRecorded').length, group).toBeGreaterThan(runs[group].wakesTotal - 3);
      // Every action proposal follows the model answer of its wake: nothing is executed from unrecorded output.
      const firstAnswer = ofType(e, 'ModelOutputEvent.ModelAnswered')[0]!.seq;
      expect(ofType(e, 'ActionEvent.ActionProposed').every((p) => p.seq > firstAnswer)).toBe(true);
    }
  });

  it('re-planning: A and B record each plan revision as rejected (capability_disabled); C accepts valid ones', () => {
    for (const group of ['A', 'B'] as const) {
      const rejected = ofType(events[group], 'PlanEvent.PlanRevisionRejected');
      expect(ofType(events[group], 'PlanEvent.PlanRevisionAccepted'), group).toEqual([]);
      expect(rejected.every((r) => r.payload['reason_code'] === 'capability_disabled'), group).toBe(true);
      expect(rejected.length, group).toBe(ofType(events[group], 'PlanEvent.PlanRevisionProposed').length);
    }
    expect(ofType(events.C, 'PlanEvent.PlanRevisionProposed').length).toBeGreaterThan(0);
    expect(ofType(events.C, 'PlanEvent.PlanRevisionAccepted').length).toBeGreaterThan(0);
  });

  it('the same seed run twice gives the same final state hash', async () => {
    const again = await runInstance(newInstanceOptions(setup, { name: 'group-C-again', group: 'C', groupBlindId: 'inst-group-C', model: { adapter: 'reference' } }));
    const first = checkReplay(path.join(runs.C.runDir, RUN_FILES.store));
    const second = checkReplay(path.join(again.runDir, RUN_FILES.store));
    expect(second.replay.state_hash).toBe(first.replay.state_hash);
  }, 120_000);
});
