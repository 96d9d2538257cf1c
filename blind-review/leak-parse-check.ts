// Check (d) of the leak check (leak-check.ts): every package file parses with its schema
// (package-format.ts; each timeline entry's detail with its kind's schema from
// timeline-detail.ts, and the entries numbered in order), the scorecard is a page naming its
// package, the instructions start with their heading, and every ref any file uses is an entry of
// the timeline. Parsing gives each file's shape, which check (b) compares across packages.
import { z } from 'zod';
import { DETAIL_SCHEMAS } from './timeline-detail.js';
import { EXPECTED_FILES, type PackageFiles } from './leak-check-input.js';
import { FileFindings, type LeakFinding } from './leak-finding.js';
import { collectShape, type PackageShapes, type Shape } from './leak-shape-check.js';
import { ActionChains, ClaimsWithEvidence, ExpectedCheckpoints, Interventions, PACKAGE_FILE_NAMES, PACKAGE_FILES, PackageManifest, RecoveryReports, StateCheckpoints, TimelineEntry } from './package-format.js';

const REF_RE = /^E\d{4,6}$/;

/** The schema of each JSON file of a package. */
const JSON_SCHEMAS: ReadonlyMap<string, z.ZodType> = new Map<string, z.ZodType>([
  [PACKAGE_FILES.manifest, PackageManifest],
  [PACKAGE_FILES.checkpoints, StateCheckpoints],
  [PACKAGE_FILES.interventions, Interventions],
  [PACKAGE_FILES.claims, ClaimsWithEvidence],
  [PACKAGE_FILES.actions, ActionChains],
  [PACKAGE_FILES.recovery, RecoveryReports],
  [PACKAGE_FILES.expected, ExpectedCheckpoints],
]);

/** The first issues of a schema error, for a finding's detail. */
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

/** What one file gave: its shape for (b) and the refs it uses. */
interface ParsedFile {
  readonly shape: Shape;
  readonly used: Set<string>;
}

/** One line of normalized_timeline.jsonl: JSON, a TimelineEntry whose detail fits its kind, numbered in order. */
function timelineLineCheck(line: string, i: number, f: FileFindings, parsed: ParsedFile, timelineRefs: Set<string>): void {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    f.add('schema', `line ${i + 1} is not JSON`);
    return;
  }
  const entry = TimelineEntry.safeParse(json);
  if (!entry.success) {
    f.add('schema', `line ${i + 1}: ${issues(entry.error)}`);
    return;
  }
  const detail = DETAIL_SCHEMAS[entry.data.kind].safeParse(entry.data.detail);
  if (!detail.success) f.add('schema', `line ${i + 1} (${entry.data.ref}, ${entry.data.kind}): its detail breaks the ${entry.data.kind} schema: ${issues(detail.error)}`);
  const expected = `E${String(i + 1).padStart(4, '0')}`;
  if (entry.data.ref !== expected) f.add('schema', `line ${i + 1} has ref ${entry.data.ref}, expected ${expected} (refs number the entries in order)`);
  timelineRefs.add(entry.data.ref);
  const { detail: d, ...top } = entry.data;
  collectShape(top, '', parsed.shape);
  collectShape(d, `detail<${entry.data.kind}>`, parsed.shape);
  collectRefs({ ...top, ref: undefined }, parsed.used);
  collectRefs(d, parsed.used);
}

/** A JSON file: parses, fits its schema (a manifest also names this package and the package's files); null when it is not JSON. */
function jsonFileCheck(pkg: PackageFiles, file: string, text: string, f: FileFindings): ParsedFile | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    f.add('schema', 'not JSON');
    return null;
  }
  const parsed = JSON_SCHEMAS.get(file)!.safeParse(json);
  if (!parsed.success) f.add('schema', issues(parsed.error));
  if (file === PACKAGE_FILES.manifest && parsed.success) {
    const m = parsed.data as PackageManifest;
    if (m.blind_id !== pkg.name) f.add('schema', `manifest.json names blind id ${m.blind_id}, but the package folder is ${pkg.name}`);
    if (JSON.stringify(m.files) !== JSON.stringify(PACKAGE_FILE_NAMES)) f.add('schema', `manifest.json lists files ${m.files.join(', ')}, not the package's ${PACKAGE_FILE_NAMES.join(', ')}`);
  }
  const out: ParsedFile = { shape: new Map(), used: new Set() };
  collectShape(json, '', out.shape);
  collectRefs(json, out.used);
  return out;
}

/** One package file by its format; null when it could not be read as it (then it has no shape and no refs). */
function fileCheck(pkg: PackageFiles, file: string, text: string, f: FileFindings, timelineRefs: Set<string>): ParsedFile | null {
  const parsed: ParsedFile = { shape: new Map(), used: new Set() };
  if (file === PACKAGE_FILES.timeline) {
    const lines = text.split('\n').filter((l) => l.length > 0);
    for (const [i, line] of lines.entries()) timelineLineCheck(line, i, f, parsed, timelineRefs);
  } else if (file === PACKAGE_FILES.scorecard) {
    if (!/^<!doctype html>/i.test(text)) f.add('schema', 'the scorecard is not an HTML page (no <!doctype html> at its start)');
    if (!text.includes(pkg.name)) f.add('schema', `the scorecard does not name its package ${pkg.name}`);
  } else if (file === PACKAGE_FILES.instructions) {
    // Text for people: (c) searched it; (e) holds it to the same bytes in every package.
    if (!text.startsWith('# Review instructions\n')) f.add('schema', `${file} does not start with its heading "# Review instructions"`);
  } else {
    return jsonFileCheck(pkg, file, text, f);
  }
  return parsed;
}

/** (d) for one package; returns each parsed file's shape for (b). */
export function parseChecks(pkg: PackageFiles, findings: LeakFinding[]): PackageShapes {
  const shapes: PackageShapes = new Map();
  const refs = new Map<string, Set<string>>();
  const timelineRefs = new Set<string>();
  for (const [file, text] of pkg.files) {
    if (!EXPECTED_FILES.has(file)) continue;
    const f = new FileFindings(findings, pkg.name, file);
    const parsed = fileCheck(pkg, file, text, f, timelineRefs);
    f.close();
    if (parsed === null) continue;
    shapes.set(file, parsed.shape);
    refs.set(file, parsed.used);
  }
  // Every ref a file uses is an entry of the timeline (read above, whatever the files' order).
  for (const [file, used] of refs) {
    const f = new FileFindings(findings, pkg.name, file);
    for (const ref of [...used].sort()) if (!timelineRefs.has(ref)) f.add('dangling_ref', `${ref} is not an entry of ${PACKAGE_FILES.timeline}`);
    f.close();
  }
  return shapes;
}
