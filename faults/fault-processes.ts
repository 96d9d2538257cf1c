// The processes of a fault run as the harness sees them from outside: a role's pid as its pid
// file names it (trusted only while the process's start time still matches), whether it still
// lives, a signal to it, and the wait for the orphans a killed controller leaves. Linux /proc.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { FAULT_FILES, type FaultRole } from '../schema/fault-points.js';
import { processStartTicks } from '../schema/fault-switch.js';

/** A controller process (new or resumed) may take this long before the harness kills it and says so. */
export const CONTROLLER_TIMEOUT_MS = 10 * 60_000;

/** After its controller is gone, a writer or runtime must be gone within this. */
export const ORPHAN_EXIT_TIMEOUT_MS = 20_000;

/** How often the harness looks at a running controller's fault files and processes. */
export const POLL_MS = 20;

/** The live process a role's pid file names, or null: a pid is trusted only while its start time still matches (pids get reused). */
export function readPid(faultDir: string, role: FaultRole): number | null {
  const file = path.join(faultDir, FAULT_FILES.pid(role));
  if (!existsSync(file)) return null;
  const [pidText, started] = readFileSync(file, 'utf8').trim().split(' ');
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 1) return null;
  return processStartTicks(pid) === started ? pid : null;
}

/** Alive and not a zombie (an orphan reparented to a PID 1 that does not reap stays a zombie). */
export function alive(pid: number): boolean {
  const state = stateOf(pid);
  return state !== 'gone' && state !== 'Z' && state !== 'X';
}

export function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits for the instance's writer and runtime to be gone after their controller; kills and reports stragglers (a frozen one included). */
export async function awaitOrphans(faultDir: string, notes: string[], kill: AbortSignal | null): Promise<string[]> {
  const problems: string[] = [];
  for (const role of ['writer', 'runtime'] as const) {
    const pid = readPid(faultDir, role);
    if (pid === null || !alive(pid)) continue;
    if (kill?.aborted) {
      // Interrupted: not waited for (its own process group may differ: isolation starts it under another uid).
      signal(pid, 'SIGKILL');
      notes.push(`the ${role} (pid ${pid}) killed at the operator's second press`);
      continue;
    }
    const deadline = Date.now() + ORPHAN_EXIT_TIMEOUT_MS;
    // Bounded by the deadline.
    while (alive(pid) && Date.now() < deadline) await sleep(POLL_MS * 5);
    if (alive(pid)) {
      const state = stateOf(pid);
      signal(pid, 'SIGKILL');
      problems.push(`the ${role} (pid ${pid}, state ${state}) outlived its controller by more than ${ORPHAN_EXIT_TIMEOUT_MS} ms and was killed by the harness`);
    }
  }
  if (problems.length > 0) notes.push(...problems);
  return problems;
}

/** The process state letter of /proc/<pid>/stat (R, S, T stopped, Z zombie …), or 'gone'. */
export function stateOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return 'gone';
  }
}
