// Why one file: intent → execute → reconcile of the same four operations belong side by side — the hashes an intent plans are the ones execute writes and reconcile checks; split, the three could drift apart.
// The workspace file operations (DESIGN §7, spec §14.1, issue 5 item 6) the files tool
// (runtime/tools/files.ts: its gate rules, and intent → execute → outcome as events) carries out:
// read, write, modify and move inside one folder on one filesystem. It is the only code that
// touches the subject's files, and it protects itself: every operation normalises and resolves
// its paths again, so a path the permission gate allowed but that changed since (a symlink put
// in its place) fails here instead of escaping.
//
// Side effects follow intent → execute → reconcile: plannedHashes() gives the hashes the
// intent records before anything happens; executeFileAction() writes to a temp file in the
// target's folder, fsyncs it, renames it over the target and fsyncs the folder, so a crash
// leaves the old bytes or the new ones; reconcileIntent() tells after a crash which of the two
// the file holds. Hashes are `sha256:` of the file's bytes (schema/hash.ts hashText).
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  unlinkSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { FileReplaceError, replaceFileDurably } from '../../foundation/durable-write.js';
import { fsyncFolder } from '../../foundation/publish-file.js';
import { CodedInternalError, InternalError } from '../../foundation/typed-error.js';
import { MAX_READ_CONTENT_CHARS } from '../../schema/events/action-events.js';
import { hashText, type HashString } from '../../schema/hash.js';
import type { FileIntentOp } from '../../schema/tools.js';
import { checkWorkspacePath, NAME_MAX_BYTES, WORKSPACE_PATH_RULE } from '../../schema/workspace-path.js';
import type { ModelAction } from '../model-protocol.js';

export type FileAction = Extract<ModelAction, { tool: 'files' }>;

/** What the files tool found for one workspace-relative path (inspectPath): what the permission gate judges a files action by. */
export const PathFacts = z.strictObject({
  /** The path after normalisation, relative to the workspace; null when it was refused. */
  normalized: z.string().nullable(),
  /** Lexically inside the workspace after normalisation (no `..`, not absolute, no NUL or backslash). */
  inside_workspace: z.boolean(),
  /** Resolving symlinks (of the deepest existing ancestor) leaves the workspace, or cannot be shown to stay in it. */
  symlink_escape: z.boolean(),
  exists: z.boolean(),
  /** Size of the regular file there; null when absent, not a regular file, or outside. */
  size_bytes: z.number().int().min(0).nullable(),
});
export type PathFacts = z.infer<typeof PathFacts>;

export type NormalizedPath = { readonly ok: true; readonly normalized: string } | { readonly ok: false; readonly reason: string };

/**
 * The workspace-relative form of a path as the model wrote it, or why it is refused: the one
 * workspace path rule (schema/workspace-path.ts), its clause named in the reason. Pure.
 */
export function normalizeWorkspacePath(raw: string): NormalizedPath {
  const checked = checkWorkspacePath(raw);
  return checked.ok ? { ok: true, normalized: checked.normalized } : { ok: false, reason: `${checked.reason} (workspace path rule, ${checked.clause})` };
}

/**
 * The tool's own ceilings, whatever the run's limits (the permission gate applies those): a
 * read returns at most what ToolSucceeded.content can hold; a write or modify never produces
 * more than maxWriteBytes; a file is hashed only up to maxHashedBytes.
 */
export const FILE_TOOL_LIMITS = {
  maxReadBytes: MAX_READ_CONTENT_CHARS,
  maxWriteBytes: 1024 * 1024,
  maxHashedBytes: 16 * 1024 * 1024,
  maxListedEntries: 1_000,
  maxListDepth: 16,
} as const;

export interface FileLimits {
  readonly maxReadBytes: number;
  readonly maxWriteBytes: number;
}

/** Suffix of the tool's temp files; a crash can leave one behind, and the listing hides them. */
export const TEMP_SUFFIX = '.ds-tmp';
// The temp name of the longest name the workspace path rule allows still fits NAME_MAX.
if (WORKSPACE_PATH_RULE.maxSegmentBytes + Buffer.byteLength(`.${TEMP_SUFFIX}`) > NAME_MAX_BYTES) throw new Error('bug: the files tool\'s temp name of a rule-abiding name exceeds NAME_MAX');
const READ_CHUNK_BYTES = 64 * 1024;

export const FILE_FAILURE_CODES = ['path_refused', 'symlink_escape', 'not_found', 'not_a_file', 'too_large', 'not_utf8', 'find_absent', 'target_exists', 'io_error'] as const;
export type FileFailureCode = (typeof FILE_FAILURE_CODES)[number];

/** A problem of the setup (no workspace folder), not of an operation: thrown, never recorded as a tool outcome. */
export class FileToolError extends InternalError {
  override readonly name = 'FileToolError';
}

/** An operation that could not be done; nothing was changed by it. Returned, not thrown. */
class FileFailure extends CodedInternalError<FileFailureCode> {
  override readonly name = 'FileFailure';
}

export type FileActionResult =
  | { readonly ok: true; readonly pre_hash: HashString | null; readonly post_hash: HashString | null; readonly content: string | null }
  | { readonly ok: false; readonly code: FileFailureCode; readonly error: string; readonly observed_hash: HashString | null };

export interface PlannedHashes {
  readonly pre_hash: HashString | null;
  readonly intended_post_hash: HashString | null;
}

/** The fields of an open intent (projector/subject-state.ts OpenIntent) reconciliation needs. */
export interface IntentToReconcile {
  readonly op: FileIntentOp;
  readonly path: string;
  readonly to_path: string | null;
  readonly pre_hash: HashString | null;
  readonly intended_post_hash: HashString | null;
}

export type ReconcileOutcome = 'happened' | 'did_not_happen' | 'unknown';

export interface Reconciliation {
  readonly outcome: ReconcileOutcome;
  /** The hash found where the operation's result belongs (to_path for a completed move); null when absent or not observable. */
  readonly observed_hash: HashString | null;
  readonly detail: string;
}

// ---------------------------------------------------------------------------------------
// Resolving paths

interface Resolved {
  readonly facts: PathFacts;
  /** The real path to operate on; null when the path is refused or escapes. */
  readonly real: string | null;
}

function workspaceRealpath(root: string): string {
  try {
    return realpathSync(root);
  } catch (error) {
    throw new FileToolError(`workspace ${root} cannot be resolved: ${(error as Error).message}`);
  }
}

function lstatOrNull(file: string): Stats | null {
  return lstatSync(file, { throwIfNoEntry: false }) ?? null;
}

function within(rootReal: string, candidate: string): boolean {
  return candidate === rootReal || candidate.startsWith(`${rootReal}${path.sep}`);
}

const REFUSED: PathFacts = { normalized: null, inside_workspace: false, symlink_escape: false, exists: false, size_bytes: null };

/**
 * Normalises `relPath`, then resolves symlinks through the realpath of its deepest existing
 * ancestor (the path itself when it exists) and checks the result stays under
 * realpath(root). A dangling symlink on the way cannot be shown to stay inside and counts
 * as an escape. Nothing outside the workspace is stat'ed for the facts.
 */
function resolvePath(root: string, relPath: string): Resolved {
  const normalized = normalizeWorkspacePath(relPath);
  if (!normalized.ok) return { facts: REFUSED, real: null };
  const rootReal = workspaceRealpath(root);
  const segments = normalized.normalized.split('/');
  const escaped: Resolved = { facts: { normalized: normalized.normalized, inside_workspace: true, symlink_escape: true, exists: false, size_bytes: null }, real: null };
  // Bounded by the number of segments: walk up until something exists (the root always does).
  let existing = segments.length;
  while (existing > 0 && lstatOrNull(path.join(rootReal, ...segments.slice(0, existing))) === null) existing -= 1;
  let ancestorReal: string;
  try {
    ancestorReal = realpathSync(path.join(rootReal, ...segments.slice(0, existing)));
  } catch {
    return escaped;
  }
  if (!within(rootReal, ancestorReal)) return escaped;
  const real = path.join(ancestorReal, ...segments.slice(existing));
  const stats = existing === segments.length ? lstatOrNull(real) : null;
  return {
    facts: { normalized: normalized.normalized, inside_workspace: true, symlink_escape: false, exists: stats !== null, size_bytes: stats?.isFile() ? stats.size : null },
    real,
  };
}

/** The path facts the permission gate judges (runtime/tools/files.ts gateRules). */
export function inspectPath(root: string, relPath: string): PathFacts {
  return resolvePath(root, relPath).facts;
}

function resolveOrFail(root: string, relPath: string): string {
  const resolved = resolvePath(root, relPath);
  if (resolved.facts.normalized === null) throw new FileFailure('path_refused', `path ${JSON.stringify(relPath.slice(0, 60))} is refused`);
  if (resolved.real === null) throw new FileFailure('symlink_escape', `path ${JSON.stringify(resolved.facts.normalized.slice(0, 60))} leads outside the workspace`);
  return resolved.real;
}

// ---------------------------------------------------------------------------------------
// Reading and hashing

/** Reads a regular file, at most `maxBytes`: more is a too_large failure (nothing is cut). */
function readBounded(real: string, maxBytes: number): Buffer {
  let fd: number;
  try {
    // real is fully resolved; O_NOFOLLOW refuses a symlink swapped in since.
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new FileFailure('not_found', 'no file at that path');
    if (code === 'ELOOP') throw new FileFailure('symlink_escape', 'the path became a symlink');
    throw new FileFailure('io_error', `cannot open: ${code ?? 'error'}`);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new FileFailure('not_a_file', 'not a regular file');
    if (stats.size > maxBytes) throw new FileFailure('too_large', `${stats.size} bytes; at most ${maxBytes}`);
    // One byte more than allowed tells a file that grew since fstat. The buffer starts at the
    // size fstat saw (+1, to see growth) and doubles up to that bound when the file grew: a
    // buffer of the bound itself (16 MiB zero-filled) per listed file made every wake's
    // workspace listing cost milliseconds per file.
    const bound = maxBytes + 1;
    let buffer = Buffer.alloc(Math.min(bound, stats.size + 1));
    let filled = 0;
    // Bounded: each pass reads at least one byte or ends the loop.
    for (let pass = 0; pass <= bound; pass += 1) {
      const read = readSync(fd, buffer, filled, Math.min(READ_CHUNK_BYTES, buffer.length - filled), filled);
      if (read === 0) break;
      filled += read;
      if (filled < buffer.length) continue;
      if (buffer.length === bound) break;
      const grown = Buffer.alloc(Math.min(bound, buffer.length * 2));
      buffer.copy(grown, 0, 0, filled);
      buffer = grown;
    }
    if (filled > maxBytes) throw new FileFailure('too_large', `more than ${maxBytes} bytes`);
    return buffer.subarray(0, filled);
  } finally {
    closeSync(fd);
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Text that re-encodes to exactly these bytes, so hashText(text) is the file's hash. */
function decodeUtf8(bytes: Buffer): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new FileFailure('not_utf8', 'the file is not UTF-8 text');
  }
}

type Observed = { readonly kind: 'absent' } | { readonly kind: 'file'; readonly hash: HashString } | { readonly kind: 'other'; readonly what: string };

/** What is at a resolved path now, for intents and reconciliation. */
function observe(real: string): Observed {
  const stats = lstatOrNull(real);
  if (stats === null) return { kind: 'absent' };
  if (!stats.isFile()) return { kind: 'other', what: stats.isSymbolicLink() ? 'a symlink' : 'not a regular file' };
  try {
    return { kind: 'file', hash: hashText(readBounded(real, FILE_TOOL_LIMITS.maxHashedBytes)) };
  } catch (error) {
    if (error instanceof FileFailure) return { kind: 'other', what: error.message };
    throw error;
  }
}

function hashOf(observed: Observed): HashString | null {
  return observed.kind === 'file' ? observed.hash : null;
}

/**
 * Observes a workspace-relative path (through a symlink to a file inside, that file); a
 * refused or escaping path is 'other': the tool never acts there.
 */
function observePath(root: string, relPath: string): { observed: Observed; real: string | null } {
  const resolved = resolvePath(root, relPath);
  if (resolved.real === null) return { observed: { kind: 'other', what: 'refused or outside the workspace' }, real: null };
  return { observed: observe(resolved.real), real: resolved.real };
}

// ---------------------------------------------------------------------------------------
// Writing

/**
 * Makes the target's folder if missing (inside the workspace), then writes a temp file next
 * to the target, fsyncs it, renames it over the target and fsyncs the folder. A stale temp
 * file of an earlier crash is replaced; the temp file is exclusive and never followed.
 */
function writeAtomically(root: string, real: string, bytes: Buffer): void {
  const folder = path.dirname(real);
  mkdirSync(folder, { recursive: true, mode: 0o755 });
  // The folder was made under a checked ancestor; check again that it still resolves inside.
  if (!within(workspaceRealpath(root), realpathSync(folder))) throw new FileFailure('symlink_escape', 'the folder leads outside the workspace');
  const temp = path.join(folder, `.${path.basename(real)}${TEMP_SUFFIX}`);
  if (lstatOrNull(temp) !== null) unlinkSync(temp);
  try {
    replaceFileDurably(real, bytes, { temp, mode: 0o644, exclusive: true });
  } catch (error) {
    if (!(error instanceof FileReplaceError)) throw error;
    // A full disk (ENOSPC) leaves part of the bytes in the temp file: removed by
    // replaceFileDurably, so the failure leaves the workspace as it was.
    if (error.errno === 'ENOSPC' || error.errno === 'EDQUOT') throw new FileFailure('io_error', `no space left on the disk (${error.errno}): nothing was written (the partial temp file was removed)`);
    if (error.step === 'write') throw error.cause;
    throw new FileFailure(error.errno === 'EISDIR' || error.errno === 'ENOTDIR' ? 'not_a_file' : 'io_error', `cannot replace the file: ${error.errno ?? 'error'}`);
  }
}

function requireRegularOrAbsent(observed: Observed): void {
  if (observed.kind === 'other') throw new FileFailure('not_a_file', `the path holds ${observed.what}`);
}

/** Replaces the first occurrence of `find` (literally: no `$` patterns), or fails with nothing written. */
function modified(text: string, find: string, replace: string): string {
  const at = text.indexOf(find);
  if (at < 0) throw new FileFailure('find_absent', 'the text to replace does not occur in the file');
  return text.slice(0, at) + replace + text.slice(at + find.length);
}

function execute(root: string, action: FileAction, limits: FileLimits): FileActionResult {
  switch (action.op) {
    case 'read': {
      const real = resolveOrFail(root, action.path);
      // readBounded refuses what is absent or not a regular file.
      const bytes = readBounded(real, Math.min(limits.maxReadBytes, FILE_TOOL_LIMITS.maxReadBytes));
      const hash = hashText(bytes);
      return { ok: true, pre_hash: hash, post_hash: hash, content: decodeUtf8(bytes) };
    }
    case 'write': {
      const real = resolveOrFail(root, action.path);
      const observed = observe(real);
      requireRegularOrAbsent(observed);
      const bytes = Buffer.from(action.content, 'utf8');
      if (bytes.length > Math.min(limits.maxWriteBytes, FILE_TOOL_LIMITS.maxWriteBytes)) throw new FileFailure('too_large', `${bytes.length} bytes to write`);
      writeAtomically(root, real, bytes);
      return { ok: true, pre_hash: hashOf(observed), post_hash: hashText(bytes), content: null };
    }
    case 'modify': {
      const real = resolveOrFail(root, action.path);
      const maxWrite = Math.min(limits.maxWriteBytes, FILE_TOOL_LIMITS.maxWriteBytes);
      // The result is at most maxWrite only if the file is at most maxWrite + |find|.
      const before = readBounded(real, Math.min(FILE_TOOL_LIMITS.maxHashedBytes, maxWrite + Buffer.byteLength(action.find, 'utf8')));
      const bytes = Buffer.from(modified(decodeUtf8(before), action.find, action.replace), 'utf8');
      if (bytes.length > maxWrite) throw new FileFailure('too_large', `the result has ${bytes.length} bytes`);
      writeAtomically(root, real, bytes);
      return { ok: true, pre_hash: hashText(before), post_hash: hashText(bytes), content: null };
    }
    case 'move':
      return move(root, action);
    default: {
      const unhandled: never = action;
      throw new FileFailure('path_refused', `no such file operation ${JSON.stringify(unhandled)}`);
    }
  }
}

/** Renames a regular file within the workspace; refuses to replace anything at to_path. */
function move(root: string, action: Extract<FileAction, { op: 'move' }>): FileActionResult {
  const from = resolveOrFail(root, action.path);
  const to = resolveOrFail(root, action.to_path);
  // The name itself, not what it resolves to: a link is not moved (that would move the file it
  // names, or leave it dangling). resolveOrFail already refused a name that leads outside.
  const name = normalizeWorkspacePath(action.path);
  if (!name.ok) throw new FileFailure('path_refused', name.reason);
  const source = lstatOrNull(path.join(workspaceRealpath(root), name.normalized));
  if (source === null) throw new FileFailure('not_found', 'no file to move');
  if (!source.isFile()) throw new FileFailure('not_a_file', 'only a regular file moves');
  const hash = hashOf(observe(from));
  if (from === to) return { ok: true, pre_hash: hash, post_hash: hash, content: null };
  // rename(2) would replace the target silently. Only this tool and the controller's planned
  // external changes touch the workspace, so check-then-rename is the narrow window accepted
  // here, in exchange for a rename that is atomic under a crash.
  if (lstatOrNull(to) !== null) throw new FileFailure('target_exists', 'to_path exists: a move never overwrites');
  const folder = path.dirname(to);
  mkdirSync(folder, { recursive: true, mode: 0o755 });
  if (!within(workspaceRealpath(root), realpathSync(folder))) throw new FileFailure('symlink_escape', 'the target folder leads outside the workspace');
  try {
    renameSync(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new FileFailure('io_error', `cannot move: ${code ?? 'error'}${code === 'EXDEV' ? ' (another filesystem)' : ''}`);
  }
  fsyncFolder(folder);
  if (path.dirname(from) !== folder) fsyncFolder(path.dirname(from));
  return { ok: true, pre_hash: hash, post_hash: hash, content: null };
}

/** An errno error of the file system (full disk, permissions, a folder where a file should be) is the operation's failure; anything else is a bug and is thrown. */
function asIoFailure(error: unknown): FileFailure | null {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return error instanceof Error && typeof code === 'string' && /^E[A-Z]+$/.test(code) ? new FileFailure('io_error', `file system error ${code}`) : null;
}

/**
 * Executes an allowed file action. Failures (refused or escaping path, missing file, `find`
 * absent, target taken, too large, not UTF-8 for a read) are returned with the hash the path
 * holds, and leave the workspace as it was. `content` is the text read, for reads only.
 */
export function executeFileAction(root: string, action: FileAction, limits: FileLimits = FILE_TOOL_LIMITS): FileActionResult {
  try {
    return execute(root, action, limits);
  } catch (error) {
    const failure = error instanceof FileFailure ? error : asIoFailure(error);
    if (failure === null) throw error;
    return { ok: false, code: failure.code, error: failure.message.slice(0, 200), observed_hash: hashOf(observePath(root, action.path).observed) };
  }
}

/**
 * The hashes an ExecutionIntentRecorded records, computed before anything is executed:
 * pre_hash is what the path holds now (null when absent); intended_post_hash what it will
 * hold after (for a move: the same bytes, at to_path). A read changes nothing (intended =
 * pre); so does a modify whose `find` does not occur (the execution then fails); a path the
 * tool refuses gets nulls (the execution fails too).
 */
export function plannedHashes(root: string, action: FileAction): PlannedHashes {
  const { observed, real } = observePath(root, action.path);
  const pre = hashOf(observed);
  switch (action.op) {
    case 'read':
    case 'move':
      return { pre_hash: pre, intended_post_hash: pre };
    case 'write':
      return { pre_hash: pre, intended_post_hash: hashText(Buffer.from(action.content, 'utf8')) };
    case 'modify': {
      if (pre === null || real === null) return { pre_hash: pre, intended_post_hash: pre };
      try {
        return { pre_hash: pre, intended_post_hash: hashText(Buffer.from(modified(decodeUtf8(readBounded(real, FILE_TOOL_LIMITS.maxHashedBytes)), action.find, action.replace), 'utf8')) };
      } catch (error) {
        if (error instanceof FileFailure) return { pre_hash: pre, intended_post_hash: pre };
        throw error;
      }
    }
    default: {
      const unhandled: never = action;
      throw new FileToolError(`no such file operation ${JSON.stringify(unhandled)}`);
    }
  }
}

function describe(observed: Observed): string {
  return observed.kind === 'absent' ? 'absent' : observed.kind === 'file' ? observed.hash.slice(0, 19) : observed.what;
}

/**
 * What became of an open intent, from the file as it is now (DESIGN §7): the intended post
 * hash present → happened; the pre hash present → did not happen; anything else → unknown
 * (a third content, something that is not a regular file, a path that cannot be observed).
 * For a move both paths count: the bytes at to_path and nothing left at path, or the
 * reverse. A read changes nothing and its content was not recorded, so it is always
 * did_not_happen: nothing can be unexplained, and nothing read may be used as evidence.
 */
export function reconcileIntent(root: string, intent: IntentToReconcile): Reconciliation {
  const { observed: here, real: hereReal } = observePath(root, intent.path);
  if (intent.op === 'read') return { outcome: 'did_not_happen', observed_hash: hashOf(here), detail: 'a read changes nothing; its content was not recorded' };
  if (intent.op === 'move') {
    if (intent.to_path === null) return { outcome: 'unknown', observed_hash: hashOf(here), detail: 'a move intent without to_path' };
    const { observed: there, real: thereReal } = observePath(root, intent.to_path);
    const detail = `path ${describe(here)}, to_path ${describe(there)}`;
    // A move onto the path itself changes nothing (the tool executes it as a no-op).
    if (hereReal !== null && hereReal === thereReal) {
      return hashOf(here) === intent.intended_post_hash && here.kind !== 'other' ? { outcome: 'happened', observed_hash: hashOf(here), detail } : { outcome: 'unknown', observed_hash: hashOf(here), detail };
    }
    if (here.kind === 'absent' && there.kind === 'file' && there.hash === intent.intended_post_hash) return { outcome: 'happened', observed_hash: there.hash, detail };
    if (there.kind === 'absent' && here.kind !== 'other' && hashOf(here) === intent.pre_hash) return { outcome: 'did_not_happen', observed_hash: hashOf(here), detail };
    return { outcome: 'unknown', observed_hash: hashOf(there) ?? hashOf(here), detail };
  }
  const observed = hashOf(here);
  const detail = `path ${describe(here)}`;
  if (here.kind === 'other') return { outcome: 'unknown', observed_hash: null, detail };
  // The post hash is checked first (DESIGN §7): when pre and post agree, nothing tells them apart and nothing differs.
  if (observed === intent.intended_post_hash) return { outcome: 'happened', observed_hash: observed, detail };
  if (observed === intent.pre_hash) return { outcome: 'did_not_happen', observed_hash: observed, detail };
  return { outcome: 'unknown', observed_hash: observed, detail: `${detail}: neither the pre nor the intended post hash` };
}

export interface WorkspaceEntry {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: HashString;
}

/**
 * The regular files of the workspace for the context bundle, sorted by path: symlinks are not
 * followed (a link out cannot be listed through), temp files are hidden, at most
 * maxListedEntries entries and maxListDepth folders deep.
 */
export function listWorkspace(root: string): WorkspaceEntry[] {
  return listWorkspaceCounted(root).entries;
}

/** What a listing leaves out, by reason: never silently (the context bundle states it). */
export interface WorkspaceListing {
  readonly entries: WorkspaceEntry[];
  readonly omitted: { readonly too_deep: number; readonly too_large: number; readonly over_count: number };
}

/** listWorkspace, with counts of what the limits left out (folders too deep count once each). */
export function listWorkspaceCounted(root: string): WorkspaceListing {
  const rootReal = workspaceRealpath(root);
  const entries: WorkspaceEntry[] = [];
  const omitted = { too_deep: 0, too_large: 0, over_count: 0 };
  const walk = (folder: string, relative: string, depth: number): void => {
    if (depth > FILE_TOOL_LIMITS.maxListDepth) {
      omitted.too_deep += 1;
      return;
    }
    const names = readdirSync(folder).sort();
    for (const name of names) {
      if (entries.length >= FILE_TOOL_LIMITS.maxListedEntries) {
        omitted.over_count += 1;
        continue;
      }
      if (name.endsWith(TEMP_SUFFIX)) continue;
      const full = path.join(folder, name);
      const rel = relative === '' ? name : `${relative}/${name}`;
      const stats = lstatOrNull(full);
      if (stats === null) continue;
      if (stats.isDirectory()) walk(full, rel, depth + 1);
      else if (stats.isFile() && stats.size > FILE_TOOL_LIMITS.maxHashedBytes) omitted.too_large += 1;
      else if (stats.isFile()) {
        const observed = observe(full);
        if (observed.kind === 'file') entries.push({ path: rel, bytes: stats.size, sha256: observed.hash });
      }
    }
  };
  walk(rootReal, '', 0);
  return { entries: entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)), omitted };
}
