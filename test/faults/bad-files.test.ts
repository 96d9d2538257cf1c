// The bad files the harness leaves behind (issue 20 item 5): one real run per bad-file kind — the
// instance killed at the point, the file planted once every process is gone, verify and a resume
// asked about it, the original put back, the run resumed to the end — and the verdict checker
// itself on forged verdicts (a verify or resume that accepts the bad file silently, a refused
// resume that changed the folder), so bad_file_verdict cannot pass by looking at nothing.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { BAD_FILE_VERDICTS, badFileVerdictProblems, folderDifferences, type VerdictInput } from '../../faults/bad-files.js';
import type { FaultRunPlan } from '../../faults/fault-plan.js';
import { prepareHarness, runFaultPlan, type FaultRunResult } from '../../faults/fault-run.js';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { REPO } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

const RUN_TIMEOUT_MS = 240_000;
const folders: string[] = [];
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

function planOf(point: FaultRunPlan['point'], kind: FaultRunPlan['kind'], hit: number): FaultRunPlan {
  return { index: 1, seed: 'test', group: 'C', instance_seed: 'faults-test', point, kind, hit, hits_in_calibration: hit };
}

async function run(plan: FaultRunPlan): Promise<{ result: FaultRunResult; verdictLog: string }> {
  const out = tempDir('ds-faults-badfile-');
  folders.push(out);
  const result = await runFaultPlan(prepareHarness(out, REPO, null), plan);
  expect(result.reached).toMatchObject({ point: plan.point, kind: plan.kind, hit: plan.hit });
  expect({ violations: result.violations, failed: result.invariants.filter((i) => !i.ok) }).toEqual({ violations: [], failed: [] });
  // The log of the resume asked about the bad file: the second controller's.
  const log = readFileSync(path.join(result.recordDir, 'controller.log'), 'utf8');
  const verdictLog = log.split(/^\$ experiment /m)[2] ?? '';
  expect(result.notes.some((n) => n.startsWith('put back'))).toBe(true);
  return { result, verdictLog };
}

function refusalLine(log: string, file: string): string | undefined {
  return log.split('\n').find((l) => l.startsWith('experiment: refusing to resume') && l.includes(file));
}

describe('one run, one bad file', () => {
  test(
    'a torn last line of heads.jsonl: verify fails naming it, the resume is refused (exit 1, folder unchanged), the run finishes once it is put back',
    async () => {
      const { result, verdictLog } = await run(planOf('controller.head.signing', 'heads_torn', 1));
      expect(result.exits[1]).toBe(EXIT_CODES.failed);
      expect(refusalLine(verdictLog, RUN_FILES.heads)).toMatch(/its last line is torn/);
      expect(result.notes).toContain(`verify: ${RUN_FILES.heads}: line 1 is not JSON`);
      expect(result.exits.at(-1)).toBe(EXIT_CODES.ok);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    "another store's WAL beside events.db: verify and the resume say store_wal_foreign naming the -wal, nothing is written into events.db, the run finishes with its own WAL back",
    async () => {
      const { result, verdictLog } = await run(planOf('writer.append.after_commit', 'wal_foreign', 150));
      expect(result.exits[1]).toBe(EXIT_CODES.failed);
      expect(refusalLine(verdictLog, `${RUN_FILES.store}-wal does not belong to`)).toBeDefined();
      expect(verdictLog).toContain('"code":"store_wal_foreign"');
      expect(result.notes.some((n) => n.startsWith(`verify: ${RUN_FILES.store}: store_wal_foreign`))).toBe(true);
      expect(result.exits.at(-1)).toBe(EXIT_CODES.ok);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    "another instance's signed manifest: verify fails naming it, the resume is refused before a writer starts, naming the manifest",
    async () => {
      const { result, verdictLog } = await run(planOf('controller.head.signing', 'manifest_foreign', 2));
      expect(result.exits[1]).toBe(EXIT_CODES.failed);
      expect(refusalLine(verdictLog, `${RUN_FILES.manifest} is not this store's manifest`)).toBeDefined();
      expect(verdictLog).not.toContain('[ds-writer');
      expect(result.exits.at(-1)).toBe(EXIT_CODES.ok);
    },
    RUN_TIMEOUT_MS,
  );

  test(
    "another store's snapshot row: verify warns, the resume goes on with a warning line, the restore drill skips it",
    async () => {
      const { result, verdictLog } = await run(planOf('writer.snapshot.write', 'snapshot_foreign', 3));
      expect(result.exits[1]).toBe(EXIT_CODES.ok);
      expect(verdictLog).toMatch(/warning: events\.db snapshot at seq \d+ is the state of subject subject-faults-foreign-store-r1, not of this store's/);
    },
    RUN_TIMEOUT_MS,
  );
});

describe('the verdict checker', () => {
  const refusedRight: VerdictInput = {
    kind: 'heads_torn',
    runDir: '/run',
    verifyBefore: { failures: [], warnings: ['events.db: open'] },
    verifyAfter: { failures: [`${RUN_FILES.heads}: line 3 is not JSON`], warnings: ['events.db: open'] },
    resumeExit: EXIT_CODES.failed,
    resumeLog: `experiment: refusing to resume /run: /run/${RUN_FILES.heads} is not a clean list of signed heads\n`,
    changedByResume: [],
    changedByVerify: [],
    finishedBefore: false,
  };

  test('right verdicts: no problem', () => {
    expect(badFileVerdictProblems(refusedRight)).toEqual([]);
    const recoveredRight: VerdictInput = {
      ...refusedRight,
      kind: 'snapshot_foreign',
      verifyAfter: { failures: [], warnings: ['events.db: open', 'events.db: snapshot at seq 291 is the state of subject x: not used'] },
      resumeExit: EXIT_CODES.ok,
      resumeLog: '[ds-controller] warning: events.db snapshot at seq 291 is the state of subject x: not used\n',
      changedByResume: ['events.db changed'],
    };
    expect(badFileVerdictProblems(recoveredRight)).toEqual([]);
  });

  test('a verify that accepts the bad file, a resume that goes on, a refused resume that changed the folder: each is a problem', () => {
    expect(badFileVerdictProblems({ ...refusedRight, verifyAfter: refusedRight.verifyBefore })).toEqual([expect.stringMatching(/^verify accepted the bad heads\.jsonl/)]);
    expect(badFileVerdictProblems({ ...refusedRight, resumeExit: EXIT_CODES.ok, resumeLog: 'finished\n' })).toEqual([
      `the resume with the bad ${BAD_FILE_VERDICTS.heads_torn.file} ended with exit 0, not the refusal's ${EXIT_CODES.failed}`,
      `the resume's log has no refusal naming ${BAD_FILE_VERDICTS.heads_torn.file}`,
    ]);
    expect(badFileVerdictProblems({ ...refusedRight, changedByResume: ['events.db changed'] })).toEqual([`the refused resume changed the run folder: events.db changed`]);
    expect(badFileVerdictProblems({ ...refusedRight, changedByVerify: ['events.db-shm appeared'] })).toEqual(['verify changed the run folder: events.db-shm appeared']);
    // A cache-only kind: a verify failure is as wrong as silence.
    expect(badFileVerdictProblems({ ...refusedRight, kind: 'snapshot_foreign', verifyAfter: { failures: ['events.db: snapshot bad'], warnings: [] }, resumeLog: '' })).toEqual([
      'verify failed on a bad snapshot it should only warn about: ["events.db: snapshot bad"]',
      'verify said nothing about the bad snapshot: no new warning names it',
      'the resume went on without a warning naming the bad snapshot',
    ]);
  });

  test('a run already finished when the bad snapshot was planted: verify warns, the resume is refused (nothing to resume) and changes nothing; one that went on or changed the folder is a problem', () => {
    // Seen in a 1,000-run batch: a kill at the writer's shutdown snapshot, after the seal, left a finished run (seed hour-1, runs 21 and 72).
    const finished: VerdictInput = {
      ...refusedRight,
      kind: 'snapshot_foreign',
      verifyAfter: { failures: [], warnings: ['events.db: open', 'events.db: snapshot at seq 461 is the state of subject x: not used'] },
      resumeExit: EXIT_CODES.failed,
      resumeLog: 'experiment: /run is finished and sealed (seq 461); nothing to resume\n',
      finishedBefore: true,
    };
    expect(badFileVerdictProblems(finished)).toEqual([]);
    expect(badFileVerdictProblems({ ...finished, resumeExit: EXIT_CODES.ok, changedByResume: ['events.db changed'] })).toEqual([
      `the resume of the finished run with the bad snapshot ended with exit 0, not the refusal's ${EXIT_CODES.failed} (nothing to resume)`,
      'the refused resume of the finished run changed the run folder: events.db changed',
    ]);
    // Not finished: the same log (no warning naming the snapshot) is a resume that went on silently.
    expect(badFileVerdictProblems({ ...finished, finishedBefore: false })).toEqual(['the resume went on without a warning naming the bad snapshot']);
  });

  test('folder differences name what changed, appeared and went', () => {
    const before = new Map([['a', '1'], ['b', '2']]);
    expect(folderDifferences(before, new Map([['a', '1'], ['b', '3'], ['c', '4']]))).toEqual(['b changed', 'c appeared']);
    expect(folderDifferences(before, new Map([['a', '1']]))).toEqual(['b was removed']);
    expect(folderDifferences(before, new Map(before))).toEqual([]);
  });
});
