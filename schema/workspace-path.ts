// The one rule for a path in a subject's workspace (issue 32 item 5; docs/format.md "Workspace
// paths"): what the protocol lets a model write (its length), what the permission gate allows
// (every clause, a denial naming the clause), what the files tool touches, what the scenario may
// start with, and what the oracle's workspace check walks. Whatever this rule allows, verify,
// audit and the oracle can read and score: the verifier never walks a run's workspace for run
// files (writer/run-files-walk.ts), and the oracle's walk goes as deep as the rule. Pure.
//
// A path is relative to the workspace, '/'-separated, normalised lexically ('./a' and 'a//b' are
// 'a' and 'a/b'). Refused outright, never resolved: empty, absolute, any '..' segment (even one
// that would stay inside), a folder (trailing '/'), the workspace itself.
import path from 'node:path';
import { z } from 'zod';

export const WORKSPACE_PATH_RULE = {
  /** Characters (UTF-16 code units, as the protocol's JSON Schema counts them) of the whole path. */
  maxChars: 120,
  /** Segments: folders plus the file name ('notes/2026/03/02/day.md' is 5). */
  maxSegments: 8,
  /**
   * UTF-8 bytes of one segment: Linux's NAME_MAX (255) less the 8 bytes the files tool's temp
   * name adds around it ('.' + name + '.ds-tmp', runtime/tools/workspace-files.ts asserts it fits), so every
   * allowed name can be written atomically.
   */
  maxSegmentBytes: 247,
} as const;

/**
 * The widest path an event or an answer of the frozen /1 protocol may carry, in characters. Wider
 * than the rule on purpose: these are recorded formats (catalogue 1.0.0, protocol /1), and a path
 * the rule refuses must still be recordable so its denial can name the clause. Changing it changes
 * recorded formats and the /1 JSON Schema.
 */
export const RECORDED_PATH_MAX_CHARS = 512;

/** A workspace path as recorded (events, the /1 protocol, an intervention plan); the rule judges it elsewhere. */
export const RecordedWorkspacePath = z.string().min(1).max(RECORDED_PATH_MAX_CHARS);

/** The longest file name Linux takes (NAME_MAX), in bytes. */
export const NAME_MAX_BYTES = 255;

/** Which clause of the rule a refused path breaks. */
export const WORKSPACE_PATH_CLAUSES = ['length', 'depth', 'characters', 'form'] as const;
export type WorkspacePathClause = (typeof WORKSPACE_PATH_CLAUSES)[number];

export type WorkspacePathCheck =
  | { readonly ok: true; readonly normalized: string; readonly segments: number }
  | { readonly ok: false; readonly clause: WorkspacePathClause; readonly reason: string };

/** C0 controls, DEL and C1 controls: never in a name (a NUL cuts it; the others reach a reviewer's page unseen). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

const refuse = (clause: WorkspacePathClause, reason: string): WorkspacePathCheck => ({ ok: false, clause, reason });

function charactersProblem(raw: string): string | null {
  if (raw.includes('\u0000')) return 'NUL byte in path';
  if (CONTROL.test(raw)) return 'control character in path';
  if (raw.includes('\\')) return 'backslash in path';
  // A lone surrogate has no UTF-8 form: the file made would carry another name than the one recorded.
  if (!raw.isWellFormed()) return 'unpaired surrogate in path (not valid Unicode)';
  return null;
}

/** The normalised form, or why the path's form is refused. */
function formOf(raw: string): { normalized: string } | { problem: string } {
  if (raw.startsWith('/')) return { problem: 'absolute path' };
  if (raw.split('/').includes('..')) return { problem: "'..' segment in path" };
  const normalized = path.posix.normalize(raw);
  if (normalized === '.' || normalized === './') return { problem: 'names the workspace folder itself' };
  if (normalized.endsWith('/')) return { problem: 'names a folder (ends in /)' };
  return { normalized };
}

/** The rule applied to a path as the subject wrote it: its normalised form, or the clause it breaks and why. */
export function checkWorkspacePath(raw: string): WorkspacePathCheck {
  const R = WORKSPACE_PATH_RULE;
  if (raw.length === 0) return refuse('form', 'empty path');
  if (raw.length > R.maxChars) return refuse('length', `path longer than ${R.maxChars} characters (${raw.length})`);
  const characters = charactersProblem(raw);
  if (characters !== null) return refuse('characters', characters);
  const form = formOf(raw);
  if ('problem' in form) return refuse('form', form.problem);
  const segments = form.normalized.split('/');
  if (segments.length > R.maxSegments) return refuse('depth', `${segments.length} segments, over the rule's ${R.maxSegments} (folders and the file name)`);
  const long = segments.find((s) => Buffer.byteLength(s, 'utf8') > R.maxSegmentBytes);
  if (long !== undefined) return refuse('length', `a segment of ${Buffer.byteLength(long, 'utf8')} UTF-8 bytes, over the rule's ${R.maxSegmentBytes}`);
  return { ok: true, normalized: form.normalized, segments: segments.length };
}

/** The rule in one line, for a denial's detail and the docs. */
export function describeWorkspacePathRule(): string {
  const R = WORKSPACE_PATH_RULE;
  return `at most ${R.maxChars} characters, ${R.maxSegments} segments and ${R.maxSegmentBytes} UTF-8 bytes a segment; no control character, backslash or unpaired surrogate; relative, no '..' segment, not a folder`;
}
