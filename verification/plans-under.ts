// Every run under a folder checked against its plan, as npm run verify and the oracle do: the
// run folders are the ones npm run verify walks (writer/run-files-walk.ts findRunFiles, with its
// limits), each checked with the controller key beside it or above it. A run without plan.json
// is named in a note, not failed (a store written by other tools has none); a run whose key
// cannot be found or read is a failure, since its manifest and lock then cannot be checked.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { RUN_FILES } from '../schema/run-files.js';
import { findRunFiles, keyFileFor } from '../writer/run-files-walk.js';
import { PlanConformanceCounts, PlanFinding } from './plan-findings.js';
import { checkRunFollowsPlan, type PlanConformanceOptions } from './run-plan-check.js';

export const RunPlanCheck = z.strictObject({
  /** The run folder, relative to the checked folder ('.' for the folder itself). */
  run: z.string(),
  plan: z.enum(['checked', 'absent', 'no-key']),
  checked: PlanConformanceCounts.nullable(),
});
export type RunPlanCheck = z.infer<typeof RunPlanCheck>;

export const PlansReport = z.strictObject({
  runs: z.array(RunPlanCheck),
  /** Files relative to the checked folder. */
  failures: z.array(PlanFinding),
  notes: z.array(PlanFinding),
});
export type PlansReport = z.infer<typeof PlansReport>;

/** Folders under root holding an events.db: npm run verify's own walk. */
export function runFoldersUnder(root: string): string[] {
  return findRunFiles(root).stores.map((store) => path.dirname(store));
}

/** Checks every run under root that has a plan.json; a run without one is named in a note. */
export function checkPlansUnder(root: string, options: PlanConformanceOptions): PlansReport {
  const result: PlansReport = { runs: [], failures: [], notes: [] };
  for (const runDir of runFoldersUnder(root)) {
    const run = path.relative(root, runDir) || '.';
    const rel = (file: string): string => path.relative(root, path.join(runDir, file)) || file;
    if (!existsSync(path.join(runDir, RUN_FILES.plan))) {
      result.runs.push({ run, plan: 'absent', checked: null });
      result.notes.push({ file: rel(RUN_FILES.plan), seq: null, message: `no ${RUN_FILES.plan}: the run's plan was not checked` });
      continue;
    }
    const keyFile = keyFileFor(path.join(runDir, RUN_FILES.store), root);
    let key: Uint8Array | null = null;
    if (keyFile === null) result.failures.push({ file: rel(RUN_FILES.plan), seq: null, message: `no ${RUN_FILES.publicKey} beside the run or above it: the plan's manifest and lock cannot be checked` });
    else {
      try {
        key = parsePublicKeyHex(readFileSync(keyFile, 'utf8'));
      } catch (error) {
        result.failures.push({ file: path.relative(root, keyFile) || RUN_FILES.publicKey, seq: null, message: `the plan was not checked: ${error instanceof Error ? error.message : String(error)}` });
      }
    }
    if (key === null) {
      result.runs.push({ run, plan: 'no-key', checked: null });
      continue;
    }
    const report = checkRunFollowsPlan(runDir, key, options);
    result.runs.push({ run, plan: 'checked', checked: report.checked });
    for (const f of report.failures) result.failures.push({ ...f, file: rel(f.file) });
    for (const n of report.notes) result.notes.push({ ...n, file: rel(n.file) });
  }
  return result;
}
