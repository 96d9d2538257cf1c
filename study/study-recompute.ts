// `npm run study -- --recompute DIR` (issue 6: "every number … can be recomputed from the run
// folders"): the report rebuilt from study.json and the instance folders alone, and compared with
// report.json field by field — all but what no folder holds (when, how long, live error texts).
// A resumed study uses the same comparison to tell whether its stored report still follows.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DIMENSIONS, type Dimension } from '../oracle/continuity-score.js';
import { decideExpansion, type ScoredInstance } from '../oracle/expansion.js';
import { countedScore } from '../oracle/instance-evaluation.js';
import type { PreRegistration } from '../design/prereg.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { MAX_STUDY_INSTANCES, readStudyPlan, STUDY_FILES, StudyError } from '../study-contract/study-folder.js';
import { INSTANCE_DIR_RE } from '../study-contract/study-replicates.js';
import { GROUPS, type Group } from '../design/groups.js';
import { asOlderReportVersion, isOlderReportVersion, StudyReport } from '../oracle/study-report.js';
import { checkRoundedFigures, ROUNDING_CHECK, type RoundingCheck } from '../oracle/rounded-figures-check.js';
import { buildStudyReport } from './study-report-builder.js';
import { scoreInstanceFolder, usableRuleOf, type ScoredFolder, type UsableRule } from './instance-report-record.js';

/** Where a stored report differs from a rebuilt one in what --recompute compares (not when, not how long, not live error texts). */
export function reportDifferences(stored: StudyReport, rebuilt: StudyReport): string[] {
  const out: string[] = [];
  collectDifferences(withoutUnrecomputable(stored), withoutUnrecomputable(inVersionOf(stored, rebuilt)), '', out);
  return out;
}

/**
 * The rebuilt report (always this build's version) as the stored one's version: a report written
 * before 2.2.0 is held to its folders without the rounding section it never had. Any other
 * version (a damaged or edited file) is compared as rebuilt, so the version itself differs.
 */
function inVersionOf(stored: StudyReport, rebuilt: StudyReport): unknown {
  const version: unknown = stored.report_version;
  return isOlderReportVersion(version) ? asOlderReportVersion(rebuilt, version) : rebuilt;
}

/** Notes of the live run that the folders cannot reproduce (see runStudy). */
const LIVE_ONLY_NOTE = /^(?:the study was stopped by the operator|unauthorised tool execution in [ABC]-r\d+: the study was paused)/;
/** Fields a recomputation cannot reproduce from the folders: when and how long, and live error texts. */
const NOT_RECOMPUTED = new Set(['generated_at', 'status_detail', 'wall_ms']);

function withoutUnrecomputable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutUnrecomputable);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).filter(([k]) => !NOT_RECOMPUTED.has(k)).map(([k, v]) => [k, withoutUnrecomputable(v)]));
  return value;
}

export interface Recomputation {
  readonly report: StudyReport;
  /** Where report.json differs from the recomputation (empty: every number recomputed), and each figure of it that does not follow its rounding rule. */
  readonly differences: readonly string[];
  /** The check "rounded figures agree with their rule" on report.json as stored (null: there is none); its problems are among the differences. */
  readonly rounding: RoundingCheck | null;
  /** The instances the rebuild could not read, each named first among the differences. */
  readonly unreadable: readonly UnreadableInstance[];
}

/** A report rebuilt from the folders, with what the rule decided on them. */
export interface RebuiltReport {
  readonly report: StudyReport;
  /** The expansion rule on a complete, scored first round (null: not decidable, or nothing to expand to). */
  readonly expansion: { readonly expand: boolean; readonly reasons: readonly string[] } | null;
  /** Replicates beyond n_initial are among the folders. */
  readonly expandedRan: boolean;
  /** report.json as found (null: none). */
  readonly stored: StudyReport | null;
  /** The pre-registered dimension weights the scores were computed with (report.json does not hold them). */
  readonly dimensionWeights: Readonly<Record<Dimension, number>>;
}

/** What a batch merge knows of the folders already: each one scored on the worker that verified it, and the study's pre-registration as one of them carried it. */
export interface ScoredFolders {
  readonly byDir: ReadonlyMap<string, ScoredFolder>;
  /** The pre-registration of an instance under the study's (null: none ran under it). */
  readonly prereg: PreRegistration | null;
}

/**
 * Rebuilds the report from study.json and the instance folders alone (issue 6: "every number …
 * can be recomputed from the run folders"); what --recompute compares and a batch merge writes.
 * `known`: the folders a batch merge scored just before (instance-report-record.ts), used as
 * they are; any other folder is scored here, one at a time, and only its record is kept.
 */
export function rebuildStudyReport(outDir: string, scenariosDir: string, known?: ScoredFolders): RebuiltReport {
  const plan = readStudyPlan(outDir);
  const instancesDir = path.join(outDir, STUDY_FILES.instances);
  const found = existsSync(instancesDir) ? readdirSync(instancesDir).flatMap((name) => {
    const m = INSTANCE_DIR_RE.exec(name);
    return m ? [{ group: m[1] as Group, replicate: Number(m[2]), dir: path.join(instancesDir, name) }] : [];
  }) : [];
  if (found.length > MAX_STUDY_INSTANCES) throw new StudyError('folder_changed', `${instancesDir} holds ${found.length} instance folders, over ${MAX_STUDY_INSTANCES}`);
  found.sort((a, b) => a.replicate - b.replicate || a.group.localeCompare(b.group));
  let prereg: PreRegistration | null = known?.prereg ?? null;
  const scoreHere = (dir: string, rule: UsableRule | 'own'): ScoredFolder => {
    const { scored, prereg: own } = scoreInstanceFolder(dir, { scenariosDir, expectedPreregSha256: plan.prereg_sha256, rule });
    if (prereg === null && own !== null && scored.record?.prereg_sha256 === plan.prereg_sha256) prereg = own;
    return scored;
  };
  const scoredOf = new Map(found.map((f) => [f.dir, known?.byDir.get(f.dir) ?? scoreHere(f.dir, 'own')]));
  if (!prereg) throw new StudyError('folder_changed', `no instance of ${outDir} ran under the study's pre-registration ${plan.prereg_sha256}: nothing to recompute against`);
  const studyPrereg: PreRegistration = prereg;
  // Each instance's calls are judged by the study's rule: one scored by its own pre-registration's
  // rule (a merge's worker, or above, before the study's was known) whose rule is another is scored again.
  const rule = usableRuleOf(studyPrereg);
  for (const [dir, scored] of scoredOf) {
    if (scored.record !== null && canonicalJson(scored.record.usable_rule) !== canonicalJson(rule)) scoredOf.set(dir, scoreHere(dir, rule));
  }
  const evaluated = found.map((f) => ({ ...f, ...scoredOf.get(f.dir)! }));
  const maxReplicate = Math.max(0, ...found.map((f) => f.replicate));
  const expandedRan = maxReplicate > plan.n_initial;
  const initial: Record<Group, ScoredInstance[]> = { A: [], B: [], C: [] };
  let allScored = true;
  for (const e of evaluated) {
    if (e.replicate > plan.n_initial) continue;
    if (e.record) initial[e.group].push({ score: countedScore(e.record), dimensions: e.record.score.dimensions });
    else allScored = false;
  }
  // The rule is decided on a complete first round only, as the live run does (a pause or a stop
  // leaves it undecided, and the stored reasons say so).
  const firstRoundComplete = GROUPS.every((g) => Array.from({ length: plan.n_initial }, (_, k) => k + 1).every((r) => found.some((f) => f.group === g && f.replicate === r)));
  const expansion = allScored && firstRoundComplete && plan.n_expanded > plan.n_initial ? decideExpansion(initial, { ...prereg.expansion_rule, initial_n_per_group: plan.n_initial }) : null;
  const stored = existsSync(path.join(outDir, STUDY_FILES.json)) ? storedReport(JSON.parse(readFileSync(path.join(outDir, STUDY_FILES.json), 'utf8'))) : null;
  const report = buildStudyReport({
    plan,
    prereg: studyPrereg,
    outDir,
    n: expandedRan ? plan.n_expanded : plan.n_initial,
    expanded: expandedRan,
    expansionReasons: expansion?.reasons ?? stored?.expansion_reasons ?? [],
    // Points exist only where the rule was applied, live and here alike (a live run that did not decide has none).
    expansionPoints: expansion?.points ?? [],
    instances: evaluated.map((e) => ({ group: e.group, replicate: e.replicate, dir: e.dir, status: e.status, statusDetail: e.statusDetail, record: e.record, wallMs: null })),
    // Notes and void reasons of the live run that no folder holds (an operator stop, a pause) are taken over as stated.
    // Only what no folder holds is taken over: an operator stop or a pause, as the live run stated it.
    extraNotes: stored?.notes.filter((n) => LIVE_ONLY_NOTE.test(n)) ?? [],
    generatedAt: new Date().toISOString(),
  });
  const dimensionWeights = Object.fromEntries(DIMENSIONS.map((d) => [d, studyPrereg.scoring.dimensions[d].weight])) as Record<Dimension, number>;
  return { report, expansion, expandedRan, stored, dimensionWeights };
}

/**
 * report.json as read: through its schema when it fits, so what a later build added with a
 * default reads as that default (by_failure.stream_broken: 0 in a report written before it was a
 * kind of its own, issue 31 item 7) and is not called a difference; as found otherwise, so an
 * edited or damaged file is still compared field by field, never refused unread.
 */
function storedReport(raw: unknown): StudyReport {
  const parsed = StudyReport.safeParse(raw);
  return parsed.success ? parsed.data : (raw as StudyReport);
}

/** Rebuilds the report (rebuildStudyReport) and compares it with report.json. */
export function recomputeStudy(outDir: string, scenariosDir: string): Recomputation {
  const { report, expansion, expandedRan, stored, dimensionWeights } = rebuildStudyReport(outDir, scenariosDir);
  const plan = readStudyPlan(outDir);
  const differences: string[] = [];
  const rounding = stored === null ? null : checkStoredRounding(stored, dimensionWeights);
  // An instance the rebuild could not read comes first, by name: the differences it causes follow from it (issue 35 item 6).
  const unreadable = unreadableInstances(report, stored);
  differences.push(...unreadable.map((u) => `${u.instance} (${u.dir}) ${u.detail === null ? 'could not be read' : `could not be read: ${u.detail}`}; every difference below that concerns it follows from that; npm run verify -- ${path.join(outDir, u.dir)} says what is wrong with it (restore the folder from a copy)`));
  if (stored === null) differences.push(`${STUDY_FILES.json} is missing`);
  else {
    const all = [...reportDifferences(stored, report), ...(rounding?.problems ?? []).map((p) => `${ROUNDING_CHECK}: ${p}`)];
    differences.push(...all.slice(0, MAX_NAMED_DIFFERENCES));
    if (all.length > MAX_NAMED_DIFFERENCES) differences.push(`… and ${all.length - MAX_NAMED_DIFFERENCES} more difference(s)`);
  }
  if (expansion && expansion.expand !== expandedRan) differences.push(`the expansion rule says ${expansion.expand ? 'expand' : 'do not expand'} at n = ${plan.n_initial}, but ${expandedRan ? 'replicates beyond it were run' : 'none beyond it were run'}`);
  // An older report.json is answered in its own version (what was compared); in this build's when that version cannot hold it.
  const asStored = stored !== null && isOlderReportVersion(stored.report_version) ? StudyReport.safeParse(inVersionOf(stored, report)) : null;
  return { report: asStored?.success ? asStored.data : report, differences, rounding, unreadable };
}

/** An instance the rebuild could not score (`failed`: its folder would not open), or found unsealed where report.json has it finished. */
export interface UnreadableInstance {
  readonly instance: string;
  readonly dir: string;
  readonly detail: string | null;
}

function unreadableInstances(rebuilt: StudyReport, stored: StudyReport | null): UnreadableInstance[] {
  const storedStatus = (i: StudyReport['instances'][number]): string | undefined => stored?.instances?.find?.((s) => s.group === i.group && s.replicate === i.replicate)?.status;
  return rebuilt.instances
    .filter((i) => i.status === 'failed' || (i.status !== 'finished' && storedStatus(i) === 'finished'))
    .map((i) => ({ instance: `${i.group}-r${i.replicate}`, dir: i.dir, detail: i.status_detail }));
}

/** The rounding check on report.json as stored; a file that does not fit the schema is not checked (its fields are compared one by one instead). */
function checkStoredRounding(stored: StudyReport, weights: Readonly<Record<Dimension, number>>): RoundingCheck {
  const parsed = StudyReport.safeParse(stored);
  if (!parsed.success) return { checked: 0, problems: [], unchecked: `${STUDY_FILES.json} does not fit the report schema: its figures were compared with the recomputation field by field only` };
  return checkRoundedFigures(parsed.data, weights);
}

/** At most this many differences are named; the rest are counted in one more line. */
const MAX_NAMED_DIFFERENCES = 50;

/** Dotted paths where a and b differ. */
function collectDifferences(a: unknown, b: unknown, at: string, out: string[], depth = 0): void {
  if (depth > 32) {
    out.push(`${at}: nested deeper than 32 levels, not compared`);
    return;
  }
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (isObj(a) && isObj(b) && Array.isArray(a) === Array.isArray(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) collectDifferences(a[key], b[key], at === '' ? key : `${at}.${key}`, out, depth + 1);
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(`${at || '(root)'}: report.json has ${JSON.stringify(a)?.slice(0, 120)}, recomputed ${JSON.stringify(b)?.slice(0, 120)}`);
}
