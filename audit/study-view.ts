// The audit desk's read model of a whole study folder (issue 35 item 5): its instances by
// group and replicate, report.json and its findings, and one desk per instance opened when first
// asked for (verifying and indexing every run at start would take minutes at 300 instances).
// Read-only like the desk: report.json is read once, every store through the read-only reader.
// What does not fit together — a report naming an instance the folder does not hold, a finding
// at a seq its store does not have, a folder that is no instance — is kept as a stated problem.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { StudyReport, ReportInstance } from '../oracle/study-report.js';
import { RUN_FILES } from '../schema/run-files.js';
import { MAX_STUDY_INSTANCES, STUDY_FILES } from '../study-contract/study-folder.js';
import { INSTANCE_DIR_RE } from '../study-contract/study-replicates.js';
import { GROUPS, type Group } from '../design/groups.js';
import { StoreReader } from '../writer/store-reader.js';
import { AuditDesk } from './audit-desk.js';
import { findingsOf, instanceKey, readStudyReport, type ReportFinding, type RunFindings } from './report-findings.js';
import { AuditInputError, type Loaded } from './run-folder.js';

/** Desks kept open (each holds its run's link index); a side-by-side page needs three. */
const MAX_OPEN_DESKS = 12;
/** Problems listed one by one; more are counted. */
const MAX_LISTED_PROBLEMS = 200;

export interface StudyInstance {
  /** Its folder's name and the name the report gives it: A-r1. */
  readonly key: string;
  readonly group: Group;
  readonly replicate: number;
  readonly runDir: string;
  /** The folder holds a store. */
  readonly onDisk: boolean;
  /** Its entry in report.json; null when the report does not list it (or there is no report). */
  readonly reported: ReportInstance | null;
}

export interface StudyFinding {
  readonly key: string;
  readonly finding: ReportFinding;
  /** Why the finding cannot be shown at its event (its instance or seq is not in the study); null when it can. */
  readonly problem: string | null;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Why `seq` names no event of the store in `runDir`, or null when it does. */
function seqProblem(runDir: string, seq: number): string | null {
  let reader: StoreReader;
  try {
    reader = StoreReader.open(path.join(runDir, RUN_FILES.store));
  } catch (error) {
    return `its store cannot be read: ${message(error)}`;
  }
  try {
    const head = reader.headSeq();
    if (seq > head) return `seq ${seq} is not in its store (it holds seq 1 to ${head})`;
    return reader.rowAt(seq) === null ? `its store has no row at seq ${seq} (a gap)` : null;
  } finally {
    reader.close();
  }
}

function listInstances(studyDir: string, report: StudyReport | null, problems: string[]): StudyInstance[] {
  const instancesDir = path.join(studyDir, STUDY_FILES.instances);
  const names = readdirSync(instancesDir).sort();
  if (names.length > MAX_STUDY_INSTANCES) throw new AuditInputError(`${instancesDir} holds ${names.length} entries, more than the ${MAX_STUDY_INSTANCES} instances a study may have`);
  const found: StudyInstance[] = [];
  for (const name of names) {
    const m = INSTANCE_DIR_RE.exec(name);
    const runDir = path.join(instancesDir, name);
    if (m === null) {
      problems.push(`${runDir} is not an instance folder (named <group>-r<replicate>, as A-r1): not shown`);
      continue;
    }
    const reported = report?.instances.find((i) => instanceKey(i) === name) ?? null;
    found.push({ key: name, group: m[1] as Group, replicate: Number(m[2]), runDir, onDisk: existsSync(path.join(runDir, RUN_FILES.store)), reported });
  }
  for (const i of report?.instances ?? []) {
    if (!found.some((f) => f.key === instanceKey(i))) {
      problems.push(`report.json lists ${instanceKey(i)} (dir ${i.dir}), which is not in ${instancesDir}`);
      found.push({ key: instanceKey(i), group: i.group, replicate: i.replicate, runDir: path.join(instancesDir, instanceKey(i)), onDisk: false, reported: i });
    }
  }
  for (const f of found) if (!f.onDisk && f.reported === null) problems.push(`${f.runDir} holds no store (${RUN_FILES.store})`);
  return found.sort((a, b) => a.replicate - b.replicate || GROUPS.indexOf(a.group) - GROUPS.indexOf(b.group));
}

function checkFindings(instances: readonly StudyInstance[]): StudyFinding[] {
  const out: StudyFinding[] = [];
  for (const instance of instances) {
    for (const finding of instance.reported?.hard_failures ?? []) {
      const problem = !instance.onDisk ? `${instance.key} is not in the study folder` : finding.seq === null ? null : seqProblem(instance.runDir, finding.seq);
      out.push({ key: instance.key, finding, problem });
    }
  }
  return out;
}

export class StudyView {
  private readonly desks = new Map<string, AuditDesk>();

  private constructor(
    readonly studyDir: string,
    readonly scenariosDir: string,
    /** null: the study has no report.json yet. */
    readonly report: Loaded<StudyReport> | null,
    readonly instances: readonly StudyInstance[],
    readonly findings: readonly StudyFinding[],
    readonly problems: readonly string[],
    readonly problemsNotListed: number,
  ) {}

  /** Whether `dir` is a study folder (its study.json or report.json beside an instances folder). */
  static isStudyFolder(dir: string): boolean {
    const has = (name: string): boolean => existsSync(path.join(dir, name));
    return existsSync(dir) && statSync(dir).isDirectory() && has(STUDY_FILES.instances) && (has(STUDY_FILES.plan) || has(STUDY_FILES.json));
  }

  static open(studyDir: string, scenariosDir: string): StudyView {
    const dir = path.resolve(studyDir);
    if (!StudyView.isStudyFolder(dir)) throw new AuditInputError(`${dir} is not a study folder (${STUDY_FILES.instances}/ beside ${STUDY_FILES.plan} or ${STUDY_FILES.json}); give a study folder or one run folder`);
    const report = readStudyReport(dir);
    const problems: string[] = [];
    const instances = listInstances(dir, report?.ok === true ? report.value : null, problems);
    const findings = checkFindings(instances);
    return new StudyView(dir, scenariosDir, report, instances, findings, problems.slice(0, MAX_LISTED_PROBLEMS), Math.max(0, problems.length - MAX_LISTED_PROBLEMS));
  }

  instance(key: string): StudyInstance | null {
    return this.instances.find((i) => i.key === key) ?? null;
  }

  replicates(): number[] {
    return [...new Set(this.instances.map((i) => i.replicate))];
  }

  /** What the report says of `instance`, for its desk's event pages. */
  private findingsFor(instance: StudyInstance): Loaded<RunFindings> | null {
    if (this.report === null) return null;
    if (!this.report.ok) return this.report;
    const found = findingsOf(this.report.value, this.studyDir, instance.runDir);
    return found === null ? { ok: false, problem: `report.json does not list ${instance.key}: its findings, if any, are not known here` } : { ok: true, value: found };
  }

  /** The instance's desk, opened (verified, indexed) on first use; throws what AuditDesk.open throws. */
  desk(instance: StudyInstance): AuditDesk {
    const open = this.desks.get(instance.key);
    if (open) return open;
    if (!instance.onDisk) throw new AuditInputError(`${instance.key} is not in the study folder (no ${path.join(instance.runDir, RUN_FILES.store)})`);
    const desk = AuditDesk.open(instance.runDir, this.scenariosDir, undefined, this.findingsFor(instance));
    if (this.desks.size >= MAX_OPEN_DESKS) this.desks.delete(this.desks.keys().next().value as string);
    this.desks.set(instance.key, desk);
    return desk;
  }
}
