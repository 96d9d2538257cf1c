// What `npm run study -- --status DIR` prints (study/batch/batch-status.ts reads the folder): the
// counts by state, then the stragglers by name — every failed and stopped instance up to a bound,
// the longest-running ones, the missing ones as index ranges — and the next step. At 300 instances
// that is a dozen lines, not 300; --list adds one line per instance, --json has every one.
import type { InstanceStatus, StudyStatus } from '../study/batch/batch-status.js';

/** Failed or stopped instances named one by one, each kind; beyond, counted. */
export const MAX_NAMED_PER_STATE = 5;
/** Running instances named: the ones running longest. */
export const MAX_RUNNING_NAMED = 3;
/** The missing instances' index ranges are cut here (the count is always whole). */
const MAX_RANGES_CHARS = 200;

function instanceLine(i: InstanceStatus): string {
  return `  ${i.state.padEnd(7)} ${String(i.index).padStart(5)} ${i.instance}${i.detail ? `: ${i.detail}` : ''}${i.rerun ? `  → ${i.rerun}` : ''}`;
}

/** Sorted indices as ranges: 3-8,11,20-299. */
export function indexRuns(indices: readonly number[]): string {
  const runs: string[] = [];
  for (let k = 0; k < indices.length; ) {
    let end = k;
    while (end + 1 < indices.length && indices[end + 1] === indices[end]! + 1) end += 1;
    runs.push(end === k ? `${indices[k]}` : `${indices[k]}-${indices[end]}`);
    k = end + 1;
  }
  const text = runs.join(',');
  return text.length <= MAX_RANGES_CHARS ? text : `${text.slice(0, MAX_RANGES_CHARS)}… (--list names every one)`;
}

function runningFor(since: string, nowMs: number): string {
  const minutes = Math.max(0, Math.floor((nowMs - Date.parse(since)) / 60_000));
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** The stragglers: failed and stopped named (bounded), the longest-running named, missing as ranges. */
function stragglerLines(s: StudyStatus, nowMs: number): string[] {
  const lines: string[] = [];
  for (const state of ['failed', 'stopped'] as const) {
    const these = s.instances.filter((i) => i.state === state);
    lines.push(...these.slice(0, MAX_NAMED_PER_STATE).map(instanceLine));
    if (these.length > MAX_NAMED_PER_STATE) lines.push(`  … and ${these.length - MAX_NAMED_PER_STATE} more ${state}: indices ${indexRuns(these.slice(MAX_NAMED_PER_STATE).map((i) => i.index))}`);
  }
  const running = s.instances.filter((i) => i.state === 'running').sort((a, b) => (a.since ?? '').localeCompare(b.since ?? ''));
  lines.push(...running.slice(0, MAX_RUNNING_NAMED).map((i) => `${instanceLine(i)} (running ${i.since === null ? 'for an unknown time' : runningFor(i.since, nowMs)})`));
  if (running.length > MAX_RUNNING_NAMED) lines.push(`  … and ${running.length - MAX_RUNNING_NAMED} more running, for less long`);
  const missing = s.instances.filter((i) => i.state === 'missing');
  if (missing.length > 0) lines.push(`  missing ${missing.length}: indices ${indexRuns(missing.map((i) => i.index))}${missing[0]!.rerun ? `  → e.g. ${missing[0]!.rerun}` : ''}`);
  return lines;
}

export function statusText(s: StudyStatus, list: boolean, nowMs: number = Date.now()): string {
  return [
    `${s.study_id}: ${s.planned} planned · ${s.counts.done} done · ${s.counts.running} running · ${s.counts.stopped} stopped · ${s.counts.missing} missing · ${s.counts.failed} failed`,
    ...(list ? s.instances.map(instanceLine) : stragglerLines(s, nowMs)),
    `next: ${s.next}`,
    ...(list || s.counts.done === s.planned ? [] : ['(every instance, one line each: add --list)']),
    '',
  ].join('\n');
}
