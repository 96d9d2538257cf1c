// The study folder's contract (what npm run study writes and every later step reads: scoring,
// --recompute, the blind-review export): its file names and study.json. Here rather than in
// experiments/, because nothing may import from experiments/ (DESIGN §3).
//   <study>/study.json                 what the study was started with (StudyPlan)
//   <study>/instances/<G>-r<k>/        one run folder per instance
//   <study>/report.json, report.md, report.html
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ModelChoice } from '../controller/model-choice.js';

export const STUDY_FILES = { plan: 'study.json', instances: 'instances', json: 'report.json', markdown: 'report.md', html: 'report.html' } as const;
/** More instances than this in one study is refused (3 groups × at most 33 replicates). */
export const MAX_STUDY_INSTANCES = 99;

export const StudyPlan = z.strictObject({
  study_version: z.literal('1.0.0'),
  study_id: z.string().min(1).max(128),
  seed: z.string().min(1).max(100),
  prereg_file: z.string(),
  prereg_sha256: z.string(),
  n_initial: z.number().int().min(1),
  n_expanded: z.number().int().min(1),
  concurrency: z.number().int().min(1),
  start_at: z.iso.datetime(),
  model: ModelChoice,
  started_at: z.iso.datetime(),
});
export type StudyPlan = z.infer<typeof StudyPlan>;

export class StudyError extends Error {
  override readonly name = 'StudyError';
}

export function readStudyPlan(outDir: string): StudyPlan {
  const file = path.join(outDir, STUDY_FILES.plan);
  if (!existsSync(file)) throw new StudyError(`${file} is missing: ${outDir} is not a study folder of npm run study`);
  const parsed = StudyPlan.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) throw new StudyError(`${file}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
