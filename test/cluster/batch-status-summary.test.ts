// `npm run study -- --status DIR` summarises (issue 35 item 3): the counts by state, the stragglers
// named — a failed instance with its detail and rerun, the running one with how long it has run,
// the missing ones as index ranges — and every instance only with --list (--json: every one). A
// real plan (--plan-only) with a failed task record and an old claim forged into its folder; the
// summary's bounds at 300 instances on a status built in memory.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_NAMED_PER_STATE, MAX_RUNNING_NAMED, statusText } from '../../cli/study-status-text.js';
import type { InstanceStatus, StudyStatus } from '../../study/batch/batch-status.js';
import { claimFile, writeTaskRecord } from '../../study/batch/task-claim.js';
import { jsonOf, makeKey, planArgs, study, taskEnv, writeLockedPrereg } from '../support/batch-study.js';
import { tempDir } from '../support/writer-fixture.js';

const TWO_HOURS_MS = 2 * 60 * 60 * 1000;

describe('--status on a real plan with a failed and a long-running instance forged in', () => {
  let out: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    const dir = tempDir('ds-status-summary-');
    env = taskEnv(path.join(dir, 'xdg'));
    const keyDir = path.join(dir, 'keys');
    const prereg = writeLockedPrereg(path.join(dir, 'prereg.json'), makeKey(keyDir));
    out = path.join(dir, 'study');
    const planned = await study(planArgs({ out, keyDir, prereg, studyId: 'status-summary' }), env);
    if (planned.code !== 0) throw new Error(`test setup: --plan-only exited ${planned.code}: ${planned.stderr.slice(-3000)}`);
    // Index 0 failed (its task's record), index 1 claimed by a task two hours ago; index 2 never run.
    mkdirSync(path.dirname(claimFile(out, 1)), { recursive: true });
    writeTaskRecord(out, { index: 0, instance: 'A-r1', state: 'failed', task_id: 'job-7_0', host: 'node-3', run_dir: '/scratch/A-r1', attempts: 1, updated_at: new Date().toISOString(), exit_code: 1, detail: 'forged: the model server refused', wall_ms: 1000 });
    writeFileSync(claimFile(out, 1), JSON.stringify({ index: 1, task_id: 'job-7_1', host: 'node-4', pid: 4242, since: new Date(Date.now() - TWO_HOURS_MS).toISOString() }));
  }, 60_000);

  it('summarises: counts that match the folder, the failed and the running one named, the missing as a range, no per-instance list', async () => {
    const r = await study(['--status', out], env);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('status-summary: 3 planned · 0 done · 1 running · 0 stopped · 1 missing · 1 failed');
    expect(r.stdout).toMatch(/^ {2}failed +0 A-r1: exit 1: forged: the model server refused {2}→ npm run study -- --block 0 --out /m);
    expect(r.stdout).toMatch(/^ {2}running +1 B-r1: task job-7_1 on node-4 since .* \(running 2 h 0 min\)$/m);
    expect(r.stdout).toMatch(/^ {2}missing 1: indices 2 {2}→ e\.g\. npm run study -- --block 0 /m);
    expect(r.stdout).not.toMatch(/^ {2}missing +2 C-r1/m);
    expect(r.stdout).toContain('(every instance, one line each: add --list)');
  }, 60_000);

  it('--list adds every instance; --json has every one', async () => {
    const [listed, json] = await Promise.all([study(['--status', out, '--list'], env), study(['--status', out, '--json'], env)]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^ {2}missing +2 C-r1 {2}→ /m);
    expect(listed.stdout.split('\n').filter((l) => /^ {2}(done|running|stopped|missing|failed) +\d+ [ABC]-r\d+/.test(l))).toHaveLength(3);
    const body = jsonOf(json) as { counts: Record<string, number>; instances: { index: number; state: string; since: string | null }[] };
    expect(body.counts).toEqual({ done: 0, running: 1, stopped: 0, missing: 1, failed: 1 });
    expect(body.instances.map((i) => i.state)).toEqual(['failed', 'running', 'missing']);
    expect(body.instances[1]!.since).not.toBeNull();
  }, 60_000);

  it('refused: --list without --status, saying where it belongs', async () => {
    const r = await study(['--list'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--list belongs to --status DIR');
  }, 60_000);
});

describe('the summary at 300 instances', () => {
  const nowMs = Date.parse('2026-03-02T12:00:00.000Z');
  const instance = (index: number, state: InstanceStatus['state'], since: string | null = null): InstanceStatus => ({ index, instance: `A-r${index + 1}`, round: 1, state, detail: state === 'failed' ? 'exit 1: forged' : null, rerun: state === 'done' || state === 'running' ? null : `npm run study -- --block ${Math.floor(index / 3)} --out S`, since });
  const instances = Array.from({ length: 300 }, (_, i) => (i < 100 ? instance(i, 'done') : i < 108 ? instance(i, 'failed') : i < 114 ? instance(i, 'running', new Date(nowMs - (i - 100) * 600_000).toISOString()) : instance(i, 'missing')));
  const status: StudyStatus = { study_id: 's300', study_dir: 'S', task_unit: 'block', planned: 300, counts: { done: 100, running: 6, stopped: 0, missing: 186, failed: 8 }, instances, next: 'run what is not done' };

  it('a dozen lines: failed named up to the bound then counted, the longest running first, missing as ranges', () => {
    const lines = statusText(status, false, nowMs).trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(3 + MAX_NAMED_PER_STATE + 1 + MAX_RUNNING_NAMED + 1 + 1);
    expect(lines.filter((l) => l.startsWith('  failed '))).toHaveLength(MAX_NAMED_PER_STATE);
    expect(lines).toContain('  … and 3 more failed: indices 105-107');
    const running = lines.filter((l) => l.startsWith('  running '));
    expect(running).toHaveLength(MAX_RUNNING_NAMED);
    expect(running[0]).toMatch(/^ {2}running +113 A-r114 \(running 2 h 10 min\)$/);
    expect(lines).toContain('  … and 3 more running, for less long');
    expect(lines.some((l) => l.startsWith('  missing 186: indices 114-299'))).toBe(true);
  });

  it('--list: one line per instance', () => {
    expect(statusText(status, true, nowMs).trimEnd().split('\n')).toHaveLength(1 + 300 + 1);
  });
});
