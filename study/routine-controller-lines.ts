// Which of a controller's lines about an instance are routine: the instance's processes.log keeps
// them, and neither a study's screen (cli/study-log-lines.ts) nor a batch task's stderr (the
// scheduler's log, study/batch/instance-task.ts) repeats them. Anything not known as routine is
// said there whole, so a warning, a retry or a stop is never only in a file.

/** A wake that ended as planned: completed, or crashed by a crash drill the plan holds. */
export const WAKE_LINE = /^wake-(\d+) at (h\d+:\d\d) \([^)]*\)(?: · (.*))? · (completed|crashed)$/;

/** The controller's routine lines besides the wakes. */
export const ROUTINE_LINES: readonly RegExp[] = [/^isolation: /, /^manifest signed /, /^ds-writer pid \d+ serving seq \d+$/, /^ds-runtime pid \d+$/, /^periodic head signed at seq \d+$/, /^ds-writer killed as planned /, /^model preflight: OK$/, /^sealed at seq \d+; final head signed$/];

/** Whether `text` (a controller line, without the instance's `[G-rk] ` prefix) is a routine line. */
export function isRoutineControllerLine(text: string): boolean {
  return WAKE_LINE.test(text) || ROUTINE_LINES.some((r) => r.test(text));
}
