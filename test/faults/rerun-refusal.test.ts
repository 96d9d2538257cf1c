// `npm run faults -- --seed S --run I` is a reproduction check: it compares the rerun with run I's
// record in the harness folder. Without such a record it used to calibrate, run, print
// "compared": false and exit 0 — a check that compared nothing, passing (issue 16, class 4). Now
// it is refused before anything runs: exit 2, a typed code, a message that says which --out to
// give, and no folder created or changed. Tested through the real command with a fresh --out, a
// harness folder holding only what is not a record of the run (a run that never ended, a record of
// another seed, a torn record), and with no --out at all; the record search itself is held to a
// forged valid record (it is found) so the refusal is not a checker that refuses everything. No
// real fault run is needed: every case is refused before the harness starts.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { earlierRecordsOf, FaultRerunRefusal } from '../../faults/fault-harness.js';
import type { FaultRunPlan } from '../../faults/fault-plan.js';
import type { RunFingerprint } from '../../faults/fault-run.js';
import { runCli } from '../support/cli.js';
import { REPO } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';
import { folderState } from '../support/folder-state.js';

const SEED = 'rerun-refusal-1';


function planOf(seed: string, index: number): FaultRunPlan {
  return { index, seed, group: 'A', instance_seed: `faults-${seed}`, point: 'writer.append.before_commit', kind: 'kill_writer', hit: 3, hits_in_calibration: 9 };
}

/** A record as fault-run.ts writes it, for the parts a rerun reads (plan, fingerprint) and a few others. */
function recordOf(plan: FaultRunPlan): string {
  const fingerprint: RunFingerprint = { plan, reached: null, exits: [0], head_seq: 12, event_types_sha256: null, state_hash: null, invariants: { verify: true } };
  return `${JSON.stringify({ plan, name: `000${plan.index}-A-x`, exits: [0], violations: [], notes: [], fingerprint, durationMs: 1 }, null, 2)}\n`;
}

function writeRecord(outDir: string, folder: string, text: string | null): void {
  mkdirSync(path.join(outDir, 'runs', folder), { recursive: true });
  if (text !== null) writeFileSync(path.join(outDir, 'runs', folder, 'fault-run.json'), text);
}

interface FailureJson {
  ok: boolean;
  command: string;
  exit_code: number;
  error: { code: string; message: string; out: string; seed: string; run: number; looked_at: string[] };
}

describe('npm run faults -- --run I without a record of run I in --out', () => {
  test('a fresh --out: refused with exit 2 and a typed code before anything runs; the message says which --out to give; no folder is created', async () => {
    const parent = tempDir('ds-rerun-fresh-');
    const fresh = path.join(parent, 'harness');
    const result = await runCli('faults', ['--seed', SEED, '--run', '2', '--out', fresh, '--json']);
    expect(result.code).toBe(2);
    const printed = JSON.parse(result.stdout) as FailureJson;
    expect(printed).toMatchObject({ ok: false, command: 'faults', exit_code: 2, error: { code: 'fault_rerun_no_earlier_record', out: fresh, seed: SEED, run: 2, looked_at: [] } });
    expect(printed.error.message).toBe(result.stderr.split('\n')[0]!.replace(/^faults: /, ''));
    expect(result.stderr).toMatch(new RegExp(`^faults: ${fresh.replaceAll('/', '\\/')} does not exist\\. --run 2 is a reproduction check: it compares the new run with run 2's record in --out`));
    expect(result.stderr).toContain('Nothing was run and nothing was written.');
    expect(result.stderr).toContain('Give the --out of the harness folder that made run 2');
    expect(result.stderr).toContain(`npm run faults -- --seed "${SEED}" --runs 2 --out DIR`);
    expect(result.stderr).toContain('usage: npm run faults');
    // No calibration, no run: the harness never started.
    expect(result.stderr).not.toContain('[faults]');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(fresh)).toBe(false);
    expect(readdirSync(parent)).toEqual([]);
  });

  test('a harness folder holding a run that never ended, a record of another seed and a torn record of run 2: refused, each named; the folder byte-identical', async () => {
    const out = tempDir('ds-rerun-leftovers-');
    mkdirSync(path.join(out, 'keys'));
    writeFileSync(path.join(out, 'calibration.json'), '{"seed":"rerun-refusal-1","calibration":"(left as a harness would find it)"}\n');
    writeRecord(out, '0002-A-writer.append.before_commit-kill_writer', null);
    writeRecord(out, '0002-B-writer.append.after_commit-kill_runtime', recordOf(planOf('another-seed', 2)));
    writeRecord(out, '0002-C-controller.head.signing-kill_controller', '{"plan": {"index": 2, "se');
    // Run 3's record is no record of run 2, and is not even looked at.
    writeRecord(out, '0003-A-writer.append.before_commit-kill_writer', recordOf(planOf(SEED, 3)));
    const before = folderState(out);

    const result = await runCli('faults', ['--seed', SEED, '--run', '2', '--out', out]);
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 2, stdout: '' });
    expect(result.stderr).toMatch(new RegExp(`^faults: ${out.replaceAll('/', '\\/')} holds no record of run 2 of seed "${SEED}" \\(looked for runs/0002-\\*/fault-run\\.json\\)\\. --run 2 is a reproduction check`));
    expect(result.stderr).toContain('\n  runs/0002-A-writer.append.before_commit-kill_writer/fault-run.json: missing (that run never ended)\n');
    expect(result.stderr).toContain(`\n  runs/0002-B-writer.append.after_commit-kill_runtime/fault-run.json: a record of run 2 of seed "another-seed", not of run 2 of seed "${SEED}"\n`);
    expect(result.stderr).toMatch(/\n {2}runs\/0002-C-controller\.head\.signing-kill_controller\/fault-run\.json: not JSON \(/);
    expect(result.stderr).not.toContain('0003-');
    expect(result.stderr).not.toContain('[faults]');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(folderState(out)).toEqual(before);
  });

  test('no --out, or an --out that is a file: a usage error (exit 2) before anything is created', async () => {
    const runsDir = path.join(REPO, 'runs');
    const runsBefore = existsSync(runsDir) ? readdirSync(runsDir).sort() : null;
    const noOut = await runCli('faults', ['--seed', SEED, '--run', '2', '--json']);
    expect(noOut.code).toBe(2);
    expect(JSON.parse(noOut.stdout)).toMatchObject({ ok: false, command: 'faults', exit_code: 2, error: { code: 'usage' } });
    expect(noOut.stderr).toMatch(/^faults: --run I compares the rerun with its record in the harness folder that made it: give that folder's --out/);
    expect(existsSync(runsDir) ? readdirSync(runsDir).sort() : null).toEqual(runsBefore);

    const file = path.join(tempDir('ds-rerun-file-'), 'not-a-folder');
    writeFileSync(file, 'x\n');
    const onFile = await runCli('faults', ['--seed', SEED, '--run', '2', '--out', file]);
    expect(onFile.code).toBe(2);
    expect(onFile.stderr).toMatch(/^faults: --out .*not-a-folder exists and is not a folder/);
    expect(readFileSync(file, 'utf8')).toBe('x\n');
  });
});

describe('earlierRecordsOf (the search a rerun is refused by)', () => {
  test('finds a record of the run and seed (a forged valid one), and only that: other seeds, other runs and torn files are no record', () => {
    const out = tempDir('ds-rerun-search-');
    writeRecord(out, '0002-A-writer.append.before_commit-kill_writer', recordOf(planOf(SEED, 2)));
    writeRecord(out, '0002-B-writer.append.after_commit-kill_runtime', recordOf(planOf('another-seed', 2)));
    writeRecord(out, '0002-C-controller.head.signing-kill_controller', 'not json');
    const found = earlierRecordsOf(out, SEED, 2);
    expect(found.map((r) => [path.relative(out, r.file), r.plan.seed, r.fingerprint.head_seq])).toEqual([[path.join('runs', '0002-A-writer.append.before_commit-kill_writer', 'fault-run.json'), SEED, 12]]);

    // The same folder asked for another seed, or another run: refused, naming what it saw.
    let refusal: unknown;
    try {
      earlierRecordsOf(out, 'a-third-seed', 2);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(FaultRerunRefusal);
    expect((refusal as FaultRerunRefusal).code).toBe('fault_rerun_no_earlier_record');
    expect((refusal as FaultRerunRefusal).details.looked_at).toHaveLength(3);
    expect(() => earlierRecordsOf(out, SEED, 7)).toThrow(/holds no record of run 7 of seed "rerun-refusal-1"/);
  });
});
