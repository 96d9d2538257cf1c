// The subject's workspace folder as the controller sees it: created from the scenario at the
// start of an instance, and changed "from outside" when an external_file_change intervention
// is injected — the file on disk first, then the WorldEvent that tells of it, so the event
// never announces a change that did not happen. Both steps are idempotent: a resumed
// controller that repeats them changes nothing twice.
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { replaceFileDurably } from '../foundation/durable-write.js';
import path from 'node:path';
import type { ExternalFileChangeIntervention } from '../design/intervention-plan.js';
import type { Scenario } from '../design/scenario.js';
import type { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { hashText } from '../schema/hash.js';

export const WORKSPACE_FOLDER = 'workspace';

export interface FileOwner {
  readonly uid: number;
  readonly gid: number;
}

export class WorkspaceError extends TypedErrorOf('workspace', EXIT_CODES.failed) {
  override readonly name = 'WorkspaceError';
}

/** Resolves a workspace-relative path and refuses anything that would land outside the folder. */
function inside(root: string, relative: string): string {
  const resolved = path.resolve(root, relative);
  if (!resolved.startsWith(`${path.resolve(root)}${path.sep}`)) throw new WorkspaceError(`${relative} is outside the workspace ${root}`);
  return resolved;
}

function ensureDir(dir: string, owner: FileOwner | null): void {
  if (existsSync(dir)) return;
  ensureDir(path.dirname(dir), owner);
  mkdirSync(dir, { mode: 0o755 });
  if (owner) chownSync(dir, owner.uid, owner.gid);
}

/** A reader sees the old bytes or the new ones (foundation/durable-write.ts), the file the subject's own. */
function writeAtomically(file: string, content: string, owner: FileOwner | null): void {
  const beforeRename = owner === null ? undefined : (temp: string) => chownSync(temp, owner.uid, owner.gid);
  replaceFileDurably(file, Buffer.from(content, 'utf8'), { temp: `${file}.controller-tmp`, mode: 0o644, exclusive: false, beforeRename });
}

/** Creates the workspace with the scenario's files; refuses a folder that already exists. */
export function materializeWorkspace(root: string, scenario: Scenario, owner: FileOwner | null): void {
  if (existsSync(root)) throw new WorkspaceError(`${root} exists: a new instance starts from the scenario's files only`);
  ensureDir(root, owner);
  for (const file of scenario.files) {
    const target = inside(root, file.path);
    ensureDir(path.dirname(target), owner);
    writeAtomically(target, file.content, owner);
  }
}

export interface ExternalChangeOutcome {
  readonly outcome: 'applied' | 'already-applied';
  /** What the file hashed to before: differs from the plan's pre_hash when the subject had edited it. */
  readonly found_hash: string | null;
}

/**
 * Applies a planned external change whatever the file holds now: the world does not ask the
 * subject. 'already-applied' when the file already is as the plan leaves it (a resumed
 * instance repeating the step).
 */
export function applyExternalChange(root: string, change: z.infer<typeof ExternalFileChangeIntervention>, owner: FileOwner | null): ExternalChangeOutcome {
  const target = inside(root, change.path);
  const found = existsSync(target) ? hashText(readFileSync(target)) : null;
  const post = change.new_content === null ? null : hashText(change.new_content);
  if (found === post) return { outcome: 'already-applied', found_hash: found };
  if (change.new_content === null) rmSync(target);
  else writeAtomically(target, change.new_content, owner);
  return { outcome: 'applied', found_hash: found };
}
