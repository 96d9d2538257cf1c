// Vitest's global setup: one temporary folder for the whole run, on tmpfs (/dev/shm) when the
// machine has room there, made TMPDIR for every worker and every process the tests start.
//
// Why: the suite writes thousands of durable commits (every store runs WAL with
// synchronous=FULL), and on this machine's disk a commit's fsync costs ~5 ms under load
// against ~0.1 ms on tmpfs (measured with better-sqlite3, 500 commits each). What the tests
// check is unchanged: an fsync still happens and a SIGKILLed process still loses nothing the
// page cache holds; only power loss, which no test simulates, would tell the two apart.
//
// The folder is mode 1777 like /tmp: a writer or runtime under a separate uid must reach its
// bundle and sockets through it. It also holds the run's fixture cache (fixture-cache.ts).
// tsx's transform cache (TMPDIR/tsx-UID, content-addressed) is linked to the usual one, so the
// CLI processes the tests start do not each compile the code anew. Removed at the end of the run.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statfsSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const RAM_DISK = '/dev/shm';
/** What the suite may hold at once (its largest stores are the 100,000-event ones, ~100 MB each), with a wide margin. */
const MIN_RAM_DISK_FREE_BYTES = 4 * 1024 ** 3;
/** The environment variable naming the fixture cache's folder (see fixture-cache.ts). */
export const FIXTURE_CACHE_ENV = 'DS_TEST_FIXTURE_CACHE';
/** The temporary folder the run would have had (on disk): for a test that hard-links the checkout, which tmpfs cannot. */
export const SYSTEM_TMPDIR_ENV = 'DS_TEST_SYSTEM_TMPDIR';

/** The system's temporary folder, not the run's tmpfs one: the same file system as before this setup. */
export function systemTmpdir(): string {
  return process.env[SYSTEM_TMPDIR_ENV] ?? tmpdir();
}

function ramDiskFreeBytes(): number | null {
  if (!existsSync(RAM_DISK)) return null;
  try {
    const s = statfsSync(RAM_DISK);
    return s.bavail * s.bsize;
  } catch {
    return null;
  }
}

export default function setup(): () => void {
  const saved = { TMPDIR: process.env['TMPDIR'], cache: process.env[FIXTURE_CACHE_ENV], system: process.env[SYSTEM_TMPDIR_ENV] };
  const free = ramDiskFreeBytes();
  const onRam = free !== null && free >= MIN_RAM_DISK_FREE_BYTES;
  const root = mkdtempSync(path.join(onRam ? RAM_DISK : tmpdir(), 'ds-test-run-'));
  chmodSync(root, 0o1777);
  const cache = path.join(root, 'fixture-cache');
  mkdirSync(cache);
  const tsxCache = `tsx-${process.getuid?.() ?? 'user'}`;
  mkdirSync(path.join(tmpdir(), tsxCache), { recursive: true, mode: 0o700 });
  symlinkSync(path.join(tmpdir(), tsxCache), path.join(root, tsxCache));
  // Said, not silent: where the run's files go, and why not on tmpfs when they do not.
  const why = onRam ? 'tmpfs' : free === null ? `no ${RAM_DISK}` : `${RAM_DISK} has ${(free / 1024 ** 3).toFixed(1)} GiB free, under ${MIN_RAM_DISK_FREE_BYTES / 1024 ** 3} GiB`;
  console.log(`[suite] TMPDIR=${root} (${why})`);
  process.env[SYSTEM_TMPDIR_ENV] = tmpdir();
  process.env['TMPDIR'] = root;
  process.env[FIXTURE_CACHE_ENV] = cache;
  return () => {
    for (const [name, value] of [['TMPDIR', saved.TMPDIR], [FIXTURE_CACHE_ENV, saved.cache], [SYSTEM_TMPDIR_ENV, saved.system]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(root, { recursive: true, force: true });
  };
}
