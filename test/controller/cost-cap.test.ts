// The pre-registered cost cap (issue 36 item 4) through the real `npm run experiment` against a
// llama.cpp-like server on loopback: an instance with prices and a small cap stops at the cap —
// the held-back call recorded (ModelCallFailed cost_cap, no usage, a detail naming spent, cap and
// worst case), the stop recorded — and verifies OK; a resume under the same cap is refused with
// the folder byte-identical, and its advice (a raise with a reason) is accepted and recorded. A
// cap without prices is refused before anything is written, and the advice (prices in the model
// configuration file) accepted. Forged stores — a call that took the spent over the cap, a wake
// after a held-back call without a stop — are caught by the verifier's check.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { callCostNanoUsd } from '../../runtime/call-cost.js';
import { costCapNotesOf } from '../../design/cost-cap.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { ModelPrices, NANO_USD_PER_USD } from '../../schema/model-prices.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetupWith, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';
import { folderState } from '../support/folder-state.js';
import { startLlamaLikeServer, type LlamaLikeServer } from '../support/llamacpp-like-server.js';
import { editEnvelope, RunCopies, storeOf, tamper } from '../support/store-forgery.js';
import { storedEvents } from '../support/stored-events.js';

const CAP_USD = 0.03;
const PRICES = ModelPrices.parse({ input: 1, output: 1, cache_read: 0.5, cache_write: 1.25 });

let setup: ControllerSetup;
let server: LlamaLikeServer;
let priced: string;
let unpriced: string;
const copies: RunCopies[] = [];

beforeAll(async () => {
  // schema_subset "strip": the openai default dialect json_schema does not take the whole answer schema (issue 36 item 2).
  setup = controllerSetupWith('prereg-capped', (p) => {
    p['model_calls']!['cost_cap_usd_per_instance'] = CAP_USD;
    p['model_calls']!['schema_subset'] = 'strip';
  });
  server = await startLlamaLikeServer({ promptTokensPerS: 200_000, generatedTokensPerS: 200_000 });
  const config = { adapter: 'openai', base_url: server.baseUrl, model_id: server.alias, api_key_env: null, params: { temperature: 0, seed: 7 } };
  unpriced = path.join(setup.dir, 'model-unpriced.json');
  writeFileSync(unpriced, JSON.stringify(config));
  priced = path.join(setup.dir, 'model-priced.json');
  writeFileSync(priced, JSON.stringify({ ...config, prices: PRICES }));
});

afterAll(async () => {
  await server?.close();
  for (const c of copies) c.removeAll();
});

function jsonOf(r: CliResult): Record<string, unknown> {
  const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
  expect(lines, r.stdout + r.stderr.slice(-3000)).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

const common = (): string[] => ['--key-dir', setup.keyDir, '--same-uid', 'test', '--json'];
const start = (out: string, modelConfig: string): Promise<CliResult> => runCli('experiment', ['--group', 'C', '--seed', 'cap-1', '--prereg', setup.preregFile, '--model-config', modelConfig, '--out', out, ...common()]);

type Failed = { failure: string; usage: unknown; detail: string; cost_nano_usd: unknown };
const ofType = (events: readonly EventEnvelope[], type: string): EventEnvelope[] => events.filter((e) => e.event_type === type);

/** The sum of what the store's calls cost at PRICES: what the cap is held against. */
function spentNanoUsd(events: readonly EventEnvelope[]): number {
  return [...ofType(events, 'ModelOutputEvent.ModelAnswered'), ...ofType(events, 'ModelOutputEvent.ModelCallFailed')].reduce((sum, e) => {
    const p = e.payload as { usage: { prompt_tokens: number; completion_tokens: number } | null; cache_read_tokens: number | null; cache_write_tokens: number | null };
    return sum + callCostNanoUsd(p.usage === null ? null : { ...p.usage, cache_read_tokens: p.cache_read_tokens, cache_write_tokens: p.cache_write_tokens }, PRICES);
  }, 0);
}

function verifyOk(dir: string): void {
  const report = checkRunFollowsPlan(dir, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR });
  expect(report.failures, JSON.stringify(report.failures.slice(0, 5))).toEqual([]);
}

describe('a cost cap without prices cannot be held', () => {
  test('refused before anything is written (exit 1, cost_cap_unpriced), the folder byte-identical; the advice — prices in the model configuration file — is accepted', async () => {
    const out = path.join(setup.dir, 'runs', 'unpriced');
    const before = folderState(setup.dir);
    const r = await start(out, unpriced);
    expect(r.code, r.stderr.slice(-2000)).toBe(1);
    const body = jsonOf(r) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('cost_cap_unpriced');
    expect(body.error.message).toContain(`caps each instance's cost at $${CAP_USD} (model_calls.cost_cap_usd_per_instance), but the model has no prices`);
    expect(body.error.message).toContain('"prices": {"input": …, "output": …, "cache_read": …, "cache_write": …}');
    expect(body.error.message).toContain('--model-config FILE');
    expect(folderState(setup.dir)).toEqual(before);
    expect(existsSync(out)).toBe(false);
    // A study plan is refused alike, nothing written.
    const plan = await runCli('study', ['--plan-only', '--seed', 'cap', '--key-dir', setup.keyDir, '--prereg', setup.preregFile, '--model-config', unpriced, '--out', path.join(setup.dir, 'study-unpriced'), '--json']);
    expect(plan.code, plan.stderr.slice(-2000)).toBe(1);
    expect((jsonOf(plan) as { error: { code: string } }).error.code).toBe('cost_cap_unpriced');
    expect(folderState(setup.dir)).toEqual(before);
    const accepted = await runCli('study', ['--plan-only', '--seed', 'cap', '--key-dir', setup.keyDir, '--prereg', setup.preregFile, '--model-config', priced, '--out', path.join(setup.dir, 'study-priced'), '--json']);
    expect(accepted.code, accepted.stderr.slice(-2000)).toBe(0);
  }, 120_000);

  test('the cap is pre-registered: a model configuration that states one is refused', async () => {
    const withCap = path.join(setup.dir, 'model-with-cap.json');
    writeFileSync(withCap, JSON.stringify({ ...JSON.parse(readFileSync(priced, 'utf8')), cost_cap_usd_per_instance: 5 }));
    const r = await start(path.join(setup.dir, 'runs', 'cap-in-config'), withCap);
    expect(r.code).toBe(2);
    expect((jsonOf(r) as { error: { code: string; message: string } }).error.message).toMatch(/cost_cap_usd_per_instance: transport retries, the pause rule, the schema subset policy and the cost cap are pre-registered/);
  }, 60_000);
});

describe('an instance with prices stops at its cost cap, recorded and resumable', () => {
  const out = (): string => path.join(setup.dir, 'runs', 'capped');

  test('stops (exit 3) at the call that could exceed the cap: the call held back and recorded, the stop recorded, verify OK', async () => {
    const r = await start(out(), priced);
    expect(r.code, r.stderr.slice(-3000)).toBe(3);
    const result = jsonOf(r) as { status: string; stop_reason: string; summary: { usable_data: { reason: string; not_made: number } } };
    // In the run summary: the held-back call is no call, and said so.
    expect(result.summary.usable_data.not_made).toBe(1);
    expect(result.summary.usable_data.reason).toContain('1 call(s) held back by the cost cap (cost_cap, not counted as calls)');
    expect(result.status).toBe('stopped');
    expect(result.stop_reason).toMatch(/^stopped at the cost cap: the model call of wake-\d+ was not made: the instance has spent \$0\.\d{6} of its cost cap of \$0\.030000/);
    expect(result.stop_reason).toContain(`--resume ${out()} --raise-cost-cap-usd 0.06 --cost-cap-reason`);
    expect(r.stderr).toContain('model call held back by the cost cap');
    const events = storedEvents(out());
    const held = ofType(events, 'ModelOutputEvent.ModelCallFailed').filter((e) => (e.payload as Failed).failure === 'cost_cap');
    expect(held).toHaveLength(1);
    const p = held[0]!.payload as Failed;
    expect(p.usage).toBeNull();
    const spent = spentNanoUsd(events);
    expect(p.detail).toContain(`(${spent} of ${CAP_USD * NANO_USD_PER_USD} nano-USD)`);
    expect(p.detail).toMatch(/this call could cost up to \$0\.\d{6} \((\d+) nano-USD: a prompt of at most \d+ tokens and an answer of at most \d+\), which could exceed the cap/);
    const worst = Number(/\((\d+) nano-USD: a prompt/.exec(p.detail)![1]);
    expect(spent + worst).toBeGreaterThan(CAP_USD * NANO_USD_PER_USD);
    expect(spent).toBeLessThanOrEqual(CAP_USD * NANO_USD_PER_USD);
    // Calls were made before it (the cap is not hit at once) and none after it.
    const answered = ofType(events, 'ModelOutputEvent.ModelAnswered');
    expect(answered.length).toBeGreaterThan(1);
    expect(answered.every((e) => e.seq < held[0]!.seq)).toBe(true);
    const stops = ofType(events, 'SystemEvent.EmergencyStopped');
    expect(stops.map((e) => (e.payload as { operator: string }).operator)).toEqual(['controller (pre-registered cost cap)']);
    expect(stops[0]!.seq).toBeGreaterThan(held[0]!.seq);
    verifyOk(out());
    // A stopped store has no final head: `--open` accepts that as a warning, and nothing else fails.
    const verified = await runCli('verify', [out(), '--open']);
    expect(verified.code, verified.stdout.slice(-2000)).toBe(0);
    expect(verified.stdout).toContain('OK');
  }, 300_000);

  test('a resume under the same cap is refused, folder byte-identical; the raise it advises is accepted, recorded in Resumed, and the instance goes on to stop at the raised cap', async () => {
    const before = folderState(out());
    const refused = await runCli('experiment', ['--resume', out(), ...common()]);
    expect(refused.code, refused.stderr.slice(-2000)).toBe(1);
    const error = (jsonOf(refused) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('instance_cost_cap');
    expect(error.message).toMatch(/the instance stopped at its cost cap \(it has spent \$0\.\d{6} of its cost cap of \$0\.030000\), and under the same cap it would stop again/);
    expect(folderState(out())).toEqual(before);
    // A raise not above the cap in force, or without a reason: refused too, nothing written.
    const low = await runCli('experiment', ['--resume', out(), '--raise-cost-cap-usd', '0.03', '--cost-cap-reason', 'more', ...common()]);
    expect((jsonOf(low) as { error: { message: string } }).error.message).toMatch(/a raise must be above the cap in force/);
    const noReason = await runCli('experiment', ['--resume', out(), '--raise-cost-cap-usd', '0.06', ...common()]);
    expect(noReason.code).toBe(2);
    expect(folderState(out())).toEqual(before);
    // The advice, followed word for word.
    const advised = /--raise-cost-cap-usd (\S+) --cost-cap-reason/.exec(error.message)![1]!;
    const resumed = await runCli('experiment', ['--resume', out(), '--raise-cost-cap-usd', advised, '--cost-cap-reason', 'the pilot needs the whole schedule', ...common()]);
    expect([0, 3, 4], resumed.stderr.slice(-3000)).toContain(resumed.code);
    expect(resumed.stderr).toContain('the cost cap of this instance raised to $0.06 from this resume on');
    const events = storedEvents(out());
    const resumes = ofType(events, 'SystemEvent.Resumed').map((e) => e.payload as { reason: string; cost_cap_raised_to_usd: number | null });
    expect(resumes).toEqual([{ operator: expect.any(String), reason: `--resume ${out()} --raise-cost-cap-usd 0.06: the pilot needs the whole schedule`, cost_cap_raised_to_usd: 0.06 }]);
    expect(spentNanoUsd(events)).toBeLessThanOrEqual(0.06 * NANO_USD_PER_USD);
    // Calls were made after the raise.
    const resumedSeq = ofType(events, 'SystemEvent.Resumed')[0]!.seq;
    expect(ofType(events, 'ModelOutputEvent.ModelAnswered').some((e) => e.seq > resumedSeq)).toBe(true);
    verifyOk(out());
    // What the study report's notes say of this instance: the calls held back, the raise as a departure with its reason, the spent.
    const notes = costCapNotesOf(events, CAP_USD, PRICES);
    expect(notes[0]).toMatch(/^the cost cap held back [12] model call\(s\)/);
    expect(notes).toContainEqual(expect.stringMatching(/^DEPARTURE FROM THE PRE-REGISTRATION: its cost cap was raised to \$0\.06 at a resume \(seq \d+\), above the pre-registered \$0\.03 \(model_calls\.cost_cap_usd_per_instance\): --resume .* the pilot needs the whole schedule$/));
    expect(notes.at(-1)).toMatch(/^spent \$0\.0\d{5} of its cost cap of \$0\.060000$/);
  }, 300_000);

  test('forged: a call that took the spent over the cap, and a wake after a held-back call without a stop, are caught by the verifier', () => {
    const c = new RunCopies(out());
    copies.push(c);
    const events = storedEvents(out());
    // 1. An answer whose usage is inflated past the cap.
    const overSpent = c.copy();
    const firstAnswer = ofType(events, 'ModelOutputEvent.ModelAnswered')[0]!;
    tamper(overSpent, (db) => editEnvelope(db, firstAnswer.seq, (env) => ({ ...env, payload: { ...env.payload, usage: { prompt_tokens: 100_000, completion_tokens: 1 } } })));
    const over = checkRunFollowsPlan(overSpent, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR });
    expect(over.failures.map((f) => f.message)).toContainEqual(expect.stringMatching(new RegExp(`^the model call at seq ${firstAnswer.seq} took what the instance spent to \\$0\\.1\\d{5}, over its cost cap of \\$0\\.030000`)));
    // 2. The stop at the cap removed from the record (made a pause, which is not a stop), the raise undone: the next wake went on without one.
    const noStop = c.copy();
    const stop = ofType(events, 'SystemEvent.EmergencyStopped')[0]!;
    const resumed = ofType(events, 'SystemEvent.Resumed')[0]!;
    tamper(noStop, (db) => {
      editEnvelope(db, stop.seq, (env) => ({ ...env, event_type: 'SystemEvent.Paused' }));
      editEnvelope(db, resumed.seq, (env) => ({ ...env, payload: { ...env.payload, cost_cap_raised_to_usd: null } }));
    });
    const went = checkRunFollowsPlan(noStop, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR });
    expect(went.failures.map((f) => f.message)).toContainEqual(expect.stringMatching(/^the cost cap held back the call at seq \d+, and the instance went on to wake-\d+ without a recorded stop: a cap reached must stop the instance$/));
  }, 60_000);
});

describe('the record formats', () => {
  test('cost_cap is a failure of ModelCallFailed 1.4.0 only: the released 1.3.0 and 1.2.0 keep their kinds; Resumed 1.0.0 is lifted with no raise', async () => {
    const { ModelCallFailed } = await import('../../schema/events/model-output-events.js');
    const { Resumed } = await import('../../schema/events/system-events.js');
    const { BUILT_IN_UPCASTERS, upcasterKey } = await import('../../schema/upcasters.js');
    const failure = (schema: { safeParse: (v: unknown) => { success: boolean } }, kind: string): boolean => schema.safeParse({ failure: kind }).success;
    const field = (version: string): { safeParse: (v: unknown) => { success: boolean } } => {
      const schema = (version === ModelCallFailed.schemaVersion ? ModelCallFailed.payload : ModelCallFailed.earlier[version]!) as unknown as { shape: { failure: { safeParse: (v: unknown) => { success: boolean } } } };
      return { safeParse: (v) => schema.shape.failure.safeParse((v as { failure: string }).failure) };
    };
    expect(failure(field('1.4.0'), 'cost_cap')).toBe(true);
    for (const older of ['1.3.0', '1.2.0']) {
      expect(failure(field(older), 'cost_cap'), older).toBe(false);
      expect(failure(field(older), 'budget_exhausted'), older).toBe(true);
    }
    const lifted = BUILT_IN_UPCASTERS.get(upcasterKey(Resumed.type, '1.0.0'))!({ payload: { operator: 'op', reason: 'r' } } as never);
    expect(lifted).toEqual({ schema_version: '1.1.0', payload: { operator: 'op', reason: 'r', cost_cap_raised_to_usd: null } });
    expect(Resumed.payload.safeParse(lifted.payload).success).toBe(true);
  });
});
