// A study's blocks against a real model server on loopback (issue 31 items 1 and 2), through the
// real `npm run study` command line: real controller, writer and runtime processes, the real
// `openai` adapter, a scripted OpenAI-compatible server (faults/scripted-model-server.ts)
// that answers every call after a short think and counts the chat requests it holds open at once.
//
// - One slot (the default): the block's three instances ran in lockstep — the server never held
//   two chat requests at once (the runtimes' start probes included), every turn is in
//   blocks/r1.jsonl in the order drawn from the seed, and the report says so.
// - The forged load: the server lets group A's calls of three wakes time out (it knows whose call
//   is whose from the drawn order alone, as anybody can). A alone would still be usable (its share
//   of accepted answers stays above the pre-registered 80 %), but the pre-registered tolerance is
//   2, so the block is confounded, its instances count as no usable data, and the verdict cannot
//   rest on it. The same store judged with a tolerance of 3 is within it (the check's other side).
// - Three declared slots: the calls of a wake go at once, and the server sees them overlap — the
//   counter that shows one slot kept is not blind.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { blockTurnOrder } from '../../design/block-turn-order.js';
import { lockPrereg } from '../../design/prereg.js';
import { EMPTY_ANSWER, SCRIPTED_MODEL_ID, startScriptedModelServer, type Script, type ScriptedModelServer } from '../../faults/scripted-model-server.js';
import { blockRecordFile, checkBlockTurns, readBlockRecord } from '../../oracle/block-turns.js';
import { checkLoadConfound } from '../../oracle/load-confound.js';
import { replicateSeed } from '../../study-contract/study-replicates.js';
import { GROUPS, type Group } from '../../design/groups.js';
import { StudyReport } from '../../oracle/study-report.js';
import { runCli } from '../support/cli.js';
import { controllerSetup, type ControllerSetup } from '../support/controller-run.js';
import { STUDY_REPORT_VERSION } from '../../oracle/study-report.js';
import { StudyPlan } from '../../study-contract/study-folder.js';

const SEED = 'blocks';
const TIMEOUT_MS = 400;
/** Wake indices (0-based) at which A's call is left unanswered. */
const A_STALLS = [1, 2, 3];
const THINK_MS = 25;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The default pre-registration with 4-hour wakes (~16: three timeouts leave A above the 80 % usable share on its own) and n = 1, locked with the test key. */
function blockSetup(): ControllerSetup {
  const setup = controllerSetup();
  const prereg = JSON.parse(readFileSync(setup.preregFile, 'utf8')) as Record<string, Record<string, unknown>>;
  prereg['wake_schedule']!['base_period_sim_minutes'] = 240;
  prereg['expansion_rule']!['initial_n_per_group'] = 1;
  prereg['expansion_rule']!['expanded_n_per_group'] = 2;
  prereg['thresholds']!['c_instances_passing'] = [{ n: 1, at_least: 1 }, { n: 2, at_least: 2 }];
  const preregFile = path.join(setup.dir, 'prereg-blocks.json');
  writeFileSync(preregFile, `${JSON.stringify(prereg, null, 2)}\n`);
  const locked = lockPrereg(preregFile, setup.key.keys, '2026-01-01T00:00:00.000Z');
  if (!locked.ok) throw new Error(`test setup: lock failed: ${locked.message}`);
  return { ...setup, preregFile };
}

/** Whose call a request is: the k-th call of a wake belongs to the k-th member of that wake's drawn order (one slot, calls one after another). */
function whoseCalls(): (wakeId: string) => Group {
  const seen = new Map<string, number>();
  return (wakeId) => {
    const n = seen.get(wakeId) ?? 0;
    seen.set(wakeId, n + 1);
    const index = Number(/^wake-(\d+)$/.exec(wakeId)![1]) - 1;
    return blockTurnOrder(replicateSeed(SEED, 1), index, GROUPS)[n]!;
  };
}

async function study(setup: ControllerSetup, server: ScriptedModelServer, out: string, extra: readonly string[] = []) {
  return runCli('study', ['--n', '1', '--seed', SEED, '--prereg', setup.preregFile, '--key-dir', setup.keyDir, '--out', out, '--same-uid', 'test run in one uid', '--model', 'openai', '--base-url', server.baseUrl, '--model-id', SCRIPTED_MODEL_ID, '--api-key-env', 'none', '--structured-output', 'vllm', '--no-stream', '--model-timeout-ms', String(TIMEOUT_MS), ...extra]);
}

function reportOf(out: string): StudyReport {
  return StudyReport.parse(JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')));
}

describe('a block against one model server', () => {
  let setup: ControllerSetup;
  const servers: ScriptedModelServer[] = [];
  beforeAll(() => {
    setup = blockSetup();
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  test('one slot: the calls never overlap and follow the drawn order; A\'s calls timing out more often confound the block', async () => {
    const whose = whoseCalls();
    const stalled: string[] = [];
    const script: Script = async (request) => {
      const wakeId = request.wakeId!;
      const group = whose(wakeId);
      const index = Number(/^wake-(\d+)$/.exec(wakeId)![1]) - 1;
      if (group === 'A' && A_STALLS.includes(index)) {
        stalled.push(wakeId);
        return { kind: 'hang' };
      }
      await sleep(THINK_MS);
      return { kind: 'content', content: JSON.stringify({ ...EMPTY_ANSWER, focus: { attention_target: `${group} idle`, waiting_condition: null } }) };
    };
    const server = await startScriptedModelServer(script);
    servers.push(server);
    const out = path.join(setup.dir, 'study-one-slot');
    const run = await study(setup, server, out);
    expect(server.errors).toEqual([]);
    // Insufficient evidence: A-r1 is no data.
    expect(run.code, run.stderr.slice(-4000)).toBe(4);
    expect(stalled).toHaveLength(A_STALLS.length);
    // The check before hour 0 predicted the study's duration, and the end says it beside what it took.
    expect(run.stderr).toMatch(/\[study\] predicted: an instance .+; the study's 3 instances .+ \(one server, 1 call\(s\) at once\)/);
    expect(run.stderr).toMatch(/\[study\] time: took .+; the check before hour 0 predicted .+ for its first 3 instances \(.+ prompt tokens\/s, .+ generated tokens\/s, server_timings\)/);
    // The plan's cost (issue 35 item 2), said before the first instance and kept in study.json, with time and tokens at that check's speed.
    expect(run.stderr).toMatch(/\[study\] cost: 3 instances \(up to 6 if the pre-registered rule expands every group\), \d+ wakes each: \d+ model calls \(up to \d+\), one per wake/);
    expect(run.stderr).toMatch(/\[study\] {3}predicted at .+server_timings.+: an instance .+ to .+, [\d,]+ to [\d,]+ tokens \(prompt and answer/);
    expect(run.stderr.indexOf('[study] cost: ')).toBeLessThan(run.stderr.indexOf('[study] blocks: '));
    const cost = StudyPlan.parse(JSON.parse(readFileSync(path.join(out, 'study.json'), 'utf8'))).cost!;
    expect(cost.model_calls.round_1).toBe(3 * cost.wakes_per_instance.max);
    expect(cost.predicted).toMatchObject({ calls_at_once: 1, instance_ms: { low: expect.any(Number), high: expect.any(Number) } });
    expect(cost.predicted!.tokens_per_instance.high).toBeGreaterThan(cost.predicted!.tokens_per_instance.low);

    // Lockstep: one request at a time, the runtimes' start probes included.
    expect(server.maxOpenChats()).toBe(1);
    // The study's check before hour 0 (its probe and its two speed calls: the first wake's size and
    // the largest sendable prompt), then each runtime's start
    // checks the model: the first start and the planned runtime crash's restart.
    const plan = JSON.parse(readFileSync(path.join(out, 'instances', 'A-r1', 'plan.json'), 'utf8')) as { schedule: { wakes: unknown[] }; interventions: { kind: string }[] };
    const restarts = plan.interventions.filter((i) => i.kind === 'runtime_crash').length;
    expect(server.probes).toHaveLength(3 + GROUPS.length * (1 + restarts));

    const record = readBlockRecord(out, 1);
    if (record.kind !== 'read') throw new Error(`no block record: ${JSON.stringify(record)}`);
    const wakes = plan.schedule.wakes.length;
    expect(record.lines).toHaveLength(GROUPS.length * (wakes + 1));
    expect(record.lines.every((l) => l.slots === 1 && l.passed_over.length === 0)).toBe(true);
    expect(checkBlockTurns(SEED, 1, record.lines).problems).toEqual([]);

    const report = reportOf(out);
    expect(report.report_version).toBe(STUDY_REPORT_VERSION);
    const block = report.blocks![0]!;
    expect(block.turns).toMatchObject({ ok: true, recorded: GROUPS.length * (wakes + 1), sessions: 1 });
    expect(block.load.by_group.A!.timeout).toBe(A_STALLS.length);
    expect(block.load.by_group.B!.timeout).toBe(0);
    expect(block.load.by_group.C!.timeout).toBe(0);
    expect(block.load.confounded).toBe(true);
    expect(block.load.over).toEqual([`timeout: A ${A_STALLS.length}, B 0, C 0 — differ by ${A_STALLS.length}, tolerance 2`]);
    // Every instance of the confounded block is no data (the load differed for all three of them).
    expect(report.instances.find((i) => i.group === 'A')!.accepted_share).toBeGreaterThanOrEqual(0.8);
    for (const i of report.instances) {
      expect(i.usable, `${i.group}-r1`).toBe(false);
      expect(i.usable_reason).toMatch(/its block is confounded by the server's load/);
    }
    expect(report.verdict).toBe('insufficient evidence');
    expect(report.usable_data.shortfalls).toEqual(GROUPS.map((g) => `group ${g}: 0 of 1 instances have usable data`));
    expect(report.fairness.checks.find((c) => c.check === 'block_turns_as_drawn')?.ok).toBe(true);
    // The screen and the documents say it per group.
    expect(run.stdout).toMatch(/block r1: turns as drawn \(\d+ turns, 1 session\(s\)\); failed calls A: 3 timeout · B: none · C: none; load CONFOUNDED: timeout: A 3, B 0, C 0/);
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).toContain('## Blocks');
    expect(readFileSync(path.join(out, 'report.html'), 'utf8')).toContain('<section id="blocks"');

    // The check's other side: a tolerance the difference does not exceed finds no confound.
    const within = checkLoadConfound(report.instances.map((i) => ({ group: i.group, replicate: i.replicate, byFailure: i.by_failure })), { timeout: A_STALLS.length, transport: 2, stream_broken: 2, truncated: 2, length: null, schema: null });
    expect(within![0]!.confounded).toBe(false);

    // Everything recomputes from the folder alone.
    const recomputed = await runCli('study', ['--recompute', out]);
    expect(recomputed.stdout, recomputed.stdout).toMatch(/^RECOMPUTED/);
  }, 240_000);

  test('three declared slots: a wake\'s calls go at once, and the server sees them overlap', async () => {
    const whose = whoseCalls();
    const server = await startScriptedModelServer(async (request) => {
      whose(request.wakeId!);
      await sleep(THINK_MS * 4);
      return { kind: 'content', content: JSON.stringify(EMPTY_ANSWER) };
    });
    servers.push(server);
    const out = path.join(setup.dir, 'study-three-slots');
    const run = await study(setup, server, out, ['--parallel-slots', '3']);
    expect(run.code, run.stderr.slice(-4000)).toBe(4);
    expect(server.maxOpenChats()).toBeGreaterThan(1);
    const report = reportOf(out);
    expect(report.blocks![0]!.turns.ok).toBe(true);
    expect(report.blocks![0]!.load.confounded).toBe(false);
    const record = readBlockRecord(out, 1);
    expect(record.kind === 'read' && record.lines.every((l) => l.slots === 3)).toBe(true);
    expect(readFileSync(blockRecordFile(out, 1), 'utf8').length).toBeGreaterThan(0);
  }, 240_000);
});
