// The exit codes every command shares (docs/errors.md, docs/controller.md, docs/oracle.md), defined
// once, in the innermost room: a typed error of any room carries the one it ends a command with
// (foundation/typed-error.ts). A batch scheduler reads them (DESIGN §12): 3 = requeue (resumable), 2 = do not
// retry (misuse); 4 = the command ran to its end and wrote its record, but what it produced is not
// evidence — retrying the same configuration would not change that, so it is not 3.
export const EXIT_CODES = {
  /** experiment: finished (sealed), verified, usable data · study: report written, batch valid (supported or rejected). */
  ok: 0,
  /** Refused, failed, or not verified: the message says which and what to do. */
  failed: 1,
  /** The command was misused (flags). */
  misused: 2,
  /** Stopped by the operator: resumable. */
  stopped: 3,
  /** experiment: finished and verified, but NO USABLE DATA (issue 15 item 8) · study: report written, batch void or evidence insufficient. */
  notEvidence: 4,
  /** Abandoned at the operator's second press (128 + SIGINT, what a shell reports for Ctrl-C): nothing recorded, `--resume` records the interruption. */
  abandoned: 130,
} as const;

export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];
