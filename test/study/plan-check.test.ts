// Plans checked before they run (issue 35 item 2), through the real `npm run study` command line
// (--plan-only and a one-machine study alike): a plan whose n or pre-registered passing counts
// cannot give the pre-registered verdict is refused before anything is written — the folder
// byte-identical, no instance started — with advice the tests follow and see accepted; an
// --exploratory plan is accepted and says so; every accepted plan states its cost. And the cost
// predicted from the check before hour 0 against a real llama.cpp-like server on loopback.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readLockedPrereg, modelCallRulesOf, PreRegistration } from '../../design/prereg.js';
import type { ModelChoice } from '../../design/model-choice.js';
import { PlanCost } from '../../study-contract/plan-cost.js';
import { STUDY_FILES, StudyPlan } from '../../study-contract/study-folder.js';
import { checkStudyModel } from '../../study/study-model-check.js';
import { loadScenario } from '../../design/scenario.js';
import { costLines, planCostOf } from '../../study/plan-cost.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetupWith, SCENARIOS_DIR, TEST_START_AT, type ControllerSetup } from '../support/controller-run.js';
import { folderState } from '../support/folder-state.js';
import { startLlamaLikeServer, type LlamaLikeOptions, type LlamaLikeServer } from '../support/llamacpp-like-server.js';

let setup: ControllerSetup;

beforeAll(() => {
  // schema_subset strip: the studies here ask a llama.cpp-like server in dialect llamacpp, whose subset does not hold the answer schema (issue 36).
  setup = controllerSetupWith('prereg-strip', (p) => void (p['model_calls']!['schema_subset'] = 'strip'));
});

function jsonOf(r: CliResult): Record<string, unknown> {
  const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
  expect(lines, r.stdout + r.stderr.slice(-2000)).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

/** Runs the command in `out`'s parent and holds it to a refusal: exit 1, study_plan_departs, the message, the parent (keys, pre-registration, no study folder) as it was. */
async function refusedPlan(out: string, args: readonly string[], message: RegExp): Promise<string> {
  const parent = path.dirname(out);
  const before = folderState(parent);
  const r = await runCli('study', [...args, '--out', out, '--json']);
  expect(r.code, r.stdout + r.stderr.slice(-2000)).toBe(1);
  const body = jsonOf(r) as { ok: boolean; error: { code: string; message: string } };
  expect(body.error.code).toBe('study_plan_departs');
  expect(body.error.message).toMatch(message);
  expect(body.error.message).toMatch(/Nothing was written$/);
  expect(folderState(parent), `${args.join(' ')} changed ${parent}`).toEqual(before);
  return body.error.message;
}

const planOnly = (s: ControllerSetup, extra: readonly string[]): string[] => ['--plan-only', '--seed', 'plan-check', '--key-dir', s.keyDir, '--prereg', s.preregFile, ...extra];

describe('a plan that cannot give the pre-registered verdict is refused at plan time', () => {
  test('--n 4 under initial_n_per_group: 3 — --plan-only and a one-machine study alike: refused naming the pre-registered 3 and the flag to drop; dropping it is accepted', async () => {
    const out = path.join(setup.dir, 'n4');
    const said = await refusedPlan(out, planOnly(setup, ['--n', '4']), /n = 4 per group in round 1, not the pre-registered initial_n_per_group = 3: the batch would be void .*thresholds\.c_instances_passing has no row for n = 4.*: the verdict would be insufficient evidence\. Drop --n 4 \(the pre-registration's initial_n_per_group: 3 is the default\)/);
    expect(said).toContain('add --exploratory "why"');
    // A one-machine study: refused before its model check, its folder, or any instance.
    await refusedPlan(out, ['--n', '4', '--seed', 'plan-check', '--key-dir', setup.keyDir, '--prereg', setup.preregFile, '--same-uid', 'test'], /Drop --n 4/);
    // The advice followed: without --n the plan is the pre-registered one.
    const r = await runCli('study', [...planOnly(setup, []), '--out', out, '--json']);
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    expect(jsonOf(r)).toMatchObject({ n_initial: 3, n_expanded: 5, exploratory: null });
  }, 60_000);

  test('--n 100: refused saying the pre-registration would have to say so, and how', async () => {
    await refusedPlan(path.join(setup.dir, 'n100'), planOnly(setup, ['--n', '100']), /to run n = 100 per group the pre-registration would have to say so — initial_n_per_group: 100, an expanded_n_per_group above it and a thresholds\.c_instances_passing row for each: save it under a new name with a new prereg_version, lock it \(npm run prereg -- lock FILE\) and give --prereg FILE/);
  }, 30_000);

  test('a pre-registration with no passing count for its expanded n: refused without any flag at fault; the row it names, added and locked, is accepted', async () => {
    const noRow = controllerSetupWith('prereg-no-row-5', (p) => void (p['thresholds']!['c_instances_passing'] = [{ n: 3, at_least: 2 }]));
    const out = path.join(noRow.dir, 'study');
    await refusedPlan(out, planOnly(noRow, []), /thresholds\.c_instances_passing has no row for n = 5.*The pre-registration must fix a passing count for every n its verdict can rest on: add \{ "n": 5, "at_least": … \} to thresholds\.c_instances_passing/);
    const fixed = controllerSetupWith('prereg-row-5', (p) => void (p['thresholds']!['c_instances_passing'] = [{ n: 3, at_least: 2 }, { n: 5, at_least: 4 }]));
    const r = await runCli('study', [...planOnly(fixed, []), '--out', path.join(fixed.dir, 'study'), '--json']);
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
  }, 60_000);

  test('--exploratory with an empty reason is refused, nothing written', async () => {
    await refusedPlan(path.join(setup.dir, 'empty-why'), planOnly(setup, ['--n', '4', '--exploratory', '  ']), /--exploratory: reason: .*give the reason in one or two sentences/);
  }, 30_000);
});

describe('an exploratory plan, and what every plan costs', () => {
  test('--plan-only --n 4 --exploratory: accepted; the screen, --json and study.json say it is exploratory and what it costs', async () => {
    const reason = 'four replicates to size the cluster run';
    const out = path.join(setup.dir, 'exploratory');
    const args = [...planOnly(setup, ['--n', '4', '--exploratory', reason]), '--out', out];
    const r = await runCli('study', [...args, '--json']);
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    const body = jsonOf(r) as { cost: PlanCost; exploratory: unknown };
    const plan = StudyPlan.parse(JSON.parse(readFileSync(path.join(out, STUDY_FILES.plan), 'utf8')));
    const departures = ['n = 4 per group in round 1, not the pre-registered initial_n_per_group = 3', 'thresholds.c_instances_passing has no row for n = 4, so "C instances scoring ≥ 80" cannot be judged at n = 4 (the pre-registered rows: n = 3, n = 5)'];
    expect(plan.exploratory).toEqual({ reason, departures });
    expect(body.exploratory).toEqual(plan.exploratory);
    expect(body.cost).toEqual(plan.cost);
    // 12 instances (15 when every group expands to 5); each replicate's schedule from its own seed, one call a wake.
    const cost = PlanCost.parse(body.cost);
    expect(cost.instances).toEqual({ round_1: 12, at_most: 15 });
    expect(cost.model_calls.round_1).toBeGreaterThanOrEqual(12 * cost.wakes_per_instance.min);
    expect(cost.model_calls.round_1).toBeLessThanOrEqual(12 * cost.wakes_per_instance.max);
    expect(cost.model_calls.at_most - cost.model_calls.round_1).toBeGreaterThanOrEqual(3 * cost.wakes_per_instance.min);
    expect(cost.attempts_per_call_at_most).toBe(3);
    expect(cost).toMatchObject({ predicted: null, not_predicted: 'the reference model calls no model server: no time or tokens to measure' });
    // On screen (without --json), in the same words, from a fresh folder.
    const screen = await runCli('study', [...planOnly(setup, ['--n', '4', '--exploratory', reason]), '--out', path.join(setup.dir, 'exploratory-screen')]);
    expect(screen.code).toBe(0);
    expect(screen.stdout).toContain(`  EXPLORATORY: ${departures.join('; ')}; reason given: ${reason}`);
    expect(screen.stdout).toMatch(/ {2}cost: 12 instances \(up to 15 if the pre-registered rule expands every group\), \d+(–\d+)? wakes each: [\d,]+ model calls \(up to [\d,]+\), one per wake, each at most 3 attempt\(s\)/);
  }, 60_000);
});

describe('an exploratory study end to end through npm run study', () => {
  test('--n 2 under initial_n_per_group: 1, --exploratory: it runs; the verdict block, report.json, report.md and report.html say exploratory, not void', async () => {
    const short = controllerSetupWith('prereg-short', (p) => {
      p['wake_schedule']!['base_period_sim_minutes'] = 720;
      p['expansion_rule']!['initial_n_per_group'] = 1;
      p['expansion_rule']!['expanded_n_per_group'] = 2;
      p['thresholds']!['c_instances_passing'] = [{ n: 1, at_least: 1 }, { n: 2, at_least: 2 }];
    });
    const out = path.join(short.dir, 'study');
    const reason = 'two replicates before the pre-registered one, to see the spread';
    const r = await runCli('study', ['--n', '2', '--exploratory', reason, '--seed', 'explore', '--key-dir', short.keyDir, '--prereg', short.preregFile, '--out', out, '--same-uid', 'test run in one uid']);
    expect([0, 4], r.stderr.slice(-3000)).toContain(r.code);
    const departure = 'n = 2 per group in round 1, not the pre-registered initial_n_per_group = 1';
    // The verdict block on screen: exploratory first, no VOID.
    expect(r.stdout).toMatch(/^VERDICT: (SUPPORTED|REJECTED|INSUFFICIENT EVIDENCE) \(apparatus dry run\)\n {2}Exploratory study, not the pre-registered one \(n = 2 per group in round 1, /m);
    expect(r.stdout).toContain(`  EXPLORATORY: ${departure}; reason given: ${reason}`);
    expect(r.stdout).not.toMatch(/VOID/);
    expect(r.stderr).toMatch(/\[study\] cost: 6 instances, \d+ wakes each: \d+ model calls, one per wake/);
    const report = JSON.parse(readFileSync(path.join(out, STUDY_FILES.json), 'utf8')) as { exploratory: unknown; voided: boolean; void_reasons: string[]; verdict_statement: string };
    expect(report.exploratory).toEqual({ reason, departures: [departure] });
    expect(report).toMatchObject({ voided: false, void_reasons: [] });
    // report.md escapes Markdown's underscores.
    expect(readFileSync(path.join(out, STUDY_FILES.markdown), 'utf8')).toContain('- n = 2 per group in round 1, not the pre-registered initial\\_n\\_per\\_group = 1');
    expect(readFileSync(path.join(out, STUDY_FILES.html), 'utf8')).toContain('<section id="exploratory"');
    const again = await runCli('study', ['--recompute', out]);
    expect(again.stdout).toMatch(/^RECOMPUTED: /);
  }, 180_000);
});

describe('time and tokens predicted from the check before hour 0', () => {
  let server: LlamaLikeServer;
  afterAll(async () => server?.close());

  test('a llama.cpp-like server: the plan states an instance\'s and round 1\'s time and tokens at its measured speed', async () => {
    server = await startLlamaLikeServer({ nCtx: 65_536, promptTokensPerS: 40_000, generatedTokensPerS: 20_000 });
    const locked = readLockedPrereg(setup.preregFile, setup.key.keys.publicKey);
    if (!locked.ok) throw new Error('test setup: the pre-registration is not locked');
    const prereg: PreRegistration = locked.prereg;
    const model: ModelChoice = { adapter: 'openai', base_url: server.baseUrl, model_id: server.alias, api_key_env: null, params: { temperature: 0, top_p: null, seed: 7, max_tokens: null }, dialect: 'llamacpp', stream: true, context_size: null, timeout_ms: 30_000, config_file: null, config_sha256: null, parallel_slots: 2 };
    const plan = StudyPlan.parse({ study_version: '1.3.0', study_id: 'cost', seed: 'cost', prereg_file: setup.preregFile, prereg_sha256: 'sha256:x', n_initial: 3, n_expanded: 5, concurrency: 1, start_at: TEST_START_AT, model, started_at: new Date().toISOString() });
    const scenario = loadScenario(path.join(SCENARIOS_DIR, prereg.scenario.id));
    const check = (await checkStudyModel(plan, prereg, scenario, { concurrency: 1, log: () => undefined }))!;
    const cost = planCostOf(plan, prereg, { check, concurrency: 1, concurrencySource: 'one block' });
    const f = check.forecast;
    const p = cost.predicted!;
    expect(p.instance_ms).toEqual(f.predicted_instance_ms);
    // Per call, by the forecast's own rules: a typical prompt (midway between the first and the largest sendable) with the speed call's answer; the largest with the whole cap.
    const sendable = Math.min(f.largest_prompt_tokens, 65_536 - f.answer_cap_tokens);
    expect(p.tokens_per_call).toEqual({ low: Math.round((f.first_wake_prompt_tokens + sendable) / 2 + f.speed.measured_generated_tokens), high: sendable + f.answer_cap_tokens });
    expect(p.tokens_per_instance).toEqual({ low: p.tokens_per_call.low * f.wakes, high: p.tokens_per_call.high * f.wakes });
    expect(p.tokens_round_1).toEqual({ low: p.tokens_per_call.low * cost.model_calls.round_1, high: p.tokens_per_call.high * cost.model_calls.round_1 });
    // One block at once, two declared slots: two calls at once.
    expect(p.calls_at_once).toBe(2);
    expect(p.round_1_ms.high).toBe(Math.round((f.predicted_instance_ms.high * 9) / 2));
    expect(p.speed).toContain('server_timings');
    expect(cost.not_predicted).toBeNull();
    expect(modelCallRulesOf(prereg)!.transport_retry.max_attempts).toBe(cost.attempts_per_call_at_most);
    const lines = costLines(cost);
    expect(lines[1]).toMatch(/^ {2}predicted at .*: an instance .+ to .+, [\d,]+ to [\d,]+ tokens \(prompt and answer; [\d,]+ to [\d,]+ a call\)$/);
    expect(lines[2]).toMatch(/^ {2}round 1: .+ at 1 block\(s\) at once \(one block\) on one server taking 2 call\(s\) at once, [\d,]+ to [\d,]+ tokens; more if the rule expands$/);
  }, 60_000);
});

describe('--plan-only checks the model server as a one-machine study does, before anything is written', () => {
  const servers: LlamaLikeServer[] = [];
  afterAll(async () => Promise.all(servers.map((s) => s.close())));
  const started = async (options: LlamaLikeOptions): Promise<LlamaLikeServer> => {
    const s = await startLlamaLikeServer(options);
    servers.push(s);
    return s;
  };
  const modelFlags = (s: LlamaLikeServer): string[] => ['--model', 'openai', '--base-url', s.baseUrl, '--model-id', s.alias, '--api-key-env', 'none', '--structured-output', 'llamacpp', '--model-timeout-ms', '30000', '--parallel-slots', '2'];

  test('a llama.cpp-like server: study.json\'s cost predicts time and tokens exactly as planCostOf does from the check\'s forecast, at one block at once (said so), on screen too', async () => {
    const server = await started({ nCtx: 65_536, promptTokensPerS: 40_000, generatedTokensPerS: 20_000 });
    const out = path.join(setup.dir, 'plan-only-server');
    const r = await runCli('study', [...planOnly(setup, modelFlags(server)), '--out', out]);
    expect(r.code, r.stdout + r.stderr.slice(-3000)).toBe(0);
    // The check ran before the plan was written: its speed calls reached the server.
    expect(server.chats.length).toBeGreaterThan(0);
    expect(r.stderr).toMatch(/\[study\] predicted: an instance .+ to .+; the study's 9 instances .+ \(one server, 2 call\(s\) at once\)/);
    const plan = StudyPlan.parse(JSON.parse(readFileSync(path.join(out, STUDY_FILES.plan), 'utf8')));
    const locked = readLockedPrereg(setup.preregFile, setup.key.keys.publicKey);
    if (!locked.ok) throw new Error('test setup: the pre-registration is not locked');
    // The same check in process, on the plan as written, against the same server: its forecast, costed, is what the plan states.
    const check = (await checkStudyModel(plan, locked.prereg, loadScenario(path.join(out, STUDY_FILES.scenario)), { concurrency: 1, log: () => undefined }))!;
    const stated = plan.cost!;
    expect(stated.not_predicted).toBeNull();
    expect(stated.predicted).toEqual(planCostOf(plan, locked.prereg, { check, concurrency: 1, concurrencySource: stated.predicted!.blocks_at_once_source }).predicted);
    expect(stated.predicted!.instance_ms).toEqual(check.forecast.predicted_instance_ms);
    expect(stated.predicted).toMatchObject({ blocks_at_once: 1, calls_at_once: 2 });
    expect(stated.predicted!.blocks_at_once_source).toMatch(/^assumed: a batch study's blocks at once are the scheduler's \(Slurm: the array's %K\), unknown at plan time; .*an instance's time and tokens hold whatever K$/);
    // On screen, the plan's own lines.
    for (const line of costLines(stated)) expect(r.stdout).toContain(`  ${line}\n`);
  }, 90_000);

  test('forged: a server whose context cannot hold the first wake refuses the plan, the folder byte-identical, with the check\'s advice; followed, the plan is accepted', async () => {
    const small = await started({ nCtx: 2_048 });
    const out = path.join(setup.dir, 'plan-only-small-context');
    const before = folderState(setup.dir);
    const r = await runCli('study', [...planOnly(setup, modelFlags(small)), '--out', out, '--json']);
    expect(r.code, r.stdout + r.stderr.slice(-3000)).not.toBe(0);
    const body = jsonOf(r) as { ok: boolean; error: { code: string; message: string } };
    expect(body.ok).toBe(false);
    expect(body.error.code).toBe('model_check_forecast');
    const advice = /over the model's context of 2048.*a context of at least (\d+) tokens \(llama-server -c/.exec(body.error.message);
    expect(advice, body.error.message).not.toBeNull();
    expect(folderState(setup.dir), 'a refused --plan-only changed its parent folder').toEqual(before);
    // The advice followed: a server with the context it names; the same command is accepted and states the prediction.
    const fixed = await started({ nCtx: Number(advice![1]) });
    const again = await runCli('study', [...planOnly(setup, modelFlags(fixed)), '--out', out, '--json']);
    expect(again.code, again.stdout + again.stderr.slice(-3000)).toBe(0);
    expect((jsonOf(again) as { cost: PlanCost }).cost.predicted).not.toBeNull();
  }, 90_000);
});
