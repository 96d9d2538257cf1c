// Every production file held to the floor plan (foundation/rooms.ts, docs/architecture.md): it
// lives in a room, and each of its relative imports (import-graph.ts: static, re-export,
// dynamic, `new URL(…, import.meta.url)`) stays in that room or goes to a room ROOMS lets it
// import. Imports run inward only, so a room can be understood, tested and copied (the
// isolation copy, the fault harness's planted-bug copy) with the rooms below it and nothing else.
// One function for the real tree and for the test's forged trees, so the rule tested is the rule.
import path from 'node:path';
import { ROOMS } from '../../foundation/rooms.js';
import { importsOf, type ImportEdge } from './import-graph.js';
import type { SourceFile } from './source-tree.js';

/** The floor plan's shape: room → the rooms it may import. */
export type FloorPlan = Readonly<Record<string, readonly string[]>>;

export interface FloorPlanViolation {
  readonly file: string;
  /** 1-based; 1 for a file that is outside every room. */
  readonly line: number;
  readonly message: string;
}

/** An import edge resolved to where it points in the checkout. */
export interface ResolvedImport extends ImportEdge {
  /** Relative to the checkout's root, `/`-separated; null when it leaves the checkout. */
  readonly target: string | null;
}

/** The first folder of a repository path when it is a room of the plan, else null. */
export function roomOf(relPath: string, plan: FloorPlan = ROOMS): string | null {
  const first = relPath.split('/')[0]!;
  return relPath.includes('/') && Object.hasOwn(plan, first) ? first : null;
}

/** The top folder (or the file itself, at the root) a repository path is in: a room's name or not. */
export function topFolderOf(relPath: string): string {
  return relPath.split('/')[0]!;
}

/** A file's relative imports, each resolved against the file's folder (package and `node:` imports are no room's and are left out). */
export function relativeImportsOf(file: SourceFile): ResolvedImport[] {
  const resolved: ResolvedImport[] = [];
  for (const edge of importsOf(file.text)) {
    if (!edge.specifier.startsWith('./') && !edge.specifier.startsWith('../')) continue;
    // A folder URL ('../scenario/') resolves with its trailing slash; the checkout's root itself is '.'.
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file.path), edge.specifier)).replace(/\/+$/, '') || '.';
    resolved.push({ ...edge, target: target === '..' || target.startsWith('../') ? null : target });
  }
  return resolved;
}

const KIND_WORDS: Readonly<Record<ImportEdge['kind'], string>> = {
  import: 'imports',
  'export-from': 're-exports from',
  'dynamic-import': 'imports (dynamically)',
  url: 'reaches by new URL(…, import.meta.url)',
};

function listOf(rooms: readonly string[]): string {
  return rooms.length === 0 ? 'no other room' : rooms.join(', ');
}

/** One relative import judged against the plan: where it goes, and why it may not when it may not. */
export interface ImportVerdict extends ResolvedImport {
  /** The top folder it reaches ('.' for the checkout's root itself, null when it leaves the checkout). */
  readonly folder: string | null;
  /** null when the plan allows it (or it stays in its room); otherwise the reason, as the test prints it. */
  readonly breach: string | null;
}

/**
 * Every relative import of a file in a room, judged. The one exception to "rooms only": a
 * `new URL('../../', import.meta.url)` naming the checkout's root itself (how a command finds
 * its checkout, e.g. cli/run-defaults.ts's REPO) reaches no room's code or data.
 */
export function importVerdicts(file: SourceFile, room: string, plan: FloorPlan = ROOMS): ImportVerdict[] {
  const allowed = plan[room] ?? [];
  return relativeImportsOf(file).map((edge) => {
    const what = `${room}/ ${KIND_WORDS[edge.kind]} '${edge.specifier}'`;
    if (edge.target === null) return { ...edge, folder: null, breach: `${what}, which leaves the checkout` };
    const folder = topFolderOf(edge.target);
    if (edge.target === '.' && edge.kind === 'url') return { ...edge, folder, breach: null };
    const targetRoom = roomOf(edge.target, plan);
    if (targetRoom === room || (targetRoom !== null && allowed.includes(targetRoom))) return { ...edge, folder, breach: null };
    const breach = targetRoom === null
      ? `${what} (${edge.target}), which is in no room (${edge.target === '.' ? 'the checkout\'s root' : edge.target.includes('/') ? `${folder}/` : folder}): production code imports rooms only`
      : `${what} (${targetRoom}/): ${room} may import ${listOf(allowed)} (foundation/rooms.ts)`;
    return { ...edge, folder, breach };
  });
}

/** Every place the files break the floor plan, in file and line order. */
export function floorPlanViolations(files: readonly SourceFile[], plan: FloorPlan = ROOMS): FloorPlanViolation[] {
  const violations: FloorPlanViolation[] = [];
  for (const file of files) {
    const room = roomOf(file.path, plan);
    if (room === null) {
      violations.push({ file: file.path, line: 1, message: `a production .ts file outside every room of foundation/rooms.ts (${Object.keys(plan).join(', ')}): move it into the room it belongs to` });
      continue;
    }
    for (const verdict of importVerdicts(file, room, plan)) {
      if (verdict.breach !== null) violations.push({ file: file.path, line: verdict.line, message: verdict.breach });
    }
  }
  return violations.sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1));
}

/** `file:line: message`, the form editors and terminals link. */
export function formatViolation(violation: FloorPlanViolation): string {
  return `${violation.file}:${violation.line}: ${violation.message}`;
}
