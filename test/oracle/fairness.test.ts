// The batch's fairness check (docs/oracle.md "Fairness", spec §5.2, §19.1) on the A, B and C
// instances of one real replicate (same seed, same experiment id, reference policy), and on
// in-memory copies of their records with one group-dependent difference forged at a time.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InstanceManifest } from '../../design/manifest.js';
import { manifestsDifferOnlyByGroup } from '../../design/manifest.js';
import { checkFairness, type FairnessInstance } from '../../oracle/fairness.js';
import { eventsOf, loadRunRecord, type RunRecord } from '../../oracle/run-record.js';
import type { Group } from '../../design/groups.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import type { EventType, PayloadOf } from '../../schema/event-catalog.js';
import { ModelAnswered } from '../../schema/events/model-output-events.js';
import { controllerSetup, newInstanceOptions, runInstance, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';
import { cloneRecord, editPayload, forgedEvent, insertAfter } from '../support/record-forgery.js';

const SEED = 'fairness-1';
const EXPERIMENT = 'exp-fairness';
const GROUPS = ['A', 'B', 'C'] as const;

let setup: ControllerSetup;
let records: Record<Group, RunRecord>;

beforeAll(async () => {
  setup = controllerSetup();
  const results = await Promise.all(
    GROUPS.map((group) => runInstance(newInstanceOptions(setup, { name: `fair-${group}`, group, groupBlindId: `blind-fair-${group.toLowerCase()}x`, seed: SEED, experimentId: EXPERIMENT, replicate: 1 }))),
  );
  for (const r of results) if (r.status !== 'finished') throw new Error(`the reference run ${r.runDir} did not finish: ${r.status}`);
  const loaded = results.map((r) => loadRunRecord(r.runDir, SCENARIOS_DIR));
  records = { A: loaded[0]!, B: loaded[1]!, C: loaded[2]! };
}, 120_000);

afterAll(() => {
  if (setup) rmSync(setup.dir, { recursive: true, force: true });
});

/** The replicate's instances, A, B, C in that order, with `replace` standing in for some groups' records. */
function batch(replace: Partial<Record<Group, RunRecord>> = {}, replicate = 1): FairnessInstance[] {
  return GROUPS.map((group) => ({ group, replicate, record: replace[group] ?? records[group] }));
}

function check(instances: readonly FairnessInstance[], name: string) {
  const result = checkFairness(instances);
  const found = result.checks.find((x) => x.check === name);
  if (!found) throw new Error(`no fairness check ${name}`);
  return { ...result, check: found, failing: result.checks.filter((x) => !x.ok).map((x) => x.check) };
}

function first<T extends EventType>(r: RunRecord, type: T, where: (p: PayloadOf<T>, e: EventEnvelope) => boolean = () => true): { event: EventEnvelope; p: PayloadOf<T> } {
  const found = eventsOf(r.events, type).find(({ event, p }) => where(p, event));
  if (!found) throw new Error(`the reference run holds no ${type} of the kind this test needs`);
  return found;
}

function withManifest(r: RunRecord, edit: (m: InstanceManifest) => InstanceManifest): RunRecord {
  return { ...cloneRecord(r), manifest: edit(structuredClone(r.manifest!)) };
}

const ledger = (r: RunRecord, n = 3) => eventsOf(r.events, 'ExperimentEvent.BudgetLedgerRecorded')[n]!;

describe('an honest replicate', () => {
  it('passes every fairness check, and nothing voids the batch', () => {
    const { checks, voidReasons } = checkFairness(batch());
    expect(voidReasons).toEqual([]);
    expect(checks.map((x) => [x.check, x.ok])).toEqual([
      ['same_plan_per_replicate', true],
      ['manifests_differ_only_by_group', true],
      ['same_wakes_budgets_calls', true],
      ['same_wake_outcomes', true],
      ['same_deliveries', true],
      ['one_model_build_and_parameters', true],
      ['transport_retries (not voiding)', true],
      ['usage_by_behaviour (not voiding)', true],
    ]);
  });

  it('really ran three groups of one plan: the manifests differ in the group fields and the start time only', () => {
    expect(new Set(GROUPS.map((g) => records[g].manifest!.capabilities.persistent_state))).toEqual(new Set([false, true]));
    for (const g of ['B', 'C'] as const) {
      const diff = manifestsDifferOnlyByGroup(records.A.manifest!, records[g].manifest!);
      expect(diff).toContain('group_blind_id');
      expect(diff).toContain('group_config_hash');
      expect(diff.every((p) => /^(group_blind_id|group_config_hash|capabilities(\.|$)|started_at)/.test(p))).toBe(true);
      expect(records[g].plan).toEqual(records.A.plan);
    }
    // What each subject did differs (a real treatment effect), within the same granted budgets.
    const tokens = GROUPS.map((g) => eventsOf(records[g].events, 'ExperimentEvent.BudgetLedgerRecorded').reduce((s, { p }) => s + p.used.tokens, 0));
    expect(new Set(tokens).size).toBeGreaterThan(1);
  });

  it('compares groups within a replicate only: another replicate with another seed is not a difference', () => {
    const other = (g: Group): RunRecord => ({ ...records[g], plan: { ...records[g].plan, seed: 'fairness-other-replicate' } });
    const two = [...batch(), ...batch({ A: other('A'), B: other('B'), C: other('C') }, 2)];
    expect(checkFairness(two).voidReasons).toEqual([]);
  });
});

describe('forged differences', () => {
  it('a granted budget that differs for one group fails same_wakes_budgets_calls, naming the replicate and group', () => {
    const row = ledger(records.B);
    const forged = editPayload(records.B, row.event.seq, (p) => ((p['granted'] as { tokens: number }).tokens = 12_000));
    const r = check(batch({ B: forged }), 'same_wakes_budgets_calls');
    expect(r.failing).toEqual(['same_wakes_budgets_calls']);
    expect(r.check.detail).toBe('replicate 1: the budget ledger (wakes, granted budget or model calls per wake) of B differs from A');
    expect(r.voidReasons).toEqual([expect.stringMatching(/^same_wakes_budgets_calls: replicate 1: .* of B differs from A$/)]);
  });

  it("a wake cut by a stop in one group only (WakeEnded 'stopped', never run again) fails same_wake_outcomes, naming the wake", () => {
    const ended = eventsOf(records.B.events, 'ExperimentEvent.WakeEnded')[4]!;
    const forged = editPayload(records.B, ended.event.seq, (p) => (p['outcome'] = 'stopped'));
    const r = check(batch({ B: forged }), 'same_wake_outcomes');
    expect(r.failing).toEqual(['same_wake_outcomes']);
    expect(r.check.detail).toBe(`replicate 1: ${ended.p.wake_id} ended stopped in B, ${ended.p.outcome} in A (a wake cut by a stop is not run again)`);
    expect(r.voidReasons).toEqual([`same_wake_outcomes: ${r.check.detail}`]);
    // A wake the other group never ended is named too.
    const missing = { ...records.C, events: records.C.events.filter((e) => e.seq !== eventsOf(records.C.events, 'ExperimentEvent.WakeEnded')[6]!.event.seq) };
    expect(check(batch({ C: missing }), 'same_wake_outcomes').check.detail).toMatch(/^replicate 1: wake-\d+ ended never in C, (completed|crashed) in A$/);
  });

  it('model calls used that differ fail it', () => {
    const row = ledger(records.C, 5);
    const forged = editPayload(records.C, row.event.seq, (p) => ((p['used'] as { model_calls: number }).model_calls += 1));
    const r = check(batch({ C: forged }), 'same_wakes_budgets_calls');
    expect(r.failing).toEqual(['same_wakes_budgets_calls']);
    expect(r.check.detail).toContain('replicate 1');
    expect(r.check.detail).toContain('of C differs from A');
  });

  it('transport retries that differ do not void the batch (one pre-registered policy, the server\'s luck) but are reported per group', () => {
    const row = ledger(records.C, 7);
    const forged = editPayload(records.C, row.event.seq, (p) => ((p['used'] as { retries: number }).retries = 2));
    const { checks, voidReasons } = checkFairness(batch({ C: forged }));
    expect(voidReasons).toEqual([]);
    expect(checks.find((c) => c.check === 'transport_retries (not voiding)')?.detail).toMatch(/C 2\b/);
  });

  it('a missing wake in one ledger fails it', () => {
    const row = ledger(records.B, 9);
    const forged = { ...records.B, events: records.B.events.filter((e) => e.seq !== row.event.seq) };
    expect(check(batch({ B: forged }), 'same_wakes_budgets_calls').failing).toEqual(['same_wakes_budgets_calls']);
  });

  it('tokens and tool calls used that differ do NOT void: they are reported under usage_by_behaviour only', () => {
    const row = ledger(records.C, 4);
    const forged = editPayload(records.C, row.event.seq, (p) => {
      const used = p['used'] as { tokens: number; tool_calls: number };
      used.tokens += 1_000;
      used.tool_calls = used.tool_calls === 0 ? 1 : 0;
    });
    const r = check(batch({ C: forged }), 'usage_by_behaviour (not voiding)');
    expect(r.voidReasons).toEqual([]);
    expect(r.check.ok).toBe(true);
    const honest = checkFairness(batch()).checks.find((x) => x.check === 'usage_by_behaviour (not voiding)')!;
    expect(r.check.detail).not.toBe(honest.detail);
    expect(r.check.detail).toMatch(/A \d+ tokens, \d+ tool calls; B \d+ tokens, \d+ tool calls; C \d+ tokens, \d+ tool calls/);
  });

  it('an intervention delivered at another wake fails same_deliveries', () => {
    const delivered = first(records.B, 'ExperimentEvent.InterventionDelivered', (p) => p.intervention_id === 'iv-refutation');
    const wakes = records.B.plan.schedule.wakes;
    const next = wakes[wakes.findIndex((w) => w.wake_id === delivered.p.wake_id) + 1]!.wake_id;
    const forged = editPayload(records.B, delivered.event.seq, (p) => (p['wake_id'] = next));
    const r = check(batch({ B: forged }), 'same_deliveries');
    expect(r.failing).toEqual(['same_deliveries']);
    expect(r.check.detail).toBe('replicate 1: the intervention deliveries (id, wake, event count) of B differs from A');
  });

  it('an intervention delivered with fewer events fails same_deliveries', () => {
    const burst = first(records.C, 'ExperimentEvent.InterventionDelivered', (p) => p.event_ids.length > 1);
    const forged = editPayload(records.C, burst.event.seq, (p) => (p['event_ids'] = (p['event_ids'] as string[]).slice(1)));
    expect(check(batch({ C: forged }), 'same_deliveries').failing).toEqual(['same_deliveries']);
  });

  describe('manifests', () => {
    it.each([
      ['random_seed', (m: InstanceManifest): InstanceManifest => ({ ...m, random_seed: 'another-seed' })],
      ['model.build', (m: InstanceManifest): InstanceManifest => ({ ...m, model: { ...m.model, build: 'reference-policy@9.9.9' } })],
      ['experiment_id', (m: InstanceManifest): InstanceManifest => ({ ...m, experiment_id: 'exp-another' })],
      ['replicate', (m: InstanceManifest): InstanceManifest => ({ ...m, replicate: 2 })],
      ['isolation.mode', (m: InstanceManifest): InstanceManifest => ({ ...m, isolation: { mode: 'separate-uids' } })],
      ['versions.writer', (m: InstanceManifest): InstanceManifest => ({ ...m, versions: { ...m.versions, writer: '9.9.9' } })],
    ])('a difference at %s fails manifests_differ_only_by_group', (at, edit) => {
      const r = check(batch({ C: withManifest(records.C, edit) }), 'manifests_differ_only_by_group');
      expect(r.check.ok).toBe(false);
      expect(r.check.detail).toContain(`replicate 1: manifests of A and C differ outside the group fields at ${at}`);
      expect(r.voidReasons.some((v) => v.startsWith('manifests_differ_only_by_group: '))).toBe(true);
    });

    it('a different model setting in one manifest also fails one_model_build_and_parameters', () => {
      const r = check(batch({ B: withManifest(records.B, (m) => ({ ...m, model: { ...m.model, build: 'reference-policy@9.9.9' } })) }), 'one_model_build_and_parameters');
      expect(r.failing).toEqual(['manifests_differ_only_by_group', 'one_model_build_and_parameters']);
      expect(r.check.detail).toContain('2 different model settings in the manifests');
    });

    it('differences in capabilities, group_blind_id, group_config_hash and started_at pass', () => {
      const forged = withManifest(records.C, (m) => ({ ...m, group_blind_id: 'blind-renamed', started_at: '2030-01-01T00:00:00.000Z', capabilities: { ...records.A.manifest!.capabilities }, group_config_hash: records.B.manifest!.group_config_hash }));
      const r = checkFairness(batch({ C: forged }));
      expect(r.voidReasons).toEqual([]);
    });

    it('a manifest that does not verify fails it, naming the group and the problem', () => {
      const forged: RunRecord = { ...cloneRecord(records.B), manifest: null, manifestProblem: 'forged: bad signature' };
      const r = check(batch({ B: forged }), 'manifests_differ_only_by_group');
      expect(r.check.ok).toBe(false);
      expect(r.check.detail).toContain('B replicate 1: no verified manifest (forged: bad signature)');
    });
  });

  describe('model build and parameters', () => {
    const calls = (r: RunRecord) => [...eventsOf(r.events, 'ModelOutputEvent.ModelAnswered'), ...eventsOf(r.events, 'ModelOutputEvent.ModelCallFailed')];
    /** Every call of the instance names `fingerprint` (a build), but the calls listed in `except`, which name theirs. */
    const withFingerprint = (r: RunRecord, fingerprint: string | null, except: Readonly<Record<number, string | null>> = {}): RunRecord => {
      const copy = cloneRecord(r);
      calls(copy).forEach(({ event }, nth) => (event.payload['system_fingerprint'] = nth in except ? except[nth]! : fingerprint));
      return copy;
    };
    /** The batch with every call of every instance on one build. */
    const allOn = (fingerprint: string, replace: Partial<Record<Group, RunRecord>> = {}): Partial<Record<Group, RunRecord>> => ({
      A: withFingerprint(records.A, fingerprint),
      B: withFingerprint(records.B, fingerprint),
      C: withFingerprint(records.C, fingerprint),
      ...replace,
    });
    /** A failed call inserted after the first answered one, on `fingerprint` (ModelCallFailed counts too). */
    const withFailedCall = (r: RunRecord, fingerprint: string | null): RunRecord => {
      const answered = eventsOf(r.events, 'ModelOutputEvent.ModelAnswered')[0]!;
      const { wake_id, adapter, model_id, params, latency_ms } = answered.p;
      const failed = forgedEvent(r, 'ModelOutputEvent.ModelCallFailed', { wake_id, adapter, model_id, params, system_fingerprint: fingerprint, latency_ms, context: null, failure: 'timeout', detail: 'forged timeout', raw_output: null, usage: null, usage_source: null, protocol: 'ds-model-output/2', finish_reason: null, response_model: null, prompt_tokens_counted: null, prompt_count_source: null, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null, cost_nano_usd: null }, 'runtime');
      return insertAfter(r, answered.event.seq, [failed]).record;
    };

    it('the honest reference runs name no build on any call: one build "(none reported)" for the batch', () => {
      for (const g of GROUPS) {
        expect(calls(records[g]).length).toBeGreaterThan(0);
        expect(calls(records[g]).every(({ p }) => p.system_fingerprint === null)).toBe(true);
      }
      const r = check(batch(), 'one_model_build_and_parameters');
      expect(r.check.ok).toBe(true);
      expect(r.check.detail).toBe('one model setting for the batch (build: (none reported))');
    });

    it('two different system_fingerprint values fail one_model_build_and_parameters', () => {
      const r = check(batch(allOn('fp_build_1', { C: withFingerprint(records.C, 'fp_build_2') })), 'one_model_build_and_parameters');
      expect(r.failing).toEqual(['one_model_build_and_parameters']);
      expect(r.check.detail).toContain('the model server reported 2 builds (system_fingerprint): fp_build_1, fp_build_2');
    });

    it('two builds within one instance fail it as well; one build on every call across the batch passes', () => {
      const twice = withFingerprint(records.B, 'fp_build_1', { 2: 'fp_build_2' });
      expect(check(batch(allOn('fp_build_1', { B: twice })), 'one_model_build_and_parameters').failing).toEqual(['one_model_build_and_parameters']);
      const same = check(batch(allOn('fp_build_1')), 'one_model_build_and_parameters');
      expect(same.voidReasons).toEqual([]);
      expect(same.check.detail).toBe('one model setting for the batch (build: fp_build_1)');
    });

    it('answers that name a build beside answers that name none fail it: "(none reported)" counts as a build; a failed call counts only when it names one', () => {
      // One answered call of C without a fingerprint, every other call of the batch on fp_build_1.
      const one = check(batch(allOn('fp_build_1', { C: withFingerprint(records.C, 'fp_build_1', { 3: null }) })), 'one_model_build_and_parameters');
      expect(one.failing).toEqual(['one_model_build_and_parameters']);
      expect(one.check.detail).toContain('the model server reported 2 builds (system_fingerprint): fp_build_1, (none reported)');
      // A whole instance without a build beside two that name one.
      const instance = check(batch(allOn('fp_build_1', { A: records.A })), 'one_model_build_and_parameters');
      expect(instance.failing).toEqual(['one_model_build_and_parameters']);
      expect(instance.check.detail).toContain('2 builds (system_fingerprint): (none reported), fp_build_1');
      // A failed call that names another build ran on it: caught …
      const other = check(batch(allOn('fp_build_1', { B: withFailedCall(withFingerprint(records.B, 'fp_build_1'), 'fp_build_2') })), 'one_model_build_and_parameters');
      expect(other.failing).toEqual(['one_model_build_and_parameters']);
      expect(other.check.detail).toContain('fp_build_1, fp_build_2');
      // … one that names none (a refused connection, a timeout before any header, a prompt never sent) reached no build and says nothing …
      expect(check(batch(allOn('fp_build_1', { B: withFailedCall(withFingerprint(records.B, 'fp_build_1'), null) })), 'one_model_build_and_parameters').voidReasons).toEqual([]);
      // … and one on the same build does not void either.
      expect(check(batch(allOn('fp_build_1', { B: withFailedCall(withFingerprint(records.B, 'fp_build_1'), 'fp_build_1') })), 'one_model_build_and_parameters').voidReasons).toEqual([]);
    });

    /** A copy with C's `nth` answer rewritten as a ModelAnswered 1.2.0 (the /1 call record, before issue 15), `edit` applied to it. */
    const answerAtV12 = (r: RunRecord, nth: number, edit: (p: Record<string, unknown>) => void = () => {}): RunRecord => {
      const copy = cloneRecord(r);
      const { event, p } = eventsOf(copy.events, 'ModelOutputEvent.ModelAnswered')[nth]!;
      const { wake_id, adapter, model_id, params, system_fingerprint, latency_ms, context, raw_output, usage, usage_source } = p;
      const payload: Record<string, unknown> = { wake_id, adapter, model_id, params, system_fingerprint, latency_ms, context, raw_output, usage, usage_estimated: usage_source === 'estimate' };
      edit(payload);
      ModelAnswered.earlier['1.2.0']!.parse(payload);
      event.schema_version = '1.2.0';
      event.payload = payload;
      return copy;
    };

    it('a call recorded at an earlier version (ModelAnswered 1.2.0) is read lifted and counted: its other model id or build is caught, not skipped', () => {
      const answers = eventsOf(records.C.events, 'ModelOutputEvent.ModelAnswered').length;
      // Lifted, the same call on the same model makes no difference …
      const same = answerAtV12(records.C, 1);
      expect(eventsOf(same.events, 'ModelOutputEvent.ModelAnswered')).toHaveLength(answers);
      expect(check(batch({ C: same }), 'one_model_build_and_parameters').voidReasons).toEqual([]);
      // … one that ran on another model id is one more setting …
      const otherModel = check(batch({ C: answerAtV12(records.C, 1, (p) => (p['model_id'] = 'another-model')) }), 'one_model_build_and_parameters');
      expect(otherModel.failing).toEqual(['one_model_build_and_parameters']);
      expect(otherModel.check.detail).toContain('model calls ran with 2 different model ids or parameters');
      expect(otherModel.check.detail).toContain('"model_id":"another-model"');
      // … and one that names a build beside answers that name none is a second build.
      const otherBuild = check(batch({ C: answerAtV12(records.C, 1, (p) => (p['system_fingerprint'] = 'fp_build_2')) }), 'one_model_build_and_parameters');
      expect(otherBuild.failing).toEqual(['one_model_build_and_parameters']);
      expect(otherBuild.check.detail).toContain('the model server reported 2 builds (system_fingerprint): (none reported), fp_build_2');
    });

    it('a model call with other parameters fails it', () => {
      const answered = eventsOf(records.C.events, 'ModelOutputEvent.ModelAnswered')[2]!;
      const forged = editPayload(records.C, answered.event.seq, (p) => ((p['params'] as { temperature: number | null }).temperature = 0.7));
      const r = check(batch({ C: forged }), 'one_model_build_and_parameters');
      expect(r.failing).toEqual(['one_model_build_and_parameters']);
      expect(r.check.detail).toContain('model calls ran with 2 different model ids or parameters');
    });
  });

  describe('plans', () => {
    it('a different plan seed in one group fails same_plan_per_replicate', () => {
      const forged: RunRecord = { ...records.C, plan: { ...records.C.plan, seed: 'another-seed' } };
      const r = check(batch({ C: forged }), 'same_plan_per_replicate');
      expect(r.failing).toEqual(['same_plan_per_replicate']);
      expect(r.check.detail).toBe('replicate 1: seed, schedule, intervention plan, scenario or pre-registration of C differs from A');
    });

    it.each([
      ['schedule_hash', (r: RunRecord): RunRecord => ({ ...r, plan: { ...r.plan, schedule_hash: records.A.plan.intervention_plan_hash } })],
      ['intervention_plan_hash', (r: RunRecord): RunRecord => ({ ...r, plan: { ...r.plan, intervention_plan_hash: records.A.plan.schedule_hash } })],
      ['scenario_hash', (r: RunRecord): RunRecord => ({ ...r, plan: { ...r.plan, scenario_hash: records.A.plan.schedule_hash } })],
      ['pre-registration', (r: RunRecord): RunRecord => ({ ...r, preregSha256: records.A.plan.schedule_hash })],
    ])('a different %s fails it', (_what, edit) => {
      expect(check(batch({ B: edit(records.B) }), 'same_plan_per_replicate').failing).toEqual(['same_plan_per_replicate']);
    });
  });
});
