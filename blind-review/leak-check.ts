// The leak check of the blind-review packages (DESIGN §10, spec §8.5): run inside every export
// before anything is moved into place, and on its own by `npm run export -- --check-only`. A
// reviewer must not be able to tell a package's group, nor tie it to its instance, from anything
// in it. Four checks, each finding named by a kind a person can act on:
//   (a) every package has exactly PACKAGE_FILE_NAMES, nothing else;
//   (b) the JSON key paths of each file are the same in every package (containers compared where
//       present in several packages; a timeline entry's detail is compared per kind, since which
//       kinds occur is behaviour);
//   (c) no text holds a group label, a capability word or flag name, an instance folder name, a
//       UUID, an event cited by its seq (a seq counts events, so it says how much happened in the
//       run), a string only some groups' packages can contain by construction (the plan-decision
//       event names and reason codes), another package's blind id, or any forbidden string of the
//       study (experiment id, subject ids, seeds, group blind ids, configuration and chain
//       hashes, host paths);
//   (d) every file parses with its schema (package-format.ts; each timeline detail with its
//       kind's schema from timeline-detail.ts) and every ref resolves to a timeline entry;
//   (e) what must be the same in every package is: the review instructions (byte for byte in
//       every package), and the expected checkpoints (issue 32), which are recomputed here for
//       every instance of the study and must be one text per replicate (computed from the plan
//       alone, never from a group's settings) and every package's must be one of them.
// Forbidden strings shorter than MIN_SEARCH_CHARS cannot be searched without matching ordinary
// text: they are listed in `unsearched` (by label, never by value) rather than silently skipped.
// Why one file: it is the one leak check; its forbidden strings, its reading of the packages and
// its five checks answer together, and each is used by the others alone.
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { GROUP_CAPABILITIES } from '../design/manifest.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { INSTANCE_DIR_RE, replicateSeed } from '../oracle/study-replicates.js';
import { DsseEnvelope } from '../schema/dsse.js';
import { hashCanonical } from '../schema/hash.js';
import { PlanRevisionAccepted, PlanRevisionRejected } from '../schema/events/plan-events.js';
import { RUN_FILES } from '../schema/run-files.js';
import { eventIs } from '../schema/typed-event.js';
import { loadRunRecord, type RunRecord } from '../oracle/run-record.js';
import { readStudyPlan, STUDY_FILES, type StudyPlan } from '../oracle/study-folder.js';
import { BLIND_REVIEW_FILES } from './blind-map.js';
import { DETAIL_SCHEMAS } from './timeline-detail.js';
import { expectedCheckpointsOf, expectedCheckpointsText } from './package-expected-checkpoints.js';
import { ActionChains, BlindId, ClaimsWithEvidence, ExpectedCheckpoints, Interventions, PACKAGE_FILE_NAMES, PACKAGE_FILES, PackageManifest, RecoveryReports, StateCheckpoints, TimelineEntry } from './package-format.js';

export const LEAK_KINDS = [
  // (a)
  'missing_file',
  'extra_file',
  'unexpected_entry',
  'sealed_map_exposed',
  'package_name',
  'too_large',
  // (b)
  'key_paths',
  // (c)
  'group_label',
  'capability_word',
  'capability_flag',
  'group_only_vocabulary',
  'instance_name',
  'uuid',
  'event_seq',
  'foreign_blind_id',
  'experiment_id',
  'subject_id',
  'seed',
  'group_blind_id',
  'config_hash',
  'chain_hash',
  'host_path',
  // (d)
  'schema',
  'dangling_ref',
  // (e)
  'instructions_differ',
  'oracle_differs_in_replicate',
  'oracle_not_from_plan',
  // bounded output
  'more_findings',
] as const;
export const LeakKind = z.enum(LEAK_KINDS);
export type LeakKind = z.infer<typeof LeakKind>;

export const LeakFinding = z.strictObject({
  /** The package's folder name (its blind id), "(package folder)" for the folder holding the packages, or "(study)" for the study's instances together. */
  package: z.string(),
  file: z.string(),
  kind: LeakKind,
  detail: z.string().max(1_000),
});
export type LeakFinding = z.infer<typeof LeakFinding>;

export interface LeakCheck {
  readonly ok: boolean;
  readonly packages: number;
  readonly filesChecked: number;
  readonly findings: readonly LeakFinding[];
  /** Forbidden strings too short to search (their labels, never their values). */
  readonly unsearched: readonly string[];
  /** What was not checked and why (no finding, but a reader must know). */
  readonly notes: readonly string[];
}

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

export class LeakCheckInputError extends TypedErrorOf('leak_check_input', EXIT_CODES.failed) {
  override readonly name = 'LeakCheckInputError';
}

/**
 * Shorter forbidden strings, and strings of digits only shorter than MIN_SEARCH_DIGITS, would match
 * ordinary words and numbers (a seed "2025" in "commute-survey-2025.md"): listed as unsearched.
 */
export const MIN_SEARCH_CHARS = 4;
export const MIN_SEARCH_DIGITS = 12;

function searchable(s: ForbiddenString): boolean {
  return s.value.length >= MIN_SEARCH_CHARS && (!/^\d+$/.test(s.value) || s.value.length >= MIN_SEARCH_DIGITS);
}
/** A package file larger than this is not read (and is a finding). */
export const MAX_PACKAGE_FILE_BYTES = 64 * 1024 * 1024;
/** At most this many findings of one kind per package file; the rest are counted in one more. */
export const MAX_FINDINGS_PER_KIND = 10;
/** At most this many packages are read (the study bound). */
const MAX_PACKAGES = 99;
const SNIPPET_CHARS = 40;
const PACKAGE_FOLDER = '(package folder)';
/** A finding about the study's instances together, not one package (never named by group). */
const STUDY_LABEL = '(study)';

// ---------------------------------------------------------------------------------------------
// The context: every identifying string of a study

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

/** The forbidden strings of a study: its own and every instance's (exported or not). */
export function leakContextOf(studyDir: string, plan: StudyPlan, instances: readonly ContextInstance[]): LeakContext {
  const strings: ForbiddenString[] = [];
  const hashes = new Map<string, { kind: ForbiddenKind; label: string }>();
  const str = (kind: ForbiddenKind, label: string, value: unknown): void => {
    if (typeof value === 'string' && value.length > 0) strings.push({ kind, label, value });
  };
  const hash = (kind: ForbiddenKind, label: string, value: unknown): void => {
    if (typeof value !== 'string') return;
    const hex = /([0-9a-f]{64})$/i.exec(value)?.[1]?.toLowerCase();
    if (hex !== undefined && !hashes.has(hex)) hashes.set(hex, { kind, label });
  };
  const expected: Array<{ replicate: number; text: string }> = [];
  const expectedProblems: string[] = [];
  const study = path.resolve(studyDir);
  str('experiment_id', 'the study id', plan.study_id);
  str('seed', 'the study seed', plan.seed);
  hash('config_hash', 'the pre-registration hash', plan.prereg_sha256);
  str('host_path', 'the pre-registration file path', plan.prereg_file);
  str('host_path', 'the study folder path', study);
  str('host_path', 'the study folder path (resolved)', realpathOrSelf(study));
  for (const instance of instances) {
    const n = instance.name;
    str('host_path', 'the run folder path of an instance', path.resolve(instance.dir));
    // Only real instance names: a stray file in instances/ names nothing a package could leak.
    const m = INSTANCE_DIR_RE.exec(n);
    if (m) {
      str('instance_name', 'an instance folder name', n);
      str('seed', 'a replicate seed', replicateSeed(plan.seed, Number(m[2])));
    }
    const manifest = manifestBodyOf(instance.dir);
    if (manifest !== null) {
      str('experiment_id', 'the experiment id of an instance', manifest['experiment_id']);
      str('group_blind_id', 'the group blind id of an instance', manifest['group_blind_id']);
      str('seed', 'the seed of an instance', manifest['random_seed']);
      hash('config_hash', 'the manifest hash of an instance', hashCanonical(manifest));
      for (const field of ['group_config_hash', 'wake_schedule_hash', 'retrieval_policy_hash', 'prereg_sha256', 'scenario_hash', 'intervention_plan_hash'] as const) hash('config_hash', '${field} of an instance', manifest[field]);
    }
    const record = instance.record;
    if (record === null) continue;
    if (m) {
      try {
        expected.push({ replicate: Number(m[2]), text: expectedCheckpointsText(expectedCheckpointsOf(record)) });
      } catch (error) {
        if (!(error instanceof Error)) throw error;
        expectedProblems.push(`an instance of replicate ${m[2]}: its expected checkpoints cannot be computed (${error.name}: ${error.message.slice(0, 300)})`);
      }
    }
    str('seed', 'the plan seed of an instance', record.plan.seed);
    hash('config_hash', 'the pre-registration hash of an instance', record.preregSha256);
    hash('config_hash', 'the schedule hash of an instance', record.plan.schedule_hash);
    hash('config_hash', 'the intervention plan hash of an instance', record.plan.intervention_plan_hash);
    hash('config_hash', 'the scenario hash of an instance', record.plan.scenario_hash);
    hash('config_hash', 'the retrieval policy hash of an instance', hashCanonical(record.prereg.retrieval_policy));
    for (const event of record.events) {
      str('subject_id', 'the subject id of an instance', event.subject_id);
      hash('chain_hash', 'an event hash of an instance', event.event_hash);
      hash('chain_hash', 'a payload hash of an instance', event.payload_hash);
      if (eventIs(event, 'SystemEvent.StoreOpened')) {
        str('experiment_id', 'the experiment id in the store of an instance', event.payload.experiment_id);
        hash('config_hash', 'the manifest hash in the store of an instance', event.payload.manifest_sha256);
      }
    }
  }
  // One entry per distinct value (the first label wins): a value found once is one finding.
  const seen = new Set<string>();
  const unique = strings.filter((s) => {
    const key = s.value.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return { strings: unique, hashes, expected, expectedProblems };
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

// ---------------------------------------------------------------------------------------------
// Reading packages

export interface PackageFiles {
  /** The package's folder name (its blind id if the export is right). */
  readonly name: string;
  readonly files: ReadonlyMap<string, string>;
}

interface Collected {
  readonly packages: PackageFiles[];
  readonly findings: LeakFinding[];
}

/** Reads every package folder under `dir`; what else is there is allowed (commitment, key, review/) or a finding. */
export function readPackages(dir: string): Collected {
  const root = path.resolve(dir);
  if (!existsSync(root) || !lstatSync(root).isDirectory()) throw new LeakCheckInputError(`${root} is not a folder: give the package folder the export wrote`);
  const packages: PackageFiles[] = [];
  const findings: LeakFinding[] = [];
  const entries = readdirSync(root).sort();
  const allowed = new Set<string>([BLIND_REVIEW_FILES.commitment, BLIND_REVIEW_FILES.publicKey]);
  for (const name of entries) {
    const full = path.join(root, name);
    const stat = lstatSync(full);
    if (name === BLIND_REVIEW_FILES.sealedMap) {
      findings.push({ package: PACKAGE_FOLDER, file: name, kind: 'sealed_map_exposed', detail: `the sealed group map is in the package folder, where reviewers look: move it to the study folder (mode 0600) and re-export` });
      continue;
    }
    if (allowed.has(name) && stat.isFile()) continue;
    if (name === BLIND_REVIEW_FILES.reviewDir && stat.isDirectory()) continue;
    if (!stat.isDirectory() || stat.isSymbolicLink()) {
      findings.push({ package: PACKAGE_FOLDER, file: name, kind: 'unexpected_entry', detail: `${name} is neither a package nor a file the export writes (${[...allowed].join(', ')}); remove it before handing the folder to reviewers` });
      continue;
    }
    if (!BlindId.safeParse(name).success) {
      findings.push({ package: PACKAGE_FOLDER, file: name, kind: 'package_name', detail: `the folder ${name} is not named by a blind id (R- and six hex digits): a package must be named by its blind id only` });
    }
    if (packages.length >= MAX_PACKAGES) {
      findings.push({ package: PACKAGE_FOLDER, file: name, kind: 'too_large', detail: `more than ${MAX_PACKAGES} package folders: ${name} and the rest were not read` });
      break;
    }
    const files = new Map<string, string>();
    for (const file of readdirSync(full).sort()) {
      const f = path.join(full, file);
      const s = lstatSync(f);
      if (!s.isFile()) {
        findings.push({ package: name, file, kind: 'extra_file', detail: `${file} is a ${s.isDirectory() ? 'folder' : 'link or special file'}; a package holds only ${PACKAGE_FILE_NAMES.join(', ')}` });
        continue;
      }
      if (s.size > MAX_PACKAGE_FILE_BYTES) {
        findings.push({ package: name, file, kind: 'too_large', detail: `${s.size} bytes, over the ${MAX_PACKAGE_FILE_BYTES} a package file may have: not read, so not checked` });
        continue;
      }
      files.set(file, readFileSync(f, 'utf8'));
    }
    packages.push({ name, files });
  }
  return { packages, findings };
}

// ---------------------------------------------------------------------------------------------
// The checks

const EXPECTED_FILES = new Set(PACKAGE_FILE_NAMES);

/** (c)'s fixed patterns: kind, what it is, and the expression. */
const CAPABILITY_FLAGS = Object.keys(GROUP_CAPABILITIES.A);
const GROUP_ONLY_WORDS = [PlanRevisionAccepted.name, PlanRevisionRejected.name, ...PlanRevisionRejected.payload.shape.reason_code.options];
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const PATTERNS: ReadonlyArray<{ readonly kind: LeakKind; readonly what: string; readonly re: RegExp }> = [
  // "group A", "Group: B", "group-C", "group_A", "(group B)": any separator of up to 3 characters.
  { kind: 'group_label', what: 'a group label', re: /\bgroups?[\s:_\-=#'"]{0,3}[ABC]\b/gi },
  { kind: 'group_label', what: 'a JSON key "group"', re: /"group"\s*:/gi },
  { kind: 'capability_flag', what: 'a capability flag name', re: new RegExp(CAPABILITY_FLAGS.map(escape).join('|'), 'gi') },
  { kind: 'capability_word', what: 'the word capability', re: /capabilit/gi },
  { kind: 'group_only_vocabulary', what: 'a word only some groups can produce (a plan decision or its reason code)', re: new RegExp(GROUP_ONLY_WORDS.map(escape).join('|'), 'gi') },
  { kind: 'instance_name', what: 'an instance folder name', re: /\b[ABC]-r\d+\b/g },
  { kind: 'uuid', what: 'a UUID (event ids must be package refs)', re: /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi },
  // Seqs count events: the normalizer writes every seq cited in text as a ref (text-scrub.ts, SEQ_REF_RE).
  { kind: 'event_seq', what: 'an event cited by its seq (seqs must be package refs)', re: /\b(?:event #|seq #?)\d/gi },
  // A ds-model-output/2 answer's "evidence_seqs": [137, 141] with a number left in it (a ref "E0012" is not one, nor
  // "[id]"). The key's quote is escaped as deep as the text nests JSON (\" in the timeline, &quot; in the page); the
  // list is read up to its "]", at most 4,096 characters.
  { kind: 'event_seq', what: 'a list of cited seqs (evidence_seqs) holding a number (seqs must be package refs)', re: /evidence_seqs(?:\\|"|&quot;|&#34;|&#x22;){0,8}\s*:\s*\[(?:\[id\]|[^\]]){0,4096}?(?<![A-Za-z0-9])\d/gi },
];
const HEX_TOKEN_RE = /(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])/gi;
const REF_RE = /^E\d{4,6}$/;

function snippet(text: string, at: number, length: number): string {
  const from = Math.max(0, at - SNIPPET_CHARS);
  const to = Math.min(text.length, at + length + SNIPPET_CHARS);
  return JSON.stringify(`${from > 0 ? '…' : ''}${text.slice(from, to)}${to < text.length ? '…' : ''}`);
}

/** Findings of one package file, bounded per kind (the excess is counted in one more finding). */
class FileFindings {
  private readonly counts = new Map<LeakKind, number>();
  constructor(
    private readonly out: LeakFinding[],
    private readonly pkg: string,
    private readonly file: string,
  ) {}

  add(kind: LeakKind, detail: string): void {
    const n = (this.counts.get(kind) ?? 0) + 1;
    this.counts.set(kind, n);
    if (n <= MAX_FINDINGS_PER_KIND) this.out.push({ package: this.pkg, file: this.file, kind, detail: detail.slice(0, 1_000) });
  }

  close(): void {
    for (const [kind, n] of this.counts) {
      if (n > MAX_FINDINGS_PER_KIND) this.out.push({ package: this.pkg, file: this.file, kind: 'more_findings', detail: `${n - MAX_FINDINGS_PER_KIND} more finding(s) of kind ${kind} in this file` });
    }
  }
}

function textChecks(text: string, f: FileFindings, context: LeakContext, searchable: readonly ForbiddenString[], otherBlindIds: readonly string[]): void {
  for (const p of PATTERNS) {
    for (const m of text.matchAll(p.re)) f.add(p.kind, `${p.what}: ${snippet(text, m.index, m[0].length)}`);
  }
  for (const m of text.matchAll(HEX_TOKEN_RE)) {
    const hit = context.hashes.get(m[0].toLowerCase());
    if (hit) f.add(hit.kind, `${hit.label}: ${snippet(text, m.index, m[0].length)}`);
  }
  const lower = text.toLowerCase();
  for (const s of searchable) {
    const needle = s.value.toLowerCase();
    // Whole tokens only: a seed "r7" must not match inside "mirror7s" (not flanked by letters or digits).
    let from = 0;
    for (let guard = 0; guard < 100_000; guard += 1) {
      const at = lower.indexOf(needle, from);
      if (at < 0) break;
      const before = at === 0 ? '' : lower[at - 1]!;
      const after = lower[at + needle.length] ?? '';
      if (!/[a-z0-9]/.test(before) && !/[a-z0-9]/.test(after)) f.add(s.kind, `${s.label}: ${snippet(text, at, needle.length)}`);
      from = at + needle.length;
    }
  }
  for (const id of otherBlindIds) {
    const at = text.indexOf(id);
    if (at >= 0) f.add('foreign_blind_id', `the blind id of another package (${id}): ${snippet(text, at, id.length)}`);
  }
}

/** Container path → keys, for (b). Timeline details are containers named by their kind. */
function collectShape(value: unknown, at: string, out: Map<string, Set<string>>, depth = 0): void {
  if (depth > 32) return;
  if (Array.isArray(value)) {
    for (const v of value) collectShape(v, `${at}[]`, out, depth + 1);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  const keys = out.get(at) ?? new Set<string>();
  out.set(at, keys);
  for (const [k, v] of Object.entries(value)) {
    keys.add(k);
    collectShape(v, at === '' ? k : `${at}.${k}`, out, depth + 1);
  }
}

const JSON_SCHEMAS: ReadonlyMap<string, z.ZodType> = new Map<string, z.ZodType>([
  [PACKAGE_FILES.manifest, PackageManifest],
  [PACKAGE_FILES.checkpoints, StateCheckpoints],
  [PACKAGE_FILES.interventions, Interventions],
  [PACKAGE_FILES.claims, ClaimsWithEvidence],
  [PACKAGE_FILES.actions, ActionChains],
  [PACKAGE_FILES.recovery, RecoveryReports],
  [PACKAGE_FILES.expected, ExpectedCheckpoints],
]);

function issues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}

/** Every string equal to a ref, anywhere in a value. */
function collectRefs(value: unknown, out: Set<string>, depth = 0): void {
  if (depth > 32) return;
  if (typeof value === 'string') {
    if (REF_RE.test(value)) out.add(value);
  } else if (Array.isArray(value)) for (const v of value) collectRefs(v, out, depth + 1);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) collectRefs(v, out, depth + 1);
}

/** (d) for one package; returns each parsed file's shape for (b). */
function parseChecks(pkg: PackageFiles, findings: LeakFinding[]): Map<string, Map<string, Set<string>>> {
  const shapes = new Map<string, Map<string, Set<string>>>();
  const refs = new Map<string, Set<string>>();
  const timelineRefs = new Set<string>();
  for (const [file, text] of pkg.files) {
    if (!EXPECTED_FILES.has(file)) continue;
    const f = new FileFindings(findings, pkg.name, file);
    const shape = new Map<string, Set<string>>();
    const used = new Set<string>();
    if (file === PACKAGE_FILES.timeline) {
      const lines = text.split('\n').filter((l) => l.length > 0);
      for (const [i, line] of lines.entries()) {
        let json: unknown;
        try {
          json = JSON.parse(line);
        } catch {
          f.add('schema', `line ${i + 1} is not JSON`);
          continue;
        }
        const entry = TimelineEntry.safeParse(json);
        if (!entry.success) {
          f.add('schema', `line ${i + 1}: ${issues(entry.error)}`);
          continue;
        }
        const detail = DETAIL_SCHEMAS[entry.data.kind].safeParse(entry.data.detail);
        if (!detail.success) f.add('schema', `line ${i + 1} (${entry.data.ref}, ${entry.data.kind}): its detail breaks the ${entry.data.kind} schema: ${issues(detail.error)}`);
        const expected = `E${String(i + 1).padStart(4, '0')}`;
        if (entry.data.ref !== expected) f.add('schema', `line ${i + 1} has ref ${entry.data.ref}, expected ${expected} (refs number the entries in order)`);
        timelineRefs.add(entry.data.ref);
        const { detail: d, ...top } = entry.data;
        collectShape(top, '', shape);
        collectShape(d, `detail<${entry.data.kind}>`, shape);
        collectRefs({ ...top, ref: undefined }, used);
        collectRefs(d, used);
      }
    } else if (file === PACKAGE_FILES.scorecard) {
      if (!/^<!doctype html>/i.test(text)) f.add('schema', 'the scorecard is not an HTML page (no <!doctype html> at its start)');
      if (!text.includes(pkg.name)) f.add('schema', `the scorecard does not name its package ${pkg.name}`);
    } else if (file === PACKAGE_FILES.instructions) {
      // Text for people: (c) searched it; (e) holds it to the same bytes in every package.
      if (!text.startsWith('# Review instructions\n')) f.add('schema', `${file} does not start with its heading "# Review instructions"`);
    } else {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        f.add('schema', 'not JSON');
        f.close();
        continue;
      }
      const parsed = JSON_SCHEMAS.get(file)!.safeParse(json);
      if (!parsed.success) f.add('schema', issues(parsed.error));
      if (file === PACKAGE_FILES.manifest && parsed.success) {
        const m = parsed.data as PackageManifest;
        if (m.blind_id !== pkg.name) f.add('schema', `manifest.json names blind id ${m.blind_id}, but the package folder is ${pkg.name}`);
        if (JSON.stringify(m.files) !== JSON.stringify(PACKAGE_FILE_NAMES)) f.add('schema', `manifest.json lists files ${m.files.join(', ')}, not the package's ${PACKAGE_FILE_NAMES.join(', ')}`);
      }
      collectShape(json, '', shape);
      collectRefs(json, used);
    }
    shapes.set(file, shape);
    refs.set(file, used);
    f.close();
  }
  for (const [file, used] of refs) {
    const f = new FileFindings(findings, pkg.name, file);
    for (const ref of [...used].sort()) if (!timelineRefs.has(ref)) f.add('dangling_ref', `${ref} is not an entry of ${PACKAGE_FILES.timeline}`);
    f.close();
  }
  return shapes;
}

/** (b): for each container present in several packages, the same keys in all of them. */
function shapeChecks(shapes: ReadonlyMap<string, Map<string, Map<string, Set<string>>>>, findings: LeakFinding[]): void {
  const names = [...shapes.keys()];
  for (const file of PACKAGE_FILE_NAMES) {
    const containers = new Set<string>();
    for (const n of names) for (const c of shapes.get(n)?.get(file)?.keys() ?? []) containers.add(c);
    for (const container of [...containers].sort()) {
      const having = names.filter((n) => shapes.get(n)?.get(file)?.has(container));
      if (having.length < 2) continue;
      const allKeys = new Set<string>();
      for (const n of having) for (const k of shapes.get(n)!.get(file)!.get(container)!) allKeys.add(k);
      for (const key of [...allKeys].sort()) {
        const holders = having.filter((n) => shapes.get(n)!.get(file)!.get(container)!.has(key));
        if (holders.length === having.length) continue;
        const lackers = having.filter((n) => !holders.includes(n));
        const where = `${container === '' ? '(top level)' : container}.${key}`;
        // Name the minority: a key only some packages have, or the packages that lack a common one.
        if (holders.length <= lackers.length) for (const n of holders) findings.push({ package: n, file, kind: 'key_paths', detail: `key ${where} is present here and in ${holders.length - 1} other package(s) only, absent from ${lackers.length} package(s) with the same structure: a field some packages have and others not can reveal the group` });
        else for (const n of lackers) findings.push({ package: n, file, kind: 'key_paths', detail: `key ${where} is missing here but present in ${holders.length} other package(s): a field some packages have and others not can reveal the group` });
      }
    }
  }
}

/**
 * Checks packages: a folder holding package folders (an export's output or its temp folder), or
 * packages already in memory. `context` holds the study's forbidden strings.
 */
export function checkLeaks(source: string | readonly PackageFiles[], context: LeakContext): LeakCheck {
  const collected: Collected = typeof source === 'string' ? readPackages(source) : { packages: [...source], findings: [] };
  const findings = [...collected.findings];
  const searched = context.strings.filter(searchable);
  const unsearched = context.strings.filter((s) => !searchable(s)).map((s) => `${s.label} (${s.value.length} ${/^\d+$/.test(s.value) ? 'digit(s)' : 'character(s)'})`);
  const names = collected.packages.map((p) => p.name);
  let filesChecked = 0;
  const shapes = new Map<string, Map<string, Map<string, Set<string>>>>();
  for (const pkg of collected.packages) {
    // (a)
    for (const expected of PACKAGE_FILE_NAMES) if (!pkg.files.has(expected)) findings.push({ package: pkg.name, file: expected, kind: 'missing_file', detail: `${expected} is missing: every package has exactly ${PACKAGE_FILE_NAMES.join(', ')}` });
    for (const file of pkg.files.keys()) if (!EXPECTED_FILES.has(file)) findings.push({ package: pkg.name, file, kind: 'extra_file', detail: `${file} is not a package file: a file some packages have and others not can reveal the group; remove it` });
    // (c) on every file, expected or not
    const others = names.filter((n) => n !== pkg.name && BlindId.safeParse(n).success);
    for (const [file, text] of pkg.files) {
      filesChecked += 1;
      const f = new FileFindings(findings, pkg.name, file);
      textChecks(text, f, context, searched, others);
      f.close();
    }
    // (d), collecting (b)'s shapes
    shapes.set(pkg.name, parseChecks(pkg, findings));
  }
  shapeChecks(shapes, findings);
  // (e)
  sameEverywhereCheck(collected.packages, findings);
  const notes = expectedChecks(collected.packages, context, findings);
  return { ok: findings.length === 0, packages: collected.packages.length, filesChecked, findings, unsearched, notes };
}

/** (e) The instructions: one text in every package; the packages whose text is not the most common one are named (all, when there is no majority). */
function sameEverywhereCheck(packages: readonly PackageFiles[], findings: LeakFinding[]): void {
  const file = PACKAGE_FILES.instructions;
  const having = packages.filter((p) => p.files.has(file));
  const counts = new Map<string, number>();
  for (const p of having) counts.set(p.files.get(file)!, (counts.get(p.files.get(file)!) ?? 0) + 1);
  if (counts.size <= 1) return;
  const top = Math.max(...counts.values());
  const majority = [...counts.entries()].filter(([, n]) => n === top);
  const common = majority.length === 1 ? majority[0]![0] : null;
  for (const p of having) {
    if (p.files.get(file) === common) continue;
    findings.push({ package: p.name, file, kind: 'instructions_differ', detail: `${file} is not the same as in ${common === null ? 'the other packages (no text is shared by most of them)' : `${top} other package(s)`}: the instructions are the same for every package by construction, so a different text can carry something of this package's origin` });
  }
}

/**
 * (e) The expected checkpoints: recomputed for every readable instance; one text per replicate
 * (else the oracle depends on something besides the plan, and the file would tell the settings
 * apart), and every package's file is one of them (else it was not computed from a plan). Returns
 * notes on what could not be compared.
 */
function expectedChecks(packages: readonly PackageFiles[], context: LeakContext, findings: LeakFinding[]): string[] {
  const notes = context.expectedProblems.map((p) => `expected checkpoints not recomputed for ${p}`);
  const byReplicate = new Map<number, Set<string>>();
  for (const e of context.expected) byReplicate.set(e.replicate, (byReplicate.get(e.replicate) ?? new Set()).add(e.text));
  for (const [replicate, texts] of [...byReplicate.entries()].sort((a, b) => a[0] - b[0])) {
    if (texts.size > 1) findings.push({ package: STUDY_LABEL, file: PACKAGE_FILES.expected, kind: 'oracle_differs_in_replicate', detail: `the instances of replicate ${replicate} give ${texts.size} different expected checkpoints, though the oracle reads the plan, the scenario and the pre-registration only (the same for every instance of a replicate): the file would tell them apart; find out why before exporting` });
  }
  if (context.expected.length === 0) {
    notes.push(`${PACKAGE_FILES.expected} not compared with the oracle: no instance of the study could be read`);
    return notes;
  }
  const known = new Set(context.expected.map((e) => e.text));
  for (const p of packages) {
    const text = p.files.get(PACKAGE_FILES.expected);
    if (text !== undefined && !known.has(text)) findings.push({ package: p.name, file: PACKAGE_FILES.expected, kind: 'oracle_not_from_plan', detail: `${PACKAGE_FILES.expected} is not the oracle's expectation of any instance of the study (recomputed from each run's plan): it was edited or made otherwise, and may carry something of this package's origin` });
  }
  return notes;
}

/** One line per finding, for the screen and for error messages. */
export function describeFinding(f: LeakFinding): string {
  return `${f.package}/${f.file}: ${f.kind}: ${f.detail}`;
}
