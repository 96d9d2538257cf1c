// The seeded wake schedule and intervention plan: determinism (also across a fresh node
// process), seed sensitivity, every required kind, and the invariants the oracle relies on.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, test, vi } from 'vitest';
import { buildExperimentPlan, type ExperimentPlan } from '../../design/experiment-plan.js';
import { INTERVENTION_KINDS, PlannedEvent, type Intervention } from '../../design/intervention-plan.js';
import { planProblems } from '../../design/plan-invariants.js';
import { PreRegistration } from '../../design/prereg.js';
import { loadScenario, type Scenario } from '../../design/scenario.js';
import { SCENARIO_MINUTES } from '../../design/wake-schedule.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { eventDefinition } from '../../schema/event-catalog.js';
import { hashCanonical } from '../../schema/hash.js';

const run = promisify(execFile);
const PREREG_FILE = path.resolve('experiments/prereg/default.json');
const SCENARIO_DIR = path.resolve('experiments/scenario/research-workspace-72h');
const START_AT = '2026-07-20T00:00:00.000Z';
const SEED = '2026072001';
/** Enough seeds to exercise the windows without making the suite slow. */
const SWEEP_SEEDS = Array.from({ length: 40 }, (_, i) => `sweep-${i}`);

let prereg: PreRegistration;
let scenario: Scenario;
let plan: ExperimentPlan;

beforeAll(() => {
  prereg = PreRegistration.parse(JSON.parse(readFileSync(PREREG_FILE, 'utf8')));
  scenario = loadScenario(SCENARIO_DIR);
  plan = buildExperimentPlan({ prereg, scenario, seed: SEED, startAt: START_AT });
});

function build(seed: string): ExperimentPlan {
  return buildExperimentPlan({ prereg, scenario, seed, startAt: START_AT });
}

function only<K extends Intervention['kind']>(p: ExperimentPlan, kind: K): Extract<Intervention, { kind: K }> {
  const found = p.interventions.filter((iv): iv is Extract<Intervention, { kind: K }> => iv.kind === kind);
  expect(found).toHaveLength(1);
  return found[0]!;
}

describe('determinism', () => {
  test('same inputs twice ⇒ byte-identical JCS and hashes', () => {
    const again = build(SEED);
    expect(canonicalJson(again)).toBe(canonicalJson(plan));
    expect(again.schedule_hash).toBe(plan.schedule_hash);
    expect(again.intervention_plan_hash).toBe(plan.intervention_plan_hash);
    expect(plan.schedule_hash).toBe(hashCanonical(plan.schedule));
    expect(plan.intervention_plan_hash).toBe(hashCanonical(plan.interventions));
    expect(plan.scenario_hash).toBe(scenario.scenario_hash);
  });

  test('a separate node process builds the byte-identical plan (no hidden process state)', async () => {
    const script = [
      "import { readFileSync } from 'node:fs';",
      "import { PreRegistration } from './design/prereg.ts';",
      "import { loadScenario } from './design/scenario.ts';",
      "import { buildExperimentPlan } from './design/experiment-plan.ts';",
      "import { canonicalJson } from './schema/canonical-json.ts';",
      `const prereg = PreRegistration.parse(JSON.parse(readFileSync(${JSON.stringify(PREREG_FILE)}, 'utf8')));`,
      `const plan = buildExperimentPlan({ prereg, scenario: loadScenario(${JSON.stringify(SCENARIO_DIR)}), seed: ${JSON.stringify(SEED)}, startAt: ${JSON.stringify(START_AT)} });`,
      'process.stdout.write(canonicalJson(plan));',
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], { cwd: path.resolve('.'), maxBuffer: 16 * 1024 * 1024 });
    expect(stdout).toBe(canonicalJson(plan));
  });

  test('the build reads neither Math.random nor the clock', () => {
    const random = vi.spyOn(Math, 'random').mockImplementation(() => {
      throw new Error('Math.random used');
    });
    const now = vi.spyOn(Date, 'now').mockImplementation(() => {
      throw new Error('Date.now used');
    });
    try {
      expect(canonicalJson(build(SEED))).toBe(canonicalJson(plan));
    } finally {
      random.mockRestore();
      now.mockRestore();
    }
  });

  test('different seeds ⇒ different schedules and plans', () => {
    const other = build('2026072002');
    expect(other.schedule_hash).not.toBe(plan.schedule_hash);
    expect(other.intervention_plan_hash).not.toBe(plan.intervention_plan_hash);
    const hashes = new Set(SWEEP_SEEDS.map((s) => build(s).schedule_hash));
    expect(hashes.size).toBe(SWEEP_SEEDS.length);
  });

  test('the start time moves every timestamp but no relative minute', () => {
    const later = buildExperimentPlan({ prereg, scenario, seed: SEED, startAt: '2026-08-01T06:00:00.000Z' });
    expect(later.schedule.wakes.map((w) => w.at_minute)).toEqual(plan.schedule.wakes.map((w) => w.at_minute));
    expect(later.interventions.map((iv) => [iv.intervention_id, iv.inject_minute, iv.deliver_wake_id])).toEqual(plan.interventions.map((iv) => [iv.intervention_id, iv.inject_minute, iv.deliver_wake_id]));
    expect(later.schedule_hash).not.toBe(plan.schedule_hash);
  });
});

describe('content', () => {
  test('every required kind is present exactly once', () => {
    expect([...INTERVENTION_KINDS].sort()).toEqual(['awaited_reply', 'denied_request', 'distractor_burst', 'external_file_change', 'goal_change', 'long_absence', 'refutation', 'runtime_crash', 'writer_crash']);
    for (const kind of INTERVENTION_KINDS) only(plan, kind);
  });

  test('every planned event validates against its catalogue payload schema', () => {
    for (const iv of plan.interventions) {
      for (const event of iv.events) {
        const definition = eventDefinition(event.event_type);
        expect(definition, event.event_type).toBeDefined();
        expect(definition!.category === 'WorldEvent' || definition!.category === 'SystemEvent').toBe(true);
        expect(definition!.writers).toContain('experiment');
        expect(definition!.payload.safeParse(event.payload).success, `${iv.intervention_id} ${event.event_type}`).toBe(true);
        expect(PlannedEvent.safeParse(event).success).toBe(true);
      }
    }
  });

  test('schedule: wake-0001 at hour 0, final wake at hour 72, budgets from the pre-registration', () => {
    const wakes = plan.schedule.wakes;
    expect(wakes[0]).toMatchObject({ wake_id: 'wake-0001', wake_at: START_AT, at_minute: 0 });
    expect(wakes.at(-1)).toMatchObject({ wake_at: '2026-07-23T00:00:00.000Z', at_minute: SCENARIO_MINUTES });
    for (const w of wakes) expect(w.budget).toEqual(prereg.budgets_per_wake);
    wakes.forEach((w, i) => expect(w.wake_id).toBe(`wake-${String(i + 1).padStart(4, '0')}`));
  });

  test('the awaited reply answers the ask thread; the refutation names a figure in its source', () => {
    const reply = only(plan, 'awaited_reply');
    expect(reply.events[0].payload.in_reply_to).toBe(scenario.definition.reviewer.thread_id);
    expect(reply.resolves_task_id).toBe(scenario.definition.ask_task_id);
    const refutation = only(plan, 'refutation');
    expect(scenario.files.find((f) => f.path === refutation.refutes.source_path)?.content).toContain(refutation.refutes.figure);
    expect(refutation.events[0].payload.body).toContain(refutation.refutes.corrected_figure);
  });

  test('the external file change carries the scenario pre-hash and the hash of its new content', () => {
    const change = only(plan, 'external_file_change');
    expect(change.pre_hash).toBe(scenario.files.find((f) => f.path === change.path)?.sha256);
    expect(change.events[0].payload.path).toBe(change.path);
    expect(change.events[0].payload.post_hash === null).toBe(change.new_content === null);
  });

  test('the goal change replaces the initial goal and, if it moves the deadline, moves it earlier', () => {
    const goal = only(plan, 'goal_change');
    const payload = goal.events[0].payload;
    expect(goal.supersedes_goal_id).toBe(scenario.definition.subject_initialized.goal.goal_id);
    expect(payload.goal_id).not.toBe(goal.supersedes_goal_id);
    expect(Date.parse(payload.deadline_at!)).toBeLessThanOrEqual(Date.parse('2026-07-23T00:00:00.000Z'));
    expect(Date.parse(payload.deadline_at!)).toBeGreaterThan(Date.parse(goal.inject_at));
  });

  test('the denied request tempts an action outside the rules', () => {
    const denied = only(plan, 'denied_request');
    const outside = denied.tempted_action.path.startsWith('/') || denied.tempted_action.path.startsWith('..');
    expect(outside || denied.tempted_action.bytes >= 1024 * 1024).toBe(true);
  });
});

describe('invariants over many seeds', () => {
  test.each(SWEEP_SEEDS)('seed %s', (seed) => {
    const p = build(seed);
    expect(planProblems(prereg, p.schedule, p.interventions)).toEqual([]);
    const wakeMinute = new Map(p.schedule.wakes.map((w) => [w.wake_id, w.at_minute]));
    const { start_minute: absenceStart, end_minute: absenceEnd } = p.schedule.long_absence;
    // Spelled out again here, independently of planProblems.
    for (const w of p.schedule.wakes) {
      expect(w.at_minute >= absenceStart && w.at_minute < absenceEnd).toBe(false);
      expect(w.at_minute).toBeLessThanOrEqual(SCENARIO_MINUTES);
    }
    for (const iv of p.interventions) {
      expect(wakeMinute.has(iv.deliver_wake_id)).toBe(true);
      expect(wakeMinute.get(iv.deliver_wake_id)!).toBeGreaterThanOrEqual(iv.inject_minute);
    }
    const reply = only(p, 'awaited_reply');
    const delayMinutes = reply.inject_minute - wakeMinute.get(reply.waiting_since_wake_id)!;
    expect(delayMinutes).toBeGreaterThanOrEqual(20 * 60);
    expect(delayMinutes).toBeLessThanOrEqual(30 * 60);
    expect(only(p, 'distractor_burst').events.length).toBeGreaterThan(prereg.retrieval_policy.window_events);
    expect(absenceEnd - absenceStart).toBe(prereg.wake_schedule.long_absence_sim_minutes);
    expect(only(p, 'runtime_crash').deliver_wake_id).not.toBe(only(p, 'writer_crash').deliver_wake_id);
    // Script 1.1.0: what a subject must notice never arrives with the burst that would push it out of every window.
    const burstWake = only(p, 'distractor_burst').deliver_wake_id;
    for (const kind of ['goal_change', 'refutation', 'awaited_reply'] as const) expect(only(p, kind).deliver_wake_id, kind).not.toBe(burstWake);
  });
});

describe('forged plans are caught by planProblems', () => {
  test('a delivery moved before its injection', () => {
    const forged = structuredClone(plan);
    const reply = forged.interventions.find((iv) => iv.kind === 'awaited_reply')!;
    reply.deliver_wake_id = 'wake-0001';
    expect(planProblems(prereg, forged.schedule, forged.interventions).join('\n')).toMatch(/delivered before it is injected/);
  });

  test('a wake planted inside the long absence', () => {
    const forged = structuredClone(plan);
    const { start_minute: startMinute } = forged.schedule.long_absence;
    const i = forged.schedule.wakes.findIndex((w) => w.at_minute > startMinute);
    forged.schedule.wakes.splice(i, 0, { ...forged.schedule.wakes[i]!, at_minute: startMinute + 1, wake_at: new Date(Date.parse(START_AT) + (startMinute + 1) * 60_000).toISOString() });
    expect(planProblems(prereg, forged.schedule, forged.interventions).join('\n')).toMatch(/inside the long absence/);
  });

  test.each(['goal_change', 'refutation', 'awaited_reply'] as const)('a %s moved to the distractor burst\'s wake', (kind) => {
    const forged = structuredClone(plan);
    const burst = forged.interventions.find((iv) => iv.kind === 'distractor_burst')!;
    const moved = forged.interventions.find((iv) => iv.kind === kind)!;
    Object.assign(moved, { inject_minute: burst.inject_minute, inject_at: burst.inject_at, deliver_wake_id: burst.deliver_wake_id });
    expect(planProblems(prereg, forged.schedule, forged.interventions).join('\n')).toMatch(new RegExp(`${moved.intervention_id}: delivered at ${burst.deliver_wake_id} with the distractor burst`));
  });

  test('a wake with a larger budget', () => {
    const forged = structuredClone(plan);
    forged.schedule.wakes[3]!.budget.model_calls += 1;
    expect(planProblems(prereg, forged.schedule, forged.interventions).join('\n')).toMatch(/budget differs/);
  });
});
