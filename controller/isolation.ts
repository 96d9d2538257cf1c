// Why one file: choosing the uids, probing that they can read the code, and making the readable copy are one decision with one fallback (same-uid, with its reason); its steps share the probe and the plan they build.
// Process isolation (DESIGN §2, issue 4 item 7): started as root, the controller runs the
// writer and the runtime under two separate unprivileged uids, so that events.db is
// readable by the writer's uid only and the key folder by the controller only. When it
// cannot (not root, users not creatable, code not readable by them), it still runs, under
// one uid, and says `isolation: same-uid` with the reason in the manifest and on screen —
// never silently.
//
// A process under another uid must be able to read the code it runs: a checkout inside a
// folder only root can enter (mode 0700, like root's home; CI may clone there) is not
// readable by it. Each uid is probed with a tiny child process; when the probe fails the
// code is copied to a fresh world-readable folder under /var/tmp (hard links when the
// filesystem allows) and probed again.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { roomsBelow } from '../foundation/rooms.js';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Isolation } from '../design/manifest.js';
import { TypedErrorOf } from '../foundation/typed-error.js';

/** The repository this module belongs to: the code the writer and runtime run by default. */
const CHECKOUT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_USER_NAMES = { writer: 'ds-writer', runtime: 'ds-runtime' } as const;
/**
 * What a process under another uid needs from a code root: the controller's room and every room
 * below it (foundation/rooms.ts; the writer and the runtime load rooms below the runtime's, and a
 * process may plan isolation itself), and what runs them; entries missing from the checkout are
 * skipped.
 */
export const CODE_ENTRIES = ['package.json', 'tsconfig.json', ...roomsBelow('controller'), 'node_modules'] as const;
/** A world-traversable place that survives a reboot-free run and is not tmpfs-limited on most systems. */
const READABLE_COPY_PARENT = '/var/tmp';
/** Unix socket addresses hold ~107 bytes (sun_path); a margin keeps us clear of it on every platform. */
export const SOCKET_PATH_MAX_BYTES = 100;
/**
 * /tmp rather than os.tmpdir() for separate uids: the runtime's uid must traverse the
 * parent of the socket folder, and TMPDIR may point into root's own folders.
 */
const SHARED_SOCKET_PARENT = '/tmp';
const SOCKET_FILE = 'writer.sock';
/** Traversable by the owner, and by the group only (the runtime's gid): nobody else reaches the socket. */
const SOCKET_DIR_MODE_SEPARATE = 0o710;
const SOCKET_DIR_MODE_SAME = 0o700;
/** Inside a folder only the runtime's gid may traverse, the socket file itself can be open; the token handshake authenticates. */
const SOCKET_MODE_SEPARATE = 0o666;
const SOCKET_MODE_SAME = 0o600;
/** The controller (root) writes its own files there; the writer's uid creates events.db (+ -wal/-shm). */
const RUN_DIR_MODE_SEPARATE = 0o755;
const PROBE_TIMEOUT_MS = 10_000;
const COMMAND_TIMEOUT_MS = 60_000;
/** Read bits for others, and the search bit on folders. */
const OTHER_READ = 0o004;
const OTHER_SEARCH = 0o001;

export interface UidGid {
  readonly uid: number;
  readonly gid: number;
}

export type CodeSource = 'checkout' | 'readable-copy';

export interface IsolationTimings {
  /** Time spent probing readability under the two uids (all probes, including after a copy). */
  readonly probeMs: number;
  /** Time spent making the readable copy, or null when none was made. */
  readonly copyMs: number | null;
}

export interface IsolationPlan {
  /** The manifest's `isolation` value. */
  readonly manifest: Isolation;
  /** Who the writer and runtime run as; null in same-uid mode (they inherit the controller's uid). */
  readonly writer: UidGid | null;
  readonly runtime: UidGid | null;
  /** The folder child processes run code from (writer/main.ts, node_modules/tsx, …). */
  readonly codeRoot: string;
  readonly codeSource: CodeSource;
  /** One line for the screen, starting `isolation: separate-uids` or `isolation: same-uid`. */
  readonly summary: string;
  readonly timings: IsolationTimings;
  /** Removes the readable copy, if this plan made one; call after every child has exited. */
  cleanup(): void;
}

export interface IsolationOptions {
  /** Run under one uid regardless of privileges, with this reason in the manifest and summary. */
  readonly forceSameUid?: string;
  /** The code the children would run; default: the repository holding this module. */
  readonly checkoutDir?: string;
  /** System user names for the writer and the runtime (created when missing). */
  readonly userNames?: { readonly writer: string; readonly runtime: string };
  /** Where a readable copy goes; default /var/tmp. */
  readonly copyParentDir?: string;
}

export type IsolationProblem = 'socket-path-too-long' | 'run-dir-unreachable' | 'not-a-folder';

/** A folder the isolated processes cannot use, with what to do about it in the message. */
export class IsolationError extends TypedErrorOf('isolation', EXIT_CODES.failed) {
  override readonly name = 'IsolationError';
  override get ownCode(): string {
    return this.problem;
  }
  constructor(
    readonly problem: IsolationProblem,
    message: string,
  ) {
    super(message);
  }
}

/** What the probe child prints: the files it could not read, with the errno code. */
const ProbeReport = z.strictObject({
  unreadable: z.array(z.strictObject({ file: z.string(), code: z.string() })),
});

/**
 * Decides how the writer and runtime run. Never throws for an environment that does not
 * allow separate uids: that is reported as `same-uid` with the reason.
 */
export function planIsolation(options: IsolationOptions = {}): IsolationPlan {
  const checkout = path.resolve(options.checkoutDir ?? CHECKOUT_DIR);
  const sameUid = (reason: string, timings: IsolationTimings = { probeMs: 0, copyMs: null }): IsolationPlan => ({
    manifest: { mode: 'same-uid', reason },
    writer: null,
    runtime: null,
    codeRoot: checkout,
    codeSource: 'checkout',
    summary: `isolation: same-uid — writer and runtime run as the controller's uid ${process.getuid?.() ?? '(none)'}: ${reason}`,
    timings,
    cleanup: () => {},
  });
  if (options.forceSameUid !== undefined) return sameUid(options.forceSameUid);
  const me = process.getuid?.();
  if (me === undefined) return sameUid('this platform has no POSIX uids');
  if (me !== 0) return sameUid(`not started as root (uid ${me})`);

  const names = options.userNames ?? DEFAULT_USER_NAMES;
  const writer = ensureSystemUser(names.writer);
  if (!writer.ok) return sameUid(writer.reason);
  const runtime = ensureSystemUser(names.runtime);
  if (!runtime.ok) return sameUid(runtime.reason);
  if (writer.user.uid === runtime.user.uid) return sameUid(`users ${names.writer} and ${names.runtime} share uid ${writer.user.uid}; they must differ`);
  const who = `writer runs as ${names.writer} (uid ${writer.user.uid}), runtime as ${names.runtime} (uid ${runtime.user.uid})`;
  const users = [
    { name: names.writer, ...writer.user },
    { name: names.runtime, ...runtime.user },
  ];

  let probeMs = 0;
  const probeAll = (codeRoot: string): ProbeOutcome => {
    const started = performance.now();
    try {
      for (const user of users) {
        const outcome = probeReadable(codeRoot, user);
        if (!outcome.ok) return { ...outcome, reason: `${user.name} (uid ${user.uid}) ${outcome.reason}` };
      }
      return { ok: true };
    } finally {
      probeMs += performance.now() - started;
    }
  };

  const atCheckout = probeAll(checkout);
  if (atCheckout.ok) {
    return {
      manifest: { mode: 'separate-uids' },
      writer: writer.user,
      runtime: runtime.user,
      codeRoot: checkout,
      codeSource: 'checkout',
      summary: `isolation: separate-uids — ${who}; code from the checkout ${checkout} (readability probe ${ms(probeMs)})`,
      timings: { probeMs, copyMs: null },
      cleanup: () => {},
    };
  }
  if (!atCheckout.copyMayHelp) return sameUid(atCheckout.reason, { probeMs, copyMs: null });

  const copyStarted = performance.now();
  let copy: ReadableCopy;
  try {
    copy = makeReadableCopy(checkout, options.copyParentDir ?? READABLE_COPY_PARENT);
  } catch (error) {
    return sameUid(`${atCheckout.reason}, and a readable copy could not be made: ${messageOf(error)}`, { probeMs, copyMs: performance.now() - copyStarted });
  }
  const copyMs = performance.now() - copyStarted;
  const removeCopy = (): void => rmSync(copy.dir, { recursive: true, force: true });
  const atCopy = probeAll(copy.dir);
  if (!atCopy.ok) {
    removeCopy();
    return sameUid(`${atCheckout.reason}; in a readable copy too: ${atCopy.reason}`, { probeMs, copyMs });
  }
  return {
    manifest: { mode: 'separate-uids' },
    writer: writer.user,
    runtime: runtime.user,
    codeRoot: copy.dir,
    codeSource: 'readable-copy',
    summary: `isolation: separate-uids — ${who}; code from a readable copy ${copy.dir} (${copy.method}, ${ms(copyMs)}) because ${atCheckout.reason} (readability probes ${ms(probeMs)})`,
    timings: { probeMs, copyMs },
    cleanup: removeCopy,
  };
}

export interface SocketDir {
  readonly dir: string;
  readonly socketPath: string;
  /** The writer's WriterStartConfig.socket_mode. */
  readonly socketMode: number;
  /** Removes the folder (and a socket left in it). */
  cleanup(): void;
}

/**
 * A fresh private folder for the writer's socket. Separate uids: owned by the writer's
 * uid (it creates the socket there), group the runtime's gid, mode 0710, under /tmp; so
 * the runtime can reach the socket and no other unprivileged uid can. Same uid: 0700.
 */
export function prepareSocketDir(plan: Pick<IsolationPlan, 'writer' | 'runtime'>): SocketDir {
  const separate = plan.writer !== null && plan.runtime !== null;
  const dir = mkdtempSync(path.join(separate ? SHARED_SOCKET_PARENT : tmpdir(), 'ds-sock-'));
  const socketPath = path.join(dir, SOCKET_FILE);
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  if (Buffer.byteLength(socketPath) > SOCKET_PATH_MAX_BYTES) {
    cleanup();
    throw new IsolationError('socket-path-too-long', `socket path ${socketPath} is ${Buffer.byteLength(socketPath)} bytes, over the ${SOCKET_PATH_MAX_BYTES} a Unix socket address holds; set TMPDIR to a shorter folder (e.g. /tmp)`);
  }
  if (plan.writer !== null && plan.runtime !== null) {
    chownSync(dir, plan.writer.uid, plan.runtime.gid);
    chmodSync(dir, SOCKET_DIR_MODE_SEPARATE);
    return { dir, socketPath, socketMode: SOCKET_MODE_SEPARATE, cleanup };
  }
  chmodSync(dir, SOCKET_DIR_MODE_SAME);
  return { dir, socketPath, socketMode: SOCKET_MODE_SAME, cleanup };
}

/**
 * Makes `runDir` usable by the writer. Separate uids: owned by the writer's uid, mode
 * 0755, so it can create events.db (+ -wal/-shm; the writer's umask makes them 0600);
 * the controller, as root, still writes its own files there. Refuses (IsolationError) a
 * run folder the writer's uid cannot reach, e.g. one under root's 0700 home.
 */
export function prepareRunDir(runDir: string, plan: Pick<IsolationPlan, 'writer'>): void {
  mkdirSync(runDir, { recursive: true });
  if (!statSync(runDir).isDirectory()) throw new IsolationError('not-a-folder', `run folder ${runDir} is not a folder`);
  if (plan.writer === null) return;
  chownSync(runDir, plan.writer.uid, plan.writer.gid);
  chmodSync(runDir, RUN_DIR_MODE_SEPARATE);
  const script = `try { require('node:fs').accessSync(process.argv[1], require('node:fs').constants.W_OK | require('node:fs').constants.X_OK); } catch (error) { process.stdout.write(String(error.code)); process.exit(1); }`;
  const result = runAs(plan.writer, ['-e', script, runDir]);
  if (result.error || result.status !== 0) {
    const code = result.error ? (result.error as NodeJS.ErrnoException).code : result.stdout.trim() || `exit ${result.status}`;
    const blocked = firstUntraversableAncestor(runDir);
    throw new IsolationError(
      'run-dir-unreachable',
      `the writer's uid ${plan.writer.uid} cannot create files in run folder ${runDir} (${code})${blocked ? `: ${blocked} does not let others through` : ''}; choose a run folder every user can reach (e.g. under /var/tmp or /srv), or \`chmod o+x\` the folders above it`,
    );
  }
}

// ---------------------------------------------------------------------------------------

type ProbeOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: string; readonly copyMayHelp: boolean };

/**
 * Runs a tiny child under `user` that reads what a writer or runtime reads first: the
 * package.json, writer/main.ts, and the tsx loader and better-sqlite3 as resolved from
 * the code root. Run from `/`: a working folder the uid cannot enter fails the spawn.
 */
function probeReadable(codeRoot: string, user: UidGid): ProbeOutcome {
  const script = `
    const fs = require('node:fs'), path = require('node:path'), { createRequire } = require('node:module');
    const root = process.argv[1], unreadable = [];
    const read = (file) => { try { fs.readFileSync(file); } catch (error) { unreadable.push({ file, code: String(error.code ?? 'unknown') }); } };
    read(path.join(root, 'package.json'));
    read(path.join(root, 'writer', 'main.ts'));
    const from = createRequire(path.join(root, 'package.json'));
    for (const name of ['tsx', 'better-sqlite3']) {
      let resolved = null;
      try { resolved = from.resolve(name); } catch (error) { unreadable.push({ file: 'node_modules/' + name, code: String(error.code ?? 'unknown') }); }
      if (resolved) read(resolved);
    }
    process.stdout.write(JSON.stringify({ unreadable }));`;
  const result = runAs(user, ['-e', script, codeRoot]);
  if (result.error) {
    // Node itself cannot start under this uid (e.g. installed under root's home): a copy of the code would not help.
    return { ok: false, reason: `cannot run ${process.execPath} (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})`, copyMayHelp: false };
  }
  let report: z.infer<typeof ProbeReport>;
  try {
    report = ProbeReport.parse(JSON.parse(result.stdout));
  } catch {
    return { ok: false, reason: `readability probe failed (exit ${result.status}, signal ${result.signal}): ${result.stderr.trim().slice(0, 200) || 'no output'}`, copyMayHelp: true };
  }
  if (report.unreadable.length === 0) return { ok: true };
  const files = report.unreadable.map((u) => `${path.isAbsolute(u.file) ? path.relative(codeRoot, u.file) : u.file}: ${u.code}`).join(', ');
  return { ok: false, reason: `cannot read the code in ${codeRoot} (${files})`, copyMayHelp: true };
}

function runAs(user: UidGid, args: string[]): ReturnType<typeof spawnSync> & { stdout: string; stderr: string } {
  return spawnSync(process.execPath, args, { uid: user.uid, gid: user.gid, cwd: '/', encoding: 'utf8', timeout: PROBE_TIMEOUT_MS }) as ReturnType<typeof spawnSync> & { stdout: string; stderr: string };
}

interface ReadableCopy {
  readonly dir: string;
  /** How the files got there, for the summary. */
  readonly method: string;
}

/**
 * Copies the code entries into a fresh mkdtemp folder: `cp -al` (hard links: fast, no
 * space) first, `cp -a` where linking fails (another filesystem). Then opens it up for
 * reading: folders are new inodes and get o+rx; a hard-linked file lacking o+r is
 * replaced by a real copy first, so the checkout's own files keep their modes.
 */
function makeReadableCopy(checkout: string, parent: string): ReadableCopy {
  const dir = mkdtempSync(path.join(parent, 'ds-code-'));
  try {
    chmodSync(dir, 0o755);
    let linked = 0;
    let copied = 0;
    for (const entry of CODE_ENTRIES) {
      const source = path.join(checkout, entry);
      if (!existsSync(source)) continue;
      const target = path.join(dir, entry);
      if (run('cp', ['-al', source, target]).ok) {
        linked += 1;
        continue;
      }
      rmSync(target, { recursive: true, force: true });
      const full = run('cp', ['-a', source, target]);
      if (!full.ok) throw new Error(`cp -a ${source} ${target} failed: ${full.detail}`);
      copied += 1;
    }
    if (!existsSync(path.join(dir, 'package.json'))) throw new Error(`${checkout} holds no package.json: not the code to run`);
    const replaced = openUpForReading(dir, checkout);
    const method = copied === 0 ? 'hard links' : linked === 0 ? 'full copy' : `${linked} entries hard-linked, ${copied} copied`;
    return { dir, method: replaced > 0 ? `${method}, ${replaced} unreadable file(s) copied and opened up` : method };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Gives every folder o+rx and every file o+r inside `dir`; returns how many hard-linked files were replaced by copies to do so. */
function openUpForReading(dir: string, checkout: string): number {
  let replaced = 0;
  const walk = (folder: string, relative: string): void => {
    const stat = lstatSync(folder);
    if ((stat.mode & (OTHER_READ | OTHER_SEARCH)) !== (OTHER_READ | OTHER_SEARCH)) chmodSync(folder, (stat.mode & 0o7777) | 0o055);
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const file = path.join(folder, entry.name);
      if (entry.isDirectory()) {
        walk(file, path.join(relative, entry.name));
        continue;
      }
      if (!entry.isFile()) continue; // symlinks carry no mode of their own
      const fileStat = lstatSync(file);
      if ((fileStat.mode & OTHER_READ) !== 0) continue;
      if (fileStat.nlink > 1) {
        // A hard link shares its inode with the checkout: chmod would change the original.
        unlinkSync(file);
        copyFileSync(path.join(checkout, relative, entry.name), file);
        replaced += 1;
      }
      chmodSync(file, (fileStat.mode & 0o7777) | 0o044);
    }
  };
  walk(dir, '');
  return replaced;
}

type UserOutcome = { readonly ok: true; readonly user: UidGid } | { readonly ok: false; readonly reason: string };

/** Looks the system user up, creating it (with its own group, no home, no login shell) when missing. */
function ensureSystemUser(name: string): UserOutcome {
  const found = lookupUser(name);
  if (found.kind === 'error') return { ok: false, reason: found.reason };
  let user = found.kind === 'found' ? found.user : null;
  if (user === null) {
    const made = run('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', name]);
    const again = lookupUser(name);
    // Another controller may have created it meanwhile: useradd then fails, and the look-up finds it.
    if (again.kind !== 'found') return { ok: false, reason: `could not create system user ${name}: useradd ${made.ok ? 'succeeded but the user is not found' : `failed (${made.detail})`}` };
    user = again.user;
  }
  if (user.uid === 0 || user.gid === 0) return { ok: false, reason: `user ${name} has uid ${user.uid} / gid ${user.gid}: root's ids isolate nothing` };
  return { ok: true, user };
}

type Lookup = { readonly kind: 'found'; readonly user: UidGid } | { readonly kind: 'missing' } | { readonly kind: 'error'; readonly reason: string };

function lookupUser(name: string): Lookup {
  const getent = spawnSync('getent', ['passwd', name], { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
  if (!getent.error) {
    // getent exits 2 for "no such key".
    if (getent.status === 2) return { kind: 'missing' };
    if (getent.status !== 0) return { kind: 'error', reason: `getent passwd ${name} exited ${getent.status}: ${getent.stderr.trim()}` };
    const fields = getent.stdout.trim().split('\n')[0]?.split(':') ?? [];
    return parseIds(name, fields[2], fields[3]);
  }
  // No getent (e.g. a minimal image): `id` answers the same question.
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
  if (uid.error) return { kind: 'error', reason: `neither getent nor id can be run to look up user ${name} (${(uid.error as NodeJS.ErrnoException).code})` };
  if (uid.status !== 0) return { kind: 'missing' };
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
  return parseIds(name, uid.stdout.trim(), gid.stdout.trim());
}

function parseIds(name: string, uid: string | undefined, gid: string | undefined): Lookup {
  if (!uid || !gid || !/^\d+$/.test(uid) || !/^\d+$/.test(gid)) return { kind: 'error', reason: `cannot read the uid/gid of user ${name} (got ${JSON.stringify(uid)} / ${JSON.stringify(gid)})` };
  return { kind: 'found', user: { uid: Number(uid), gid: Number(gid) } };
}

function run(command: string, args: string[]): { ok: boolean; detail: string } {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
  if (result.error) return { ok: false, detail: `${command}: ${(result.error as NodeJS.ErrnoException).code ?? result.error.message}` };
  if (result.status !== 0) return { ok: false, detail: `exit ${result.status}: ${result.stderr.trim().slice(0, 300)}` };
  return { ok: true, detail: '' };
}

/** The first folder above `target` that others may not traverse, or null. */
function firstUntraversableAncestor(target: string): string | null {
  const parts: string[] = [];
  for (let current = path.dirname(path.resolve(target)); ; current = path.dirname(current)) {
    parts.unshift(current);
    if (path.dirname(current) === current) break;
  }
  for (const folder of parts) {
    try {
      if ((statSync(folder).mode & OTHER_SEARCH) === 0) return `${folder} (mode 0${(statSync(folder).mode & 0o777).toString(8)})`;
    } catch {
      return folder;
    }
  }
  return null;
}

function ms(value: number): string {
  return `${Math.round(value)} ms`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

