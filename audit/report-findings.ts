// The study report's findings as the desk shows them beside the events (issue 35 item 5): the
// hard failures report.json lists per instance, each at its seq. Read from report.json, not
// recomputed: the desk shows what the report says and where it says it (a recompute is
// `npm run study -- --recompute`'s job, and the replay check alone takes seconds per instance),
// so a reader who followed a finding from the report sees that very finding at its event.
// A report that cannot be read, or a finding naming what the study does not hold, is a stated
// problem on the pages, never dropped.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { StudyReport, type ReportInstance } from '../oracle/study-report.js';
import { STUDY_FILES } from '../study-contract/study-folder.js';
import { instanceDirName } from '../study-contract/study-replicates.js';
import type { Loaded } from './run-folder.js';

/** report.json is ~2 kB an instance (60 MB at 30,000): read whole, so bounded. */
const MAX_REPORT_BYTES = 128 * 1024 * 1024;

export type ReportFinding = ReportInstance['hard_failures'][number];

/** One instance's findings in the report, and where the report is. */
export interface RunFindings {
  readonly report_path: string;
  /** The instance as the report names it (A-r1). */
  readonly instance: string;
  readonly findings: readonly ReportFinding[];
}

/** The instance's name in the study (its folder name: A-r1). */
export function instanceKey(instance: Pick<ReportInstance, 'group' | 'replicate'>): string {
  return instanceDirName(instance.group, instance.replicate);
}

/** report.json of `studyDir`, parsed; null when there is none (a study not yet reported). */
export function readStudyReport(studyDir: string): Loaded<StudyReport> | null {
  const file = path.join(studyDir, STUDY_FILES.json);
  if (!existsSync(file)) return null;
  const bytes = statSync(file).size;
  if (bytes > MAX_REPORT_BYTES) return { ok: false, problem: `${file} is ${bytes} bytes, more than the ${MAX_REPORT_BYTES} the desk reads` };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return { ok: false, problem: `${file} is not JSON: its findings cannot be shown (npm run study -- --recompute DIR rebuilds it from the run folders)` };
  }
  const parsed = StudyReport.safeParse(raw);
  if (!parsed.success) return { ok: false, problem: `${file} is not a study report: ${z.prettifyError(parsed.error).split('\n').slice(0, 4).join(' ')} (npm run study -- --recompute DIR rebuilds it)` };
  return { ok: true, value: parsed.data };
}

/** The findings of the instance whose folder is `runDir` in `report` of `studyDir` (none listed: an empty list). */
export function findingsOf(report: StudyReport, studyDir: string, runDir: string): RunFindings | null {
  const relative = path.relative(studyDir, runDir);
  const instance = report.instances.find((i) => path.normalize(i.dir) === relative);
  if (instance === undefined) return null;
  return { report_path: path.join(studyDir, STUDY_FILES.json), instance: instanceKey(instance), findings: instance.hard_failures };
}

/**
 * The findings for a run opened on its own: when its folder is <study>/instances/<G>-r<k> and the
 * study has report.json, what the report lists for it; null when the run is not in a reported study.
 */
export function findingsForRun(runDir: string): Loaded<RunFindings> | null {
  const parent = path.dirname(runDir);
  if (path.basename(parent) !== STUDY_FILES.instances) return null;
  const studyDir = path.dirname(parent);
  const report = readStudyReport(studyDir);
  if (report === null) return null;
  if (!report.ok) return report;
  const found = findingsOf(report.value, studyDir, runDir);
  return found === null ? { ok: false, problem: `${path.join(studyDir, STUDY_FILES.json)} does not list this run (${path.relative(studyDir, runDir)}): its findings, if any, are not known here` } : { ok: true, value: found };
}
