// Why a manual repair (controller/operator-resolution.ts, `npm run repair`) was not made: one code
// per reason, each message saying what to do instead. The codes are the command's own, whole
// (docs/errors.md lists them under repair); nothing was appended unless the message says so.
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { CodedErrorOf } from '../foundation/typed-error.js';
import type { VerifyFailure } from '../writer/verify-store.js';

export const OPERATOR_RESOLUTION_REFUSALS = [
  /** No events.db in the folder. */
  'not_found',
  /** The caller may not write the store (not its owner, not root). */
  'permission',
  /** A writer holds the store (a running instance, a resume, another repair): safe, nothing changed. */
  'store_locked',
  /** The file is not an intact SQLite database (store-file-failure.ts; SQLite's quick_check). */
  'store_damaged',
  /** events.db is 0 bytes. */
  'store_empty',
  /** The file cannot be read, or the disk failed a read or write of it. */
  'store_unreadable',
  'store_io_error',
  /** The file, or its folder, may not be written: the writer cannot open it; or the disk is full. */
  'store_read_only',
  'store_full',
  'not_a_store',
  /** npm run verify's checks failed: `failures` lists them. */
  'verify_failed',
  /** Not a Subject store, or one of other projector / state machine / event schema versions. */
  'not_subject_store',
  'sealed',
  /** A WakeStarted with neither its WakeEnded nor a stop after it: the controller died inside the wake. */
  'wake_in_progress',
  /**
   * The projector refuses the statement because no row of the lifecycle table (LIFECYCLE_TABLE)
   * takes SystemEvent.OperatorResolved from the subject's state. Since state machine 1.3.0 every
   * state an unknown outcome can be open in (RECOVERING, STOPPED, PAUSED) has one, so only a
   * stored state this build's writer never produces ends here.
   */
  'lifecycle',
  'not_an_intent',
  'intent_pending',
  'intent_closed',
  /** A statement for this intent is recorded, and it is not the one asked for now. */
  'already_resolved',
  /** The projector would refuse the event for a reason the checks above do not name. */
  'projection_refused',
  /** The store moved between the checks and the writer's start. */
  'store_changed',
  /** The writer would not start, or refused the append: its code and message, verbatim. */
  'writer_refused',
  /** The connection was lost around the append: its outcome is unknown (repeat the command). */
  'writer_unavailable',
] as const;
export const OperatorResolutionRefusalCode = z.enum(OPERATOR_RESOLUTION_REFUSALS);
export type OperatorResolutionRefusalCode = z.infer<typeof OperatorResolutionRefusalCode>;

/** A repair that was not made, with what to do about it; nothing was appended unless the message says so. */
/** Each refusal's code is whole (classCode null: docs/errors.md lists them under repair). */
export class OperatorResolutionRefusal extends CodedErrorOf<OperatorResolutionRefusalCode>(null, EXIT_CODES.failed) {
  override readonly name = 'OperatorResolutionRefusal';
  constructor(
    code: OperatorResolutionRefusalCode,
    message: string,
    /** For `verify_failed`: every failure verify listed. */
    readonly failures: readonly VerifyFailure[] = [],
  ) {
    super(code, message);
  }
  override get screenText(): string {
    return `REFUSED (${this.code}): ${this.message}`;
  }
  override get endingDetails(): Readonly<Record<string, unknown>> {
    return { failures: this.failures };
  }
}
