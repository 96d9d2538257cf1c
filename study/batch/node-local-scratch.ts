// Where a batch task keeps an instance's store while it runs (issue 18 item 2): node-local
// scratch. SQLite's WAL needs shared memory and POSIX locks that network file systems (NFS,
// Lustre, GPFS, CIFS, CephFS, BeeGFS, …) do not give across clients, so a store there could be
// silently corrupted; such a folder is refused with what to do. The study folder may sit on one:
// it only receives sealed (closed, checkpointed) copies. The file system is read from the
// kernel's mount table (/proc/self/mountinfo): the mount holding the folder, longest prefix.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { CodedErrorOf } from '../../foundation/typed-error.js';

/** File system types whose clients do not share SQLite's WAL index or locks safely. */
export const NETWORK_FILE_SYSTEMS: ReadonlySet<string> = new Set([
  'nfs', 'nfs4', 'cifs', 'smb3', 'smbfs', 'lustre', 'gpfs', 'ceph', 'glusterfs', 'beegfs', '9p', 'afs', 'pvfs2', 'orangefs', 'panfs', 'gfs2', 'ocfs2', 'davfs',
  'fuse.glusterfs', 'fuse.sshfs', 'fuse.s3fs', 'fuse.gcsfuse', 'fuse.rclone', 'fuse.juicefs', 'fuse.cephfs', 'fuse.beegfs', 'fuse.lustre',
]);

/** A mount table longer than this is not read further (a bound; real tables hold hundreds). */
const MAX_MOUNT_LINES = 100_000;

export class ScratchError extends CodedErrorOf<'network_file_system' | 'scratch_unusable'>('scratch', EXIT_CODES.misused) {
  override readonly name = 'ScratchError';
}

export interface MountOf {
  readonly mountPoint: string;
  readonly fsType: string;
  readonly source: string;
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** The mount that holds `realPath` (an absolute, resolved path) in a mountinfo text; null when none parses. */
export function mountOf(realPath: string, mountinfo: string): MountOf | null {
  let best: MountOf | null = null;
  const lines = mountinfo.split('\n');
  for (const line of lines.slice(0, MAX_MOUNT_LINES)) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (dash < 6 || fields.length < dash + 3) continue;
    const mountPoint = unescapeMountField(fields[4]!);
    const inside = mountPoint === '/' || realPath === mountPoint || realPath.startsWith(`${mountPoint}/`);
    // Later lines mount over earlier ones at the same point: >= keeps the last.
    if (inside && (best === null || mountPoint.length >= best.mountPoint.length)) best = { mountPoint, fsType: fields[dash + 1]!, source: unescapeMountField(fields[dash + 2]!) };
  }
  return best;
}

/** The scratch root a task uses: --scratch, else $DS_SCRATCH, else $TMPDIR, else the system's temporary folder. */
export function scratchRootOf(flag: string | undefined, env: NodeJS.ProcessEnv): { readonly root: string; readonly from: string } {
  if (flag !== undefined) return { root: path.resolve(flag), from: '--scratch' };
  if (env['DS_SCRATCH']) return { root: path.resolve(env['DS_SCRATCH']), from: '$DS_SCRATCH' };
  if (env['TMPDIR']) return { root: path.resolve(env['TMPDIR']), from: '$TMPDIR' };
  return { root: tmpdir(), from: 'the system temporary folder' };
}

/**
 * Refuses a store folder on a network file system (ScratchError, exit 2), naming the mount and
 * what to do. `mountinfo`: the kernel's table (read from /proc when not given); without one
 * (not Linux) the check cannot be made and says so in the returned note.
 */
export function checkNodeLocal(dir: string, from: string, mountinfo: string | null = readMountinfo()): string {
  let at = path.resolve(dir);
  for (let depth = 0; !existsSync(at) && depth < 4096; depth += 1) at = path.dirname(at);
  const real = realpathSync(at);
  if (mountinfo === null) return `the file system of ${dir} could not be checked (no /proc/self/mountinfo): make sure it is node-local (SQLite WAL does not work on network file systems)`;
  const mount = mountOf(real, mountinfo);
  if (mount === null) return `the file system of ${dir} could not be found in /proc/self/mountinfo: make sure it is node-local (SQLite WAL does not work on network file systems)`;
  if (NETWORK_FILE_SYSTEMS.has(mount.fsType) || mount.fsType.startsWith('nfs')) {
    throw new ScratchError('network_file_system', `${dir} (from ${from}) is on ${mount.fsType} (${mount.source} mounted at ${mount.mountPoint}), a network file system: SQLite's WAL, which every store uses, does not work there and a store could be corrupted without a sign. Give the task node-local scratch: --scratch DIR (or $DS_SCRATCH / $TMPDIR) on a local disk or tmpfs, e.g. Slurm's job-local $TMPDIR or a Kubernetes emptyDir; the study folder itself may stay on shared storage. Nothing was run or changed`);
  }
  return `scratch ${dir} (from ${from}) is on ${mount.fsType} at ${mount.mountPoint}: node-local`;
}

function readMountinfo(): string | null {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
}
