// The fault-injection contract (issue 8): the named points inside the writer, the runtime and
// the controller where the harness (faults/) can make something go wrong, the
// kinds of fault, and the one environment variable that arms them. It lives in schema/ because
// it is the only folder all three processes share (DESIGN §3); schema/fault-switch.ts carries
// it out inside each process.
//
// Nothing here is armed in a study: without DS_FAULT_INJECTION every point is a no-op, and a
// process that finds the variable says so on its first line of output. Besides the harness,
// only a drill arms a point (`npm run experiment -- --drill`, cli/drill.ts): the
// same switch, armed by a flag instead of the variable, and the run marked as a drill.
import { assertNever } from '../foundation/assert-never.js';
import { z } from 'zod';

/** The environment variable the harness sets on the controller (inherited by its writer and runtime); `npm run experiment -- --drill` sets it on the writer and runtime only. */
export const FAULT_ENV = 'DS_FAULT_INJECTION';

export const FAULT_ROLES = ['writer', 'runtime', 'controller'] as const;
export const FaultRole = z.enum(FAULT_ROLES);
export type FaultRole = z.infer<typeof FaultRole>;

/**
 * Each point, the process it lives in and what has and has not happened when it fires. The
 * order is the order of the catalogue in docs/faults.md.
 */
export const FAULT_POINT_CATALOGUE = {
  'writer.append.before_commit': { role: 'writer', where: 'inside an append transaction: rows, hashes and the projection written, COMMIT not yet run' },
  'writer.append.after_commit': { role: 'writer', where: 'an append committed (or, for repeated idempotency keys, answered from the store), its answer not yet sent to the caller' },
  'writer.snapshot.write': { role: 'writer', where: 'inside the transaction that writes a snapshot row, before its COMMIT' },
  'writer.socket.append_request': { role: 'writer', where: 'an append request line arrived on the socket, not yet handled' },
  'runtime.intent.before_file_op': { role: 'runtime', where: 'ExecutionIntentRecorded acknowledged, the file not yet touched' },
  'runtime.file_op.before_outcome': { role: 'runtime', where: 'the file operation done (renamed into place) or failed, its outcome event not yet appended' },
  'runtime.model_call.in_flight': { role: 'runtime', where: "the model's call under way (for an HTTP model, its request handed to the event loop), its answer neither received nor recorded" },
  'controller.head.signing': { role: 'controller', where: 'a periodic head signed and written to heads.jsonl, its ChainHeadSigned not yet appended' },
} as const satisfies Record<string, { role: FaultRole; where: string }>;

export type FaultPoint = keyof typeof FAULT_POINT_CATALOGUE;
export const FAULT_POINTS = Object.keys(FAULT_POINT_CATALOGUE) as [FaultPoint, ...FaultPoint[]];
export const FaultPointSchema = z.enum(FAULT_POINTS);

/**
 * What goes wrong. Kills are SIGKILLs sent by the harness while the process at the point is
 * frozen there (SIGSTOP), so the victim dies exactly at the point's instant even when it is
 * another process. The other kinds are carried out by the process at the point (socket,
 * model) or by the harness once every process is gone (snapshot, workspace).
 */
export const FAULT_KIND_CATALOGUE = {
  kill_writer: 'SIGKILL of the writer',
  kill_runtime: 'SIGKILL of the runtime',
  kill_controller: 'SIGKILL of the controller (its writer and runtime see their parent go away)',
  snapshot_deleted: 'the writer is killed at the point, then every snapshot row is deleted from events.db before the resume',
  snapshot_corrupted: 'the writer is killed at the point, then the newest snapshot rows get flipped bytes (state no longer hashes to state_hash) before the resume',
  workspace_tampered: 'the runtime is killed at a write, modify or move intent, then a third party overwrites the file it names before the resume (an outcome nobody can confirm); never planned at a read, whose file an unrecorded change would leave unexplained by design',
  drop_message: 'the writer reads the request and neither handles nor answers it (lost in transit)',
  duplicate_message: 'the writer handles the request twice and answers twice (delivered twice)',
  model_timeout: 'the model call is abandoned as timed out (its answer, if any, never used)',
  model_garbage: 'the model answers bytes that are not the output protocol',
  stall_writer: 'the writer stands frozen (SIGSTOP) at the point for longer than the pre-registered writer request timeout, then is continued (SIGCONT): its callers give up with an unknown outcome while it stands, and what it then commits late must be answered from the store, never twice',
  stall_runtime: "the runtime stands frozen (SIGSTOP) at the point for longer than the pre-registered wake answer timeout and the wake's model-call budget, then is continued (SIGCONT): the controller gives up on the wake and stops the instance while it stands; whatever the runtime does once continued must not add to the stopped history",
  stall_model: "the subject's model server (a real OpenAI-compatible HTTP process on loopback the harness starts for the run) is frozen (SIGSTOP) while the runtime's call to it is in flight, for longer than the call's timeout, then continued (SIGCONT): the call times out and is recorded as such, the answer the server sends once continued is never used, and the instance goes on",
  disk_full: 'the run folder is on a size-limited tmpfs; at the point the harness fills what space is left and continues the process (nothing is killed); once every process is gone it frees the space before the resume',
  heads_torn: 'the controller is killed at the point, then the last line of heads.jsonl is cut in the middle (a torn write) before verify and a resume are asked about it',
  wal_foreign: 'the writer is killed at the point, then its events.db-wal is replaced by the WAL of another store before verify and a resume are asked about it',
  manifest_foreign: 'the controller is killed at the point, then manifest.dsse.json is replaced by the signed manifest of another instance (same key) before verify and a resume are asked about it',
  snapshot_foreign: 'the writer is killed at the point, then the newest snapshot row (at or below the head) is replaced by a snapshot row of another store before verify and a resume are asked about it',
  random_subject: "the subject is a real tiny model (stories260K under the answer grammar, temperature > 0, a seed from the plan) instead of the reference policy: schema-valid answers with made-up paths, task ids, evidence seqs and plan revisions; it fires at the first model call and the runtime does nothing extra — the model's answers are the fault",
} as const;

export type FaultKind = keyof typeof FAULT_KIND_CATALOGUE;
export const FAULT_KINDS = Object.keys(FAULT_KIND_CATALOGUE) as [FaultKind, ...FaultKind[]];
export const FaultKindSchema = z.enum(FAULT_KINDS);

const KILLS: readonly FaultKind[] = ['kill_writer', 'kill_runtime', 'kill_controller'];

/**
 * Which kinds a point can carry. A kind missing from a point is not an omission: a snapshot can
 * only be lost where one is written, a message dropped where one arrives, a model answer
 * garbled where one is awaited, a file tampered with where an operation's outcome is open, the
 * writer stalled where it stands between a request and its answer, the runtime where it stands
 * inside a wake, the model server where a call to it is open.
 */
export const APPLICABLE_KINDS: Readonly<Record<FaultPoint, readonly FaultKind[]>> = {
  // disk_full: where the next write needs space — the append's COMMIT (its WAL frames), the
  // request about to be handled, and a file write about to be made (write and modify intents only).
  'writer.append.before_commit': [...KILLS, 'stall_writer', 'disk_full'],
  'writer.append.after_commit': [...KILLS, 'stall_writer', 'wal_foreign'],
  'writer.snapshot.write': [...KILLS, 'snapshot_deleted', 'snapshot_corrupted', 'stall_writer', 'snapshot_foreign'],
  'writer.socket.append_request': [...KILLS, 'drop_message', 'duplicate_message', 'stall_writer', 'disk_full'],
  'runtime.intent.before_file_op': [...KILLS, 'workspace_tampered', 'stall_runtime', 'disk_full'],
  'runtime.file_op.before_outcome': [...KILLS, 'workspace_tampered', 'stall_runtime'],
  // random_subject: the point where the model's answer enters the runtime.
  // stall_model: the only point where a call to the model server is open.
  'runtime.model_call.in_flight': [...KILLS, 'model_timeout', 'model_garbage', 'stall_runtime', 'stall_model', 'random_subject'],
  'controller.head.signing': [...KILLS, 'heads_torn', 'manifest_foreign'],
};

/** Kinds the process at the point carries out itself, without stopping for the harness. */
export const SELF_HANDLED_KINDS: readonly FaultKind[] = ['drop_message', 'duplicate_message', 'model_timeout', 'model_garbage', 'random_subject'];

/**
 * Kinds that plant a bad file in the run folder once every process is gone (a torn heads.jsonl,
 * another store's WAL, another instance's manifest, another store's snapshot): the harness then
 * asks verify and a resume about it, checks their verdict (faults/bad-files.ts),
 * puts the original back and resumes to the end. Their victim is killed at the point first.
 */
export const BAD_FILE_KINDS = ['heads_torn', 'wal_foreign', 'manifest_foreign', 'snapshot_foreign'] as const satisfies readonly FaultKind[];
export type BadFileKind = (typeof BAD_FILE_KINDS)[number];
export function isBadFileKind(kind: FaultKind): kind is BadFileKind {
  return (BAD_FILE_KINDS as readonly FaultKind[]).includes(kind);
}

/**
 * What the harness does while the process at the point stands frozen there: kill a victim, fill
 * the disk under the run folder and continue the frozen process, or hold a process frozen a while
 * and continue it (a stall) — the frozen one itself, or the model server it is calling (the
 * frozen runtime is continued at once, so that its call meets a server that does not answer);
 * nothing for the kinds a process carries out itself (SELF_HANDLED_KINDS).
 */
export type HarnessAction =
  | { readonly act: 'kill'; readonly victim: FaultRole }
  | { readonly act: 'fill_disk' }
  | { readonly act: 'stall'; readonly held: 'frozen_process' | 'model_server' }
  | { readonly act: 'none' };

export function harnessActionOf(kind: FaultKind): HarnessAction {
  switch (kind) {
    case 'kill_writer':
    case 'snapshot_deleted':
    case 'snapshot_corrupted':
    case 'wal_foreign':
    case 'snapshot_foreign':
      return { act: 'kill', victim: 'writer' };
    case 'kill_runtime':
    case 'workspace_tampered':
      return { act: 'kill', victim: 'runtime' };
    case 'kill_controller':
    case 'heads_torn':
    case 'manifest_foreign':
      return { act: 'kill', victim: 'controller' };
    case 'disk_full':
      return { act: 'fill_disk' };
    case 'stall_writer':
    case 'stall_runtime':
      return { act: 'stall', held: 'frozen_process' };
    case 'stall_model':
      return { act: 'stall', held: 'model_server' };
    case 'drop_message':
    case 'duplicate_message':
    case 'model_timeout':
    case 'model_garbage':
    // The model itself is the fault (the harness started the instance with it): nothing to do at the point.
    case 'random_subject':
      return { act: 'none' };
    default: {
      assertNever(kind, 'fault kind');
    }
  }
}

/** The victim of a kind that kills, or null (self-handled kinds, disk_full and the stalls: the frozen process is continued, not killed). */
export function killedRole(kind: FaultKind): FaultRole | null {
  const action = harnessActionOf(kind);
  return action.act === 'kill' ? action.victim : null;
}

/** Kinds the harness carries out by holding a process frozen and continuing it later: nobody is killed. */
export const STALL_KINDS: readonly FaultKind[] = FAULT_KINDS.filter((kind) => harnessActionOf(kind).act === 'stall');

/** A value a fault point's context holds (FaultReached['context']). */
const ContextValue = z.union([z.string().max(1_024), z.number()]);

export const ArmedFault = z.strictObject({
  point: FaultPointSchema,
  kind: FaultKindSchema,
  /** Fires at this hit of the point, counted over every process of the point's role in the instance. */
  hit: z.number().int().min(1).max(1_000_000),
  /**
   * Optional: fires instead at the first hit at or after `hit` whose context holds, for every key
   * named, one of the values listed — for an arming that cannot know the hit in advance (the
   * unknown-outcome drill, cli/drill.ts: the first write, modify or move intent,
   * whatever the seed). Absent: exactly hit `hit`, as the harness plans it.
   */
  only_if: z.record(z.string().min(1).max(64), z.array(ContextValue).min(1).max(16)).optional(),
});
export type ArmedFault = z.infer<typeof ArmedFault>;

/** The value of DS_FAULT_INJECTION (JSON). */
export const FaultArming = z.strictObject({
  /** The harness's folder for this run: hit counters, pid files, the reached record, acknowledgement logs. */
  dir: z.string().min(1).max(1_024).refine((p) => p.startsWith('/'), 'must be an absolute path'),
  /** null: count hits only (a calibration run). */
  armed: ArmedFault.nullable(),
  /** Who armed it, for the line each armed process logs; absent: the harness (npm run faults). */
  armed_by: z.string().min(1).max(200).optional(),
});
export type FaultArming = z.infer<typeof FaultArming>;

/** What the process at a point writes to `<dir>/reached.json` when the armed fault fires. */
export const FaultReached = z.strictObject({
  point: FaultPointSchema,
  kind: FaultKindSchema,
  hit: z.number().int().min(1),
  role: FaultRole,
  pid: z.number().int().min(1),
  /** Whether the process froze itself (SIGSTOP) for the harness to act. */
  frozen: z.boolean(),
  /** Facts of the instant: the store head, the intent's path, the request's method … (strings and numbers only). */
  context: z.record(z.string(), z.union([z.string(), z.number(), z.null()])),
});
export type FaultReached = z.infer<typeof FaultReached>;

/** File names inside the fault folder. */
export const FAULT_FILES = {
  reached: 'reached.json',
  /** Created (exclusively) by the process whose point fires, so a fault fires once per run. */
  fired: 'fired',
  hits: (point: FaultPoint): string => `hits-${point}`,
  /** In a counting run (armed null): one JSON line {hit, context} per pass, so the harness can tell e.g. which intents are reads. */
  contexts: (point: FaultPoint): string => `contexts-${point}.jsonl`,
  pid: (role: FaultRole): string => `pid-${role}`,
  /** Every acknowledgement a writer client received: one JSON line {seq, event_hash, role} per event. */
  acks: (role: FaultRole, pid: number): string => `acks-${role}-${pid}.jsonl`,
} as const;
