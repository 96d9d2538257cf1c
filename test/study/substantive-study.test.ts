// Usable means substantive (issue 32 item 6, Done-when): a study whose subject gives only the
// emptiest valid answer — every checkpoint field null, no action, no claim: what the test model
// gives under a grammar at temperature 0 — has every call accepted and still ends "insufficient
// evidence": under the default pre-registration's model_calls.usable_data.substantive no wake of
// it carries a goal and a status. The screen says "substantive in 0 of N wake(s)", report.md and
// report.html say why, and --recompute reproduces it. Real processes, a real study through the
// CLI, a scripted model server on loopback.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { lockPrereg } from '../../design/prereg.js';
import { EMPTY_ANSWER, SCRIPTED_MODEL_ID, startScriptedModelServer, type ScriptedModelServer } from '../../faults/scripted-model-server.js';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { StudyReport } from '../../oracle/study-report.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetup, type ControllerSetup } from '../support/controller-run.js';

const SEED = 'substantive';

let setup: ControllerSetup;
let server: ScriptedModelServer;
let out: string;
let run: CliResult;
let report: StudyReport;

beforeAll(async () => {
  setup = controllerSetup();
  // The default pre-registration (its substantive rule untouched) with 8-hour wakes and n = 1: a short study.
  const prereg = JSON.parse(readFileSync(setup.preregFile, 'utf8')) as Record<string, Record<string, unknown>>;
  prereg['wake_schedule']!['base_period_sim_minutes'] = 480;
  prereg['expansion_rule']!['initial_n_per_group'] = 1;
  prereg['expansion_rule']!['expanded_n_per_group'] = 2;
  prereg['thresholds']!['c_instances_passing'] = [{ n: 1, at_least: 1 }, { n: 2, at_least: 2 }];
  const preregFile = path.join(setup.dir, 'prereg-substantive.json');
  writeFileSync(preregFile, `${JSON.stringify(prereg, null, 2)}\n`);
  expect(lockPrereg(preregFile, setup.key.keys, '2026-01-01T00:00:00.000Z').ok).toBe(true);
  server = await startScriptedModelServer(() => ({ kind: 'content', content: JSON.stringify(EMPTY_ANSWER) }));
  out = path.join(setup.dir, 'study');
  run = await runCli('study', ['--n', '1', '--seed', SEED, '--prereg', preregFile, '--key-dir', setup.keyDir, '--out', out, '--same-uid', 'test run in one uid', '--model', 'openai', '--base-url', server.baseUrl, '--model-id', SCRIPTED_MODEL_ID, '--api-key-env', 'none', '--structured-output', 'vllm', '--no-stream', '--model-timeout-ms', '10000']);
  report = StudyReport.parse(JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')));
}, 240_000);

afterAll(async () => {
  await server?.close();
});

describe('a study of empty valid answers', () => {
  test('every call accepted, no wake substantive: every instance is no data, the verdict insufficient evidence, exit 4', () => {
    expect(server.errors).toEqual([]);
    expect(run.code, run.stderr.slice(-3000)).toBe(EXIT_CODES.notEvidence);
    expect(report.verdict).toBe('insufficient evidence');
    expect(report.instances).toHaveLength(3);
    for (const i of report.instances) {
      expect(i.accepted_share, i.group).toBe(1);
      expect(i.usable, i.group).toBe(false);
      expect(i.usable_reason).toMatch(/; substantive: 0 of \d+ wake\(s\) with a model call ended in a checkpoint carrying current_goal_id and goal_status \(0 %\), below the pre-registered 80 %; (\d+) of \1 checkpoint\(s\) empty/);
    }
    expect(report.usable_data.shortfalls).toEqual(['A', 'B', 'C'].map((g) => `group ${g}: 0 of 1 instances have usable data`));
  });

  test('the screen, report.md and report.html say why; --recompute reproduces it from the folder', async () => {
    expect(run.stdout).toMatch(/no data, A r1: .*substantive: 0 of \d+ wake\(s\)/);
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).toMatch(/substantive: 0 of \d+ wake\(s\)/);
    expect(readFileSync(path.join(out, 'report.html'), 'utf8')).toMatch(/substantive: 0 of \d+ wake\(s\)/);
    const recomputed = await runCli('study', ['--recompute', out]);
    expect(recomputed.code, recomputed.stderr.slice(-2000)).toBe(EXIT_CODES.ok);
    expect(recomputed.stdout, recomputed.stdout).toMatch(/^RECOMPUTED/);
  });
});
