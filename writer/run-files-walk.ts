// Where a verify finds what to check (writer/verify-store.ts): the stores and signed files under a
// folder, and the controller key that governs each file. Read also by the plan check
// (verification/plans-under.ts), the audit desk, the oracle's run record and the stopped-store
// scan, so every reader of run folders sees the same files under the same key. The walk is
// bounded (depth, entry count): a folder beyond the bounds is refused, never half-walked.
// A run folder's workspace is the subject's, never walked (issue 32 item 5): nothing in it is a
// run file, whatever its name, and whatever the workspace path rule lets a subject make there
// (schema/workspace-path.ts) cannot make its own run unverifiable.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { RUN_FILES } from '../schema/run-files.js';
import { VerifyInputError } from './verify-input-error.js';

const MAX_WALK_DEPTH = 8;
const MAX_WALK_ENTRIES = 100_000;

export interface RunFilesFound {
  /** events.db files, sorted by path. */
  readonly stores: string[];
  readonly signedFiles: string[];
  /**
   * Folders inside a run folder beyond the walk's depth, not walked: a finding about that run
   * folder (a run's own layout is shallow; verify fails it, exit 1), never a refusal of the command.
   */
  readonly beyond: string[];
}

/** The stores and signed files under root (bounded depth and entry count; node_modules and dot folders skipped). */
export function findRunFiles(root: string): RunFilesFound {
  const found: RunFilesFound = { stores: [], signedFiles: [], beyond: [] };
  let seen = 0;
  // Bounded: each folder is visited once, at most MAX_WALK_DEPTH deep and MAX_WALK_ENTRIES in all.
  const visit = (dir: string, depth: number, runFolder: string | null): void => {
    if (depth > MAX_WALK_DEPTH) {
      if (runFolder === null) throw new VerifyInputError(`${dir} is nested deeper than ${MAX_WALK_DEPTH} levels below ${root}; verify a narrower folder`);
      found.beyond.push(`${dir} is nested deeper than ${MAX_WALK_DEPTH} levels below ${root}, inside the run folder ${runFolder}: not a run's layout, not walked`);
      return;
    }
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
    const isRunFolder = entries.some((e) => e.isFile() && e.name === RUN_FILES.store);
    for (const entry of entries) {
      if (isRunFolder && entry.name === RUN_FILES.workspace) continue;
      seen += 1;
      if (seen > MAX_WALK_ENTRIES) throw new VerifyInputError(`more than ${MAX_WALK_ENTRIES} entries under ${root}; verify a narrower folder`);
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'node_modules' && !entry.name.startsWith('.')) visit(full, depth + 1, runFolder ?? (isRunFolder ? dir : null));
      else if (entry.isFile() && entry.name === RUN_FILES.store) found.stores.push(full);
      else if (entry.isFile() && (entry.name.endsWith(RUN_FILES.dsseSuffix) || entry.name === RUN_FILES.heads)) found.signedFiles.push(full);
    }
  };
  visit(root, 0, null);
  return found;
}

/** The controller key that governs a file: controller.pub in its folder or the nearest one above, within root. */
export function keyFileFor(file: string, root: string): string | null {
  let dir = path.dirname(file);
  // Bounded by the path's depth: each pass goes one folder up, and stops at root or the file system's root.
  for (;;) {
    const candidate = path.join(dir, RUN_FILES.publicKey);
    if (existsSync(candidate)) return candidate;
    if (path.resolve(dir) === path.resolve(root)) return null;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}
