// The leak check's context: every string that identifies a study, its groups or its instances,
// which no package may contain (leak-check.ts, check (c)): the study's id, seed, paths and
// pre-registration hash, and for every instance (exported or not) its folder name and path, its
// manifest's ids, seeds and hashes, its subject ids, its event and payload hashes. Also, for check
// (e), the expected checkpoints recomputed from every readable instance, by replicate.
// Forbidden strings shorter than MIN_SEARCH_CHARS cannot be searched without matching ordinary
// text: they are listed as unsearched (by label, never by value) rather than silently skipped.
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { INSTANCE_DIR_RE, replicateSeed } from '../study-contract/study-replicates.js';
import { loadRunRecord, type RunRecord } from '../oracle/run-record.js';
import { readStudyPlan, STUDY_FILES, type StudyPlan } from '../study-contract/study-folder.js';
import { DsseEnvelope } from '../schema/dsse.js';
import { hashCanonical } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { eventIs } from '../schema/typed-event.js';
import { LeakCheckInputError, MAX_PACKAGES } from './leak-check-input.js';
import type { LeakKind } from './leak-finding.js';
import { expectedCheckpointsOf, expectedCheckpointsText } from './package-expected-checkpoints.js';

/** The kinds of the study's forbidden strings. */
export type ForbiddenKind = Extract<LeakKind, 'experiment_id' | 'subject_id' | 'seed' | 'group_blind_id' | 'config_hash' | 'chain_hash' | 'host_path' | 'instance_name'>;

export interface ForbiddenString {
  readonly kind: ForbiddenKind;
  /** What it is, for the person reading the finding ("seed of B-r2"). */
  readonly label: string;
  readonly value: string;
}

/** What a package of this study must not contain. Build it with leakContextOf or readLeakContext. */
export interface LeakContext {
  readonly strings: readonly ForbiddenString[];
  /** 64-hex digests (configuration and chain hashes) → what they are; found by scanning every hex token. */
  readonly hashes: ReadonlyMap<string, { readonly kind: ForbiddenKind; readonly label: string }>;
  /** expected_checkpoints.json as each readable instance of the study gives it, by replicate (never by group). */
  readonly expected: ReadonlyArray<{ readonly replicate: number; readonly text: string }>;
  /** Instances whose expected checkpoints could not be computed, and why (no group named). */
  readonly expectedProblems: readonly string[];
}

/**
 * Shorter forbidden strings, and strings of digits only shorter than MIN_SEARCH_DIGITS, would match
 * ordinary words and numbers (a seed "2025" in "commute-survey-2025.md"): listed as unsearched.
 */
export const MIN_SEARCH_CHARS = 4;
export const MIN_SEARCH_DIGITS = 12;

export function searchable(s: ForbiddenString): boolean {
  return s.value.length >= MIN_SEARCH_CHARS && (!/^\d+$/.test(s.value) || s.value.length >= MIN_SEARCH_DIGITS);
}

/** The forbidden strings too short to search: their labels and lengths, never their values. */
export function unsearchedLabels(context: LeakContext): string[] {
  return context.strings.filter((s) => !searchable(s)).map((s) => `${s.label} (${s.value.length} ${/^\d+$/.test(s.value) ? 'digit(s)' : 'character(s)'})`);
}

function realpathOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** The manifest body of a run folder's manifest.dsse.json, verified or not (for its strings only). */
function manifestBodyOf(runDir: string): Record<string, unknown> | null {
  const file = path.join(runDir, RUN_FILES.manifest);
  if (!existsSync(file)) return null;
  try {
    const envelope = DsseEnvelope.parse(JSON.parse(readFileSync(file, 'utf8')));
    const body = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as unknown;
    return typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export interface ContextInstance {
  /** The instance folder's name ("A-r1"). */
  readonly name: string;
  readonly dir: string;
  /** Its run record, when it could be read. */
  readonly record: RunRecord | null;
}

/** Collects a study's forbidden strings and hashes as they are found, in order. */
class Forbidden {
  private readonly strings: ForbiddenString[] = [];
  readonly hashes = new Map<string, { kind: ForbiddenKind; label: string }>();

  /** A non-empty string value; anything else names nothing. */
  str(kind: ForbiddenKind, label: string, value: unknown): void {
    if (typeof value === 'string' && value.length > 0) this.strings.push({ kind, label, value });
  }

  /** The 64-hex digest a value ends with (bare, or after a prefix such as "sha256:"); the first label of a digest wins. */
  hash(kind: ForbiddenKind, label: string, value: unknown): void {
    if (typeof value !== 'string') return;
    const hex = /([0-9a-f]{64})$/i.exec(value)?.[1]?.toLowerCase();
    if (hex !== undefined && !this.hashes.has(hex)) this.hashes.set(hex, { kind, label });
  }

  /** One entry per distinct value (the first label wins): a value found once is one finding. */
  uniqueStrings(): ForbiddenString[] {
    const seen = new Set<string>();
    return this.strings.filter((s) => {
      const key = s.value.toLowerCase();
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }
}

/** The strings of the study itself: its id, seed, pre-registration and folder. */
function addStudy(f: Forbidden, studyDir: string, plan: StudyPlan): void {
  const study = path.resolve(studyDir);
  f.str('experiment_id', 'the study id', plan.study_id);
  f.str('seed', 'the study seed', plan.seed);
  f.hash('config_hash', 'the pre-registration hash', plan.prereg_sha256);
  f.str('host_path', 'the pre-registration file path', plan.prereg_file);
  f.str('host_path', 'the study folder path', study);
  f.str('host_path', 'the study folder path (resolved)', realpathOrSelf(study));
}

/** The ids, seed and hashes an instance's signed manifest names. */
function addManifest(f: Forbidden, manifest: Record<string, unknown>): void {
  f.str('experiment_id', 'the experiment id of an instance', manifest['experiment_id']);
  f.str('group_blind_id', 'the group blind id of an instance', manifest['group_blind_id']);
  f.str('seed', 'the seed of an instance', manifest['random_seed']);
  f.hash('config_hash', 'the manifest hash of an instance', hashCanonical(manifest));
  // Single quotes: the label reads "${field} of an instance" literally. Kept as it was (issue 33
  // changes no finding's wording); naming the field belongs in a change of its own.
  for (const field of ['group_config_hash', 'wake_schedule_hash', 'retrieval_policy_hash', 'prereg_sha256', 'scenario_hash', 'intervention_plan_hash'] as const) f.hash('config_hash', '${field} of an instance', manifest[field]);
}

/** The seed and hashes of an instance's run record, and every subject id and hash of its events. */
function addRecord(f: Forbidden, record: RunRecord): void {
  f.str('seed', 'the plan seed of an instance', record.plan.seed);
  f.hash('config_hash', 'the pre-registration hash of an instance', record.preregSha256);
  f.hash('config_hash', 'the schedule hash of an instance', record.plan.schedule_hash);
  f.hash('config_hash', 'the intervention plan hash of an instance', record.plan.intervention_plan_hash);
  f.hash('config_hash', 'the scenario hash of an instance', record.plan.scenario_hash);
  f.hash('config_hash', 'the retrieval policy hash of an instance', hashCanonical(record.prereg.retrieval_policy));
  for (const event of record.events) {
    f.str('subject_id', 'the subject id of an instance', event.subject_id);
    f.hash('chain_hash', 'an event hash of an instance', event.event_hash);
    f.hash('chain_hash', 'a payload hash of an instance', event.payload_hash);
    if (eventIs(event, 'SystemEvent.StoreOpened')) {
      f.str('experiment_id', 'the experiment id in the store of an instance', event.payload.experiment_id);
      f.hash('config_hash', 'the manifest hash in the store of an instance', event.payload.manifest_sha256);
    }
  }
}

/** Expected checkpoints of every readable instance, by replicate; and why any could not be computed (no group named). */
interface ExpectedFound {
  readonly expected: Array<{ replicate: number; text: string }>;
  readonly expectedProblems: string[];
}

function addExpected(found: ExpectedFound, replicate: string, record: RunRecord): void {
  try {
    found.expected.push({ replicate: Number(replicate), text: expectedCheckpointsText(expectedCheckpointsOf(record)) });
  } catch (error) {
    if (!(error instanceof Error)) throw error;
    found.expectedProblems.push(`an instance of replicate ${replicate}: its expected checkpoints cannot be computed (${error.name}: ${error.message.slice(0, 300)})`);
  }
}

/** Everything one instance folder names: its path, its name and replicate seed (a real instance name only), its manifest, its record. */
function addInstance(f: Forbidden, found: ExpectedFound, plan: StudyPlan, instance: ContextInstance): void {
  f.str('host_path', 'the run folder path of an instance', path.resolve(instance.dir));
  // Only real instance names: a stray file in instances/ names nothing a package could leak.
  const m = INSTANCE_DIR_RE.exec(instance.name);
  if (m) {
    f.str('instance_name', 'an instance folder name', instance.name);
    f.str('seed', 'a replicate seed', replicateSeed(plan.seed, Number(m[2])));
  }
  const manifest = manifestBodyOf(instance.dir);
  if (manifest !== null) addManifest(f, manifest);
  if (instance.record === null) return;
  if (m) addExpected(found, m[2]!, instance.record);
  addRecord(f, instance.record);
}

/** The forbidden strings of a study: its own and every instance's (exported or not). */
export function leakContextOf(studyDir: string, plan: StudyPlan, instances: readonly ContextInstance[]): LeakContext {
  const f = new Forbidden();
  const found: ExpectedFound = { expected: [], expectedProblems: [] };
  addStudy(f, studyDir, plan);
  for (const instance of instances) addInstance(f, found, plan, instance);
  return { strings: f.uniqueStrings(), hashes: f.hashes, expected: found.expected, expectedProblems: found.expectedProblems };
}

/** Reads a study folder's context (every instance folder, its record when it loads). */
export function readLeakContext(studyDir: string, scenariosDir: string): LeakContext {
  const plan = readStudyPlan(studyDir);
  const instancesDir = path.join(studyDir, STUDY_FILES.instances);
  const names = existsSync(instancesDir) ? readdirSync(instancesDir).sort() : [];
  if (names.length > MAX_PACKAGES) throw new LeakCheckInputError(`${instancesDir} holds ${names.length} entries, over the ${MAX_PACKAGES} a study has`);
  const instances = names.map((name) => {
    const dir = path.join(instancesDir, name);
    let record: RunRecord | null = null;
    try {
      record = loadRunRecord(dir, scenariosDir);
    } catch {
      // Not loadable: its folder name, path and manifest strings are still forbidden.
    }
    return { name, dir, record };
  });
  return leakContextOf(studyDir, plan, instances);
}
