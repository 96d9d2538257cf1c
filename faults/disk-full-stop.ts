// The disk_full invariant: a run whose disk filled must stop with the store-full ending (the
// controller's, the writer's or the store's own code), leave no half-written temp file in the
// workspace, and say so first in its log. Judged from the log and the workspace after the run.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { InstanceError } from '../controller/instance-error.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TEMP_SUFFIX } from '../runtime/tools/workspace-files.js';
import type { FaultReached } from '../schema/fault-points.js';
import { storeFileCode } from '../writer/store-file-failure.js';
import { WriterStartError } from '../writer/spawn.js';
import { CONTROLLER_TIMEOUT_MS } from './fault-processes.js';
import type { RunInvariantResult } from './run-invariants.js';

/**
 * The codes a controller that met a full disk may end with: the instance stopped on it
 * (controller/instance.ts stopOnFullDisk); a writer it had to start (a planned writer restart)
 * refused the full store (writer/spawn.ts WriterStartError); or — when the disk filled after the
 * seal — a read of the finished store for the summary refused for lack of space
 * (writer/store-file-failure.ts). Each tells the person the disk is full.
 */
const STORE_FULL_ENDINGS: readonly string[] = [new InstanceError('store_full', '').errorCode, new WriterStartError(storeFileCode('full'), '').errorCode, storeFileCode('full')];

/** Entries of the workspace walk looking for temp files; a scenario's workspace holds a handful. */
const MAX_TEMP_WALK_ENTRIES = 10_000;

/** The file tool's temp files (TEMP_SUFFIX) anywhere in `workspace`, relative paths; bounded walk. */
export function tempFilesIn(workspace: string): string[] {
  const found: string[] = [];
  if (!existsSync(workspace)) return found;
  const stack = [''];
  let seen = 0;
  while (stack.length > 0 && seen < MAX_TEMP_WALK_ENTRIES) {
    const rel = stack.pop()!;
    for (const entry of readdirSync(path.join(workspace, rel), { withFileTypes: true })) {
      seen += 1;
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) stack.push(child);
      else if (entry.name.endsWith(TEMP_SUFFIX)) found.push(child);
    }
  }
  if (stack.length > 0) found.push(`(the walk stopped after ${MAX_TEMP_WALK_ENTRIES} entries: the rest was not looked at)`);
  return found.sort();
}

/** The JSON ending (--json) of the first controller in the log: `$ experiment …` up to `$ exit …`. */
function firstEnding(logFile: string): { ok?: unknown; error?: { code?: unknown } } | null {
  if (!existsSync(logFile)) return null;
  const lines = readFileSync(logFile, 'utf8').split('\n');
  const end = lines.findIndex((line) => line.startsWith('$ exit'));
  for (const line of lines.slice(0, end === -1 ? lines.length : end).reverse()) {
    if (!line.startsWith('{"ok":')) continue;
    try {
      return JSON.parse(line) as { ok?: unknown; error?: { code?: unknown } };
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * disk_full: the controller that ran into the full disk stopped on its own — no hang (the harness
 * did not have to kill it), exit 1 with the typed ending instance_store_full (never 0 on a partial
 * run, never a bug's internal_error) — and the file tool left no half file (temp file) in the
 * workspace. Nothing to check for the other kinds. The rest (nothing acknowledged lost, every
 * intent with an outcome, the resume sealed and verifying) are the other invariants.
 */
export function diskFullStop(fired: FaultReached | null, filled: boolean, exits: ReadonlyArray<number | null>, logFile: string, tempFiles: readonly string[] | null): RunInvariantResult {
  if (fired?.kind !== 'disk_full') return { invariant: 'disk_full_stop', ok: true, details: [] };
  const problems: string[] = [];
  if (!filled) problems.push('the harness did not fill the disk at the point (see the notes): the run proves nothing about a full disk');
  const exit = exits[0];
  if (exit === null || exit === undefined) problems.push(`the controller that met the full disk did not end by itself within ${CONTROLLER_TIMEOUT_MS} ms (a hang): the harness killed it`);
  else if (exit !== EXIT_CODES.failed) problems.push(`the controller that met the full disk exited ${exit}, not ${EXIT_CODES.failed} (${exit === EXIT_CODES.ok ? 'a partial run reported as finished' : 'not the documented exit'})`);
  const ending = firstEnding(logFile);
  const code = ending?.error?.code;
  if (typeof code !== 'string' || !STORE_FULL_ENDINGS.includes(code)) problems.push(`the controller that met the full disk ended with ${ending === null ? 'no JSON ending' : `code ${JSON.stringify(code ?? null)}`}, not ${STORE_FULL_ENDINGS.join(' or ')}: the person reading it is not told the disk is full (see ${logFile})`);
  if (tempFiles === null) problems.push('the workspace was not looked at after the stop (no process of the instance ended?)');
  else if (tempFiles.length > 0) problems.push(`the file tool left ${tempFiles.length} temp file(s) in the workspace when it stopped on the full disk: ${tempFiles.slice(0, 5).join(', ')} (a half file)`);
  return { invariant: 'disk_full_stop', ok: problems.length === 0, details: problems };
}
