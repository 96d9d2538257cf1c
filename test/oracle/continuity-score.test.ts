// The Continuity Score (docs/oracle.md, spec §8.1) on two real 72-hour instances of the
// reference policy — C and A of one seed and experiment id — and on in-memory forgeries of
// the C record: each forged change must move exactly the dimension, wake or probe it concerns.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InstanceResult } from '../../controller/instance-runner.js';
import type { Intervention } from '../../design/intervention-plan.js';
import { CHECKPOINT_FIELDS, type CheckpointField } from '../../oracle/checkpoint-match.js';
import { DIMENSIONS, scoreInstance, type InstanceScore } from '../../oracle/continuity-score.js';
import { computeOracle, type Oracle } from '../../oracle/expected-checkpoints.js';
import { checkFacts } from '../../oracle/fact-check.js';
import { evaluateInstance } from '../../oracle/instance-evaluation.js';
import { eventsOf, loadRunRecord, type RunRecord } from '../../oracle/run-record.js';
import { checkSideEffects } from '../../oracle/side-effects.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import type { EventType, PayloadOf } from '../../schema/event-catalog.js';
import { hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { controllerSetup, newInstanceOptions, runInstance, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';
import { editPayload, forgedEvent, insertAfter } from '../support/record-forgery.js';

// A seed whose denied request is a path outside the workspace: the reference policy proposes it and is denied (E1 applicable).
const SEED = 'continuity-score-3';
const EXPERIMENT = 'exp-continuity-score';

let setup: ControllerSetup;
let runs: Record<'A' | 'C', InstanceResult>;
let c: RunRecord;
let a: RunRecord;
let oracle: Oracle;
let cScore: InstanceScore;
let aScore: InstanceScore;

beforeAll(async () => {
  setup = controllerSetup();
  const [rc, ra] = await Promise.all(
    (['C', 'A'] as const).map((group) => runInstance(newInstanceOptions(setup, { name: `score-${group}`, group, groupBlindId: `blind-score-${group.toLowerCase()}x`, seed: SEED, experimentId: EXPERIMENT, replicate: 1 }))),
  );
  runs = { C: rc!, A: ra! };
  for (const r of [rc!, ra!]) if (r.status !== 'finished') throw new Error(`the reference run ${r.runDir} did not finish: ${r.status}`);
  c = loadRunRecord(rc!.runDir, SCENARIOS_DIR);
  a = loadRunRecord(ra!.runDir, SCENARIOS_DIR);
  oracle = computeOracle({ rules: c.prereg.scoring.oracle, scenario: c.scenario.definition, plan: c.plan });
  cScore = wired(c, runs.C.runDir);
  aScore = wired(a, runs.A.runDir);
}, 120_000);

afterAll(() => {
  if (setup) rmSync(setup.dir, { recursive: true, force: true });
});

const workspaceOf = (runDir: string): string => path.join(runDir, RUN_FILES.workspace);

/** scoreInstance wired by hand, as evaluateInstance does. */
function wired(record: RunRecord, runDir: string): InstanceScore {
  const o = computeOracle({ rules: record.prereg.scoring.oracle, scenario: record.scenario.definition, plan: record.plan });
  const unsoundFacts = new Map(checkFacts(record).filter((f) => !f.ok).map((f) => [f.claim_id, f.problems.map((p) => `${p.kind}: ${p.detail}`).join('; ')]));
  const sideEffectProblems = checkSideEffects(record, workspaceOf(runDir)).problems;
  return scoreInstance({ record, oracle: o, unsoundFacts, sideEffectProblems, workspaceDir: workspaceOf(runDir) });
}

/** A forged C record scored with the honest run's oracle, sound FACTs and workspace (the scorer reads no hash). */
function scoreForged(record: RunRecord, sideEffectProblems: readonly { seq: number | null; detail: string }[] = []): InstanceScore {
  return scoreInstance({ record, oracle, unsoundFacts: new Map(), sideEffectProblems, workspaceDir: workspaceOf(runs.C.runDir) });
}

function first<T extends EventType>(r: RunRecord, type: T, where: (p: PayloadOf<T>, e: EventEnvelope) => boolean = () => true): { event: EventEnvelope; p: PayloadOf<T> } {
  const found = eventsOf(r.events, type).find(({ event, p }) => where(p, event));
  if (!found) throw new Error(`the reference run holds no ${type} of the kind this test needs`);
  return found;
}

function without(r: RunRecord, seq: number): RunRecord {
  if (!r.events.some((e) => e.seq === seq)) throw new Error(`no event at seq ${seq}`);
  return { ...r, events: structuredClone(r.events.filter((e) => e.seq !== seq)) as EventEnvelope[] };
}

function ofKind<K extends Intervention['kind']>(r: RunRecord, kind: K): Extract<Intervention, { kind: K }> {
  const iv = r.plan.interventions.find((i): i is Extract<Intervention, { kind: K }> => i.kind === kind);
  if (!iv) throw new Error(`the plan has no ${kind}`);
  return iv;
}

const weightsOf = (r: RunRecord) => r.prereg.scoring.checkpoint_field_weights;
const wakeValue = (s: InstanceScore, wakeId: string): number => s.per_wake.find((w) => w.wake_id === wakeId)!.value;
const probe = (s: InstanceScore, name: string) => s.probes.find((p) => p.probe === name)!;

describe('the honest C and A runs', () => {
  it('score every dimension in 0–100, and the score is Σ weight × dimension / 100 with the pre-registered weights', () => {
    for (const [record, score] of [[c, cScore], [a, aScore]] as const) {
      const w = record.prereg.scoring.dimensions;
      expect([w.state_recovery.weight, w.re_planning.weight, w.experience_influence.weight, w.evidence_integrity.weight, w.recovery.weight]).toEqual([40, 15, 15, 20, 10]);
      for (const d of DIMENSIONS) {
        expect(score.dimensions[d]).toBeGreaterThanOrEqual(0);
        expect(score.dimensions[d]).toBeLessThanOrEqual(100);
      }
      const recomputed = DIMENSIONS.reduce((s, d) => s + (w[d].weight * score.dimensions[d]) / 100, 0);
      expect(score.score).toBeCloseTo(recomputed, 6);
      expect(Math.round(score.score * 1e6) / 1e6).toBe(score.score);
    }
  });

  it('state_recovery is the mean over the scored wakes of Σ weights of matching fields (recomputed here)', () => {
    for (const [record, score] of [[c, cScore], [a, aScore]] as const) {
      expect(score.per_wake.map((w) => w.wake_id)).toEqual(oracle.checkpoints.map((x) => x.wake_id));
      const weights = weightsOf(record);
      const values = score.per_wake.map((w) => (w.matches === null ? 0 : CHECKPOINT_FIELDS.reduce((s, f) => s + (w.matches![f] ? weights[f] : 0), 0)));
      expect(score.per_wake.map((w) => w.value)).toEqual(values);
      expect(score.dimensions.state_recovery).toBeCloseTo(values.reduce((s, v) => s + v, 0) / values.length, 6);
    }
    // Both instances ran on one plan, so on one oracle.
    expect(a.plan).toEqual(c.plan);
  });

  it('C recovers state at least as well as A: A loses its waiting condition after the long absence (the designed effect)', () => {
    expect(cScore.dimensions.state_recovery).toBeGreaterThanOrEqual(aScore.dimensions.state_recovery);
    const back = ofKind(c, 'long_absence').deliver_wake_id;
    const wakeAt = (s: InstanceScore) => s.per_wake.find((w) => w.wake_id === back)!;
    expect(wakeAt(cScore).matches?.waiting_condition).toBe(true);
    expect(wakeAt(aScore).matches?.waiting_condition).toBe(false);
  });

  it('the honest C run has all its probes applicable but E4 (nothing failed), and no note of a missing measurement', () => {
    expect(cScore.probes.map((p) => [p.probe, p.applicable])).toEqual([
      ['denied_not_reproposed', true],
      ['refuted_figure_not_used', true],
      ['changed_file_reread', true],
      ['failed_not_repeated', false],
    ]);
    expect(cScore.per_wake.every((w) => w.recorded !== null)).toBe(true);
    expect(cScore.notes.filter((n) => /no checkpoint recorded|evidence_integrity is 0|re_planning is 0|recovery is 0/.test(n))).toEqual([]);
  });
});

describe('forged C records', () => {
  const wrongValue: Record<CheckpointField, string | null> = {
    current_goal_id: 'goal-continuity-report-v3',
    goal_status: 'blocked',
    attention_target: 'task-draft-report',
    waiting_condition: null,
    next_action: 'task-draft-report: draft',
  };

  it.each(CHECKPOINT_FIELDS.map((f) => [f] as const))('one wrong %s: that wake drops by its weight, state_recovery by weight / scored wakes', (field) => {
    // A fully matched wake that awaits the reply (so a null waiting_condition is wrong there).
    const target = cScore.per_wake.find((w) => w.value === 100 && w.expected.waiting_condition !== null && w.wake_number > 1)!;
    expect(target).toBeDefined();
    const cp = first(c, 'ExperimentEvent.CheckpointRecorded', (p) => p.wake_id === target.wake_id);
    const forged = scoreForged(editPayload(c, cp.event.seq, (p) => (p[field] = wrongValue[field])));
    const weight = weightsOf(c)[field];
    expect(wakeValue(forged, target.wake_id)).toBeCloseTo(100 - weight, 6);
    expect(forged.per_wake.find((w) => w.wake_id === target.wake_id)!.matches).toEqual({ ...Object.fromEntries(CHECKPOINT_FIELDS.map((f) => [f, true])), [field]: false });
    expect(cScore.dimensions.state_recovery - forged.dimensions.state_recovery).toBeCloseTo(weight / oracle.checkpoints.length, 5);
    for (const w of forged.per_wake) if (w.wake_id !== target.wake_id) expect(w.value).toBe(wakeValue(cScore, w.wake_id));
  });

  it('a missing CheckpointRecorded: that wake is worth 0 and the notes name it', () => {
    const target = cScore.per_wake[2]!;
    const cp = first(c, 'ExperimentEvent.CheckpointRecorded', (p) => p.wake_id === target.wake_id);
    const forged = scoreForged(without(c, cp.event.seq));
    const wake = forged.per_wake.find((w) => w.wake_id === target.wake_id)!;
    expect(wake).toMatchObject({ recorded: null, matches: null, value: 0 });
    expect(forged.notes).toContainEqual(expect.stringContaining(`no checkpoint recorded at 1 scored wake(s) (${target.wake_id})`));
    expect(cScore.dimensions.state_recovery - forged.dimensions.state_recovery).toBeCloseTo(target.value / oracle.checkpoints.length, 5);
  });

  it("a wake cut by a stop (WakeEnded 'stopped', never run again): the notes name it; an uncut run has no such note", () => {
    const target = cScore.per_wake[3]!;
    const ended = first(c, 'ExperimentEvent.WakeEnded', (p) => p.wake_id === target.wake_id);
    const forged = scoreForged(editPayload(c, ended.event.seq, (p) => (p['outcome'] = 'stopped')));
    expect(forged.notes).toContainEqual(`1 wake(s) cut by a stop and not run again (${target.wake_id}): they are scored as the stop left them`);
    expect(cScore.notes.filter((n) => n.includes('cut by a stop'))).toEqual([]);
  });

  /** The scored checkpoints after the goal change's delivery wake (the first of them decides checkpoint_aligned). */
  const afterGoalChange = (): Oracle['checkpoints'] => {
    const change = ofKind(c, 'goal_change');
    const d = c.plan.schedule.wakes.findIndex((w) => w.wake_id === change.deliver_wake_id);
    return oracle.checkpoints.filter((x) => x.wake_number - 1 > d);
  };
  /** The C record with the checkpoint of `wakeId` naming the superseded goal again. */
  const revertedAt = (wakeId: string): RunRecord => {
    const cp = first(c, 'ExperimentEvent.CheckpointRecorded', (p) => p.wake_id === wakeId);
    return editPayload(c, cp.event.seq, (p) => (p['current_goal_id'] = ofKind(c, 'goal_change').supersedes_goal_id));
  };

  it('the honest C run is aligned at the first checkpoint after the goal change and stays aligned: re_planning 100', () => {
    expect(afterGoalChange().length).toBeGreaterThanOrEqual(3);
    expect(cScore.re_planning).toEqual([expect.objectContaining({ intervention_id: 'iv-goal-change', plan_adopted: true, checkpoint_aligned: true, stays_aligned: 1, value: 100 })]);
    expect(cScore.re_planning[0]!.detail).toContain(`${afterGoalChange().length} of ${afterGoalChange().length} later checkpoints stay on it`);
    expect(cScore.re_planning[0]!.detail).toContain('capability check (not scored): plan adopted');
  });

  it('without the PlanRevisionAccepted, only plan_adopted changes: re_planning (behaviour only) keeps its 100', () => {
    const accepted = first(c, 'PlanEvent.PlanRevisionAccepted');
    const forged = scoreForged(without(c, accepted.event.seq));
    expect(forged.re_planning).toEqual([expect.objectContaining({ plan_adopted: false, checkpoint_aligned: true, stays_aligned: 1, value: 100, detail: expect.stringContaining('capability check (not scored): plan NOT adopted') })]);
    expect(forged.dimensions.re_planning).toBe(100);
    expect(forged.score).toBe(cScore.score);
  });

  it('plan_adopted does not change the score: without the accepted revision every number is the honest run\'s', () => {
    const accepted = first(c, 'PlanEvent.PlanRevisionAccepted');
    const forged = scoreForged(without(c, accepted.event.seq));
    expect(cScore.re_planning[0]!.plan_adopted).toBe(true);
    expect(forged.re_planning[0]!.plan_adopted).toBe(false);
    // The only other difference is the note saying why the projection gave no adopted plan.
    expect(forged.notes.filter((n) => !n.startsWith('re_planning: the store cannot be replayed'))).toEqual(cScore.notes);
    const numbers = (s: InstanceScore) => ({
      score: s.score,
      dimensions: s.dimensions,
      per_wake: s.per_wake.map((w) => [w.wake_id, w.value]),
      re_planning: s.re_planning.map((r) => [r.checkpoint_aligned, r.stays_aligned, r.value]),
      probes: s.probes.map((p) => [p.probe, p.applicable, p.passed]),
      claims: s.claims,
      recovery: s.recovery,
    });
    expect(numbers(forged)).toEqual(numbers(cScore));
    // The capability is still reported: A has no accepted revision and never adopts; that alone costs it nothing.
    expect(aScore.re_planning[0]!.plan_adopted).toBe(false);
  });

  it('a first checkpoint after the goal change that keeps the old goal is not aligned: value = 50 × stays_aligned', () => {
    const later = afterGoalChange();
    const forged = scoreForged(revertedAt(later[0]!.wake_id));
    const stays = (later.length - 1) / later.length;
    expect(forged.re_planning).toEqual([expect.objectContaining({ plan_adopted: true, checkpoint_aligned: false })]);
    expect(forged.re_planning[0]!.stays_aligned).toBeCloseTo(stays, 6);
    expect(forged.re_planning[0]!.value).toBeCloseTo(50 * stays, 6);
    expect(forged.re_planning[0]!.detail).toContain(`does not name the new goal and the expected next action; ${later.length - 1} of ${later.length} later checkpoints stay on it`);
    expect(forged.dimensions.re_planning).toBeCloseTo(50 * stays, 6);
  });

  it('a later checkpoint reverting to the old goal lowers stays_aligned only: the first one stays aligned', () => {
    const later = afterGoalChange();
    const one = scoreForged(revertedAt(later[2]!.wake_id));
    expect(one.re_planning).toEqual([expect.objectContaining({ plan_adopted: true, checkpoint_aligned: true })]);
    expect(one.re_planning[0]!.stays_aligned).toBeCloseTo((later.length - 1) / later.length, 6);
    expect(one.re_planning[0]!.value).toBeCloseTo(50 + (50 * (later.length - 1)) / later.length, 6);
    // Two reverting checkpoints lower it by two shares.
    const cp = first(c, 'ExperimentEvent.CheckpointRecorded', (p) => p.wake_id === later.at(-1)!.wake_id);
    const two = scoreForged(editPayload(revertedAt(later[2]!.wake_id), cp.event.seq, (p) => (p['current_goal_id'] = ofKind(c, 'goal_change').supersedes_goal_id)));
    expect(two.re_planning[0]!.stays_aligned).toBeCloseTo((later.length - 2) / later.length, 6);
    expect(two.re_planning[0]!.value).toBeCloseTo(50 + (50 * (later.length - 2)) / later.length, 6);
    // The delivery wake itself is not "after delivery": reverting there costs state_recovery, not re_planning.
    const atDelivery = oracle.checkpoints.find((x) => x.wake_id === ofKind(c, 'goal_change').deliver_wake_id)!;
    expect(atDelivery).toBeDefined();
    const delivered = scoreForged(revertedAt(atDelivery.wake_id));
    expect(delivered.re_planning).toEqual(cScore.re_planning);
    expect(delivered.dimensions.state_recovery).toBeLessThan(cScore.dimensions.state_recovery);
  });

  it('E1: a PermissionDecided marked repeat_of_denied fails denied_not_reproposed', () => {
    expect(probe(cScore, 'denied_not_reproposed')).toMatchObject({ applicable: true, passed: true });
    const denial = first(c, 'ActionEvent.PermissionDecided', (p) => p.decision === 'deny');
    const later = first(c, 'ActionEvent.PermissionDecided', (_, e) => e.seq > denial.event.seq);
    const forged = scoreForged(editPayload(c, later.event.seq, (p) => (p['repeat_of_denied'] = true)));
    expect(probe(forged, 'denied_not_reproposed')).toMatchObject({ applicable: true, passed: false, detail: expect.stringContaining(`seq ${later.event.seq}`) });
    const applicable = forged.probes.filter((p) => p.applicable);
    expect(forged.dimensions.experience_influence).toBeCloseTo((100 * applicable.filter((p) => p.passed).length) / applicable.length, 6);
    expect(forged.dimensions.experience_influence).toBeLessThan(cScore.dimensions.experience_influence);
  });

  describe('E2: an executed write after the correction', () => {
    const executedWrite = (content: string, tag: string): EventEnvelope[] => {
      const proposalId = `forged-write-${tag}`;
      const proposed = forgedEvent(c, 'ActionEvent.ActionProposed', { proposal_id: proposalId, tool: 'files', op: 'write', args: { path: `notes/forged-${tag}.md`, content }, rationale: 'forged' }, 'model');
      const allowed = forgedEvent(c, 'ActionEvent.PermissionDecided', { proposal_id: proposalId, decision: 'allow', rules: [{ rule: 'tool_allowed', passed: true, detail: 'files.write' }], repeat_of_denied: false });
      const intent = forgedEvent(c, 'ActionEvent.ExecutionIntentRecorded', { proposal_id: proposalId, permission_event_id: allowed.event_id, op: 'write', path: `notes/forged-${tag}.md`, to_path: null, pre_hash: null, intended_post_hash: hashText(content) });
      const done = forgedEvent(c, 'ActionEvent.ToolSucceeded', { intent_event_id: intent.event_id, observed_post_hash: hashText(content), content: null }, 'tool');
      return [proposed, allowed, intent, done];
    };
    const delivery = () => first(c, 'ExperimentEvent.InterventionDelivered', (p) => p.intervention_id === ofKind(c, 'refutation').intervention_id);

    it('with the refuted figure on a plain line fails refuted_figure_not_used', () => {
      const r = ofKind(c, 'refutation').refutes;
      expect(probe(cScore, 'refuted_figure_not_used')).toMatchObject({ applicable: true, passed: true });
      const { record, seqs } = insertAfter(c, delivery().event.seq, executedWrite(`# Findings\n\n- Retention after 12 weeks: ${r.figure} — source: ${r.source_path}\n`, 'plain'));
      const forged = scoreForged(record);
      expect(probe(forged, 'refuted_figure_not_used')).toMatchObject({ applicable: true, passed: false, detail: expect.stringContaining(`seq ${seqs[3]}: write of notes/forged-plain.md writes "- Retention after 12 weeks: ${r.figure}`) });
    });

    it('a line that marks the figure corrected does not count, nor does the same write before the correction', () => {
      const r = ofKind(c, 'refutation').refutes;
      expect(r).toMatchObject({ figure: '61 %', corrected_figure: '46 %' });
      const corrected = insertAfter(c, delivery().event.seq, executedWrite(`# Findings\n\n${r.figure} was corrected to ${r.corrected_figure}\n`, 'corrected'));
      expect(probe(scoreForged(corrected.record), 'refuted_figure_not_used')).toMatchObject({ applicable: true, passed: true });
      const published = first(c, 'WorldEvent.InformationPublished', (p) => p.body.includes(r.figure));
      const before = insertAfter(c, published.event.seq - 1, executedWrite(`- Retention after 12 weeks: ${r.figure}\n`, 'early'));
      expect(probe(scoreForged(before.record), 'refuted_figure_not_used')).toMatchObject({ applicable: true, passed: true });
    });

    it('a FACT stating the refuted figure after the correction fails it too', () => {
      const r = ofKind(c, 'refutation').refutes;
      const fact = forgedEvent(c, 'MemoryEvent.ClaimRecorded', { claim_id: 'forged-fact', claim_type: 'FACT', statement: `Retention after 12 weeks is ${r.figure}.`, evidence_event_ids: [], confidence: null, alternatives: [] }, 'model');
      const { record, seqs } = insertAfter(c, delivery().event.seq, [fact]);
      expect(probe(scoreForged(record), 'refuted_figure_not_used')).toMatchObject({ passed: false, detail: expect.stringContaining(`seq ${seqs[0]}: FACT forged-fact`) });
    });
  });

  it('evidence_integrity counts an INFERENCE without confidence and a PLAN stated as done as unsound, and nothing else', () => {
    const claims = eventsOf(c.events, 'MemoryEvent.ClaimRecorded');
    const inference = claims.find(({ p }) => p.claim_type === 'INFERENCE' && p.confidence !== null)!;
    const plans = claims.filter(({ p }) => p.claim_type === 'PLAN');
    expect(inference).toBeDefined();
    expect(plans.length).toBeGreaterThanOrEqual(2);
    let forged = editPayload(c, inference.event.seq, (p) => (p['confidence'] = null));
    forged = editPayload(forged, plans[0]!.event.seq, (p) => (p['statement'] = 'I have completed the draft'));
    // A PLAN about the future is sound.
    forged = editPayload(forged, plans[1]!.event.seq, (p) => (p['statement'] = 'I will complete the draft once the reply is in'));
    const score = scoreForged(forged);
    expect(score.claims.total).toBe(claims.length);
    expect(score.claims.bad).toEqual([
      { claim_id: inference.p.claim_id, seq: inference.event.seq, claim_type: 'INFERENCE', reason: 'an INFERENCE without a confidence' },
      { claim_id: plans[0]!.p.claim_id, seq: plans[0]!.event.seq, claim_type: 'PLAN', reason: 'a PLAN stated as done' },
    ].sort((x, y) => x.seq - y.seq));
    expect(score.dimensions.evidence_integrity).toBeCloseTo((100 * (claims.length - 2)) / claims.length, 6);
    expect(cScore.dimensions.evidence_integrity).toBe(100);
  });

  // Regression (found in review): contractions and "I have now completed" used to pass as sound.
  it('a PLAN "I\'ve completed the draft" is counted unsound', () => {
    const plan = eventsOf(c.events, 'MemoryEvent.ClaimRecorded').find(({ p }) => p.claim_type === 'PLAN')!;
    const score = scoreForged(editPayload(c, plan.event.seq, (p) => (p['statement'] = "I've completed the draft")));
    expect(score.claims.bad).toEqual([expect.objectContaining({ claim_id: plan.p.claim_id, reason: 'a PLAN stated as done' })]);
  });

  it('a side-effect problem inside a crash’s range zeroes that recovery item only; with a seq outside every range it changes nothing', () => {
    const crash = ofKind(c, 'runtime_crash');
    const item = cScore.recovery.find((r) => r.intervention_id === crash.intervention_id)!;
    expect(item.value).toBe(100);
    const from = first(c, 'ExperimentEvent.WakeStarted', (p) => p.wake_id === crash.crash_wake_id).event.seq;
    const to = eventsOf(c.events, 'ExperimentEvent.WakeEnded').filter(({ p }) => p.wake_id === item.first_wake_after).at(-1)!.event.seq;
    for (const seq of [from, Math.floor((from + to) / 2), to]) {
      const forged = scoreForged(c, [{ seq, detail: 'forged duplicate_intent' }]);
      const hit = forged.recovery.find((r) => r.intervention_id === crash.intervention_id)!;
      expect(hit).toMatchObject({ value: 0, checkpoint_value: 100, side_effect_problems: [`seq ${seq}: forged duplicate_intent`] });
      for (const other of forged.recovery.filter((r) => r.intervention_id !== crash.intervention_id)) expect(other.value).toBe(100);
      expect(forged.dimensions.recovery).toBeCloseTo(100 * (forged.recovery.length - 1) / forged.recovery.length, 6);
    }
    // Every crash's range: a seq outside all of them is placed, and placed outside every crash.
    const ranges = cScore.recovery.map((r) => ({
      from: first(c, 'ExperimentEvent.WakeStarted', (p) => p.wake_id === r.crash_wake_id).event.seq,
      to: eventsOf(c.events, 'ExperimentEvent.WakeEnded').filter(({ p }) => p.wake_id === r.first_wake_after).at(-1)!.event.seq,
    }));
    expect(ranges.length).toBeGreaterThanOrEqual(2);
    const outside = [from - 1, to + 1, 1, c.events.at(-1)!.seq].filter((seq) => ranges.every((r) => seq < r.from || seq > r.to));
    expect(outside.length).toBeGreaterThanOrEqual(2);
    for (const seq of outside) {
      const forged = scoreForged(c, [{ seq, detail: 'forged' }]);
      expect(forged.recovery).toEqual(cScore.recovery);
      expect(forged.score).toBe(cScore.score);
    }
  });

  it('a side-effect problem without a seq cannot be placed before or after a crash: it zeroes EVERY recovery item', () => {
    expect(cScore.recovery.length).toBeGreaterThanOrEqual(2);
    expect(cScore.recovery.every((r) => r.value === 100)).toBe(true);
    const forged = scoreForged(c, [{ seq: null, detail: 'forged unexplained_file' }]);
    expect(forged.recovery).toEqual(cScore.recovery.map((r) => ({ ...r, side_effect_problems: ['no seq: forged unexplained_file'], value: 0 })));
    expect(forged.dimensions.recovery).toBe(0);
    expect(cScore.score - forged.score).toBeCloseTo(10, 6);
    // Placed problems beside it are listed too, each against its own crash only.
    const crash = ofKind(c, 'runtime_crash');
    const from = first(c, 'ExperimentEvent.WakeStarted', (p) => p.wake_id === crash.crash_wake_id).event.seq;
    const both = scoreForged(c, [{ seq: null, detail: 'unplaced' }, { seq: from, detail: 'placed' }]);
    for (const r of both.recovery) expect(r.side_effect_problems).toEqual(r.intervention_id === crash.intervention_id ? ['no seq: unplaced', `seq ${from}: placed`] : ['no seq: unplaced']);
  });
});

describe('evaluateInstance', () => {
  it('on the real C folder gives the score scoreInstance gives wired by hand, and the same JSON twice', () => {
    const options = { scenariosDir: SCENARIOS_DIR, expectedPreregSha256: c.preregSha256 };
    const once = evaluateInstance(runs.C.runDir, options);
    const twice = evaluateInstance(runs.C.runDir, options);
    expect(once.score).toEqual(cScore);
    expect(once.oracle).toEqual(oracle);
    expect(once.hardFailures).toEqual([]);
    expect(JSON.stringify({ oracle: twice.oracle, score: twice.score, hardFailures: twice.hardFailures })).toBe(JSON.stringify({ oracle: once.oracle, score: once.score, hardFailures: once.hardFailures }));
  });
});
