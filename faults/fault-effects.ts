// What the harness does when a planned fault point fires (harnessActionOf): kill a role, fill the
// disk, stall the model server, damage the snapshots or tamper with the workspace while the
// runtime is down. Each effect is noted in the run's notes, so the record says what was done.
import { assertNever } from '../foundation/assert-never.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { harnessActionOf, type FaultReached } from '../schema/fault-points.js';
import { hashText } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { fillFaultDisk, type FaultDisk } from './disk-full.js';
import { tamperTargetOf } from './fault-plan.js';
import { alive, readPid, signal } from './fault-processes.js';
import type { FaultModelServer } from './model-server.js';

/** Snapshot rows the corruption flips bytes in (the newest ones). */
const CORRUPTED_SNAPSHOTS = 2;

const TAMPERED_CONTENT = 'written by a third party while the runtime was down (npm run faults: workspace_tampered)\n';

/** Damage the writer's cache while nothing runs: the resumed instance and the restore drill must not depend on it. */
export function damageSnapshots(dbFile: string, how: 'delete' | 'corrupt'): string {
  const db = new Database(dbFile);
  try {
    if (how === 'delete') {
      const { changes } = db.prepare('DELETE FROM snapshots').run();
      return `deleted ${changes} snapshot row(s)`;
    }
    const rows = db.prepare('SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT ?').all(CORRUPTED_SNAPSHOTS) as Array<{ seq: number; state: string }>;
    for (const row of rows) {
      // Bit rot, not a forgery: the state_hash stays, so the state no longer hashes to it.
      const middle = Math.floor(row.state.length / 2);
      const flipped = `${row.state.slice(0, middle)}${row.state[middle] === 'x' ? 'y' : 'x'}${row.state.slice(middle + 1)}`;
      db.prepare('UPDATE snapshots SET state = ? WHERE seq = ?').run(flipped, row.seq);
    }
    return `flipped a byte in the state of ${rows.length} snapshot row(s) (seq ${rows.map((r) => r.seq).join(', ')})`;
  } finally {
    db.close();
  }
}

export function tamperWorkspace(runDir: string, reached: FaultReached): string {
  const target = tamperTargetOf(reached);
  if (target === null) throw new Error(`the fault point gave no path to tamper with (${JSON.stringify(reached.context)})`);
  const file = path.join(runDir, RUN_FILES.workspace, ...target.split('/'));
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, TAMPERED_CONTENT);
  return `overwrote workspace/${target} with third-party bytes (${hashText(TAMPERED_CONTENT).slice(0, 19)}…)`;
}

/**
 * The fault carried out while the process at the point is frozen: the victim killed and the frozen
 * one continued unless it was the victim, the disk filled and the frozen one continued, or a
 * process held `stallMs` and continued (a stall): the frozen one, or the run's model server — frozen
 * before the runtime is continued, so that the call the runtime then sends finds it standing.
 */
export function carryOut(reached: FaultReached, faultDir: string, controllerPid: number, disk: { readonly disk: FaultDisk | null; filled: boolean }, modelServer: FaultModelServer | null, notes: string[], stallMs: number): void {
  if (!reached.frozen) {
    notes.push(`${reached.kind} carried out by the ${reached.role} itself at hit ${reached.hit} of ${reached.point}`);
    return;
  }
  const action = harnessActionOf(reached.kind);
  switch (action.act) {
    case 'none':
      throw new Error(`bug: ${reached.kind} froze the ${reached.role} but the harness has nothing to do for it`);
    case 'fill_disk': {
      try {
        if (disk.disk === null) throw new Error(`bug: ${reached.kind} fired in a run whose folder is on no disk of its own`);
        notes.push(`${fillFaultDisk(disk.disk)} while the ${reached.role} stood at hit ${reached.hit} of ${reached.point}`);
        disk.filled = true;
      } catch (error) {
        // Said, and failed by disk_full_stop: this runs in the harness's poll, where a throw would end the harness.
        notes.push(`the disk was NOT filled at hit ${reached.hit} of ${reached.point}: ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        // Continued whatever happened: a process left frozen would hang the instance.
        signal(reached.pid, 'SIGCONT');
      }
      return;
    }
    case 'stall': {
      if (action.held === 'model_server') {
        if (modelServer === null) {
          notes.push(`the model server was NOT frozen at hit ${reached.hit} of ${reached.point}: this run has none (the instance answers with another model)`);
          signal(reached.pid, 'SIGCONT');
          return;
        }
        const frozen = signal(modelServer.pid, 'SIGSTOP');
        notes.push(frozen ? `the model server (pid ${modelServer.pid}) held frozen for ${stallMs} ms from hit ${reached.hit} of ${reached.point} (call ${String(reached.context.call_number)} of ${String(reached.context.wake_id)})` : `the model server (pid ${modelServer.pid}) could NOT be frozen at hit ${reached.hit} of ${reached.point}: it is gone`);
        signal(reached.pid, 'SIGCONT');
        setTimeout(() => {
          if (signal(modelServer.pid, 'SIGCONT')) notes.push(`SIGCONT to the model server (pid ${modelServer.pid}) after ${stallMs} ms`);
          else notes.push(`the stalled model server (pid ${modelServer.pid}) was gone before its ${stallMs} ms were up: nothing to continue`);
        }, stallMs).unref();
        return;
      }
      notes.push(`the ${reached.role} (pid ${reached.pid}) held frozen at hit ${reached.hit} of ${reached.point} for ${stallMs} ms`);
      // unref: a run that ends meanwhile (its processes killed) is not held open by it.
      setTimeout(() => {
        // Only the very process that froze (a pid is trusted while its start time matches).
        if (readPid(faultDir, reached.role) === reached.pid && signal(reached.pid, 'SIGCONT')) notes.push(`SIGCONT to the ${reached.role} (pid ${reached.pid}) after ${stallMs} ms`);
        else notes.push(`the stalled ${reached.role} (pid ${reached.pid}) was gone before its ${stallMs} ms were up: nothing to continue`);
      }, stallMs).unref();
      return;
    }
    case 'kill': {
      const victimRole = action.victim;
      const victim = victimRole === 'controller' ? controllerPid : readPid(faultDir, victimRole);
      if (victim === null) notes.push(`no ${victimRole} was running at that instant (no pid file names a live one): nothing to kill`);
      else notes.push(`SIGKILL to the ${victimRole} (pid ${victim}${alive(victim) ? '' : ', already gone'}) while the ${reached.role} stood at hit ${reached.hit} of ${reached.point}`);
      if (victim !== null) signal(victim, 'SIGKILL');
      if (victim !== reached.pid) signal(reached.pid, 'SIGCONT');
      return;
    }
    default: {
      assertNever(action, 'harness action');
    }
  }
}
