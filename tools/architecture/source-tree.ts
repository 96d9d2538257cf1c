// The production sources of a checkout (issue 17 item 6): the .ts files git knows — committed,
// staged, or new and not ignored, so a file a change adds counts before it is committed — that
// are neither tests (test/) nor developer tools (tools/) nor installed packages (node_modules/), nor the root's tool
// configuration. The architecture test and `npm run architecture` read the same list, from the
// working tree or, for a before/after picture, from any commit (read-only: `git ls-tree` and
// `git cat-file`, never a checkout).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { InternalError } from '../../foundation/typed-error.js';

export interface SourceFile {
  /** Relative to the checkout's root, with `/` separators. */
  readonly path: string;
  readonly text: string;
}

/** Configuration files of the tools at the root: read by vitest, not part of any room's code. */
export const TOOL_CONFIG_FILES: readonly string[] = ['vitest.config.ts'];

/** More sources than any checkout of this project holds (about 200): a listing beyond it is not this project. */
const MAX_SOURCE_FILES = 10_000;
/** git's output for a whole tree's sources (about 1.5 MB today). */
const MAX_GIT_OUTPUT_BYTES = 256 * 1024 * 1024;

/** Top folders that may import any room and are imported by none: the tests and the developer tools (benches, this picture). */
export const OUTSIDE_THE_ROOMS: readonly string[] = ['test', 'tools'];

const SOURCE_EXTENSION = /\.(c|m)?tsx?$/;

/** Whether a repository path is a production source: a .ts file outside test/, node_modules/ and the root's tool configuration. */
export function isProductionSource(relPath: string): boolean {
  if (!SOURCE_EXTENSION.test(relPath) || relPath.endsWith('.d.ts')) return false;
  const parts = relPath.split('/');
  if (OUTSIDE_THE_ROOMS.includes(parts[0]!) || parts.includes('node_modules')) return false;
  return !TOOL_CONFIG_FILES.includes(relPath);
}

/** Whether a repository path is a source of the house: production, or a developer tool (tools/); never a test. */
export function isHouseSource(relPath: string): boolean {
  if (isProductionSource(relPath)) return true;
  return relPath.startsWith('tools/') && SOURCE_EXTENSION.test(relPath) && !relPath.endsWith('.d.ts') && !relPath.split('/').includes('node_modules');
}

/** Which sources a reading takes: the rooms' (production) or the whole house's (with tools/). */
export type SourceSelection = (relPath: string) => boolean;

function git(root: string, args: readonly string[], input?: string): Buffer {
  return execFileSync('git', ['-C', root, ...args], { maxBuffer: MAX_GIT_OUTPUT_BYTES, ...(input === undefined ? {} : { input }), stdio: ['pipe', 'pipe', 'pipe'] });
}

function bounded(paths: string[], where: string): string[] {
  if (paths.length > MAX_SOURCE_FILES) throw new Error(`${where} lists ${paths.length} production sources, more than the ${MAX_SOURCE_FILES} a checkout of this project can hold: is it the right folder?`);
  return paths.sort();
}

/** The production sources of a working tree (tracked, or new and not ignored), as they are on disk now. */
export function readWorkingTree(root: string, select: SourceSelection = isProductionSource): SourceFile[] {
  const listed = git(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']).toString('utf8').split('\0');
  // A file deleted (or moved by `git mv` and not yet re-listed) is still in the index until committed: only what exists counts.
  const paths = bounded([...new Set(listed)].filter((p) => p !== '' && select(p) && existsSync(path.join(root, p))), root);
  return paths.map((p) => ({ path: p, text: readFileSync(path.join(root, p), 'utf8') }));
}

/** The production sources of a commit (any revision git names), read from the object store without touching the working tree. */
export function readCommit(root: string, revision: string, select: SourceSelection = isProductionSource): SourceFile[] {
  const commit = commitOf(root, revision);
  const paths = bounded(git(root, ['ls-tree', '-r', '-z', '--name-only', commit]).toString('utf8').split('\0').filter((p) => p !== '' && select(p)), `commit ${revision}`);
  // One `git cat-file --batch` for every blob: each answer is "<oid> blob <size>\n<bytes>\n", in the order asked.
  const out = git(root, ['cat-file', '--batch'], paths.map((p) => `${commit}:${p}\n`).join(''));
  const files: SourceFile[] = [];
  let at = 0;
  for (const p of paths) {
    const headerEnd = out.indexOf(10, at);
    const header = out.subarray(at, headerEnd).toString('utf8');
    const size = /^[0-9a-f]+ blob (\d+)$/.exec(header);
    if (headerEnd === -1 || size === null) throw new Error(`git cat-file gave no blob for ${commit}:${p} (${JSON.stringify(header)})`);
    const start = headerEnd + 1;
    const end = start + Number(size[1]);
    files.push({ path: p, text: out.subarray(start, end).toString('utf8') });
    at = end + 1;
  }
  return files;
}

/** A revision git cannot resolve to a commit of this checkout. */
export class UnknownRevisionError extends InternalError {
  override readonly name = 'UnknownRevisionError';
}

/** The commit a revision names (for saying which tree a picture shows). */
export function commitOf(root: string, revision: string): string {
  try {
    return git(root, ['rev-parse', '--verify', '--quiet', `${revision}^{commit}`]).toString('utf8').trim();
  } catch {
    throw new UnknownRevisionError(`${JSON.stringify(revision)} names no commit of the checkout at ${root}`);
  }
}
