// The pilot with a real model (issue 15 item 9): a short A/B/C study through the real CLI
// (`npm run study -- --model local …`) with ../shared/models/stories260K.gguf — a real trained
// 260K-parameter model that writes children's stories and follows no instruction — running
// inside each runtime process through node-llama-cpp under the grammar generated from the answer
// schema. What it can show: the real inference path end to end (tokenizer, sampling, latency,
// token counts, the grammar), and that everything downstream of the model holds against
// arbitrary well-formed content (the gate, the FACT check, the task board, verify, replay). What
// it cannot show: anything about continuity; the report must not pass it off as evidence.
//
// The study is short so that CI can afford it (a call costs seconds here: attention over a
// prompt of thousands of tokens): one replicate per group, a wake every 12 simulated hours (6
// wakes, every intervention still planned), a window of 8 events. Needs the nested engine
// package (npm run setup:local-model; .ci/run installs it).
import Database from 'better-sqlite3';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, test } from 'vitest';
import { loadOrCreateControllerKey } from '../../controller/key-store.js';
import { DEFAULT_LOCAL_CONTEXT_TOKENS } from '../../controller/model-config-file.js';
import { type ModelForecast } from '../../design/model-forecast.js';
import { lockPrereg } from '../../design/prereg.js';
import { MAX_MODEL_TIMEOUT_MS } from '../../runtime/protocol.js';
import { judgeUsableData } from '../../schema/usable-data.js';
import { StudyReport } from '../../oracle/study-report.js';
import { EventEnvelope } from '../../schema/envelope.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { replayStore } from '../../writer/replay.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { runCli, type CliResult } from '../support/cli.js';
import { REPO } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

const MODEL_FILE = fileURLToPath(new URL('../../../shared/models/stories260K.gguf', import.meta.url));
/** The share of accepted answers the issue asks of a grammar-constrained model (per instance, for the run summary's judgement). */
const MIN_ACCEPTED_SHARE = 0.95;
/**
 * Over the whole pilot study (18 calls): a few answers may still run into the 4,096-token answer
 * cap before they close (stories260K fills strings and lists; 1 of ~50 calls did so here), and
 * those are `length` failures, counted; the rest must be accepted.
 */
const MIN_ACCEPTED_SHARE_OF_STUDY = 0.85;
/** Hard failures the runtime itself could cause; a FACT contradicting the store is the model's making. */
const RUNTIME_HARD_FAILURES = ['unauthorized_tool_execution', 'duplicate_side_effect', 'replay_cannot_restore_state', 'configuration_changed_after_start'];

// The call timeout: the most the tool allows. The study's model check times the machine before
// hour 0 and refuses a plan whose largest call (here ~23 s predicted on a quiet machine, a 4,096-token
// answer cap) would not fit the timeout with its margin; CI runs this file beside two others on
// two cores, where a measurement taken under a neighbour's burst can come out several times slower
// (a 120 s timeout was refused there once). The calls themselves take 10–25 s.
let out: string;
let study: CliResult;
let report: StudyReport;

beforeAll(async () => {
  expect(existsSync(MODEL_FILE), `the test model ${MODEL_FILE}`).toBe(true);
  const dir = tempDir('ds-pilot-');
  const keyDir = path.join(dir, 'keys');
  const key = loadOrCreateControllerKey(keyDir);
  const prereg = JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')) as Record<string, Record<string, unknown>>;
  prereg['expansion_rule']!['initial_n_per_group'] = 1;
  prereg['expansion_rule']!['expanded_n_per_group'] = 2;
  prereg['thresholds']!['c_instances_passing'] = [{ n: 1, at_least: 1 }, { n: 2, at_least: 2 }];
  prereg['wake_schedule']!['base_period_sim_minutes'] = 720;
  prereg['retrieval_policy']!['window_events'] = 8;
  prereg['retrieval_policy']!['token_cap'] = 800;
  const preregFile = path.join(dir, 'prereg-pilot.json');
  writeFileSync(preregFile, JSON.stringify(prereg, null, 2));
  const locked = lockPrereg(preregFile, key.keys, '2026-01-01T00:00:00.000Z');
  expect(locked.ok).toBe(true);
  out = path.join(dir, 'study');
  study = await runCli('study', [
    '--n', '1', '--seed', 'pilot', '--prereg', preregFile, '--key-dir', keyDir, '--out', out, '--same-uid', 'pilot test', '--concurrency', '2', '--json',
    '--model', 'local', '--model-file', MODEL_FILE, '--model-seed', '1', '--temperature', '0.8', '--model-timeout-ms', String(MAX_MODEL_TIMEOUT_MS),
  ]);
  const { exit_code: exitCode, ...body } = JSON.parse(study.stdout) as Record<string, unknown>;
  expect(exitCode).toBe(study.code);
  // A refusal (the model check's forecast, above all, depends on the machine's load) is shown whole, not as a schema mismatch.
  expect(body['ok'], `the study refused: ${JSON.stringify(body['error'])}\n${study.stderr.split('\n').filter((l) => l.includes('model check')).slice(-12).join('\n')}`).not.toBe(false);
  report = StudyReport.parse(body);
  for (const i of report.instances) console.log(`pilot ${i.group} preflight: ${preflightLines(path.join(out, i.dir))}`);
}, 900_000);

/** The forecast of an instance's model check (what this machine measured, against the call timeout), for the log. */
function preflightLines(runDir: string): string {
  const entries = readFileSync(path.join(runDir, RUN_FILES.preflight), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { forecast?: ModelForecast | null });
  const f = entries.find((e) => e.forecast)?.forecast;
  if (!f) return 'no forecast recorded';
  return `largest call predicted ${f.predicted_largest_call_ms} ms (×${f.timeout_margin}) against the call timeout ${f.call_timeout_ms} ms; ${f.speed.prompt_tokens_per_s} prompt and ${f.speed.generated_tokens_per_s} generated tokens/s; answer cap ${f.answer_cap_tokens}`;
}

function events(runDir: string): EventEnvelope[] {
  const db = new Database(path.join(runDir, RUN_FILES.store), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('select envelope from events order by seq').all() as { envelope: string }[]).map((r) => EventEnvelope.parse(JSON.parse(r.envelope)));
  } finally {
    db.close();
  }
}

describe('a short A/B/C study with a real local model (stories260K under the answer grammar)', () => {
  test('every instance finished, verifies, replays to its stored state, and the runtime caused no hard failure', () => {
    expect(study.stderr).toMatch(/3\/3 finished/);
    expect(report.instances.map((i) => i.group).sort()).toEqual(['A', 'B', 'C']);
    for (const i of report.instances) {
      const runDir = path.join(out, i.dir);
      const verified = verifyDirectory(runDir);
      expect(verified.ok, `${i.group}: ${JSON.stringify(verified).slice(0, 400)}`).toBe(true);
      const stored = new Database(path.join(runDir, RUN_FILES.store), { readonly: true }).prepare('select state_hash from projection').get() as { state_hash: string };
      expect(replayStore(path.join(runDir, RUN_FILES.store)).state_hash, `${i.group} replay`).toBe(stored.state_hash);
      expect(i.hard_failures.filter((h) => RUNTIME_HARD_FAILURES.includes(h.id)), `${i.group} hard failures`).toEqual([]);
    }
  });

  test('under the grammar every answer that ended by itself passes the schema; the only misses are answers cut at their token cap, counted as such; every answered call says why it ended, what it cost and who counted', () => {
    let accepted = 0;
    let calls = 0;
    for (const i of report.instances) {
      const all = events(path.join(out, i.dir));
      const usable = judgeUsableData(all, MIN_ACCEPTED_SHARE);
      expect(usable.calls, `${i.group} calls`).toBeGreaterThan(0);
      // The grammar's promise: no schema violation, no prompt that did not fit, no timeout; a cut answer is `length`, said so.
      expect({ ...usable.by_failure, length: 0 }, `${i.group}: ${usable.reason}`).toEqual({ schema: 0, truncated: 0, length: 0, timeout: 0, transport: 0, stream_broken: 0, other: 0 });
      for (const e of all.filter((x) => x.event_type === 'ModelOutputEvent.ModelCallFailed')) expect(e.payload['finish_reason']).toBe('length');
      accepted += usable.accepted;
      calls += usable.calls;
      const answered = all.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered');
      for (const e of answered) {
        const p = e.payload as Record<string, unknown>;
        expect(p['adapter']).toBe('local');
        expect(p['protocol']).toBe('ds-model-output/2');
        expect(typeof p['finish_reason']).toBe('string');
        expect(p['usage_source']).toBe('tokenizer');
        expect(p['prompt_count_source']).toBe('tokenizer');
        const usage = p['usage'] as { prompt_tokens: number; completion_tokens: number };
        expect(usage.prompt_tokens).toBe(p['prompt_tokens_counted']);
        expect(usage.completion_tokens).toBeGreaterThan(0);
      }
      // The ledger counts the tokens the tokenizer counted, not the runtime's chars / 4.
      const ledger = all.filter((e) => e.event_type === 'ExperimentEvent.BudgetLedgerRecorded').reduce((sum, e) => sum + (e.payload['used'] as { tokens: number }).tokens, 0);
      const counted = all.filter((e) => e.event_type.startsWith('ModelOutputEvent.') && e.payload['usage']).reduce((sum, e) => sum + (e.payload['usage'] as { prompt_tokens: number; completion_tokens: number }).prompt_tokens + (e.payload['usage'] as { completion_tokens: number }).completion_tokens, 0);
      expect(ledger, `${i.group} ledger tokens`).toBe(counted);
    }
    console.log(`pilot (stories260K): ${accepted} of ${calls} model calls accepted (${((100 * accepted) / calls).toFixed(1)} %)`);
    expect(accepted / calls).toBeGreaterThanOrEqual(MIN_ACCEPTED_SHARE_OF_STUDY);
  });

  test('the manifest pins the local model: the GGUF file hash, the grammar dialect and the schema hash, the same for every group', () => {
    const models = report.instances.map((i) => JSON.parse(Buffer.from(JSON.parse(readFileSync(path.join(out, i.dir, RUN_FILES.manifest), 'utf8')).payload, 'base64').toString('utf8')).model as Record<string, unknown>);
    for (const m of models) {
      expect(m['adapter']).toBe('local');
      expect(m['build']).toBe('gguf-sha256:270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d');
      expect(m['structured_output']).toMatchObject({ protocol: 'ds-model-output/2', dialect: 'gbnf' });
      // The default context: a group that keeps state shows more of it, and its prompts are longer (~8,700 tokens at the pilot's window).
      expect(m['context_size']).toBe(DEFAULT_LOCAL_CONTEXT_TOKENS);
    }
    expect(new Set(models.map((m) => JSON.stringify(m))).size).toBe(1);
    expect(report.fairness.ok, JSON.stringify(report.fairness.checks.filter((c) => !c.ok))).toBe(true);
  });

  test('the report says what the data is worth: usable data per instance by the pre-registered rule (accepted and substantive), and a verdict that follows rule 8', () => {
    expect(report.dry_run).toBe(false);
    expect(report.usable_data.min_accepted_share).toBe(0.8);
    // Recounted from the stores, not by the code under test: the share of accepted calls, and of
    // wakes with a call whose checkpoint carries a goal and a status (the default rule). A model that
    // follows no instruction fills those fields only sometimes, so either outcome is possible; the
    // report must say the one the rule gives.
    const short = new Set<string>();
    for (const i of report.instances) {
      const all = events(path.join(out, i.dir));
      const calls = all.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered' || (e.event_type === 'ModelOutputEvent.ModelCallFailed' && e.payload['failure'] !== 'budget_exhausted'));
      const accepted = calls.filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered').length;
      const callWakes = new Set(calls.map((e) => e.payload['wake_id'])).size;
      const substantive = all.filter((e) => e.event_type === 'ExperimentEvent.CheckpointRecorded' && e.payload['current_goal_id'] !== null && e.payload['goal_status'] !== null).length;
      const confounded = report.blocks?.find((b) => b.replicate === i.replicate)?.load.confounded ?? false;
      const usable = !confounded && accepted / calls.length >= 0.8 && substantive / callWakes >= 0.8;
      expect(i.usable, `${i.group}: ${accepted}/${calls.length} accepted, ${substantive}/${callWakes} substantive; ${i.usable_reason}`).toBe(usable);
      expect(i.usable_reason).toContain(`substantive: ${substantive} of ${callWakes} wake(s)`);
      if (!usable) short.add(i.group);
    }
    expect(report.usable_data.shortfalls.map((s) => s.slice('group '.length, 'group '.length + 1)).sort()).toEqual([...short].sort());
    // Rule 8: no usable data in a group is insufficient evidence; with usable data everywhere the verdict is the scores', never 'supported' for a model that follows no instruction.
    if (short.size > 0) expect(report.verdict).toBe('insufficient evidence');
    else expect(report.verdict).not.toBe('supported');
    const md = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(md).toMatch(/Usable data/);
    // What the fuzzer found downstream of the model (stated in the closing note).
    const found = report.instances.map((i) => {
      const all = events(path.join(out, i.dir));
      const count = (type: string, test: (p: Record<string, unknown>) => boolean = () => true): number => all.filter((e) => e.event_type === type && test(e.payload)).length;
      return `${i.group}: ${count('ActionEvent.ActionProposed')} proposals, ${count('ActionEvent.PermissionDecided', (p) => p['decision'] === 'deny')} denied, ${count('ActionEvent.ToolSucceeded')} tool results, ${count('MemoryEvent.ClaimRecorded')} claims, ${count('SystemEvent.AppendRejected')} refused appends, ${count('PlanEvent.PlanRevisionRejected')} plans rejected, score ${i.score}`;
    });
    console.log(`pilot (stories260K): verdict ${report.verdict}; ${found.join(' | ')}`);
  });
});
