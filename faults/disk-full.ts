// The disk of a disk_full fault run (issue 20 item 2): the run folder on a tmpfs of its own, of a
// bounded size, mounted for that run only; at the point's instant the harness fills what space
// is left (one filler file beside the run folder, never inside it), and once every process of
// the instance is gone it deletes the filler again before the resume. After the run the folder
// is copied out (the record under OUT/runs/ keeps it) and the tmpfs unmounted, always.
//
// Only root may mount. Anywhere else the run is skipped and says so (FaultRunResult.skipped):
// a kind that could not be tried must never be counted as a kind that held.
import { spawnSync } from 'node:child_process';
import { closeSync, cpSync, existsSync, mkdtempSync, openSync, rmdirSync, rmSync, statfsSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';

/**
 * The tmpfs's size. A whole instance's run folder (events.db of ~500 events with its WAL,
 * snapshots, heads.jsonl, the workspace) peaks at a few MiB; 64 MiB leaves room for any group
 * to reach any planned point before the fill, and is what the filler may allocate (RAM).
 */
export const FAULT_DISK_SIZE_KIB = 64 * 1024;
/** The filler file, in the tmpfs's root beside the run folder: verify and the workspace check never see it. */
export const FAULT_DISK_FILLER = 'filler.bin';
const FILL_CHUNK_BYTES = 1024 * 1024;
/** mount and umount are quick on a tmpfs; one that takes longer is reported, not waited for. */
const MOUNT_TIMEOUT_MS = 10_000;

export interface FaultDisk {
  /** The tmpfs's mount point. */
  readonly mountDir: string;
  /** The run folder, inside the tmpfs (the controller creates it). */
  readonly runDir: string;
}

/** Why a disk_full run cannot be tried here, or null when it can (root, and `mount` present). */
export function faultDiskUnavailable(): string | null {
  if (process.getuid?.() !== 0) return `disk_full needs root to mount a tmpfs (this process runs as uid ${process.getuid?.() ?? 'unknown'})`;
  return null;
}

function run(command: string, args: readonly string[]): { ok: true } | { ok: false; why: string } {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: MOUNT_TIMEOUT_MS });
  if (result.error) return { ok: false, why: `${command} ${args.join(' ')}: ${result.error.message}` };
  if (result.status !== 0) return { ok: false, why: `${command} ${args.join(' ')} exited ${result.status ?? result.signal}: ${(result.stderr || result.stdout).trim().slice(0, 300)}` };
  return { ok: true };
}

/** Mounts a fresh tmpfs of FAULT_DISK_SIZE_KIB for one run, or says why it cannot (the run is then skipped). */
export function mountFaultDisk(): FaultDisk | { readonly unavailable: string } {
  const refused = faultDiskUnavailable();
  if (refused !== null) return { unavailable: refused };
  const mountDir = mkdtempSync('/tmp/ds-fault-disk-');
  // 0755: the writer and runtime may run under their own uids and must reach the run folder.
  const mounted = run('mount', ['-t', 'tmpfs', '-o', `size=${FAULT_DISK_SIZE_KIB}k,mode=0755`, 'ds-fault-disk', mountDir]);
  if (!mounted.ok) {
    rmdirSync(mountDir);
    return { unavailable: `disk_full could not mount a tmpfs: ${mounted.why}` };
  }
  return { mountDir, runDir: path.join(mountDir, 'run') };
}

function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

/**
 * Fills the tmpfs to the last byte with the filler file; returns what it did, for the run's
 * notes. Bounded: the file system refuses (ENOSPC) after at most its size, and the loop stops
 * after twice that many chunks in any case. A fill that never met ENOSPC is thrown: the run
 * would test nothing.
 */
export function fillFaultDisk(disk: FaultDisk): string {
  const before = freeBytes(disk.mountDir);
  const chunk = Buffer.alloc(FILL_CHUNK_BYTES, 0x5a);
  const fd = openSync(path.join(disk.mountDir, FAULT_DISK_FILLER), 'wx', 0o600);
  let written = 0;
  let full = false;
  try {
    const maxPasses = (2 * FAULT_DISK_SIZE_KIB * 1024) / FILL_CHUNK_BYTES;
    for (let pass = 0; pass < maxPasses && !full; pass += 1) {
      try {
        written += writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
        full = true;
      }
    }
  } finally {
    closeSync(fd);
  }
  if (!full) throw new Error(`the filler wrote ${written} bytes into ${disk.mountDir} without the file system refusing (ENOSPC): the disk was not filled`);
  return `filled the run folder's disk: ${written} byte(s) of filler (${before} were free, ${freeBytes(disk.mountDir)} are now)`;
}

/** Deletes the filler (once every process of the instance is gone): the resume finds the space the run had. */
export function freeFaultDisk(disk: FaultDisk): string {
  const file = path.join(disk.mountDir, FAULT_DISK_FILLER);
  if (!existsSync(file)) return 'no filler to delete (the disk was never filled)';
  const bytes = statSync(file).size;
  rmSync(file);
  return `freed the run folder's disk: deleted ${bytes} byte(s) of filler (${freeBytes(disk.mountDir)} free now)`;
}

/**
 * Copies the run folder out to `recordRunDir` (the record keeps it), then unmounts the tmpfs and
 * removes its mount point — the unmount also when the copy failed. Returns notes; an unmount
 * that fails is tried lazily (detached now, freed when the last user lets go) and said.
 */
export function releaseFaultDisk(disk: FaultDisk, recordRunDir: string): string[] {
  const notes: string[] = [];
  try {
    if (existsSync(disk.runDir)) cpSync(disk.runDir, recordRunDir, { recursive: true });
    else notes.push(`the run folder ${disk.runDir} was never created: nothing to copy out`);
  } catch (error) {
    notes.push(`copying the run folder out of its tmpfs failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const unmounted = run('umount', [disk.mountDir]);
  if (!unmounted.ok) {
    const lazy = run('umount', ['-l', disk.mountDir]);
    notes.push(`unmounting ${disk.mountDir} failed (${unmounted.why}); ${lazy.ok ? 'detached lazily instead' : `the lazy unmount failed too (${lazy.why}): the tmpfs is still mounted`}`);
    if (!lazy.ok) return notes;
  }
  rmdirSync(disk.mountDir);
  return notes;
}
