// Process isolation on real processes and real users (issue 4 item 7): as root, the writer
// runs under its own uid, events.db is 0600 for that uid, the runtime's uid can reach the
// socket but neither the store nor the key, another uid cannot even reach the socket; a
// checkout the unprivileged uids cannot read is run from a readable copy. Not root (or
// told so): same-uid, said in the manifest value and the summary.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODE_ENTRIES, IsolationError, planIsolation, prepareRunDir, prepareSocketDir, type IsolationPlan, type UidGid } from '../../controller/isolation.js';
import { KEY_FILES, loadOrCreateControllerKey } from '../../controller/key-store.js';
import { Isolation } from '../../design/manifest.js';
import { writeSignedManifest } from '../../controller/run-signatures.js';
import { generateKeyPair } from '../../schema/ed25519-keys.js';
import { writePublicKey } from '../../schema/public-key-file.js';
import { WriterClient } from '../../writer/client.js';
import { newToken, spawnWriter, type WriterProcess } from '../../writer/spawn.js';
import { systemTmpdir } from '../support/suite-temp-dir.js';
import { messageDraft, tempDir } from '../support/writer-fixture.js';

const execFileAsync = promisify(execFile);
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const myUid = process.getuid?.();
const isRoot = myUid === 0;
const NOBODY: UidGid = { uid: 65534, gid: 65534 };
if (!isRoot) {
  console.log(`[isolation.test] running as uid ${myUid ?? '(no POSIX uids)'}, not root: the separate-uids tests are skipped (they create system users, chown files and start processes under other uids, which only root may do); the same-uid path is tested instead`);
} else {
  console.log('[isolation.test] running as root: the in-process "not root" test is skipped (this process is root); the same path runs in a child process as nobody instead');
}

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** Runs `node -e script args…` as `user` from `/`, and returns its stdout parsed as JSON. */
async function nodeAs(user: UidGid, script: string, args: string[] = []): Promise<Record<string, string>> {
  const { stdout } = await execFileAsync(process.execPath, ['-e', script, ...args], { uid: user.uid, gid: user.gid, cwd: '/' });
  return JSON.parse(stdout) as Record<string, string>;
}

/** What an unprivileged process can do to the store, the key and the socket: 'ok'/'connected', or the errno code. */
const ACCESS_SCRIPT = `
  const fs = require('node:fs'), net = require('node:net');
  const [db, key, socket] = process.argv.slice(1);
  const attempt = (f) => { try { f(); return 'ok'; } catch (error) { return String(error.code); } };
  const out = { db: attempt(() => fs.closeSync(fs.openSync(db, 'r'))), key: attempt(() => fs.readFileSync(key)) };
  const s = net.connect(socket);
  s.on('connect', () => { out.socket = 'connected'; s.destroy(); process.stdout.write(JSON.stringify(out)); });
  s.on('error', (error) => { out.socket = String(error.code); process.stdout.write(JSON.stringify(out)); });`;

function uidOfProcess(pid: number): number | null {
  const status = `/proc/${pid}/status`;
  if (!existsSync(status)) return null;
  const match = /^Uid:\s+(\d+)/m.exec(readFileSync(status, 'utf8'));
  return match ? Number(match[1]) : null;
}

/** A run folder with controller.pub and a signed manifest, made by the controller (this process) like a real run's. */
function newRunFolder(): { dir: string; identity: { subject_id: string; experiment_id: string; manifest_sha256: string } } {
  const dir = tempDir('ds-iso-run-');
  scratch.push(dir);
  const keys = generateKeyPair();
  writePublicKey(dir, keys);
  const manifest_sha256 = writeSignedManifest(dir, { experiment_id: 'exp-iso-001', subject_id: 'subject-001', purpose: 'isolation test' }, keys);
  return { dir, identity: { subject_id: 'subject-001', experiment_id: 'exp-iso-001', manifest_sha256 } };
}

/** Starts a writer as the plan says (uid, code root, socket folder) on a new store in `runDir`, and appends one event as the experiment role. */
async function startIsolatedWriter(plan: IsolationPlan, run: ReturnType<typeof newRunFolder>): Promise<{ writer: WriterProcess; socketPath: string; socketDir: string; seq: number; stop(): Promise<void> }> {
  prepareRunDir(run.dir, plan);
  const socket = prepareSocketDir(plan);
  scratch.push(socket.dir);
  const tokens = { runtime: newToken(), experiment: newToken() };
  const writer = await spawnWriter(
    { db_path: path.join(run.dir, 'events.db'), socket_path: socket.socketPath, mode: 'create', ...run.identity, tokens, projection: 'event-counts', socket_mode: socket.socketMode, snapshot_every: 100 },
    { ...(plan.writer ?? {}), codeRoot: plan.codeRoot },
  );
  const client = await WriterClient.connect(socket.socketPath, 'experiment', tokens.experiment);
  const appended = await client.append([messageDraft()]);
  return {
    writer,
    socketPath: socket.socketPath,
    socketDir: socket.dir,
    seq: appended.head.seq,
    async stop() {
      client.close();
      await writer.stop();
    },
  };
}

describe('same uid', () => {
  it('forceSameUid: the manifest says same-uid with the reason, and so does the summary', () => {
    const plan = planIsolation({ forceSameUid: 'asked for by the test' });
    expect(Isolation.parse(plan.manifest)).toEqual({ mode: 'same-uid', reason: 'asked for by the test' });
    expect(plan.writer).toBeNull();
    expect(plan.runtime).toBeNull();
    expect(plan.codeSource).toBe('checkout');
    expect(plan.codeRoot).toBe(REPO);
    expect(plan.summary).toMatch(/^isolation: same-uid — .*asked for by the test$/);
  });

  it('a same-uid socket folder is 0700 with a 0600 socket, at a path a socket address holds', () => {
    const socket = prepareSocketDir(planIsolation({ forceSameUid: 'test' }));
    scratch.push(socket.dir);
    expect(statSync(socket.dir).mode & 0o777).toBe(0o700);
    expect(statSync(socket.dir).uid).toBe(myUid);
    expect(socket.socketMode).toBe(0o600);
    expect(Buffer.byteLength(socket.socketPath)).toBeLessThanOrEqual(100);
    socket.cleanup();
    expect(existsSync(socket.dir)).toBe(false);
  });

  it('a same-uid writer makes events.db 0600 too (its umask), as the controller uid', async () => {
    const plan = planIsolation({ forceSameUid: 'test' });
    const run = newRunFolder();
    const started = await startIsolatedWriter(plan, run);
    try {
      expect(started.seq).toBe(2);
      const db = statSync(path.join(run.dir, 'events.db'));
      expect(db.mode & 0o777).toBe(0o600);
      expect(db.uid).toBe(myUid);
    } finally {
      await started.stop();
    }
  });

  it.skipIf(isRoot)('not root: same-uid, naming the uid', () => {
    const plan = planIsolation();
    expect(plan.manifest).toEqual({ mode: 'same-uid', reason: `not started as root (uid ${myUid})` });
    expect(plan.summary).toContain('isolation: same-uid');
  });
});

describe.skipIf(!isRoot)('as root: separate uids', () => {
  let plan: IsolationPlan;
  beforeAll(() => {
    plan = planIsolation();
    console.log(`[isolation.test] ${plan.summary}`);
  });
  afterAll(() => plan?.cleanup());

  it('plans two distinct unprivileged system users and a code root they can read', () => {
    expect(plan.manifest).toEqual({ mode: 'separate-uids' });
    expect(plan.summary).toMatch(/^isolation: separate-uids — writer runs as ds-writer \(uid \d+\), runtime as ds-runtime \(uid \d+\)/);
    const writer = plan.writer!;
    const runtime = plan.runtime!;
    expect(writer.uid).not.toBe(0);
    expect(runtime.uid).not.toBe(0);
    expect(writer.uid).not.toBe(runtime.uid);
    expect(execFileSync('id', ['-u', 'ds-writer'], { encoding: 'utf8' }).trim()).toBe(String(writer.uid));
    expect(execFileSync('id', ['-u', 'ds-runtime'], { encoding: 'utf8' }).trim()).toBe(String(runtime.uid));
    expect(plan.timings.probeMs).toBeGreaterThan(0);
  });

  it('the writer runs as its uid; events.db is 0600 for it; the runtime reaches the socket but not the store or the key; nobody else reaches the socket', async () => {
    const writerIds = plan.writer!;
    const runtimeIds = plan.runtime!;
    const run = newRunFolder();
    const keyRoot = tempDir('ds-iso-keys-');
    scratch.push(keyRoot);
    const key = loadOrCreateControllerKey(path.join(keyRoot, 'keys'));
    const keyFile = path.join(key.keyDir, KEY_FILES.secret);
    const started = await startIsolatedWriter(plan, run);
    try {
      expect(started.seq).toBe(2); // StoreOpened, then ours
      const procUid = uidOfProcess(started.writer.pid);
      if (procUid !== null) expect(procUid).toBe(writerIds.uid);

      const dbPath = path.join(run.dir, 'events.db');
      for (const file of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`].filter((f) => existsSync(f))) {
        const stat = statSync(file);
        expect({ file, uid: stat.uid, mode: stat.mode & 0o777 }).toEqual({ file, uid: writerIds.uid, mode: 0o600 });
      }
      const runStat = statSync(run.dir);
      expect({ uid: runStat.uid, mode: runStat.mode & 0o777 }).toEqual({ uid: writerIds.uid, mode: 0o755 });
      const socketDir = statSync(started.socketDir);
      expect({ uid: socketDir.uid, gid: socketDir.gid, mode: socketDir.mode & 0o777 }).toEqual({ uid: writerIds.uid, gid: runtimeIds.gid, mode: 0o710 });

      const asRuntime = await nodeAs(runtimeIds, ACCESS_SCRIPT, [dbPath, keyFile, started.socketPath]);
      expect(asRuntime).toEqual({ db: 'EACCES', key: 'EACCES', socket: 'connected' });
      const asNobody = await nodeAs(NOBODY, ACCESS_SCRIPT, [dbPath, keyFile, started.socketPath]);
      expect(asNobody).toEqual({ db: 'EACCES', key: 'EACCES', socket: 'EACCES' });
      // The controller (root, the key's owner) still reads its key.
      expect(readFileSync(keyFile, 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    } finally {
      await started.stop();
    }
  });

  it('not root: a process started as nobody plans same-uid, naming its uid', async () => {
    // Run from the plan's code root: the unprivileged uid must be able to read the code.
    const loader = createRequire(path.join(plan.codeRoot, 'package.json')).resolve('tsx');
    const script = `import { planIsolation } from ${JSON.stringify(path.join(plan.codeRoot, 'controller', 'isolation.ts'))};
      const p = planIsolation(); process.stdout.write(JSON.stringify({ manifest: p.manifest, summary: p.summary }));`;
    const { stdout } = await execFileAsync(process.execPath, ['--import', loader, '--input-type=module', '-e', script], { uid: NOBODY.uid, gid: NOBODY.gid, cwd: plan.codeRoot });
    const result = JSON.parse(stdout) as { manifest: unknown; summary: string };
    expect(Isolation.parse(result.manifest)).toEqual({ mode: 'same-uid', reason: `not started as root (uid ${NOBODY.uid})` });
    expect(result.summary).toMatch(/^isolation: same-uid — .*not started as root \(uid 65534\)$/);
  });

  it('a user that cannot be created means same-uid with useradd\'s reason, not a silent downgrade', () => {
    const refused = planIsolation({ userNames: { writer: 'ds:not/a name', runtime: 'ds-runtime' } });
    expect(refused.manifest.mode).toBe('same-uid');
    expect(refused.manifest.mode === 'same-uid' && refused.manifest.reason).toMatch(/^could not create system user ds:not\/a name: useradd failed/);
    expect(refused.summary).toContain('isolation: same-uid');
  });

  it('a run folder the writer uid cannot reach is refused, naming the folder that blocks it', () => {
    const hidden = mkdtempSync(path.join(tmpdir(), 'ds-iso-hidden-'));
    scratch.push(hidden);
    chmodSync(hidden, 0o700);
    let error: unknown = null;
    try {
      prepareRunDir(path.join(hidden, 'run'), plan);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(IsolationError);
    expect((error as IsolationError).problem).toBe('run-dir-unreachable');
    expect((error as Error).message).toContain(`${hidden} (mode 0700)`);
  });
});

describe.skipIf(!isRoot)('as root: a checkout the unprivileged uids cannot read', () => {
  it('falls back to a readable copy under /var/tmp that the writer uid runs from, leaving the checkout as it was', async () => {
    // The checkout sits in a 0700 root-owned folder, like a clone in root's home.
    // On the system's temporary folder, not the suite's tmpfs one: `cp -al` links across no file system.
    const hidden = mkdtempSync(path.join(systemTmpdir(), 'ds-iso-hidden-'));
    scratch.push(hidden);
    chmodSync(hidden, 0o700);
    const checkout = path.join(hidden, 'repo');
    mkdirSync(checkout, { mode: 0o755 });
    for (const entry of CODE_ENTRIES) {
      if (existsSync(path.join(REPO, entry))) execFileSync('cp', ['-al', path.join(REPO, entry), path.join(checkout, entry)]);
    }
    // One file of the checkout readable by its owner only, as in a clone made with umask 077;
    // a private copy of it first, so that the chmod cannot reach the real repository's inode.
    const privateFile = path.join(checkout, 'writer', 'main.ts');
    unlinkSync(privateFile);
    copyFileSync(path.join(REPO, 'writer', 'main.ts'), privateFile);
    chmodSync(privateFile, 0o600);

    const plan = planIsolation({ checkoutDir: checkout });
    console.log(`[isolation.test] ${plan.summary}`);
    try {
      expect(plan.manifest).toEqual({ mode: 'separate-uids' });
      expect(plan.codeSource).toBe('readable-copy');
      expect(plan.codeRoot.startsWith('/var/tmp/ds-code-')).toBe(true);
      expect(plan.summary).toMatch(/code from a readable copy \/var\/tmp\/ds-code-\S+ \(hard links, 1 unreadable file\(s\) copied and opened up, \d+ ms\) because ds-writer \(uid \d+\) cannot read the code in .*package\.json: EACCES/);
      expect(plan.timings.copyMs).not.toBeNull();
      // The checkout keeps its modes: the opened-up file in the copy is a separate inode.
      expect(statSync(privateFile).mode & 0o777).toBe(0o600);
      expect(statSync(hidden).mode & 0o777).toBe(0o700);
      expect(statSync(path.join(plan.codeRoot, 'writer', 'main.ts')).mode & 0o777).toBe(0o644);

      const started = await startIsolatedWriter(plan, newRunFolder());
      try {
        expect(started.seq).toBe(2);
        const procUid = uidOfProcess(started.writer.pid);
        if (procUid !== null) expect(procUid).toBe(plan.writer!.uid);
      } finally {
        await started.stop();
      }
    } finally {
      plan.cleanup();
    }
    expect(existsSync(plan.codeRoot)).toBe(false);
    // Removing the copy's hard links left the checkout's files in place.
    expect(existsSync(path.join(checkout, 'package.json'))).toBe(true);
  });
});
