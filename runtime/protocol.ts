// Messages on the Node IPC channel between the experiment controller (parent) and a
// ds-runtime process (child), DESIGN §2 and §6. Every message is validated with zod on
// receipt, on both sides.
//
// This file imports only schema/ and writer/ protocol files, never controller/: the
// runtime process must not load controller code (controller/manifest.ts pulls in the
// writer's store and better-sqlite3; the runtime never opens a database). The capability
// flags and the retrieval policy come from schema/, the one definition the controller's
// manifest and pre-registration use too; the controller checks it passes the signed,
// pre-registered values.
import { z } from 'zod';
import { Capabilities } from '../schema/capabilities.js';
import { RetrievalPolicy } from '../schema/retrieval-policy.js';
import { Identifier } from '../schema/event-definition.js';
import { Budget } from '../schema/events/experiment-events.js';

/** The phases of one wake, in order (DESIGN §6 steps 3–8). */
export const WAKE_PHASES = ['observe', 'think', 'plan', 'act', 'remember', 'checkpoint'] as const;
export const WakePhase = z.enum(WAKE_PHASES);
export type WakePhase = z.infer<typeof WakePhase>;

/**
 * The phases this build of the runtime does not have (issue 4 builds only "observe"; the
 * wake loop is the next issue). Reported at start and in every wake report, so nobody
 * mistakes a wake of this runtime for a wake of the subject.
 */
export const NOT_BUILT_PHASES = ['think', 'plan', 'act', 'remember', 'checkpoint'] as const satisfies readonly WakePhase[];

const Count = z.number().int().min(0);
const Seq = z.number().int().min(1);

// ---------------------------------------------------------------------------------------
// parent → child

export const RuntimeStartConfig = z.strictObject({
  type: z.literal('start'),
  subject_id: Identifier,
  /** The writer's socket (same length bound as the writer's own start config). */
  socket_path: z.string().min(1).max(100),
  /** The writer token of role `runtime`. Travels only here, never in argv or env. */
  token: z.string().min(16).max(256),
  /** The group switches, never the group letter. */
  capabilities: Capabilities,
  retrieval_policy: RetrievalPolicy,
});
export type RuntimeStartConfig = z.infer<typeof RuntimeStartConfig>;

export const RuntimeWake = z.strictObject({
  type: z.literal('wake'),
  wake_id: Identifier,
  /** Virtual time of the wake (the signed schedule's), ISO-8601. */
  wake_at: z.iso.datetime(),
  /** The last seq the runtime may see in this wake; the controller fixes it before waking. */
  visible_to_seq: Seq,
  budget: Budget,
});
export type RuntimeWake = z.infer<typeof RuntimeWake>;

export const RuntimeShutdown = z.strictObject({ type: z.literal('shutdown') });

export const RuntimeParentMessage = z.discriminatedUnion('type', [RuntimeStartConfig, RuntimeWake, RuntimeShutdown]);
export type RuntimeParentMessage = z.infer<typeof RuntimeParentMessage>;

// ---------------------------------------------------------------------------------------
// child → parent

/** Why a wake failed. The runtime never fails a wake silently; each code names one cause. */
export const WAKE_FAILURE_CODES = [
  /** Another wake is still running: one wake at a time. */
  'busy',
  /** A wake arrived before a valid start message. */
  'not_started',
  /** The wake message did not pass its schema. */
  'bad_message',
  /** The writer could not be reached, or a request timed out or lost its connection. */
  'writer_unavailable',
  /** The writer answered with a refusal (wrong token, limit, …); the message names its code. */
  'writer_refused',
  /** The writer serves another subject than the one this runtime was started for. */
  'identity_mismatch',
  /** visible_to_seq is below what an earlier wake already observed. */
  'seq_regressed',
  /** visible_to_seq is beyond the writer's head: the controller promised events that do not exist. */
  'beyond_head',
  /** The writer returned pages that are not the contiguous run of seqs asked for. */
  'read_gap',
  /** The runtime is stopping (shutdown or signal) while the wake ran. */
  'stopped',
  /** A bug in the runtime; the message says what threw. */
  'internal',
] as const;
export const WakeFailureCode = z.enum(WAKE_FAILURE_CODES);
export type WakeFailureCode = z.infer<typeof WakeFailureCode>;

export const FATAL_CODES = [
  /** No start message within the start timeout. */
  'no_config',
  /** The start message did not pass its schema. */
  'bad_start',
] as const;
export const RuntimeFatalCode = z.enum(FATAL_CODES);
export type RuntimeFatalCode = z.infer<typeof RuntimeFatalCode>;

export const RuntimeReady = z.strictObject({ type: z.literal('ready'), pid: z.number().int().min(1) });

/**
 * Sent after each append the runtime makes during a wake (running totals for the wake).
 * The controller's runtime-crash intervention kills the runtime on these counts. This
 * build makes no appends, so it never sends one; the message exists so the controller
 * can be written against it.
 */
export const WakeProgress = z.strictObject({
  wake_id: Identifier,
  appends: Count,
  execution_intents: Count,
});
export type WakeProgress = z.infer<typeof WakeProgress>;
export const RuntimeWakeProgress = WakeProgress.extend({ type: z.literal('wake_progress') });

/**
 * What one wake did. The runtime observed seqs observed_from_seq..observed_to_seq
 * (inclusive; empty when observed_to_seq = observed_from_seq − 1, i.e. nothing new was
 * visible), so events_read = observed_to_seq − observed_from_seq + 1.
 */
const WakeDoneFields = z.strictObject({
  wake_id: Identifier,
  observed_from_seq: Seq,
  observed_to_seq: Count,
  events_read: Count,
  appends: Count,
  not_built: z.array(WakePhase),
});
function checkObservedRange(d: z.infer<typeof WakeDoneFields>, ctx: z.RefinementCtx): void {
  if (d.observed_to_seq < d.observed_from_seq - 1) ctx.addIssue({ code: 'custom', path: ['observed_to_seq'], message: 'observed_to_seq must be at least observed_from_seq − 1' });
  else if (d.events_read !== d.observed_to_seq - d.observed_from_seq + 1) ctx.addIssue({ code: 'custom', path: ['events_read'], message: 'events_read must equal the length of the observed seq range' });
}
export const WakeDone = WakeDoneFields.superRefine(checkObservedRange);
export type WakeDone = z.infer<typeof WakeDone>;
export const RuntimeWakeDone = WakeDoneFields.extend({ type: z.literal('wake_done') }).superRefine(checkObservedRange);

export const WakeFailure = z.strictObject({ wake_id: Identifier, code: WakeFailureCode, message: z.string() });
export type WakeFailure = z.infer<typeof WakeFailure>;
export const RuntimeWakeFailed = WakeFailure.extend({ type: z.literal('wake_failed') });

export const RuntimeFatal = z.strictObject({ type: z.literal('fatal'), code: RuntimeFatalCode, message: z.string() });

export const RuntimeChildMessage = z.discriminatedUnion('type', [RuntimeReady, RuntimeWakeProgress, RuntimeWakeDone, RuntimeWakeFailed, RuntimeFatal]);
export type RuntimeChildMessage = z.infer<typeof RuntimeChildMessage>;
