// Simulated time in a blind-review package (DESIGN §10): minutes since hour 0 of the study's
// schedule, written "h12:30", so that no absolute time says when (or which) a run was.
/** Simulated times past this many hours are not a study's (the schedule has 72). */
export const MAX_SIM_HOURS = 999;
export const MS_PER_MINUTE = 60_000;

const ISO_TIME_RE = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?/g;

export function formatSimMinute(minute: number): string {
  const h = Math.floor(minute / 60);
  const m = minute % 60;
  return `h${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`;
}

/** Simulated time of an ISO time relative to hour 0: "h12:30", or a word when outside the study. */
export function relativeTime(iso: string, startMs: number): string {
  const ms = Date.parse(/(?:Z|[+-]\d{2}:?\d{2})$/.test(iso) ? iso : `${iso}Z`);
  if (!Number.isFinite(ms)) return '[time]';
  const minute = Math.floor((ms - startMs) / MS_PER_MINUTE);
  if (minute < 0) return 'before hour 0';
  if (minute >= MAX_SIM_HOURS * 60) return `after h${MAX_SIM_HOURS}`;
  return formatSimMinute(minute);
}

/** Every ISO-8601 time in `text` as simulated time (see relativeTime). */
export function rewriteTimes(text: string, startMs: number): string {
  return text.replace(ISO_TIME_RE, (iso) => relativeTime(iso, startMs));
}
