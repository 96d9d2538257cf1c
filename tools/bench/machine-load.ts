// How busy the machine was around a bench run (issue 34 item 5): the load average at start and
// end, the CPU count, and — where Linux's /proc says — the CPU that processes other than the
// bench's own used while each part ran. A run made under load is marked UNDER LOAD (text and
// JSON), and every aim judged in it says so: its figures measured the machine as much as the code.
//
// Why not the end's load average alone: the 1-minute load average at the end counts the bench's
// own processes (its last minute ran an instance: controller, writer, runtime, the stub), so it
// reads high after every run, quiet or not. /proc/stat's busy time less this process tree's
// (/proc/<pid>/stat: this process, its live descendants, and what its reaped children used)
// is what the others took; where /proc is missing the end's load average is all there is,
// and it is used, with that said.
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { z } from 'zod';

/**
 * A run is UNDER LOAD when, per core, more than this much of other work was runnable: the
 * 1-minute load average at the start (before the bench started anything, all of it is others'),
 * or the others' CPU while it ran. Why a half: the bench's measured cases keep one to three
 * processes busy (raw: one; append: client and writer; a wake: controller, runtime, writer), so
 * on this 2-core machine one other busy task (load 1.0) means a measured process waits for a
 * core for a good share of its time, and the raw side (one process) and ours (two or three)
 * wait differently, which is exactly what skews a ratio. Below half a core per core the machine
 * still has a core free most of the time.
 */
export const UNDER_LOAD_PER_CORE = 0.5;
/** /proc holds one entry per process; never read more than this many (pid_max is 32,768 by default, 4M at most). */
const MAX_PROC_ENTRIES = 4_194_304;

/** Machine-wide CPU ticks (/proc/stat, all cores) and this process tree's (/proc/<pid>/stat), in USER_HZ. */
export interface CpuTicks {
  readonly busy: number;
  readonly total: number;
  readonly own: number;
}

export interface LoadReading {
  /** os.loadavg(): 1, 5 and 15 minutes. */
  readonly load_avg: readonly [number, number, number];
  /** null: no /proc here (not Linux); the mark then rests on the load averages alone. */
  readonly ticks: CpuTicks | null;
}

/** busy = user + nice + system + irq + softirq + steal (steal: another VM ran on our core); total adds idle and iowait. */
export function parseProcStat(text: string): { busy: number; total: number } {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) throw new Error('/proc/stat has no "cpu " line');
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const fields = [user, nice, system, idle, iowait, irq, softirq, steal];
  if (fields.some((f) => f === undefined || !Number.isFinite(f))) throw new Error(`/proc/stat cpu line unreadable: ${line}`);
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy, total: busy + idle! + iowait! };
}

/** From /proc/<pid>/stat: the parent and utime + stime + cutime + cstime (fields 4 and 14-17; the name in parentheses may hold spaces). */
export function parsePidStat(text: string): { ppid: number; ticks: number } {
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state): field n is rest[n - 3].
  const ppid = Number(rest[1]);
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(rest[i]), 0);
  if (!Number.isFinite(ppid) || !Number.isFinite(ticks)) throw new Error(`unreadable /proc/<pid>/stat: ${text.slice(0, 120)}`);
  return { ppid, ticks };
}

/**
 * This process and its live descendants, each with what its own reaped children used (cutime):
 * a child that exited and was reaped moved its whole time into its parent's, so nothing is lost
 * or counted twice between two readings.
 */
function ownTreeTicks(): number {
  const byPid = new Map<number, { ppid: number; ticks: number }>();
  const entries = readdirSync('/proc');
  if (entries.length > MAX_PROC_ENTRIES) throw new Error(`/proc lists ${entries.length} entries, more than ${MAX_PROC_ENTRIES}`);
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      byPid.set(Number(name), parsePidStat(readFileSync(`/proc/${name}/stat`, 'utf8')));
    } catch {
      // Gone between the listing and the read: its time is in its parent's cutime, or it was not ours.
    }
  }
  const children = new Map<number, number[]>();
  for (const [pid, p] of byPid) children.set(p.ppid, [...(children.get(p.ppid) ?? []), pid]);
  let total = 0;
  const queue = [process.pid];
  const seen = new Set<number>();
  while (queue.length > 0 && seen.size <= byPid.size) {
    const pid = queue.shift()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    total += byPid.get(pid)?.ticks ?? 0;
    queue.push(...(children.get(pid) ?? []));
  }
  return total;
}

function readTicks(): CpuTicks | null {
  try {
    const machine = parseProcStat(readFileSync('/proc/stat', 'utf8'));
    return { ...machine, own: ownTreeTicks() };
  } catch {
    return null;
  }
}

export function readLoad(): LoadReading {
  const [one, five, fifteen] = os.loadavg();
  return { load_avg: [one ?? 0, five ?? 0, fifteen ?? 0], ticks: readTicks() };
}

export function cpuCount(): number {
  return os.cpus().length;
}

/** Cores' worth of CPU that processes other than the bench's used between two readings (null without /proc). */
export function othersCpuCores(from: LoadReading, to: LoadReading, cores: number): number | null {
  if (from.ticks === null || to.ticks === null) return null;
  const total = to.ticks.total - from.ticks.total;
  if (!(total > 0)) return null;
  const others = to.ticks.busy - from.ticks.busy - (to.ticks.own - from.ticks.own);
  // Ticks are counted per core and sampled at different moments: a small negative is rounding.
  return Math.round(Math.max(0, others / total) * cores * 100) / 100;
}

const loadTriple = z.tuple([z.number(), z.number(), z.number()]);

export const LoadMark = z.strictObject({
  cores: z.number().int().positive(),
  /** UNDER_LOAD_PER_CORE × cores: the one threshold, in load-average units (runnable tasks). */
  threshold: z.number(),
  load_avg_start: loadTriple,
  /** Counts the bench's own processes of its last minute: read with others_cpu_cores. */
  load_avg_end: loadTriple,
  /** Cores' worth of others' CPU over the whole run (null: no /proc). */
  others_cpu_cores: z.number().nullable(),
  /** The same per part of the bench, in run order. */
  others_cpu_cores_by_phase: z.record(z.string(), z.number().nullable()),
  under_load: z.boolean(),
  /** Why it is marked; empty when it is not. */
  reasons: z.array(z.string()),
});
export type LoadMark = z.infer<typeof LoadMark>;

export interface LoadInput {
  readonly cores: number;
  readonly start: LoadReading;
  readonly end: LoadReading;
  readonly phases: Readonly<Record<string, { readonly from: LoadReading; readonly to: LoadReading }>>;
}

/** Whether the run was made under load, and why (pure: the readings are its only input). */
export function loadMark(input: LoadInput): LoadMark {
  const { cores, start, end } = input;
  if (!(Number.isInteger(cores) && cores > 0)) throw new Error(`cpu count ${cores}`);
  const threshold = UNDER_LOAD_PER_CORE * cores;
  const others = othersCpuCores(start, end, cores);
  const byPhase = Object.fromEntries(Object.entries(input.phases).map(([name, p]) => [name, othersCpuCores(p.from, p.to, cores)]));
  const reasons: string[] = [];
  if (start.load_avg[0] > threshold) reasons.push(`1-minute load ${start.load_avg[0].toFixed(2)} at the start > ${threshold} (${UNDER_LOAD_PER_CORE} x ${cores} cores)`);
  if (others !== null && others > threshold) reasons.push(`other processes used ${others} cores on average while it ran > ${threshold}`);
  const busyPhases = Object.entries(byPhase).filter(([, v]) => v !== null && v > threshold);
  if (others !== null && others <= threshold && busyPhases.length > 0) reasons.push(`other processes used more than ${threshold} cores during ${busyPhases.map(([n, v]) => `${n} (${v})`).join(', ')}`);
  if (others === null && end.load_avg[0] > threshold) reasons.push(`1-minute load ${end.load_avg[0].toFixed(2)} at the end > ${threshold} (no /proc to take the bench's own share out)`);
  return LoadMark.parse({
    cores,
    threshold,
    load_avg_start: [...start.load_avg],
    load_avg_end: [...end.load_avg],
    others_cpu_cores: others,
    others_cpu_cores_by_phase: byPhase,
    under_load: reasons.length > 0,
    reasons,
  });
}

const triple = (t: readonly number[]): string => t.map((x) => x.toFixed(2)).join(' ');

/** Two lines for the top and the end of the text output. */
export function loadLines(mark: LoadMark): string[] {
  const phases = Object.entries(mark.others_cpu_cores_by_phase).map(([n, v]) => `${n} ${v ?? '?'}`).join(', ');
  return [
    `machine: ${mark.cores} cores; load average (1/5/15 min) at start ${triple(mark.load_avg_start)}, at end ${triple(mark.load_avg_end)} (the end counts the bench's own processes); others' CPU while it ran ${mark.others_cpu_cores ?? '? (no /proc)'} cores${phases === '' ? '' : ` (${phases})`}`,
    mark.under_load
      ? `UNDER LOAD: ${mark.reasons.join('; ')}. Every figure below measured the machine as much as the code; rerun when it is quiet`
      : `not under load: start load and others' CPU at most ${mark.threshold} (${UNDER_LOAD_PER_CORE} per core)`,
  ];
}
