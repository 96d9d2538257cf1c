// The blind-review export (DESIGN §10, spec §8.5, §16.3): one package per instance of a study,
// named by a random blind id, written in a random order; the group ↔ blind-id map sealed in the
// study folder (0600, never overwritten); a controller-signed commitment to the map beside the
// packages. Nothing is moved into place until the leak check passes on the written packages.
//
// All or nothing (issue 16): the map can be sealed once only, so an export that left out one
// instance (damaged, unfinished, missing) could never be completed — the study would be
// reviewable only in part, for good. Every instance the study's report counts must be exportable,
// and every entry of instances/ must be one of them; otherwise the export is refused before
// anything is written (no package folder, no map, no commitment), naming each instance and why.
//
// Layout written:
//   <out>/<blind id>/                exactly PACKAGE_FILE_NAMES (package-format.ts)
//   <out>/commitment.dsse.json       DSSE(COMMITMENT_PAYLOAD_TYPE, BlindCommitment)
//   <out>/controller.pub             the key that checks it (64 hex + newline)
//   <study>/blind-map.sealed.json    the BlindMap, mode 0600, flag wx
//
// Order of writes (what a crash leaves): every instance read and checked (nothing written; one
// refusal refuses the export) → packages into <out>/.export-<random>/ → leak check →
// the sealed map (wx: a second export of the study is refused here at the latest) → commitment
// and key → packages renamed into <out>. A leak leaves the temp folder for inspection and writes
// no map; any later failure names the temp folder too.
//
// What the normalizer leaves out of every package and why: omissions.ts (OMISSIONS).
// Its counts are shown for the whole export only, never per package: per-package counts of
// omitted plan decisions would tell which packages re-planned.
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Group } from '../design/groups.js';
import { GROUP_CAPABILITIES } from '../design/manifest.js';
import { EXIT_CODES, type ExitCode } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { EXPANSION_NOT_DECIDED } from '../oracle/expansion.js';
import { loadRunRecord, type RunRecord } from '../oracle/run-record.js';
import { ScenarioError } from '../design/scenario.js';
import { readStudyPlan, STUDY_FILES, StudyError, type StudyPlan } from '../study-contract/study-folder.js';
import { INSTANCE_DIR_RE, instanceDirName } from '../study-contract/study-replicates.js';
import { signDsse } from '../schema/dsse.js';
import { toHex, type Ed25519KeyPair } from '../schema/ed25519-keys.js';
import { writePublicKey } from '../schema/public-key-file.js';
import { RUN_FILES } from '../schema/run-files.js';
import { eventIs } from '../schema/typed-event.js';
import { hashText } from '../schema/hash.js';
import { packageDigest } from './package-digest.js';
import { BLIND_MAP_FORMAT_VERSION, BLIND_REVIEW_FILES, BlindCommitment, BlindMap, COMMITMENT_PAYLOAD_TYPE, commitmentOf, type BlindMapEntry } from './blind-map.js';
import { addStats, emptyStats, NormalizeError, normalizeEvents, type NormalizedTimeline } from './event-normalizer.js';
import { checkLeaks, type LeakCheck } from './leak-check.js';
import { leakContextOf, type ContextInstance } from './leak-context.js';
import { describeFinding, type LeakFinding } from './leak-finding.js';
import { buildPackageData, packageFiles } from './package-content.js';
import { BlindId } from './package-format.js';
import { scorecardBoundNote, statsNotes, type PagesLeftOut } from './export-notes.js';
import type { ScorecardData } from './scorecard-data.js';
import { renderScorecardPage, type ScorecardPage } from './scorecard-html.js';

export type ExportProblem = 'not-a-study' | 'out-not-a-folder' | 'out-not-empty' | 'map-inside-out' | 'already-exported' | 'no-instances' | 'instances-refused' | 'leak' | 'write-failed';

/** The export refused or failed: nothing was published (see tempDir for what was written). */
export class ExportRefusal extends TypedErrorOf('export', EXIT_CODES.failed) {
  override readonly name = 'ExportRefusal';
  override get exitCode(): ExitCode {
    return this.code === 'export_out_not_a_folder' ? EXIT_CODES.misused : EXIT_CODES.failed;
  }
  override get ownCode(): string {
    return this.code;
  }
  override get endingDetails(): Readonly<Record<string, unknown>> {
    return { ...this.details };
  }
  /** The problem as a stable snake_case code (`export_instances_refused`, …): what a script reads. */
  readonly code: string;
  constructor(
    readonly problem: ExportProblem,
    message: string,
    readonly details: {
      readonly refused?: readonly RefusedInstance[];
      readonly findings?: readonly LeakFinding[];
      /** Where the packages were written and left for inspection. */
      readonly tempDir?: string;
    } = {},
  ) {
    super(message);
    this.code = `export_${problem.replaceAll('-', '_')}`;
  }
}

export interface RefusedInstance {
  /** The instance folder, relative to the study folder. */
  readonly instance: string;
  readonly reason: string;
}

export interface ExportOptions {
  /** The scenario folders by id (the commands give cli/run-defaults.ts SCENARIOS_DIR). */
  readonly scenariosDir: string;
  /** The controller's key pair: it signs the commitment. */
  readonly keys: Ed25519KeyPair;
  /** Random bytes (blind ids, order, salt, temp name); crypto.randomBytes unless a test stands in. */
  readonly random?: (bytes: number) => Buffer;
  /** The scorecard page (and what it leaves out); scorecard-html.ts unless a test stands in with a page of its own. */
  readonly renderScorecard?: (data: ScorecardData) => string | ScorecardPage;
  /** committed_at of the commitment. */
  readonly now?: () => Date;
}

export interface ExportResult {
  /** Sorted by blind id (never in map order); one per instance of the study (an export is all or nothing). */
  readonly packages: ReadonlyArray<{ readonly blind_id: BlindId; readonly dir: string }>;
  readonly commitment: { readonly hash: string; readonly file: string; readonly publicKeyFile: string };
  readonly mapFile: string;
  readonly leakCheck: LeakCheck;
  /** What the normalizer left out or cut, summed over every package. */
  readonly notes: readonly string[];
}

const GROUPS = (Object.keys(GROUP_CAPABILITIES) as Array<keyof typeof GROUP_CAPABILITIES>).sort();
/** A study has at most 99 instances (study/study-runner.ts MAX_STUDY_INSTANCES). */
const MAX_INSTANCE_ENTRIES = 99;
const BLIND_ID_BYTES = 3;
const SALT_BYTES = 32;
const MAX_BLIND_ID_DRAWS = 1_000;
const MAP_FILE_MODE = 0o600;
const TEMP_PREFIX = '.export-';

// ---------------------------------------------------------------------------------------------
// The study

interface Candidate {
  readonly name: string;
  readonly relDir: string;
  readonly group: Group;
  readonly replicate: number;
  readonly record: RunRecord;
  readonly timeline: NormalizedTimeline;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Why a loaded instance cannot be exported, or null. */
function refusalOf(record: RunRecord, group: Group, replicate: number, plan: StudyPlan): string | null {
  const last = record.events.at(-1);
  if (last === undefined || !eventIs(last, 'SystemEvent.StoreSealed')) return 'not finished: its store is not sealed (the run stopped or failed); finish it (npm run study -- --resume STUDY_DIR, or npm run experiment -- --resume DIR)';
  if (record.manifest === null) return `its signed manifest does not verify (${record.manifestProblem ?? 'unknown problem'}): its group cannot be vouched for`;
  const expected = GROUP_CAPABILITIES[group];
  const caps = record.manifest.capabilities;
  if (caps.persistent_state !== expected.persistent_state || caps.autonomous_replanning !== expected.autonomous_replanning) return `its signed manifest's capabilities are not group ${group}'s: the folder name and the run disagree`;
  if (record.manifest.replicate !== replicate) return `its signed manifest names replicate ${record.manifest.replicate}, its folder replicate ${replicate}`;
  if (record.preregSha256 !== plan.prereg_sha256) return `it ran under the pre-registration ${record.preregSha256}, the study under ${plan.prereg_sha256}`;
  return null;
}

function isEmptyOrMissing(dir: string): boolean {
  return !existsSync(dir) || (lstatSync(dir).isDirectory() && readdirSync(dir).length === 0);
}

/** The one field of report.json the export needs: how many instances per group the study counts (its n, after any expansion). */
const ReportInstanceCount = z.looseObject({ n: z.number().int().min(0).max(Math.floor(MAX_INSTANCE_ENTRIES / GROUPS.length)), expansion_reasons: z.array(z.string()) });

function instancesPerGroupOf(reportText: string, reportFile: string): number {
  let json: unknown;
  try {
    json = JSON.parse(reportText);
  } catch (error) {
    throw new ExportRefusal('not-a-study', `${reportFile} is not JSON (${message(error)}): the study's report is damaged; rebuild it with npm run study -- --recompute STUDY_DIR`);
  }
  const parsed = ReportInstanceCount.safeParse(json);
  if (!parsed.success) throw new ExportRefusal('not-a-study', `${reportFile} does not say how many instances per group the study counts (n): ${z.prettifyError(parsed.error)}; rebuild it with npm run study -- --recompute STUDY_DIR`);
  // A study stopped before its expansion rule was applied may still grow: its n is not final, so a commitment now would leave the rest unexportable.
  const undecided = parsed.data.expansion_reasons.find((r) => r.startsWith(EXPANSION_NOT_DECIDED));
  if (undecided !== undefined) throw new ExportRefusal('instances-refused', `${reportFile}: the expansion rule was ${undecided}, so the study's n is not final and a resume may add instances; finish it first (npm run study -- --resume ${path.dirname(reportFile)}); nothing was written`);
  return parsed.data.n;
}

function inside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** Blind ids: random, distinct, never derived from anything. */
function drawBlindIds(count: number, random: (bytes: number) => Buffer): BlindId[] {
  const ids = new Set<BlindId>();
  for (let draw = 0; ids.size < count; draw += 1) {
    if (draw >= MAX_BLIND_ID_DRAWS) throw new Error(`could not draw ${count} distinct blind ids in ${MAX_BLIND_ID_DRAWS} draws: the random source repeats itself`);
    ids.add(BlindId.parse(`R-${random(BLIND_ID_BYTES).toString('hex').toUpperCase()}`));
  }
  return [...ids];
}

/** Fisher–Yates with rejection sampling (no modulo bias). */
function shuffled<T>(items: readonly T[], random: (bytes: number) => Buffer): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const range = i + 1;
    const limit = Math.floor(0x1_0000_0000 / range) * range;
    let x = random(4).readUInt32BE(0);
    for (let guard = 0; x >= limit && guard < 64; guard += 1) x = random(4).readUInt32BE(0);
    const j = x % range;
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * Exports every instance of the study in `studyDir` into `outDir` (new or empty), or nothing. Refuses
 * (ExportRefusal) a second export, a leak, a folder that is not a study, and a study with any
 * instance that cannot be exported (missing, unreadable, unfinished, foreign): then nothing is written.
 */
export function exportStudy(studyDir: string, outDir: string, options: ExportOptions): ExportResult {
  const random = options.random ?? randomBytes;
  const render = options.renderScorecard ?? renderScorecardPage;
  const study = path.resolve(studyDir);
  const out = path.resolve(outDir);
  let plan: StudyPlan;
  try {
    plan = readStudyPlan(study);
  } catch (error) {
    if (error instanceof StudyError || error instanceof SyntaxError) throw new ExportRefusal('not-a-study', message(error));
    throw error;
  }
  // The report (with its expansion decision) is committed to before review: a study without one is not finished.
  const reportFile = path.join(study, STUDY_FILES.json);
  if (!existsSync(reportFile)) throw new ExportRefusal('not-a-study', `${reportFile} is missing: the study has not written its report (with the expansion decision) yet; run it to its end first`);
  const reportText = readFileSync(reportFile, 'utf8');
  const reportSha256 = hashText(reportText);
  const perGroup = instancesPerGroupOf(reportText, reportFile);
  const mapFile = path.join(study, BLIND_REVIEW_FILES.sealedMap);
  if (existsSync(mapFile)) throw new ExportRefusal('already-exported', `${mapFile} exists: this study was exported already, and a second export would give its instances new blind ids after the first commitment; review the packages of the first export (a map is never overwritten)`);
  if (inside(mapFile, out)) throw new ExportRefusal('map-inside-out', `the package folder ${out} would contain the study folder's sealed map ${mapFile}: choose a package folder outside the study folder`);
  if (existsSync(out) && !lstatSync(out).isDirectory()) throw new ExportRefusal('out-not-a-folder', `${out} exists and is not a folder: the packages need a new or empty folder; nothing was written`);
  if (!isEmptyOrMissing(out)) throw new ExportRefusal('out-not-empty', `${out} exists and is not empty: the packages need a new or empty folder`);

  // The instances: every one the report counts, and every entry of instances/, is exported or
  // refused with a reason; one refusal refuses the export, before anything is written.
  const instancesDir = path.join(study, STUDY_FILES.instances);
  const names = existsSync(instancesDir) ? readdirSync(instancesDir).sort() : [];
  if (names.length === 0) throw new ExportRefusal('no-instances', `${instancesDir} holds no instance folder: nothing to export; finish the study first (npm run study -- --resume ${study}); nothing was written`);
  if (names.length > MAX_INSTANCE_ENTRIES) throw new ExportRefusal('no-instances', `${instancesDir} holds ${names.length} entries, over the ${MAX_INSTANCE_ENTRIES} instances a study has`);
  const expected = new Set(GROUPS.flatMap((g) => Array.from({ length: perGroup }, (_, i) => instanceDirName(g, i + 1))));
  const refused: RefusedInstance[] = [];
  const candidates: Candidate[] = [];
  const contextInstances: ContextInstance[] = [];
  for (const missing of [...expected].filter((n) => !names.includes(n))) {
    refused.push({ instance: path.join(STUDY_FILES.instances, missing), reason: `missing: the study's report counts ${perGroup} instance(s) per group, but this folder does not exist (the study stopped before it started it); finish the study (npm run study -- --resume STUDY_DIR)` });
  }
  for (const name of names) {
    const dir = path.join(instancesDir, name);
    const relDir = path.relative(study, dir);
    const m = INSTANCE_DIR_RE.exec(name);
    if (!m || !lstatSync(dir).isDirectory()) {
      refused.push({ instance: relDir, reason: `not an instance folder of npm run study (expected a folder named <A|B|C>-r<k>); move it out of ${STUDY_FILES.instances}/` });
      contextInstances.push({ name, dir, record: null });
      continue;
    }
    if (!expected.has(name)) {
      refused.push({ instance: relDir, reason: `not one of the study's instances: its report counts replicates 1 to ${perGroup} per group; move it out of ${STUDY_FILES.instances}/` });
      contextInstances.push({ name, dir, record: null });
      continue;
    }
    const group = Group.parse(m[1]);
    const replicate = Number(m[2]);
    let record: RunRecord;
    try {
      record = loadRunRecord(dir, options.scenariosDir);
    } catch (error) {
      // Whatever keeps a run folder from being read (a missing file, a broken store, another scenario) refuses that instance, by name.
      if (!(error instanceof Error)) throw error;
      const why = message(error);
      // A scenario that cannot be found or does not match says what to change itself; restoring the run folder would not help.
      const hint = why.includes('npm run verify') || error instanceof ScenarioError ? '' : `; npm run verify -- ${dir} says what is wrong (restore the folder from a copy, or run the instance again)`;
      refused.push({ instance: relDir, reason: `its run folder cannot be read: ${why}${hint}` });
      contextInstances.push({ name, dir, record: null });
      continue;
    }
    contextInstances.push({ name, dir, record });
    const why = refusalOf(record, group, replicate, plan);
    if (why !== null) {
      refused.push({ instance: relDir, reason: why });
      continue;
    }
    try {
      // The run folder (its workspace/ prefix becomes workspace-relative) and the study folder, as given and resolved.
      const timeline = normalizeEvents(record.events, record.plan, { hostPaths: [dir, realpathSync(dir), study, realpathSync(study)] });
      candidates.push({ name, relDir, group, replicate, record, timeline });
    } catch (error) {
      if (!(error instanceof NormalizeError)) throw error;
      refused.push({ instance: relDir, reason: `its events cannot be normalized: ${error.message}` });
    }
  }
  if (refused.length > 0) {
    refused.sort((a, b) => (a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : 0));
    const total = new Set([...expected, ...names]).size;
    throw new ExportRefusal(
      'instances-refused',
      `${refused.length} of the ${total} instance(s) of ${study} cannot be exported, so nothing was exported: an export is all or nothing (its map is sealed once, so an export without them could never be completed). Nothing was written: no package, no sealed map, no commitment; ${out} and the study folder are as they were. Make every instance exportable (finish a stopped study with npm run study -- --resume ${study}; check a damaged instance with npm run verify -- DIR and restore it or run it again), then export again:\n${refused.map((r) => `  ${r.instance}: ${r.reason}`).join('\n')}`,
      { refused },
    );
  }

  // Blind ids and a random order, then the packages into a temp folder inside <out>.
  const blindIds = drawBlindIds(candidates.length, random);
  const assigned = candidates.map((c, i) => ({ ...c, blindId: blindIds[i]! }));
  const order = shuffled(assigned, random);
  mkdirSync(out, { recursive: true });
  const temp = path.join(out, `${TEMP_PREFIX}${random(6).toString('hex')}`);
  mkdirSync(temp);
  const stats = emptyStats();
  const leftOut: PagesLeftOut = { pages: 0, timeline: 0, claims: 0, actions: 0 };
  try {
    for (const c of order) {
      const data = buildPackageData(c.record, c.blindId, c.timeline);
      const dir = path.join(temp, c.blindId);
      mkdirSync(dir);
      const page = render(data);
      const html = typeof page === 'string' ? page : page.html;
      if (typeof page !== 'string' && page.leftOut.timeline + page.leftOut.claims + page.leftOut.actions > 0) {
        leftOut.pages += 1;
        leftOut.timeline += page.leftOut.timeline;
        leftOut.claims += page.leftOut.claims;
        leftOut.actions += page.leftOut.actions;
      }
      for (const [file, text] of packageFiles(data, html)) writeFileSync(path.join(dir, file), text, { flag: 'wx' });
      addStats(stats, c.timeline.stats);
    }
  } catch (error) {
    throw new ExportRefusal('write-failed', `writing the packages failed: ${message(error)}; what was written is in ${temp} (nothing was published: no map, no commitment)`, { tempDir: temp });
  }

  const leakCheck = checkLeaks(temp, leakContextOf(study, plan, contextInstances));
  if (!leakCheck.ok) {
    throw new ExportRefusal('leak', `the leak check found ${leakCheck.findings.length} problem(s) in the packages; nothing was published (no map, no commitment). The packages are left in ${temp} for inspection; delete that folder (or give another --out) before exporting again:\n${leakCheck.findings.map((f) => `  ${describeFinding(f)}`).join('\n')}`, { findings: leakCheck.findings, tempDir: temp });
  }

  // The sealed map first (wx): a concurrent second export stops here, before anything is published.
  const entries: BlindMapEntry[] = assigned.map((c) => ({ blind_id: c.blindId, group: c.group, replicate: c.replicate, dir: c.relDir })).sort((a, b) => (a.blind_id < b.blind_id ? -1 : 1));
  const map = BlindMap.parse({ blind_map_format_version: BLIND_MAP_FORMAT_VERSION, salt: random(SALT_BYTES).toString('hex'), entries });
  try {
    writeFileSync(mapFile, `${JSON.stringify(map, null, 2)}\n`, { flag: 'wx', mode: MAP_FILE_MODE });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new ExportRefusal('already-exported', `${mapFile} appeared while exporting: another export of this study was first; nothing of this one was published (its packages are in ${temp})`, { tempDir: temp });
    throw new ExportRefusal('write-failed', `writing the sealed map ${mapFile} failed: ${message(error)}; nothing was published (the packages are in ${temp})`, { tempDir: temp });
  }

  const hash = commitmentOf(map);
  const body = BlindCommitment.parse({
    blind_map_format_version: BLIND_MAP_FORMAT_VERSION,
    commitment: hash,
    blind_ids: entries.map((e) => e.blind_id),
    prereg_sha256: plan.prereg_sha256,
    study_report_sha256: reportSha256,
    package_digests: Object.fromEntries(entries.map((e) => [e.blind_id, packageDigest(path.join(temp, e.blind_id))])),
    committed_at: (options.now?.() ?? new Date()).toISOString(),
  });
  const commitmentFile = path.join(out, BLIND_REVIEW_FILES.commitment);
  try {
    writeFileSync(commitmentFile, `${JSON.stringify(signDsse(COMMITMENT_PAYLOAD_TYPE, body, options.keys.secretKey, options.keys.publicKey), null, 2)}\n`, { flag: 'wx' });
    writePublicKey(out, options.keys);
    // Into place in the shuffled order: creation order and times say nothing about the groups.
    for (const c of order) renameSync(path.join(temp, c.blindId), path.join(out, c.blindId));
    rmSync(temp, { recursive: true });
  } catch (error) {
    throw new ExportRefusal('write-failed', `publishing the packages failed after the map ${mapFile} was sealed: ${message(error)}; the packages not yet moved are in ${temp}; move them into ${out} by hand (the map and commitment cover them)`, { tempDir: temp });
  }

  const notes = [...statsNotes(stats, assigned.length), ...scorecardBoundNote(leftOut, assigned.length)];
  const runKeys = new Set(assigned.map((c) => readPublicKeyHex(path.join(study, c.relDir, RUN_FILES.publicKey))));
  const ours = toHex(options.keys.publicKey);
  if ([...runKeys].some((k) => k !== ours)) notes.push('the commitment is signed by another key than the one in the instances\' controller.pub: reviewers check it with the controller.pub beside the packages');
  return {
    packages: assigned.map((c) => ({ blind_id: c.blindId, dir: path.join(out, c.blindId) })).sort((a, b) => (a.blind_id < b.blind_id ? -1 : 1)),
    commitment: { hash, file: commitmentFile, publicKeyFile: path.join(out, BLIND_REVIEW_FILES.publicKey) },
    mapFile,
    leakCheck,
    notes,
  };
}

function readPublicKeyHex(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return '(none)';
  }
}
