// The permission gate and the workspace file tool (issue 5 items 5–6, DESIGN §6.6, §7, spec
// §14) on real files in temporary folders: traversal, absolute paths, symlinks out of the
// workspace (files and folders), size limits, modify without its text, moves onto taken
// names, atomic writes, reconciliation in its three outcomes, repeated denials, RECOVERING
// and an exhausted budget; every decision lists every rule it checked. Forged inputs
// (facts that lie, a fingerprint that is not the action's, an unknown tool) are denied or
// refused, never trusted.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { subjectProjection } from '../../projector/subject-projection.js';
import type { LifecycleState } from '../../projector/lifecycle.js';
import { eventDefinition } from '../../schema/event-catalog.js';
import { hashText } from '../../schema/hash.js';
import { executeFileAction, FILE_TOOL_LIMITS, inspectPath, listWorkspace, listWorkspaceCounted, normalizeWorkspacePath, plannedHashes, reconcileIntent, type FileAction, type IntentToReconcile, type PathFacts } from '../../runtime/tools/workspace-files.js';
import type { ModelAction } from '../../runtime/model-protocol.js';
import { GATE_RULES, PermissionInputError, type PermissionInput } from '../../runtime/gate-rule.js';
import { actionArgs, decidePermission, fingerprintOfAction, type PermissionDecision } from '../../runtime/permission-gate.js';
import { BUDGET, d, draft, SubjectStream } from '../support/subject-events.js';
import { WORKSPACE_PATH_RULE } from '../../schema/workspace-path.js';

const LIMITS = { maxWriteBytes: 1_000, maxReadBytes: 1_000 };
const WHY = 'because the plan says so';

let base: string;
let root: string;
let outside: string;

beforeEach(() => {
  base = mkdtempSync(path.join(tmpdir(), 'ds-files-gate-'));
  root = path.join(base, 'workspace');
  outside = path.join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'secret.txt'), 'the controller key\n');
  writeFileSync(path.join(root, 'notes.md'), 'Dataset: Thursday.\n');
});

afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

const read = (p: string): FileAction => ({ tool: 'files', op: 'read', path: p, rationale: WHY });
const write = (p: string, content: string): FileAction => ({ tool: 'files', op: 'write', path: p, content, rationale: WHY });
const modify = (p: string, find: string, replace: string): FileAction => ({ tool: 'files', op: 'modify', path: p, find, replace, rationale: WHY });
const move = (p: string, to: string): FileAction => ({ tool: 'files', op: 'move', path: p, to_path: to, rationale: WHY });
const journal: ModelAction = { tool: 'journal', op: 'write', text: 'Noted the date.', rationale: WHY };
const task: ModelAction = { tool: 'task_board', op: 'complete', task_id: 'task-1', title: null, status: null, priority: null, depends_on: ['task-0'], rationale: WHY };

/** The gate's input as the wake loop builds it: facts from the files tool for a files action. */
function inputFor(action: ModelAction, o: Partial<Omit<PermissionInput, 'action'>> = {}): PermissionInput {
  const paths = action.tool === 'files' ? { path: inspectPath(root, action.path), to_path: action.op === 'move' ? inspectPath(root, action.to_path) : null } : null;
  return { action, paths, limits: LIMITS, tool_calls_left: 3, lifecycle: 'AWAKE', denied_fingerprints: new Set(), task_ids: new Set(['task-0', 'task-1']), ...o };
}

function decide(action: ModelAction, o: Partial<Omit<PermissionInput, 'action'>> = {}): PermissionDecision {
  return decidePermission(inputFor(action, o));
}

function rule(decision: PermissionDecision, name: string): { passed: boolean; detail: string } {
  const found = decision.rules.find((r) => r.rule === name);
  if (!found) throw new Error(`rule ${name} not listed: ${JSON.stringify(decision.rules)}`);
  return found;
}

function failed(decision: PermissionDecision): string[] {
  return decision.rules.filter((r) => !r.passed).map((r) => r.rule);
}

/** Every rule a decision of this kind checks, in order (the contract the store records). */
function expectedRules(action: ModelAction): string[] {
  if (action.tool === 'task_board') return ['tool_allowed', 'task_board_consistent', 'budget_left', 'not_recovering'];
  if (action.tool !== 'files') return ['tool_allowed', 'budget_left', 'not_recovering'];
  return ['tool_allowed', 'path_inside_workspace', 'no_symlink_escape', action.op === 'move' ? 'target_free_or_same' : 'size_within_limit', 'budget_left', 'not_recovering'];
}

function fileText(rel: string): string {
  return readFileSync(path.join(root, rel), 'utf8');
}

describe('the workspace listing says what its limits leave out', () => {
  test('a file over the hashing limit and a folder nested too deep are counted, not silently dropped', () => {
    const big = path.join(root, 'big.bin');
    writeFileSync(big, '');
    truncateSync(big, FILE_TOOL_LIMITS.maxHashedBytes + 1); // sparse: no 16 MiB written
    const deep = path.join(root, ...Array.from({ length: FILE_TOOL_LIMITS.maxListDepth + 2 }, (_, i) => `d${i}`));
    mkdirSync(deep, { recursive: true });
    writeFileSync(path.join(deep, 'lost.md'), 'deep\n');
    const listing = listWorkspaceCounted(root);
    expect(listing.entries.map((e) => e.path)).toEqual(['notes.md']);
    expect(listing.omitted).toEqual({ too_deep: 1, too_large: 1, over_count: 0 });
  });
});

describe('paths: normalisation and escapes', () => {
  test("'..' traversal is refused, even when it would stay inside", () => {
    for (const p of ['../outside/secret.txt', 'notes/../../outside/secret.txt', 'a/../notes.md', '..']) {
      expect(inspectPath(root, p)).toEqual({ normalized: null, inside_workspace: false, symlink_escape: false, exists: false, size_bytes: null });
      const decision = decide(read(p));
      expect(decision.decision).toBe('deny');
      expect(rule(decision, 'path_inside_workspace')).toMatchObject({ passed: false, detail: expect.stringContaining("'..' segment") });
      expect(executeFileAction(root, read(p))).toMatchObject({ ok: false, code: 'path_refused' });
    }
  });

  test('absolute paths, NUL, control characters and backslashes are refused', () => {
    const cases: [string, RegExp][] = [
      [path.join(outside, 'secret.txt'), /absolute path/],
      ['/etc/passwd', /absolute path/],
      ['notes.md\u0000.txt', /NUL byte/],
      ['notes\n.md', /control character/],
      ['..\\outside\\secret.txt', /backslash/],
      ['dir/', /names a folder/],
      ['./', /workspace folder itself/],
    ];
    for (const [p, reason] of cases) {
      const decision = decide(write(p, 'x'));
      expect(decision.decision).toBe('deny');
      expect(rule(decision, 'path_inside_workspace').detail).toMatch(reason);
      expect(rule(decision, 'path_inside_workspace').passed).toBe(false);
      // Not resolved, so no escape can be ruled out: fail closed.
      expect(rule(decision, 'no_symlink_escape').passed).toBe(false);
    }
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('the controller key\n');
  });

  test('the workspace path rule at the gate: at each bound allowed and made by the tool; one beyond denied, the denial naming the clause', () => {
    const R = WORKSPACE_PATH_RULE;
    const deepest = Array.from({ length: R.maxSegments }, (_, i) => `d${i}`).join('/');
    const longest = `${'n'.repeat(R.maxChars - 3)}.md`;
    // A segment of exactly maxSegmentBytes UTF-8 bytes: 3-byte characters, ASCII for the rest.
    const widest = `${'\u6587'.repeat(Math.floor(R.maxSegmentBytes / 3))}${'a'.repeat(R.maxSegmentBytes % 3)}`;
    expect(Buffer.byteLength(widest)).toBe(R.maxSegmentBytes);
    for (const p of [deepest, longest, widest, 'caf\u00e9 notes/\u{1F4DD} day.md']) {
      expect(decide(write(p, 'x')).decision, p).toBe('allow');
      expect(executeFileAction(root, write(p, 'x')), p).toMatchObject({ ok: true });
      expect(readFileSync(path.join(root, p), 'utf8')).toBe('x');
    }
    const beyond: [string, string][] = [
      [`${deepest}/x`, 'depth'],
      [`${longest}x`, 'length'],
      [`${widest}a`, 'length'],
      ['notes\u0085.md', 'characters'],
    ];
    for (const [p, clause] of beyond) {
      const decision = decide(write(p, 'x'));
      expect(decision.decision, p).toBe('deny');
      expect(rule(decision, 'path_inside_workspace').detail).toContain(`(workspace path rule, ${clause})`);
      expect(executeFileAction(root, write(p, 'x'))).toMatchObject({ ok: false, code: 'path_refused' });
    }
  });

  test('harmless forms are normalised: ./a, a//b, a/./b', () => {
    expect(normalizeWorkspacePath('./notes.md')).toEqual({ ok: true, normalized: 'notes.md' });
    expect(normalizeWorkspacePath('drafts//a.md')).toEqual({ ok: true, normalized: 'drafts/a.md' });
    expect(normalizeWorkspacePath('drafts/./a.md')).toEqual({ ok: true, normalized: 'drafts/a.md' });
    expect(inspectPath(root, './notes.md')).toEqual({ normalized: 'notes.md', inside_workspace: true, symlink_escape: false, exists: true, size_bytes: 19 });
    expect(decide(read('./notes.md')).decision).toBe('allow');
  });

  test('a symlink inside the workspace pointing outside: denied with no_symlink_escape failed; the tool refuses it too', () => {
    symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'leak.md'));
    const facts = inspectPath(root, 'leak.md');
    expect(facts).toEqual({ normalized: 'leak.md', inside_workspace: true, symlink_escape: true, exists: false, size_bytes: null });
    for (const action of [read('leak.md'), write('leak.md', 'overwrite the key'), modify('leak.md', 'key', 'lock')]) {
      const decision = decide(action);
      expect(decision.decision).toBe('deny');
      expect(rule(decision, 'path_inside_workspace').passed).toBe(true);
      expect(rule(decision, 'no_symlink_escape')).toMatchObject({ passed: false, detail: expect.stringContaining('a symlink leads outside the workspace') });
      // The tool never trusts the gate alone.
      expect(executeFileAction(root, action)).toMatchObject({ ok: false, code: 'symlink_escape' });
    }
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('the controller key\n');
    // The link is not listed: a link out cannot be read through the listing either.
    expect(listWorkspace(root).map((e) => e.path)).toEqual(['notes.md']);
  });

  test('a dangling symlink cannot be shown to stay inside: an escape', () => {
    symlinkSync(path.join(outside, 'not-yet.txt'), path.join(root, 'dangling.md'));
    expect(inspectPath(root, 'dangling.md').symlink_escape).toBe(true);
    expect(failed(decide(write('dangling.md', 'x')))).toEqual(['no_symlink_escape']);
    expect(executeFileAction(root, write('dangling.md', 'x'))).toMatchObject({ ok: false, code: 'symlink_escape' });
    expect(existsSync(path.join(outside, 'not-yet.txt'))).toBe(false);
  });

  test('a symlinked folder pointing outside: nothing under it is allowed, existing or not', () => {
    symlinkSync(outside, path.join(root, 'shared'));
    for (const p of ['shared/secret.txt', 'shared/new.md', 'shared/deeper/new.md']) {
      expect(inspectPath(root, p).symlink_escape).toBe(true);
      const decision = decide(write(p, 'x'));
      expect(failed(decision)).toEqual(['no_symlink_escape']);
      expect(executeFileAction(root, write(p, 'x'))).toMatchObject({ ok: false, code: 'symlink_escape' });
    }
    expect(readdirSync(outside)).toEqual(['secret.txt']);
    // A move into it is refused on to_path.
    const decision = decide(move('notes.md', 'shared/notes.md'));
    expect(rule(decision, 'no_symlink_escape')).toMatchObject({ passed: false, detail: expect.stringContaining('to_path') });
    expect(existsSync(path.join(root, 'notes.md'))).toBe(true);
  });

  test('a symlinked folder pointing inside the workspace is followed', () => {
    mkdirSync(path.join(root, 'real'));
    writeFileSync(path.join(root, 'real', 'a.md'), 'inside\n');
    symlinkSync(path.join(root, 'real'), path.join(root, 'alias'));
    expect(inspectPath(root, 'alias/a.md')).toEqual({ normalized: 'alias/a.md', inside_workspace: true, symlink_escape: false, exists: true, size_bytes: 7 });
    expect(decide(read('alias/a.md')).decision).toBe('allow');
    expect(executeFileAction(root, read('alias/a.md'))).toEqual({ ok: true, pre_hash: hashText('inside\n'), post_hash: hashText('inside\n'), content: 'inside\n' });
    expect(executeFileAction(root, write('alias/b.md', 'new\n'))).toMatchObject({ ok: true });
    expect(fileText('real/b.md')).toBe('new\n');
  });
});

describe('sizes', () => {
  test('an oversized write is denied; one at the limit is allowed (bytes, not characters)', () => {
    expect(rule(decide(write('big.md', 'x'.repeat(1_001))), 'size_within_limit')).toEqual({ rule: 'size_within_limit', passed: false, detail: 'write of 1001 bytes; limit 1000' });
    expect(decide(write('big.md', 'x'.repeat(1_000))).decision).toBe('allow');
    // 334 three-byte characters are 1002 bytes.
    expect(rule(decide(write('big.md', '€'.repeat(334))), 'size_within_limit').passed).toBe(false);
  });

  test('an oversized read is denied by the file size; the content bound caps any larger limit', () => {
    writeFileSync(path.join(root, 'big.md'), 'y'.repeat(1_001));
    expect(rule(decide(read('big.md')), 'size_within_limit')).toEqual({ rule: 'size_within_limit', passed: false, detail: 'read of 1001 bytes; limit 1000' });
    writeFileSync(path.join(root, 'huge.md'), 'z'.repeat(32_769));
    const generous = decide(read('huge.md'), { limits: { maxWriteBytes: 1_000, maxReadBytes: 1_000_000 } });
    expect(rule(generous, 'size_within_limit')).toMatchObject({ passed: false, detail: 'read of 32769 bytes; limit 32768' });
    // The tool bounds its read as well, whatever the gate said.
    expect(executeFileAction(root, read('huge.md'), { maxReadBytes: 1_000_000, maxWriteBytes: 1_000 })).toMatchObject({ ok: false, code: 'too_large' });
    expect(executeFileAction(root, read('big.md'), LIMITS)).toMatchObject({ ok: false, code: 'too_large' });
  });

  test('a read or modify of a missing file is denied: its size is unknown', () => {
    expect(rule(decide(read('absent.md')), 'size_within_limit')).toMatchObject({ passed: false, detail: 'no file to read: its size is unknown' });
    expect(rule(decide(modify('absent.md', 'a', 'b')), 'size_within_limit')).toMatchObject({ passed: false, detail: 'no file to modify: the result size is unknown' });
    expect(executeFileAction(root, read('absent.md'))).toMatchObject({ ok: false, code: 'not_found', observed_hash: null });
  });

  test("a modify is judged by its result's size", () => {
    writeFileSync(path.join(root, 'draft.md'), 'a'.repeat(990));
    expect(rule(decide(modify('draft.md', 'aaaa', 'b'.repeat(14))), 'size_within_limit')).toEqual({ rule: 'size_within_limit', passed: true, detail: 'modify result of 1000 bytes; limit 1000' });
    expect(rule(decide(modify('draft.md', 'aaaa', 'b'.repeat(15))), 'size_within_limit').passed).toBe(false);
  });
});

describe('the file operations', () => {
  test('a write is atomic: no temp file is left, the content and hashes are right, a new folder is made', () => {
    const action = write('drafts/report.md', 'Summary: Thursday.\n');
    expect(plannedHashes(root, action)).toEqual({ pre_hash: null, intended_post_hash: hashText('Summary: Thursday.\n') });
    expect(executeFileAction(root, action)).toEqual({ ok: true, pre_hash: null, post_hash: hashText('Summary: Thursday.\n'), content: null });
    expect(fileText('drafts/report.md')).toBe('Summary: Thursday.\n');
    expect(readdirSync(path.join(root, 'drafts'))).toEqual(['report.md']);

    // Overwriting: the pre hash is the old content's; a stale temp file of a crash is replaced and gone.
    writeFileSync(path.join(root, '.notes.md.ds-tmp'), 'half-written garbage');
    expect(listWorkspace(root).map((e) => e.path)).toEqual(['drafts/report.md', 'notes.md']);
    expect(executeFileAction(root, write('notes.md', 'Dataset: Friday.\n'))).toEqual({ ok: true, pre_hash: hashText('Dataset: Thursday.\n'), post_hash: hashText('Dataset: Friday.\n'), content: null });
    expect(fileText('notes.md')).toBe('Dataset: Friday.\n');
    expect(readdirSync(root).sort()).toEqual(['drafts', 'notes.md']);
  });

  test('a write onto a folder fails and changes nothing', () => {
    mkdirSync(path.join(root, 'folder'));
    expect(executeFileAction(root, write('folder', 'x'))).toMatchObject({ ok: false, code: 'not_a_file' });
    expect(readdirSync(path.join(root, 'folder'))).toEqual([]);
  });

  test('a read returns the text and its hash; a file that is not UTF-8 is a failure, not mangled text', () => {
    const planned = plannedHashes(root, read('notes.md'));
    expect(planned).toEqual({ pre_hash: hashText('Dataset: Thursday.\n'), intended_post_hash: hashText('Dataset: Thursday.\n') });
    expect(executeFileAction(root, read('notes.md'))).toEqual({ ok: true, pre_hash: planned.pre_hash, post_hash: planned.pre_hash, content: 'Dataset: Thursday.\n' });
    // A byte order mark is kept, so the text hashes like the file.
    writeFileSync(path.join(root, 'bom.md'), '\uFEFFhello');
    const bom = executeFileAction(root, read('bom.md'));
    expect(bom).toMatchObject({ ok: true, content: '\uFEFFhello' });
    expect(bom.ok && hashText(bom.content!)).toBe(hashText(readFileSync(path.join(root, 'bom.md'))));
    writeFileSync(path.join(root, 'binary.bin'), Buffer.from([0xff, 0xfe, 0x00, 0x80]));
    expect(executeFileAction(root, read('binary.bin'))).toMatchObject({ ok: false, code: 'not_utf8', observed_hash: hashText(Buffer.from([0xff, 0xfe, 0x00, 0x80])) });
  });

  test('modify replaces the first occurrence literally; a missing `find` is a typed failure and nothing is written', () => {
    writeFileSync(path.join(root, 'plan.md'), 'step one; step two; step one\n');
    const action = modify('plan.md', 'step one', 'step $& 1');
    const planned = plannedHashes(root, action);
    expect(planned).toEqual({ pre_hash: hashText('step one; step two; step one\n'), intended_post_hash: hashText('step $& 1; step two; step one\n') });
    expect(executeFileAction(root, action)).toEqual({ ok: true, pre_hash: planned.pre_hash, post_hash: planned.intended_post_hash, content: null });
    expect(fileText('plan.md')).toBe('step $& 1; step two; step one\n');

    const missing = modify('plan.md', 'step three', 'step 3');
    const before = hashText(readFileSync(path.join(root, 'plan.md')));
    // Nothing will change: the intent says so.
    expect(plannedHashes(root, missing)).toEqual({ pre_hash: before, intended_post_hash: before });
    expect(executeFileAction(root, missing)).toEqual({ ok: false, code: 'find_absent', error: 'the text to replace does not occur in the file', observed_hash: before });
    expect(hashText(readFileSync(path.join(root, 'plan.md')))).toBe(before);
    expect(readdirSync(root).sort()).toEqual(['notes.md', 'plan.md']);
  });

  test('a move onto an existing file is denied by the gate and refused by the tool; both files stay', () => {
    writeFileSync(path.join(root, 'other.md'), 'other\n');
    const action = move('notes.md', 'other.md');
    const decision = decide(action);
    expect(decision.decision).toBe('deny');
    expect(rule(decision, 'target_free_or_same')).toEqual({ rule: 'target_free_or_same', passed: false, detail: 'to_path "other.md" exists: a move never overwrites' });
    expect(executeFileAction(root, action)).toMatchObject({ ok: false, code: 'target_exists' });
    expect(fileText('notes.md')).toBe('Dataset: Thursday.\n');
    expect(fileText('other.md')).toBe('other\n');
  });

  test('a move to a free name (in a new folder) renames; onto itself changes nothing; a link is not moved', () => {
    const hash = hashText('Dataset: Thursday.\n');
    expect(decide(move('notes.md', 'archive/notes.md')).decision).toBe('allow');
    expect(plannedHashes(root, move('notes.md', 'archive/notes.md'))).toEqual({ pre_hash: hash, intended_post_hash: hash });
    expect(executeFileAction(root, move('notes.md', 'archive/notes.md'))).toEqual({ ok: true, pre_hash: hash, post_hash: hash, content: null });
    expect(existsSync(path.join(root, 'notes.md'))).toBe(false);
    expect(fileText('archive/notes.md')).toBe('Dataset: Thursday.\n');

    const same = decide(move('archive/notes.md', './archive/notes.md'));
    expect(rule(same, 'target_free_or_same')).toMatchObject({ passed: true, detail: 'to_path is the path itself: nothing moves' });
    expect(executeFileAction(root, move('archive/notes.md', './archive/notes.md'))).toEqual({ ok: true, pre_hash: hash, post_hash: hash, content: null });

    symlinkSync(path.join(root, 'archive', 'notes.md'), path.join(root, 'link.md'));
    expect(executeFileAction(root, move('link.md', 'moved.md'))).toMatchObject({ ok: false, code: 'not_a_file' });
    expect(fileText('archive/notes.md')).toBe('Dataset: Thursday.\n');
  });
});

describe('reconciliation (DESIGN §7)', () => {
  function intentFor(action: FileAction): IntentToReconcile {
    const planned = plannedHashes(root, action);
    return { op: action.op, path: action.path, to_path: action.op === 'move' ? action.to_path : null, ...planned };
  }

  test('a write: post hash present → happened; pre hash present → did not happen; a third content → unknown', () => {
    const action = write('notes.md', 'Dataset: Friday.\n');
    const intent = intentFor(action);
    // Crash before executing.
    expect(reconcileIntent(root, intent)).toMatchObject({ outcome: 'did_not_happen', observed_hash: hashText('Dataset: Thursday.\n') });
    executeFileAction(root, action);
    expect(reconcileIntent(root, intent)).toMatchObject({ outcome: 'happened', observed_hash: hashText('Dataset: Friday.\n') });
    // Forged: the file now holds neither.
    writeFileSync(path.join(root, 'notes.md'), 'Dataset: never.\n');
    const unknown = reconcileIntent(root, intent);
    expect(unknown).toMatchObject({ outcome: 'unknown', observed_hash: hashText('Dataset: never.\n') });
    expect(unknown.detail).toMatch(/neither the pre nor the intended post hash/);
    // A folder where the file was is unknown too.
    rmSync(path.join(root, 'notes.md'));
    mkdirSync(path.join(root, 'notes.md'));
    expect(reconcileIntent(root, intent)).toMatchObject({ outcome: 'unknown', observed_hash: null });
  });

  test('a write of a new file: absent → did not happen', () => {
    const intent = intentFor(write('fresh.md', 'new\n'));
    expect(intent.pre_hash).toBeNull();
    expect(reconcileIntent(root, intent)).toMatchObject({ outcome: 'did_not_happen', observed_hash: null });
  });

  test('a move is judged on both paths', () => {
    const action = move('notes.md', 'archive/notes.md');
    const intent = intentFor(action);
    expect(reconcileIntent(root, intent).outcome).toBe('did_not_happen');
    executeFileAction(root, action);
    expect(reconcileIntent(root, intent)).toMatchObject({ outcome: 'happened', observed_hash: hashText('Dataset: Thursday.\n') });
    // Forged: the bytes are in both places (a copy, not a move).
    writeFileSync(path.join(root, 'notes.md'), 'Dataset: Thursday.\n');
    expect(reconcileIntent(root, intent).outcome).toBe('unknown');
    // Forged: gone from both.
    rmSync(path.join(root, 'notes.md'));
    rmSync(path.join(root, 'archive', 'notes.md'));
    expect(reconcileIntent(root, intent).outcome).toBe('unknown');
  });

  test('a read changed nothing and its content was lost: did not happen, whatever the file holds', () => {
    const intent = intentFor(read('notes.md'));
    expect(reconcileIntent(root, intent).outcome).toBe('did_not_happen');
    writeFileSync(path.join(root, 'notes.md'), 'changed by the world\n');
    expect(reconcileIntent(root, intent)).toMatchObject({ outcome: 'did_not_happen', observed_hash: hashText('changed by the world\n') });
  });

  test('an intent whose path leads outside cannot be observed: unknown', () => {
    symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'leak.md'));
    expect(reconcileIntent(root, { op: 'write', path: 'leak.md', to_path: null, pre_hash: null, intended_post_hash: hashText('x') }).outcome).toBe('unknown');
  });
});

describe('the permission gate', () => {
  test('every decision lists every rule it checked, in order, passed or not, within the PermissionDecided schema', () => {
    const schema = eventDefinition('ActionEvent.PermissionDecided')!.payload;
    const actions: ModelAction[] = [read('notes.md'), write('a.md', 'x'), modify('notes.md', 'Thursday', 'Friday'), move('notes.md', 'b.md'), journal, task, read('../x'), move('/abs', '../y')];
    for (const action of actions) {
      for (const lifecycle of ['AWAKE', 'RECOVERING'] as const) {
        for (const left of [0, 2]) {
          const decision = decide(action, { lifecycle, tool_calls_left: left });
          expect(decision.rules.map((r) => r.rule)).toEqual(expectedRules(action));
          expect(decision.rules.length).toBeLessThanOrEqual(32);
          for (const r of decision.rules) expect(GATE_RULES).toContain(r.rule);
          expect(decision.decision).toBe(decision.rules.every((r) => r.passed) ? 'allow' : 'deny');
          expect(schema.safeParse({ proposal_id: 'p1', decision: decision.decision, rules: decision.rules, repeat_of_denied: decision.repeat_of_denied }).success).toBe(true);
        }
      }
    }
    // Several failures at once are all recorded.
    expect(failed(decide(read('../x'), { lifecycle: 'RECOVERING', tool_calls_left: 0 }))).toEqual(['path_inside_workspace', 'no_symlink_escape', 'size_within_limit', 'budget_left', 'not_recovering']);
  });

  test('RECOVERING is read-only: everything is denied, reads included; so is any lifecycle but AWAKE', () => {
    for (const action of [read('notes.md'), write('a.md', 'x'), modify('notes.md', 'Thursday', 'Friday'), move('notes.md', 'b.md'), journal, task]) {
      expect(decide(action).decision).toBe('allow');
      const recovering = decide(action, { lifecycle: 'RECOVERING' });
      expect(recovering.decision).toBe('deny');
      expect(failed(recovering)).toEqual(['not_recovering']);
      expect(rule(recovering, 'not_recovering').detail).toBe('lifecycle RECOVERING is read-only: nothing is allowed, reads included');
      for (const lifecycle of ['PAUSED', 'DORMANT', 'STOPPED', 'CREATED'] as LifecycleState[]) expect(failed(decide(action, { lifecycle }))).toEqual(['not_recovering']);
    }
  });

  test('a task board change the projector would refuse is denied at the gate, so no allow is left without its outcome', () => {
    const add = (taskId: string, title: string | null): ModelAction => ({ tool: 'task_board', op: 'add', task_id: taskId, title, status: 'todo', priority: 1, depends_on: [], rationale: WHY });
    expect(decide(add('task-2', 'Draft')).decision).toBe('allow');
    expect(rule(decide(add('task-1', 'Again')), 'task_board_consistent')).toEqual({ rule: 'task_board_consistent', passed: false, detail: 'task task-1 exists: add a new id or update it' });
    expect(failed(decide(add('task-2', null)))).toEqual(['task_board_consistent']);
    expect(failed(decide({ ...task, task_id: 'task-9' }))).toEqual(['task_board_consistent']);
    expect(failed(decide(add('task-2', 'Draft'), { task_ids: new Set(Array.from({ length: 256 }, (_, i) => `t${i}`)) }))).toEqual(['task_board_consistent']);
    // A board the caller does not know is no board to judge against: denied, never guessed.
    expect(failed(decide(task, { task_ids: null }))).toEqual(['task_board_consistent']);
  });

  test('no tool calls left: denied', () => {
    for (const action of [read('notes.md'), journal, task]) {
      const decision = decide(action, { tool_calls_left: 0 });
      expect(decision.decision).toBe('deny');
      expect(rule(decision, 'budget_left')).toEqual({ rule: 'budget_left', passed: false, detail: 'no tool calls left in this wake' });
      expect(rule(decide(action, { tool_calls_left: 1 }), 'budget_left').passed).toBe(true);
    }
  });

  test('repeat_of_denied is set on the second identical proposal, with the fingerprint the projector keeps', () => {
    const first = decide(write('../escape.md', 'x'));
    expect(first).toMatchObject({ decision: 'deny', repeat_of_denied: false });
    // The fingerprint is the projector's: fold the ActionProposed/PermissionDecided a wake would append.
    const action = write('../escape.md', 'x');
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1', BUDGET, s.nextSeq - 1));
    s.push(d.modelAnswered('w1'));
    s.push(draft('ActionEvent.ActionProposed', { proposal_id: 'p1', tool: 'files', op: 'write', args: actionArgs(action), rationale: WHY }));
    s.push(draft('ActionEvent.PermissionDecided', { proposal_id: 'p1', decision: first.decision, rules: first.rules, repeat_of_denied: first.repeat_of_denied }));
    const state = subjectProjection.applyAll(subjectProjection.initial(), s.events);
    expect(Object.keys(state.denied_actions)).toEqual([first.fingerprint]);

    // Same action, other words: the same action. The projector accepts the gate's repeat flag.
    const again = decide({ ...action, rationale: 'let me try once more' }, { denied_fingerprints: new Set(Object.keys(state.denied_actions)) });
    expect(again).toMatchObject({ decision: 'deny', repeat_of_denied: true, fingerprint: first.fingerprint });
    s.push(draft('ActionEvent.ActionProposed', { proposal_id: 'p2', tool: 'files', op: 'write', args: actionArgs(action), rationale: 'let me try once more' }));
    s.push(draft('ActionEvent.PermissionDecided', { proposal_id: 'p2', decision: again.decision, rules: again.rules, repeat_of_denied: again.repeat_of_denied }));
    const after = subjectProjection.applyAll(subjectProjection.initial(), s.events);
    expect(after.denied_actions[first.fingerprint]).toMatchObject({ proposal_id: 'p1', repeats: 1 });

    // Another action is not a repeat; lists are fingerprinted as canonical JSON text.
    expect(decide(write('../escape.md', 'y'), { denied_fingerprints: new Set([first.fingerprint]) }).repeat_of_denied).toBe(false);
    expect(actionArgs(task)).toEqual({ task_id: 'task-1', title: null, status: null, priority: null, depends_on: '["task-0"]' });
  });

  test('the gate is pure: the same input gives the same decision and is not changed', () => {
    const input = inputFor(move('notes.md', 'b.md'), { denied_fingerprints: new Set(['sha256:' + '0'.repeat(64)]) });
    const copy = structuredClone({ ...input, denied_fingerprints: [...input.denied_fingerprints] });
    const a = decidePermission(input);
    const b = decidePermission(input);
    expect(a).toEqual(b);
    expect({ ...input, denied_fingerprints: [...input.denied_fingerprints] }).toEqual(copy);
  });

  test('forged input: facts that lie about a path, facts for another path, no facts, an unknown tool, a wrong fingerprint', () => {
    const liar: PathFacts = { normalized: '../outside/secret.txt', inside_workspace: true, symlink_escape: false, exists: true, size_bytes: 10 };
    const lied = decidePermission({ ...inputFor(read('notes.md')), action: read('../outside/secret.txt'), paths: { path: liar, to_path: null } });
    expect(lied.decision).toBe('deny');
    expect(rule(lied, 'path_inside_workspace').detail).toMatch(/'\.\.' segment/);

    const swapped = decidePermission({ ...inputFor(read('notes.md')), action: read('leak.md') });
    expect(rule(swapped, 'path_inside_workspace')).toMatchObject({ passed: false, detail: 'path: the path facts are for another path' });

    const blind = decidePermission({ ...inputFor(write('a.md', 'x')), paths: null });
    expect(failed(blind)).toEqual(['path_inside_workspace', 'no_symlink_escape']);
    const halfMove = decidePermission({ ...inputFor(move('notes.md', 'b.md')), paths: { path: inspectPath(root, 'notes.md'), to_path: null } });
    expect(failed(halfMove)).toEqual(['path_inside_workspace', 'no_symlink_escape', 'target_free_or_same']);

    const shell = decidePermission(inputFor({ tool: 'shell', op: 'exec', command: 'rm -rf /', rationale: WHY } as unknown as ModelAction));
    expect(shell.decision).toBe('deny');
    expect(shell.rules.map((r) => r.rule)).toEqual(['tool_allowed', 'budget_left', 'not_recovering']);
    expect(rule(shell, 'tool_allowed').passed).toBe(false);
    const badOp = decidePermission(inputFor({ tool: 'files', op: 'delete', path: 'notes.md', rationale: WHY } as unknown as ModelAction));
    expect(rule(badOp, 'tool_allowed').passed).toBe(false);

    expect(() => decidePermission({ ...inputFor(journal), fingerprint: fingerprintOfAction(task) })).toThrow(PermissionInputError);
    expect(decidePermission({ ...inputFor(journal), fingerprint: fingerprintOfAction(journal) }).decision).toBe('allow');
    expect(() => decidePermission({ ...inputFor(journal), limits: { maxWriteBytes: -1, maxReadBytes: 1 } })).toThrow(PermissionInputError);
  });

  test('details stay within 200 characters, even for long paths', () => {
    const long = `${'d'.repeat(200)}/${'e'.repeat(200)}/../x.md`;
    const decision = decide(move(long, long));
    for (const r of decision.rules) expect(r.detail.length).toBeLessThanOrEqual(200);
    expect(decision.decision).toBe('deny');
  });
});

describe('gate → intent → execute → outcome, folded by the projector', () => {
  test('a real read becomes a ToolSucceeded whose content a FACT cites', () => {
    const action = read('notes.md');
    const decision = decide(action);
    expect(decision.decision).toBe('allow');
    const planned = plannedHashes(root, action);
    const executed = executeFileAction(root, action, LIMITS);
    if (!executed.ok) throw new Error(executed.error);

    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1', BUDGET, s.nextSeq - 1));
    s.push(d.modelAnswered('w1'));
    s.push(draft('ActionEvent.ActionProposed', { proposal_id: 'p1', tool: 'files', op: 'read', args: actionArgs(action), rationale: WHY }));
    const permission = s.push(draft('ActionEvent.PermissionDecided', { proposal_id: 'p1', decision: decision.decision, rules: decision.rules, repeat_of_denied: decision.repeat_of_denied }));
    const intent = s.push(draft('ActionEvent.ExecutionIntentRecorded', { proposal_id: 'p1', permission_event_id: permission.event_id, op: 'read', path: 'notes.md', to_path: null, ...planned }));
    const result = s.push(draft('ActionEvent.ToolSucceeded', { intent_event_id: intent.event_id, observed_post_hash: executed.post_hash, content: executed.content }));
    s.push(d.claim('f1', 'FACT', [result.event_id], { statement: 'notes.md says the dataset comes Thursday.' }));
    const state = subjectProjection.applyAll(subjectProjection.initial(), s.events);
    expect(state.open_intents).toEqual({});
    expect(state.claims.f1).toMatchObject({ status: 'active', evidence_event_ids: [result.event_id] });
    expect(executed.content).toBe('Dataset: Thursday.\n');
    expect(FILE_TOOL_LIMITS.maxReadBytes).toBe(32_768);
  });
});
