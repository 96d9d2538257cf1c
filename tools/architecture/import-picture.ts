// npm run architecture -- [--at REV] [--json]
// The import picture (issue 17, "Done when": the notes show it before and after): per top folder,
// innermost room first, its production files, their lines, and the rooms its files import with
// the number of import statements (a `!` marks a direction foundation/rooms.ts forbids); then
// the files over 400 lines, each with whether its top says why it is one file (size-rule.ts);
// then the import circles of the rooms and the tools (import-circles.ts).
// `--at REV` draws a commit's tree instead of the working tree, read from git's object store
// (nothing is checked out), so a before/after pair is two runs of the same command: e.g.
// `npm run architecture -- --at 437661b` (before issue 17) and `npm run architecture`. An older
// tree is still judged by today's ROOMS. It reads imports with the scanner the architecture test
// uses (import-graph.ts), so it counts every kind — static, re-export, dynamic, new URL —
// and lines as an editor numbers them; /tmp/arch/picture.mjs, the first sketch, counted only
// `from '…'` and one line more per file. Exit 0: a picture, not a check (the test is the check);
// 2 on misuse; 1 when git cannot read the tree.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOMS } from '../../foundation/rooms.js';
import { parseFlags, UsageError } from '../../cli/command-line.js';
import { runCommand, type CommandOutput } from '../../cli/command-outcome.js';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { floorPlanViolations, importVerdicts, roomOf, topFolderOf } from './floor-plan-check.js';
import { importCircles, type ImportCircle } from './import-circles.js';
import { longFiles, lineCount, MAX_LINES_WITHOUT_REASON, type LongFile } from './size-rule.js';
import { commitOf, isHouseSource, isProductionSource, readCommit, readWorkingTree, UnknownRevisionError, type SourceFile } from './source-tree.js';

const USAGE = `usage: npm run architecture -- [--at REV] [--json]
  --at REV  the tree of commit REV (e.g. 437661b) instead of the working tree
  --json    one JSON object: rooms (files, lines, imports, forbidden), long files, violations
exit: 0 (a picture, not a check: npm test holds the floor plan), 2 misuse`;

const REPO = fileURLToPath(new URL('../../', import.meta.url));

interface FolderPicture {
  readonly folder: string;
  /** Whether the folder is a room of foundation/rooms.ts (an older tree may have others). */
  readonly room: boolean;
  readonly files: number;
  readonly lines: number;
  /** Room or top folder imported → import statements, other folders only. */
  readonly imports: Record<string, number>;
  /** The part of `imports` the floor plan forbids. */
  readonly forbidden: Record<string, number>;
}

function increment(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** Folders in the floor plan's order (innermost first), then any others alphabetically. */
function folderOrder(a: string, b: string): number {
  const names = Object.keys(ROOMS);
  const ia = names.indexOf(a);
  const ib = names.indexOf(b);
  if (ia !== -1 || ib !== -1) return (ia === -1 ? names.length : ia) - (ib === -1 ? names.length : ib);
  return a < b ? -1 : a > b ? 1 : 0;
}

function pictureOf(files: readonly SourceFile[]): FolderPicture[] {
  const folders = new Map<string, { files: number; lines: number; imports: Record<string, number>; forbidden: Record<string, number> }>();
  for (const file of files) {
    const folder = topFolderOf(file.path);
    const entry = folders.get(folder) ?? { files: 0, lines: 0, imports: {}, forbidden: {} };
    folders.set(folder, entry);
    entry.files++;
    entry.lines += lineCount(file.text);
    const room = roomOf(file.path);
    // A file outside every room has no allowed imports: all it reaches is counted as forbidden.
    for (const verdict of importVerdicts(file, room ?? '', room === null ? {} : ROOMS)) {
      const target = verdict.folder ?? '(outside the checkout)';
      if (target === folder || (target === '.' && verdict.breach === null)) continue;
      increment(entry.imports, target);
      if (verdict.breach !== null) increment(entry.forbidden, target);
    }
  }
  return [...folders.entries()]
    .sort(([a], [b]) => folderOrder(a, b))
    .map(([folder, p]) => ({ folder, room: Object.hasOwn(ROOMS, folder), ...p }));
}

function sortedCounts(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => folderOrder(a, b)));
}

function textOf(at: string | null, folders: readonly FolderPicture[], long: readonly LongFile[], violations: number, circles: readonly ImportCircle[]): string {
  const width = Math.max(12, ...folders.map((f) => f.folder.length + 1));
  const lines = [`import picture of ${at === null ? 'the working tree' : `commit ${at}`} (production .ts files; "!" = a direction foundation/rooms.ts forbids)`];
  for (const f of folders) {
    const imports = Object.entries(sortedCounts(f.imports)).map(([t, n]) => `${t}(${n})${f.forbidden[t] === undefined ? '' : '!'}`);
    lines.push(`${`${f.folder}${f.room ? '' : '?'}`.padEnd(width)} ${String(f.files).padStart(3)} files ${String(f.lines).padStart(6)} lines  imports: ${imports.join(' ') || '—'}`);
  }
  if (folders.some((f) => !f.room)) lines.push('(? = a folder that is no room of foundation/rooms.ts)');
  const files = folders.reduce((n, f) => n + f.files, 0);
  const total = folders.reduce((n, f) => n + f.lines, 0);
  lines.push(`${'total'.padEnd(width)} ${String(files).padStart(3)} files ${String(total).padStart(6)} lines  floor-plan violations: ${violations}`);
  const unreasoned = long.filter((f) => !f.reasoned).length;
  lines.push(`files over ${MAX_LINES_WITHOUT_REASON} lines: ${long.length} (${unreasoned} without a "Why one file:" at the top)`);
  for (const f of long) lines.push(`  ${String(f.lines).padStart(5)} ${f.file}${f.reasoned ? '  (why one file: said)' : ''}`);
  lines.push(`import circles (the rooms and tools/): ${circles.length}`);
  for (const c of circles) lines.push(`  ${c.length} file(s) that reach one another: ${c.join(', ')}`);
  return lines.join('\n');
}

function main(): CommandOutput | null {
  const args = parseFlags(USAGE, { at: { type: 'string' }, json: { type: 'boolean' } });
  if (args === null) return null;
  if (args.positionals.length > 0) throw new UsageError(`no positional arguments expected, got ${args.positionals.map((p) => JSON.stringify(p)).join(' ')}`);
  const root = path.resolve(REPO);
  let at: string | null = null;
  if (args.values.at !== undefined) {
    try {
      at = commitOf(root, args.values.at);
    } catch (error) {
      if (error instanceof UnknownRevisionError) throw new UsageError(`--at: ${error.message}`);
      throw error;
    }
  }
  // One reading of the house (rooms and tools/): the circles are the whole house's, the picture the rooms'.
  const house = at === null ? readWorkingTree(root, isHouseSource) : readCommit(root, at, isHouseSource);
  const files = house.filter((f) => isProductionSource(f.path));
  const circles = importCircles(house);
  const folders = pictureOf(files);
  const long = longFiles(files);
  const violations = floorPlanViolations(files).length;
  const json = {
    at,
    folders: folders.map((f) => ({ ...f, imports: sortedCounts(f.imports), forbidden: sortedCounts(f.forbidden) })),
    totals: { files: files.length, lines: folders.reduce((n, f) => n + f.lines, 0) },
    floor_plan_violations: violations,
    max_lines_without_reason: MAX_LINES_WITHOUT_REASON,
    long_files: long,
    import_circles: circles,
  };
  return { exitCode: EXIT_CODES.ok, json, text: textOf(at, folders, long, violations, circles) };
}

runCommand('architecture', USAGE, main);
