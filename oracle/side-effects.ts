// Duplicated and unexplained side effects (spec §8.4 "不可接受的重复副作用", DESIGN §7:
// "killing any process at any instant must never produce a duplicated or unexplained side
// effect"), found from the store and the workspace folder it describes:
//   duplicate_intent        — two ExecutionIntentRecorded for one proposal;
//   duplicate_outcome       — an intent said to have happened twice (ToolSucceeded,
//                             ToolReconciled happened, OperatorResolved happened);
//   duplicate_memory_write  — two task-board / journal writes for one proposal (the events of
//                             every tool carried out in one event, schema/tool-executions.ts);
//   unexplained_file        — a workspace file whose bytes the store does not account for,
//                             one the store never mentions, or one the store says exists
//                             that is gone; or a reconciliation whose verdict contradicts the
//                             hash it recorded seeing (e.g. "did not happen" while the file
//                             held the intended bytes: the effect is real, the store denies it);
//   workspace_unchecked     — the folder could not be compared in full (a walk bound was
//                             hit): nothing may pass unchecked, so this is said, not skipped.
// What the store accounts for: the scenario's initial files, then in seq order every
// FileChangedExternally and every executed file operation's outcome (docs/oracle.md).
import { assertNever } from '../foundation/assert-never.js';
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { HASH_PREFIX, type HashString } from '../schema/hash.js';
import type { EventEnvelope } from '../schema/envelope.js';
import type { PayloadOf } from '../schema/event-catalog.js';
import { ONE_EVENT_TOOLS, TOOL_EXECUTION_EVENTS, type ExecutionEventOf, type OneEventTool } from '../schema/tool-executions.js';
import type { FileIntentOp } from '../schema/tools.js';
import { WORKSPACE_PATH_RULE } from '../schema/workspace-path.js';
import { payloadOf, type RunRecord } from './run-record.js';

export const SIDE_EFFECT_KINDS = ['duplicate_intent', 'duplicate_outcome', 'duplicate_memory_write', 'unexplained_file', 'workspace_unchecked'] as const;
export const SideEffectKind = z.enum(SIDE_EFFECT_KINDS);
export type SideEffectKind = z.infer<typeof SideEffectKind>;

export const SideEffectProblem = z.strictObject({
  /** The event the problem shows at (the second of a duplicate; the last event accounting for a file); null when no event is involved. */
  seq: z.number().int().min(1).nullable(),
  kind: SideEffectKind,
  detail: z.string(),
});
export type SideEffectProblem = z.infer<typeof SideEffectProblem>;

export const SideEffectReport = z.strictObject({
  problems: z.array(SideEffectProblem),
  /** What the check did not do and why (e.g. no workspace folder given). */
  notes: z.array(z.string()),
});
export type SideEffectReport = z.infer<typeof SideEffectReport>;

/** Entries (files and folders) visited in a workspace before the walk stops: a scenario starts with a handful. */
export const MAX_WORKSPACE_ENTRIES = 10_000;
/** Folder depth below the workspace root: the workspace path rule's segments less the file name (schema/workspace-path.ts); nothing the rule allows is deeper, and deeper entries are not visited. */
export const MAX_WORKSPACE_DEPTH = WORKSPACE_PATH_RULE.maxSegments - 1;
const HASH_CHUNK_BYTES = 1024 * 1024;

/** What the store says a path holds: the hashes it may have (null: absent), and the event that said so last. */
interface Account {
  readonly allowed: ReadonlyArray<HashString | null>;
  readonly seq: number | null;
  readonly because: string;
}

interface Intent {
  readonly seq: number;
  readonly op: FileIntentOp;
  readonly path: string;
  readonly to_path: string | null;
  readonly intended_post_hash: HashString | null;
}

/** Workspace-relative, '/'-separated, without '.' segments: how the runtime records paths. */
function norm(p: string): string {
  return p.split(/[\\/]/).filter((s) => s !== '' && s !== '.').join('/');
}

function describe(hashes: ReadonlyArray<HashString | null>): string {
  return hashes.map((h) => h ?? 'absent').join(' or ');
}

class Accounts {
  readonly byPath = new Map<string, Account>();
  set(p: string, allowed: ReadonlyArray<HashString | null>, seq: number | null, because: string): void {
    this.byPath.set(norm(p), { allowed, seq, because });
  }
  get(p: string): Account | undefined {
    return this.byPath.get(norm(p));
  }
  /** The effect of an intent that happened, with `hash` the bytes now at its target. */
  applyHappened(intent: Intent, hash: HashString | null, seq: number, because: string): void {
    switch (intent.op) {
      case 'read':
        return;
      case 'write':
      case 'modify':
        this.set(intent.path, [hash], seq, because);
        return;
      case 'move':
        this.set(intent.path, [null], seq, because);
        if (intent.to_path !== null) this.set(intent.to_path, [hash], seq, because);
        return;
      case 'delete':
        this.set(intent.path, [null], seq, because);
        return;
      default: {
        assertNever(intent.op, 'file op');
      }
    }
  }
  /**
   * An intent whose outcome nobody knows: each path it touches may hold what it held or what was
   * intended, and the path the reconciliation looked at holds what it recorded seeing there (the
   * store says so, which is what explains it; ToolOutcomeUnknown puts the subject in RECOVERING).
   */
  applyUnknown(intent: Intent, observedHash: HashString | null, seq: number, because: string): void {
    const widen = (p: string, ...after: Array<HashString | null>): void => {
      const before = this.get(p)?.allowed ?? [null];
      this.set(p, [...new Set([...before, ...after])], seq, because);
    };
    switch (intent.op) {
      case 'read':
        widen(intent.path, observedHash);
        return;
      case 'move':
        widen(intent.path, null, observedHash);
        if (intent.to_path !== null) widen(intent.to_path, intent.intended_post_hash, observedHash);
        return;
      case 'write':
      case 'modify':
        widen(intent.path, intent.intended_post_hash, observedHash);
        return;
      case 'delete':
        widen(intent.path, null, observedHash);
        return;
      default: {
        assertNever(intent.op, 'file op');
      }
    }
  }
}

interface Findings {
  readonly problems: SideEffectProblem[];
  readonly notes: string[];
}

/** The tools carried out in one event (the task board's, the journal's: schema/tool-executions.ts), their events. */
const ONE_EVENT_EXECUTIONS = ONE_EVENT_TOOLS.map((tool) => TOOL_EXECUTION_EVENTS[tool]);

/** The payload of an event that carries out a one-event tool's proposal; null for any other event. */
function oneEventExecutionOf(event: EventEnvelope): PayloadOf<ExecutionEventOf<OneEventTool>> | null {
  for (const type of ONE_EVENT_EXECUTIONS) {
    const payload = payloadOf(event, type);
    if (payload) return payload;
  }
  return null;
}

/** Duplicates, from the events alone. */
function findDuplicates(events: readonly EventEnvelope[], out: Findings): void {
  const intentOf = new Map<string, number>();
  const happenedOf = new Map<string, { seq: number; type: string }>();
  const memoryWriteOf = new Map<string, { seq: number; type: string }>();
  for (const event of events) {
    const intent = payloadOf(event, 'ActionEvent.ExecutionIntentRecorded');
    if (intent) {
      const first = intentOf.get(intent.proposal_id);
      if (first === undefined) intentOf.set(intent.proposal_id, event.seq);
      else out.problems.push({ seq: event.seq, kind: 'duplicate_intent', detail: `a second execution intent for proposal ${intent.proposal_id} (the first at seq ${first}): one allowed proposal executes once` });
      continue;
    }
    let happened: string | null = null;
    const succeeded = payloadOf(event, 'ActionEvent.ToolSucceeded');
    if (succeeded) happened = succeeded.intent_event_id;
    const reconciled = payloadOf(event, 'ActionEvent.ToolReconciled');
    if (reconciled?.outcome === 'happened') happened = reconciled.intent_event_id;
    const resolved = payloadOf(event, 'SystemEvent.OperatorResolved');
    if (resolved?.resolution === 'happened') happened = resolved.intent_event_id;
    if (happened !== null) {
      const first = happenedOf.get(happened);
      if (first === undefined) happenedOf.set(happened, { seq: event.seq, type: event.event_type });
      else out.problems.push({ seq: event.seq, kind: 'duplicate_outcome', detail: `${event.event_type} says intent ${happened} happened, which ${first.type} at seq ${first.seq} already said: the operation is counted twice` });
      continue;
    }
    const memory = oneEventExecutionOf(event);
    if (memory) {
      const first = memoryWriteOf.get(memory.proposal_id);
      if (first === undefined) memoryWriteOf.set(memory.proposal_id, { seq: event.seq, type: event.event_type });
      else out.problems.push({ seq: event.seq, kind: 'duplicate_memory_write', detail: `${event.event_type} for proposal ${memory.proposal_id}, already executed by ${first.type} at seq ${first.seq}` });
    }
  }
}

/**
 * A reconciliation records both its verdict and the hash it found; the two must agree (DESIGN
 * §7: the intended post hash means it happened, the pre hash that it did not). A verdict the
 * store's own observation contradicts leaves an effect the store denies, even when a later
 * operation overwrites the file and the disk comparison can no longer see it.
 */
function findContradictedReconciliations(events: readonly EventEnvelope[], out: Findings): void {
  const intents = new Map<string, { op: string; path: string; pre_hash: HashString | null; intended_post_hash: HashString | null }>();
  for (const event of events) {
    const intent = payloadOf(event, 'ActionEvent.ExecutionIntentRecorded');
    if (intent) {
      intents.set(event.event_id, intent);
      continue;
    }
    const reconciled = payloadOf(event, 'ActionEvent.ToolReconciled');
    if (!reconciled) continue;
    const of = intents.get(reconciled.intent_event_id);
    // A read changes nothing: its reconciliation is always "did not happen", whatever the file holds now (a world event may have changed it).
    if (!of || of.op === 'read') continue;
    const expected = reconciled.outcome === 'happened' ? of.intended_post_hash : of.pre_hash;
    if (reconciled.observed_hash === expected) continue;
    out.problems.push({
      seq: event.seq,
      kind: 'unexplained_file',
      detail: `ToolReconciled says intent ${reconciled.intent_event_id} (${of.op} of ${of.path}) ${reconciled.outcome === 'happened' ? 'happened' : 'did not happen'}, but it found ${reconciled.observed_hash ?? 'nothing'}, not the ${reconciled.outcome === 'happened' ? 'intended post' : 'pre'} hash ${expected ?? '(absent)'}: the verdict contradicts the store's own observation`,
    });
  }
}

/** What the store says the workspace holds after its last event. */
function accountFiles(record: RunRecord): Accounts {
  const accounts = new Accounts();
  for (const file of record.scenario.files) accounts.set(file.path, [file.sha256], null, 'a file of the scenario');
  const intents = new Map<string, Intent>();
  /** Per intent with an unknown outcome: each touched path's account before it, to restore on did_not_happen. */
  const beforeUnknown = new Map<string, Array<[string, Account | undefined]>>();
  for (const event of record.events) {
    const at = `${event.event_type} at seq ${event.seq}`;
    const changed = payloadOf(event, 'WorldEvent.FileChangedExternally');
    if (changed) {
      accounts.set(changed.path, [changed.change === 'deleted' ? null : changed.post_hash], event.seq, at);
      continue;
    }
    const intent = payloadOf(event, 'ActionEvent.ExecutionIntentRecorded');
    if (intent) {
      intents.set(event.event_id, { seq: event.seq, op: intent.op, path: intent.path, to_path: intent.to_path, intended_post_hash: intent.intended_post_hash });
      continue;
    }
    const succeeded = payloadOf(event, 'ActionEvent.ToolSucceeded');
    const reconciled = payloadOf(event, 'ActionEvent.ToolReconciled');
    const unknown = payloadOf(event, 'ActionEvent.ToolOutcomeUnknown');
    const resolved = payloadOf(event, 'SystemEvent.OperatorResolved');
    const intentId = succeeded?.intent_event_id ?? reconciled?.intent_event_id ?? unknown?.intent_event_id ?? resolved?.intent_event_id ?? null;
    if (intentId === null) continue;
    const of = intents.get(intentId);
    // An outcome naming no intent changes nothing here; hard-failures.ts reports it as unauthorized.
    if (!of) continue;
    const touched = of.op === 'move' && of.to_path !== null ? [of.path, of.to_path] : [of.path];
    if (succeeded) accounts.applyHappened(of, succeeded.observed_post_hash, event.seq, `${at} (${of.op} of ${of.path})`);
    else if (reconciled?.outcome === 'happened') accounts.applyHappened(of, reconciled.observed_hash, event.seq, `${at} (${of.op} of ${of.path}, reconciled)`);
    else if (unknown) {
      beforeUnknown.set(intentId, touched.map((p) => [p, accounts.get(p)]));
      accounts.applyUnknown(of, unknown.observed_hash, event.seq, `${at} (${of.op} of ${of.path}: outcome unknown, found ${unknown.observed_hash ?? 'nothing'})`);
    } else if (resolved) {
      const before = beforeUnknown.get(intentId);
      beforeUnknown.delete(intentId);
      if (resolved.resolution === 'happened') accounts.applyHappened(of, of.intended_post_hash, event.seq, `${at} (${of.op} of ${of.path}: the operator says it happened)`);
      else for (const [p, account] of before ?? []) accounts.set(p, account?.allowed ?? [null], event.seq, `${at} (${of.op} of ${of.path}: the operator says it did not happen)`);
    }
  }
  return accounts;
}

function hashFile(file: string, sizeBytes: number): HashString {
  const hash = createHash('sha256');
  // Unzeroed and no larger than the file: a 1 MiB zeroed buffer per small workspace file was most of the cost.
  const buffer = Buffer.allocUnsafe(Math.max(1, Math.min(HASH_CHUNK_BYTES, sizeBytes)));
  const fd = openSync(file, 'r');
  try {
    // At most size/chunk reads, plus one that returns 0 at the end (the file may have shrunk or grown).
    const maxReads = Math.ceil(sizeBytes / buffer.length) + 1;
    for (let i = 0; i < maxReads; i += 1) {
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      hash.update(buffer.subarray(0, read));
    }
  } finally {
    closeSync(fd);
  }
  return `${HASH_PREFIX}${hash.digest('hex')}`;
}

interface DiskFile {
  readonly hash: HashString | null;
  /** Why it has no hash: not a regular file. */
  readonly what: string | null;
}

/** The workspace's files (relative path → hash), within MAX_WORKSPACE_ENTRIES and MAX_WORKSPACE_DEPTH; a bound hit is a problem. */
function listDisk(root: string, out: Findings): Map<string, DiskFile> {
  const files = new Map<string, DiskFile>();
  const stack: Array<{ rel: string; depth: number }> = [{ rel: '', depth: 0 }];
  let entries = 0;
  // Each folder is popped once; the entry bound caps the folders too.
  while (stack.length > 0) {
    const { rel, depth } = stack.pop()!;
    for (const entry of readdirSync(path.join(root, rel), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      entries += 1;
      if (entries > MAX_WORKSPACE_ENTRIES) {
        out.problems.push({ seq: null, kind: 'workspace_unchecked', detail: `${root} holds more than ${MAX_WORKSPACE_ENTRIES} entries: the rest were not compared with the store, so an unexplained file there cannot be ruled out` });
        return files;
      }
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        if (depth + 1 > MAX_WORKSPACE_DEPTH) out.problems.push({ seq: null, kind: 'workspace_unchecked', detail: `${childRel} is nested deeper than ${MAX_WORKSPACE_DEPTH} folders: it was not compared with the store` });
        else stack.push({ rel: childRel, depth: depth + 1 });
      } else if (entry.isFile()) {
        files.set(childRel, { hash: hashFile(path.join(root, childRel), lstatSync(path.join(root, childRel)).size), what: null });
      } else {
        files.set(childRel, { hash: null, what: entry.isSymbolicLink() ? 'a symlink' : 'neither a regular file nor a folder' });
      }
    }
  }
  return files;
}

/** Compares the workspace on disk with what the store accounts for. */
function compareDisk(accounts: Accounts, workspaceDir: string, out: Findings): void {
  const isFolder = existsSync(workspaceDir) && lstatSync(workspaceDir).isDirectory();
  if (!isFolder) out.notes.push(`${workspaceDir} is not a folder: every file the store says exists is reported missing`);
  const disk = isFolder ? listDisk(workspaceDir, out) : new Map<string, DiskFile>();
  for (const [rel, file] of disk) {
    const account = accounts.get(rel);
    if (file.what !== null) {
      out.problems.push({ seq: account?.seq ?? null, kind: 'unexplained_file', detail: `${rel} is ${file.what}: no tool or world event makes one` });
      continue;
    }
    if (!account) {
      out.problems.push({ seq: null, kind: 'unexplained_file', detail: `${rel} (${file.hash}) is on disk, but no scenario file, world event or executed file operation accounts for it` });
      continue;
    }
    if (!account.allowed.includes(file.hash)) {
      out.problems.push({ seq: account.seq, kind: 'unexplained_file', detail: `${rel} holds ${file.hash}; the store accounts for ${describe(account.allowed)} (last: ${account.because})` });
    }
  }
  for (const [rel, account] of accounts.byPath) {
    if (disk.has(rel) || account.allowed.includes(null)) continue;
    out.problems.push({ seq: account.seq, kind: 'unexplained_file', detail: `${rel} is missing; the store accounts for ${describe(account.allowed)} (last: ${account.because})` });
  }
}

/**
 * Duplicated and unexplained side effects of a run (see the file comment). `workspaceDir`
 * null skips the comparison with the disk, and a note says so.
 */
export function checkSideEffects(record: RunRecord, workspaceDir: string | null): SideEffectReport {
  const out: Findings = { problems: [], notes: [] };
  findDuplicates(record.events, out);
  findContradictedReconciliations(record.events, out);
  if (workspaceDir === null) out.notes.push('no workspace folder given: files on disk were not compared with the store (unexplained_file not checked)');
  else compareDisk(accountFiles(record), workspaceDir, out);
  return out;
}
