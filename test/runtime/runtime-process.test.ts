// Integration tests of the ds-runtime process and its parent protocol (DESIGN §2, §6),
// against real writer processes on real SQLite files. This build of the runtime only
// observes (reads the events it may see); every report must say which phases are missing.
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Capabilities, GROUP_CAPABILITIES } from '../../controller/manifest.js';
import { PreRegistration } from '../../controller/prereg.js';
import {
  NOT_BUILT_PHASES,
  RuntimeChildMessage,
  RuntimeStartConfig,
  type WakeDone,
  type WakeProgress,
} from '../../runtime/protocol.js';
import { RuntimeStartError, RuntimeWakeError, spawnRuntime, type RuntimeProcess, type RuntimeWakeRequest } from '../../runtime/spawn.js';
import type { WriterClient } from '../../writer/client.js';
import { messageDraft, startWriterFixture, type WriterFixture } from '../support/writer-fixture.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUNTIME_MAIN = path.join(REPO_ROOT, 'runtime', 'main.ts');
const TSX_LOADER = createRequire(import.meta.url).resolve('tsx');
const PREREG = PreRegistration.parse(JSON.parse(readFileSync(path.join(REPO_ROOT, 'experiments/prereg/default.json'), 'utf8')));
const BUDGET = PREREG.budgets_per_wake;
const WAKE_TIMEOUT_MS = 20_000;

function startConfig(f: WriterFixture, overrides: Partial<Omit<RuntimeStartConfig, 'type'>> = {}): Omit<RuntimeStartConfig, 'type'> {
  return {
    subject_id: f.identity.subject_id,
    socket_path: f.writer.socketPath,
    token: f.tokens.runtime,
    capabilities: GROUP_CAPABILITIES.B,
    retrieval_policy: PREREG.retrieval_policy,
    ...overrides,
  };
}

let wakeCounter = 0;
function wakeRequest(visibleToSeq: number): RuntimeWakeRequest {
  wakeCounter += 1;
  return { wake_id: `wake-${String(wakeCounter).padStart(4, '0')}`, wake_at: '2026-07-20T09:00:00.000Z', visible_to_seq: visibleToSeq, budget: BUDGET };
}

async function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

async function expectWakeError(promise: Promise<WakeDone>, code: RuntimeWakeError['code']): Promise<RuntimeWakeError> {
  const outcome = await settle(promise);
  if (outcome.ok) throw new Error(`expected RuntimeWakeError ${code}, the wake succeeded: ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(RuntimeWakeError);
  const error = outcome.error as RuntimeWakeError;
  expect(error.code, error.message).toBe(code);
  return error;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms).unref())]);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Files the process has open, as their link targets (sockets show as socket:[inode]). */
function openFiles(pid: number): string[] {
  const dir = `/proc/${pid}/fd`;
  const targets: string[] = [];
  for (const fd of readdirSync(dir)) {
    try {
      targets.push(readlinkSync(path.join(dir, fd)));
    } catch {
      // closed between readdir and readlink
    }
  }
  return targets;
}

/** Freezes the writer (SIGSTOP) so a wake waits on it; always thawed by the caller. */
function freeze(f: WriterFixture): () => void {
  process.kill(f.writer.pid, 'SIGSTOP');
  return () => process.kill(f.writer.pid, 'SIGCONT');
}

// ---------------------------------------------------------------------------------------

describe('ds-runtime: its start message uses the controller\'s own schemas', () => {
  test('capabilities and retrieval policy are the very schemas of the manifest and the pre-registration (schema/)', () => {
    expect(RuntimeStartConfig.shape.capabilities).toBe(Capabilities);
    expect(RuntimeStartConfig.shape.retrieval_policy).toBe(PreRegistration.shape.retrieval_policy);
    const start = { type: 'start', subject_id: 's', socket_path: '/tmp/x.sock', token: 'a'.repeat(24), capabilities: GROUP_CAPABILITIES.C, retrieval_policy: PREREG.retrieval_policy };
    expect(RuntimeStartConfig.safeParse(start).success).toBe(true);
    // Re-planning without persistent state is no group; a group letter smuggled in is refused.
    expect(RuntimeStartConfig.safeParse({ ...start, capabilities: { persistent_state: false, autonomous_replanning: true } }).success).toBe(false);
    expect(RuntimeStartConfig.safeParse({ ...start, capabilities: { ...GROUP_CAPABILITIES.C, group: 'C' } }).success).toBe(false);
    expect(RuntimeStartConfig.safeParse({ ...start, retrieval_policy: { ...PREREG.retrieval_policy, event_types: ['WorldEvent.NoSuchThing'] } }).success).toBe(false);
  });
});

/**
 * Every file the runtime process loads from this repository (relative imports followed
 * from runtime/main.ts), and the packages they import. Bounded by the repository's size.
 */
function runtimeImportGraph(): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [RUNTIME_MAIN];
  for (let guard = 0; queue.length > 0 && guard < 1_000; guard++) {
    const file = queue.shift()!;
    if (files.has(file)) continue;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
      const target = match[1]!;
      if (target.startsWith('.')) queue.push(path.resolve(path.dirname(file), target.replace(/\.js$/, '.ts')));
      else packages.add(target);
    }
  }
  return { files: [...files].map((f) => path.relative(REPO_ROOT, f)), packages: [...packages] };
}

describe('ds-runtime: what the process can reach', () => {
  test('it loads no controller code, no store code and no database driver', () => {
    const { files, packages } = runtimeImportGraph();
    expect(files).toContain('writer/client.ts');
    expect(files.filter((f) => f.startsWith('controller/') || f.startsWith('projector/'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('writer/') && !['writer/client.ts', 'writer/protocol.ts'].includes(f))).toEqual([]);
    expect(packages.filter((p) => /sqlite/i.test(p))).toEqual([]);
  });
});

describe('ds-runtime: observing a live writer', () => {
  let f: WriterFixture;
  let exp: WriterClient;
  let runtime: RuntimeProcess;
  const progress: WakeProgress[] = [];
  /** Seq the runtime has observed up to, as the test expects it. */
  let observed = 0;

  beforeAll(async () => {
    f = await startWriterFixture();
    exp = await f.connect('experiment');
    await exp.append([messageDraft(), messageDraft(), messageDraft()]);
    runtime = await spawnRuntime(startConfig(f));
    runtime.onProgress((p) => progress.push(p));
  });

  afterAll(async () => {
    await runtime?.stop().catch(() => undefined);
    await f?.cleanup().catch(() => undefined);
  });

  test('runs as a separate process titled ds-runtime, child of this one, token not in argv, no store open', () => {
    const pid = runtime.pid;
    expect(pid).not.toBe(process.pid);
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
    expect(argv[0]).toBe('ds-runtime');
    expect(argv.join(' ')).not.toContain(f.tokens.runtime);
    expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain(f.tokens.runtime);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])).toBe(process.pid);
    const files = openFiles(pid);
    expect(files.length).toBeGreaterThan(0);
    expect(files.filter((target) => target.startsWith(f.dbPath))).toEqual([]);
  });

  test('a wake up to the head reads every event from seq 1, appends nothing and names the phases not built', async () => {
    const head = await exp.head();
    const report = await runtime.wake(wakeRequest(head.seq), WAKE_TIMEOUT_MS);
    expect(report).toEqual({
      wake_id: expect.stringMatching(/^wake-/),
      observed_from_seq: 1,
      observed_to_seq: head.seq,
      events_read: head.seq,
      appends: 0,
      not_built: ['think', 'plan', 'act', 'remember', 'checkpoint'],
    });
    expect(report.not_built).toEqual([...NOT_BUILT_PHASES]);
    observed = head.seq;
    // Observing wrote nothing: the head is where it was.
    expect(await exp.head()).toEqual(head);
    expect(progress).toEqual([]);
    expect(openFiles(runtime.pid).filter((target) => target.startsWith(f.dbPath))).toEqual([]);
  });

  test('the next wake reads only the events appended since; a wake with nothing new reads none', async () => {
    const appended = await exp.append([messageDraft(), messageDraft()]);
    const head = appended.head;
    const report = await runtime.wake(wakeRequest(head.seq), WAKE_TIMEOUT_MS);
    expect(report).toMatchObject({ observed_from_seq: observed + 1, observed_to_seq: head.seq, events_read: 2, appends: 0 });
    observed = head.seq;

    const again = await runtime.wake(wakeRequest(head.seq), WAKE_TIMEOUT_MS);
    expect(again).toMatchObject({ observed_from_seq: observed + 1, observed_to_seq: observed, events_read: 0, appends: 0 });
    expect(again.not_built).toEqual([...NOT_BUILT_PHASES]);
  });

  test('visible_to_seq below the visible head limits what is read; the rest comes next wake', async () => {
    const appended = await exp.append([messageDraft(), messageDraft(), messageDraft()]);
    const partial = await runtime.wake(wakeRequest(observed + 1), WAKE_TIMEOUT_MS);
    expect(partial).toMatchObject({ observed_from_seq: observed + 1, observed_to_seq: observed + 1, events_read: 1 });
    const rest = await runtime.wake(wakeRequest(appended.head.seq), WAKE_TIMEOUT_MS);
    expect(rest).toMatchObject({ observed_from_seq: observed + 2, observed_to_seq: appended.head.seq, events_read: 2 });
    observed = appended.head.seq;
  });

  test('more events than one read page are read in several pages, all counted', async () => {
    const drafts = Array.from({ length: 2_500 }, () => messageDraft());
    let head = (await exp.head()).seq;
    for (let i = 0; i < drafts.length; i += 1_000) head = (await exp.append(drafts.slice(i, i + 1_000))).head.seq;
    const report = await runtime.wake(wakeRequest(head), WAKE_TIMEOUT_MS);
    expect(report).toMatchObject({ observed_from_seq: observed + 1, observed_to_seq: head, events_read: 2_500 });
    observed = head;
  });

  test('visible_to_seq beyond the head or below what was observed fails the wake, typed, and observes nothing', async () => {
    const head = (await exp.head()).seq;
    expect(head).toBe(observed);
    const beyond = await expectWakeError(runtime.wake(wakeRequest(head + 5), WAKE_TIMEOUT_MS), 'wake_failed');
    expect(beyond.failure?.code).toBe('beyond_head');
    expect(beyond.message).toContain(String(head + 5));
    const regressed = await expectWakeError(runtime.wake(wakeRequest(head - 1), WAKE_TIMEOUT_MS), 'wake_failed');
    expect(regressed.failure?.code).toBe('seq_regressed');
    // Nothing was taken as observed by the failures.
    await exp.append([messageDraft()]);
    const report = await runtime.wake(wakeRequest(head + 1), WAKE_TIMEOUT_MS);
    expect(report).toMatchObject({ observed_from_seq: head + 1, observed_to_seq: head + 1, events_read: 1 });
    observed = head + 1;
  });

  test('a wake that outlives its timeout rejects with timeout; a wake meanwhile is refused as busy', async () => {
    const head = (await exp.head()).seq;
    const thaw = freeze(f);
    try {
      const slow = runtime.wake(wakeRequest(head), WAKE_TIMEOUT_MS);
      const busy = await expectWakeError(runtime.wake(wakeRequest(head), WAKE_TIMEOUT_MS), 'wake_failed');
      // The second wake reached the runtime while the first waited on the frozen writer.
      expect(busy.failure?.code).toBe('busy');
      expect(busy.failure?.message).toContain('one wake at a time');
      thaw();
      expect(await slow).toMatchObject({ observed_from_seq: head + 1, observed_to_seq: head, events_read: 0 });
    } finally {
      thaw();
    }
    const thaw2 = freeze(f);
    try {
      const error = await expectWakeError(runtime.wake(wakeRequest(head), 300), 'timeout');
      expect(error.message).toContain('300 ms');
    } finally {
      thaw2();
    }
    // The timed-out wake finishes inside the runtime once the writer thaws; until then a
    // wake is busy. Bounded wait for the runtime to become free again.
    let report: WakeDone | null = null;
    for (let attempt = 0; attempt < 50 && report === null; attempt++) {
      const outcome = await settle(runtime.wake(wakeRequest(head), WAKE_TIMEOUT_MS));
      if (outcome.ok) report = outcome.value;
      else if (outcome.error instanceof RuntimeWakeError && outcome.error.failure?.code === 'busy') await sleep(100);
      else throw outcome.error;
    }
    expect(report).toMatchObject({ observed_from_seq: head + 1, observed_to_seq: head, events_read: 0 });
  });

  test('a wake while the writer is gone fails as writer_unavailable; after a restart the runtime resumes where it was', async () => {
    const head = (await exp.head()).seq;
    await f.stop();
    const error = await expectWakeError(runtime.wake(wakeRequest(head), WAKE_TIMEOUT_MS), 'wake_failed');
    expect(error.failure?.code).toBe('writer_unavailable');
    expect(error.failure?.message).toMatch(/cannot connect to the writer/);

    f = await f.restart();
    exp = await f.connect('experiment');
    await exp.append([messageDraft(), messageDraft()]);
    const newHead = (await exp.head()).seq;
    const report = await runtime.wake(wakeRequest(newHead), WAKE_TIMEOUT_MS);
    expect(report).toMatchObject({ observed_from_seq: head + 1, observed_to_seq: newHead, events_read: newHead - head });
    expect(progress).toEqual([]);
  });

  test('a wake message that fails its schema, or reuses a waiting wake_id, is refused before sending', async () => {
    const bad = await expectWakeError(runtime.wake({ ...wakeRequest(1), wake_at: 'tomorrow' }, WAKE_TIMEOUT_MS), 'bad_request');
    expect(bad.message).toContain('wake_at');
    const head = (await exp.head()).seq;
    const thaw = freeze(f);
    try {
      const request = wakeRequest(head);
      const first = runtime.wake(request, WAKE_TIMEOUT_MS);
      const duplicate = await expectWakeError(runtime.wake(request, WAKE_TIMEOUT_MS), 'bad_request');
      expect(duplicate.message).toContain('already waiting');
      thaw();
      expect((await first).events_read).toBe(0);
    } finally {
      thaw();
    }
  });

  test('a wrong token or another subject fails the wake, typed', async () => {
    const wrongToken = await spawnRuntime(startConfig(f, { token: 'x'.repeat(32) }));
    const otherSubject = await spawnRuntime(startConfig(f, { subject_id: 'subject-999' }));
    try {
      const head = (await exp.head()).seq;
      const refused = await expectWakeError(wrongToken.wake(wakeRequest(head), WAKE_TIMEOUT_MS), 'wake_failed');
      expect(refused.failure?.code).toBe('writer_refused');
      expect(refused.failure?.message).toMatch(/^unauthenticated/);
      const mismatch = await expectWakeError(otherSubject.wake(wakeRequest(head), WAKE_TIMEOUT_MS), 'wake_failed');
      expect(mismatch.failure?.code).toBe('identity_mismatch');
      expect(mismatch.failure?.message).toContain('subject-999');
    } finally {
      await wrongToken.stop();
      await otherSubject.stop();
    }
  });

  test('SIGKILL of the runtime mid-wake rejects the wake with exited and the signal', async () => {
    const victim = await spawnRuntime(startConfig(f));
    const head = (await exp.head()).seq;
    const thaw = freeze(f);
    try {
      const waiting = victim.wake(wakeRequest(head), WAKE_TIMEOUT_MS);
      await sleep(200);
      const killed = victim.kill('SIGKILL');
      const error = await expectWakeError(waiting, 'exited');
      expect(error.exit).toEqual({ code: null, signal: 'SIGKILL' });
      expect(await killed).toEqual({ code: null, signal: 'SIGKILL' });
      // A dead runtime takes no more wakes.
      const after = await expectWakeError(victim.wake(wakeRequest(head), WAKE_TIMEOUT_MS), 'bad_request');
      expect(after.exit?.signal).toBe('SIGKILL');
    } finally {
      thaw();
    }
  });

  test('codeRoot runs the runtime from that directory', async () => {
    const fromRoot = await spawnRuntime(startConfig(f), { codeRoot: REPO_ROOT });
    try {
      expect(readlinkSync(`/proc/${fromRoot.pid}/cwd`)).toBe(path.resolve(REPO_ROOT));
      const head = (await exp.head()).seq;
      const report = await fromRoot.wake(wakeRequest(head), WAKE_TIMEOUT_MS);
      expect(report).toMatchObject({ observed_from_seq: 1, observed_to_seq: head, events_read: head });
    } finally {
      expect(await fromRoot.stop()).toEqual({ code: 0, signal: null });
    }
  });

  test('stop() ends the runtime cleanly with exit code 0', async () => {
    const stopping = await spawnRuntime(startConfig(f));
    expect(await stopping.stop()).toEqual({ code: 0, signal: null });
    expect(await stopping.exited).toEqual({ code: 0, signal: null });
  });
});

// ---------------------------------------------------------------------------------------
// start-up and the channel, as a parent sees them on raw IPC

interface RawRuntime {
  readonly child: ChildProcess;
  readonly messages: RuntimeChildMessage[];
  stderr(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  next(type: RuntimeChildMessage['type']): Promise<RuntimeChildMessage>;
}

function forkRaw(): RawRuntime {
  const child = fork(RUNTIME_MAIN, [], { execArgv: ['--import', TSX_LOADER], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const messages: RuntimeChildMessage[] = [];
  const waiters: { type: RuntimeChildMessage['type']; resolve: (m: RuntimeChildMessage) => void }[] = [];
  child.on('message', (raw: unknown) => {
    const message = RuntimeChildMessage.parse(raw);
    messages.push(message);
    const index = waiters.findIndex((w) => w.type === message.type);
    if (index !== -1) waiters.splice(index, 1)[0]!.resolve(message);
  });
  // The exit, once stderr has been read to its end (so stderr() is complete).
  const stderrEnded = new Promise<void>((resolve) => child.stderr!.once('end', () => resolve()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const exited = Promise.all([exit, stderrEnded]).then(([result]) => result);
  return {
    child,
    messages,
    stderr: () => stderr,
    exited,
    next(type) {
      const seen = messages.find((m) => m.type === type);
      if (seen) return Promise.resolve(seen);
      return withTimeout(new Promise((resolve) => waiters.push({ type, resolve })), 15_000, `a ${type} message`);
    },
  };
}

const VALID_START = {
  type: 'start',
  subject_id: 'subject-001',
  socket_path: '/nonexistent/writer.sock',
  token: 'r'.repeat(24),
  capabilities: GROUP_CAPABILITIES.A,
  retrieval_policy: PREREG.retrieval_policy,
} as const;

describe('ds-runtime: start-up and the channel', () => {
  test('without an IPC channel it refuses to run, exits non-zero and says why', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', TSX_LOADER, RUNTIME_MAIN], { timeout: 15_000 }, (error, _stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stderr });
      });
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/IPC channel/);
    expect(result.stderr).toMatch(/refusing to run standalone/);
  });

  test('a malformed start message is fatal bad_start, the process exits 1, and the token is not echoed', async () => {
    const raw = forkRaw();
    const secretToken = `SECRET-${'t'.repeat(20)}`;
    raw.child.send({ ...VALID_START, token: secretToken, capabilities: { persistent_state: false, autonomous_replanning: true }, group: 'A' });
    const fatal = await raw.next('fatal');
    expect(fatal).toMatchObject({ type: 'fatal', code: 'bad_start' });
    expect(fatal.type === 'fatal' && fatal.message).toMatch(/autonomous_replanning requires persistent_state/);
    expect(await withTimeout(raw.exited, 15_000, 'exit')).toEqual({ code: 1, signal: null });
    expect(raw.messages.filter((m) => m.type === 'fatal')).toHaveLength(1);
    expect(raw.messages.some((m) => m.type === 'ready')).toBe(false);
    expect(JSON.stringify(raw.messages)).not.toContain(secretToken);
    expect(raw.stderr()).not.toContain(secretToken);
    // Said at start, before any message: which phases do not exist.
    expect(raw.stderr()).toMatch(/not built yet: think, plan, act, remember, checkpoint/);
  });

  test('a wake before start is refused as not_started; a malformed wake as bad_message; then start, ready, and exit on disconnect', async () => {
    const raw = forkRaw();
    try {
      raw.child.send({ type: 'wake', wake_id: 'wake-early', wake_at: '2026-07-20T09:00:00.000Z', visible_to_seq: 1, budget: BUDGET });
      expect(await raw.next('wake_failed')).toMatchObject({ wake_id: 'wake-early', code: 'not_started' });
      raw.child.send(VALID_START);
      expect(await raw.next('ready')).toEqual({ type: 'ready', pid: raw.child.pid });
      raw.child.send({ type: 'wake', wake_id: 'wake-bad', wake_at: '2026-07-20T09:00:00.000Z', visible_to_seq: 0, budget: BUDGET });
      await withTimeout(
        (async () => {
          for (let i = 0; i < 100 && !raw.messages.some((m) => m.type === 'wake_failed' && m.wake_id === 'wake-bad'); i++) await sleep(50);
        })(),
        10_000,
        'wake-bad to fail',
      );
      expect(raw.messages.find((m) => m.type === 'wake_failed' && m.wake_id === 'wake-bad')).toMatchObject({ code: 'bad_message' });
      raw.child.disconnect();
      expect(await withTimeout(raw.exited, 15_000, 'exit after disconnect')).toEqual({ code: 0, signal: null });
      expect(raw.stderr()).toMatch(/parent went away/);
    } finally {
      raw.child.kill('SIGKILL');
    }
  });

  test('SIGTERM ends it with exit code 0', async () => {
    const raw = forkRaw();
    try {
      raw.child.send(VALID_START);
      await raw.next('ready');
      raw.child.kill('SIGTERM');
      expect(await withTimeout(raw.exited, 15_000, 'exit after SIGTERM')).toEqual({ code: 0, signal: null });
      expect(raw.stderr()).toMatch(/stopping: SIGTERM/);
    } finally {
      raw.child.kill('SIGKILL');
    }
  });

  test('no start message within 10 s is fatal no_config', async () => {
    const raw = forkRaw();
    try {
      const fatal = await raw.next('fatal');
      expect(fatal).toMatchObject({ type: 'fatal', code: 'no_config' });
      expect((await withTimeout(raw.exited, 15_000, 'exit')).code).toBe(1);
    } finally {
      raw.child.kill('SIGKILL');
    }
  }, 40_000);

  test('spawnRuntime refuses an invalid config before forking, and surfaces no secret', async () => {
    const { type: _type, ...config } = VALID_START;
    const outcome = await settle(spawnRuntime({ ...config, token: 'short' }));
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.error).toBeInstanceOf(RuntimeStartError);
    const error = (outcome as { error: RuntimeStartError }).error;
    expect(error.code).toBe('bad_config');
    expect(error.message).toContain('token');
  });
});
