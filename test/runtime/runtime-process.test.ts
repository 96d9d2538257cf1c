// Integration tests of the ds-runtime process and its parent protocol (DESIGN §2, §6),
// against real writer processes on real SQLite files. The runtime runs the whole wake loop
// (runtime/wake-loop.ts), so the store is written the way the controller writes one
// (test/support/runtime-store.ts): SubjectInitialized, then per wake WakeStarted, the
// runtime's wake, CheckpointRecorded and WakeEnded. The model is the reference policy.
import type { z } from 'zod';
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { WINDOW_PAGES } from '../../runtime/retrieval-window.js';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GROUP_CAPABILITIES } from '../../design/manifest.js';
import { modelCallRulesOf, PreRegistration } from '../../design/prereg.js';
import { resolveModel } from '../../design/model-choice.js';
import { subjectProjection } from '../../projector/subject-projection.js';
import {
  RuntimeChildMessage,
  RuntimeStartConfig,
  type WakeDone,
  type WakeProgress,
} from '../../runtime/protocol.js';
import { RuntimeStartError, RuntimeWakeError, spawnRuntime, type RuntimeProcess, type RuntimeWakeRequest } from '../../runtime/spawn.js';
import { Capabilities } from '../../schema/capabilities.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { hashText } from '../../schema/hash.js';
import { RetrievalPolicy } from '../../schema/retrieval-policy.js';
import type { WriterClient } from '../../writer/client.js';
import { ControllerScript, readEvents, RUNTIME_GOAL_ID, runtimeWorkspace, WORKSPACE_FILES, type OpenWake } from '../support/runtime-store.js';
import { messageDraft, startWriterFixture, type WriterFixture } from '../support/writer-fixture.js';
import { startScriptedModelServer } from '../../faults/scripted-model-server.js';
import { STUB_ANSWER } from '../../tools/bench/wake-overhead-bench.js';
import { DEFAULT_WRITER_REQUEST_TIMEOUT_MS } from '../../writer/protocol.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUNTIME_MAIN = path.join(REPO_ROOT, 'runtime', 'main.ts');
const TSX_LOADER = createRequire(import.meta.url).resolve('tsx');
const PREREG = PreRegistration.parse(JSON.parse(readFileSync(path.join(REPO_ROOT, 'experiments/prereg/default.json'), 'utf8')));
const BUDGET = PREREG.budgets_per_wake;
const WAKE_TIMEOUT_MS = 20_000;
/** The actors of the runtime's own events (the controller and the world write as `experiment`). */
const RUNTIME_ACTORS = new Set(['model', 'runtime', 'tool']);

function startConfig(f: WriterFixture, workspaceDir: string, overrides: Partial<Omit<RuntimeStartConfig, 'type'>> = {}): Omit<z.input<typeof RuntimeStartConfig>, 'type'> {
  return {
    subject_id: f.identity.subject_id,
    socket_path: f.writer.socketPath,
    token: f.tokens.runtime,
    capabilities: GROUP_CAPABILITIES.B,
    retrieval_policy: PREREG.retrieval_policy,
    workspace_dir: workspaceDir,
    model: { adapter: 'reference' },
    protocol: 'ds-model-output/2',
    writer_request_timeout_ms: DEFAULT_WRITER_REQUEST_TIMEOUT_MS,
    schema_subset: { dialect: 'none', policy: 'refuse' },
    ...overrides,
  };
}

let probeCounter = 0;
/** A wake request with no WakeStarted behind it: only for wakes the runtime must refuse before reading or writing anything. */
function probeRequest(visibleToSeq: number): RuntimeWakeRequest {
  probeCounter += 1;
  return { wake_id: `probe-${String(probeCounter).padStart(4, '0')}`, wake_at: '2026-07-20T09:00:00.000Z', visible_to_seq: visibleToSeq, budget: BUDGET };
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

const str = (e: EventEnvelope, key: string): string => String(e.payload[key]);
const ofType = (events: readonly EventEnvelope[], type: string): EventEnvelope[] => events.filter((e) => e.event_type === type);

/**
 * The runtime's events of one wake, in the order DESIGN §6 gives them: the one model call
 * first (recorded before anything uses it), then each decision caused by its proposal, each
 * intent by its decision, each tool outcome by its intent, every cause before its effect;
 * every event correlated with the wake. For a wake with no open intents to reconcile.
 */
function expectCognitiveOrder(appended: readonly EventEnvelope[], wakeId: string): void {
  expect(appended.length).toBeGreaterThan(0);
  expect(appended.every((e) => RUNTIME_ACTORS.has(e.actor))).toBe(true);
  expect(appended.every((e) => e.correlation_id === wakeId)).toBe(true);
  expect(appended[0]!.event_type).toBe('ModelOutputEvent.ModelAnswered');
  expect(str(appended[0]!, 'wake_id')).toBe(wakeId);
  expect(appended.filter((e) => e.event_type.startsWith('ModelOutputEvent.'))).toHaveLength(1);
  const byId = new Map(appended.map((e) => [e.event_id, e]));
  const causeOf = (e: EventEnvelope): EventEnvelope => {
    const cause = e.causation_id === null ? undefined : byId.get(e.causation_id);
    if (!cause) throw new Error(`${e.event_type} at seq ${e.seq}: causation_id ${e.causation_id} is no event of this wake`);
    expect(cause.seq, `${e.event_type} at seq ${e.seq} comes after its cause`).toBeLessThan(e.seq);
    return cause;
  };
  const proposals = ofType(appended, 'ActionEvent.ActionProposed');
  const decisions = ofType(appended, 'ActionEvent.PermissionDecided');
  // One decision per proposal, caused by it.
  expect(decisions.map((d) => str(d, 'proposal_id'))).toEqual(proposals.map((p) => str(p, 'proposal_id')));
  for (const decision of decisions) {
    const proposed = causeOf(decision);
    expect(proposed.event_type).toBe('ActionEvent.ActionProposed');
    expect(str(proposed, 'proposal_id')).toBe(str(decision, 'proposal_id'));
  }
  for (const intent of ofType(appended, 'ActionEvent.ExecutionIntentRecorded')) {
    const decision = causeOf(intent);
    expect(decision.event_type).toBe('ActionEvent.PermissionDecided');
    expect(str(decision, 'decision')).toBe('allow');
    expect(str(decision, 'proposal_id')).toBe(str(intent, 'proposal_id'));
    expect(str(intent, 'permission_event_id')).toBe(decision.event_id);
  }
  for (const outcome of [...ofType(appended, 'ActionEvent.ToolSucceeded'), ...ofType(appended, 'ActionEvent.ToolFailed')]) {
    const intent = causeOf(outcome);
    expect(intent.event_type).toBe('ActionEvent.ExecutionIntentRecorded');
    expect(str(outcome, 'intent_event_id')).toBe(intent.event_id);
  }
  // Task board and journal operations run on their own allowed decision.
  for (const op of [...ofType(appended, 'MemoryEvent.TaskBoardChanged'), ...ofType(appended, 'MemoryEvent.JournalEntryWritten')]) {
    const decision = causeOf(op);
    expect(decision.event_type).toBe('ActionEvent.PermissionDecided');
    expect(str(decision, 'decision')).toBe('allow');
    expect(str(decision, 'proposal_id')).toBe(str(op, 'proposal_id'));
  }
}

/** What the wake's counts say, checked against the events it appended. */
function expectCountsMatch(report: WakeDone, appended: readonly EventEnvelope[]): void {
  const c = report.counts;
  expect(c.appends).toBe(report.appends);
  expect(appended).toHaveLength(report.appends);
  expect(c.model_calls).toBe(1);
  const answered = ofType(appended, 'ModelOutputEvent.ModelAnswered')[0]!;
  const usage = answered.payload['usage'] as { prompt_tokens: number; completion_tokens: number };
  expect(c.tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
  expect(c.proposals).toBe(ofType(appended, 'ActionEvent.ActionProposed').length);
  expect(c.tool_calls).toBe(ofType(appended, 'ActionEvent.PermissionDecided').filter((d) => str(d, 'decision') === 'allow').length);
  expect(c.denials).toBe(ofType(appended, 'ActionEvent.PermissionDecided').filter((d) => str(d, 'decision') === 'deny').length);
  expect(c.failures).toBe(ofType(appended, 'ActionEvent.ToolFailed').length);
  expect(c.executions).toBe(ofType(appended, 'ActionEvent.ToolSucceeded').length + ofType(appended, 'MemoryEvent.TaskBoardChanged').length + ofType(appended, 'MemoryEvent.JournalEntryWritten').length);
  expect(c.claims).toBe(ofType(appended, 'MemoryEvent.ClaimRecorded').length);
  expect(c.plan_revisions).toBe(ofType(appended, 'PlanEvent.PlanRevisionProposed').length);
  expect(c.reconciled + c.unknown_outcomes).toBe(0);
}

const WINDOW_STATEMENT = /^(?:(\d+) pinned events? \(starting conditions\) \+ )?window (\d+) of (\d+) eligible events \((\d+) older left out, (\d+) over the token cap\); (\d+) events of other types not shown$/;

/** The window statement accounts for every event up to visible_to_seq, under the pre-registered policy. */
function expectWindowStatement(statement: string, visible: readonly EventEnvelope[]): { shown: number; eligible: number } {
  const match = WINDOW_STATEMENT.exec(statement);
  if (!match) throw new Error(`not a window statement: ${statement}`);
  const [pinned, shown, eligible, byCount, byCap, other] = match.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number, number, number];
  const types = new Set<string>(PREREG.retrieval_policy.event_types);
  const pinnedTypes = new Set<string>(PREREG.retrieval_policy.pinned_event_types);
  const eligibleInStore = visible.filter((e) => types.has(e.event_type)).length;
  expect(pinned).toBe(visible.filter((e) => pinnedTypes.has(e.event_type)).length);
  expect(eligible).toBe(eligibleInStore);
  expect(other).toBe(visible.length - eligibleInStore - pinned);
  // Rule 2.0.0: the window starts at a page boundary (WINDOW_PAGES pages of the window) leaving at most window_events.
  const windowEvents = PREREG.retrieval_policy.window_events;
  const page = Math.ceil(windowEvents / WINDOW_PAGES);
  expect(byCount).toBe(Math.ceil(Math.max(0, eligibleInStore - windowEvents) / page) * page);
  expect(shown + byCount + byCap).toBe(eligible);
  return { shown, eligible };
}

// ---------------------------------------------------------------------------------------

describe('ds-runtime: its start message uses the shared schemas', () => {
  test('capabilities and retrieval policy are the very schemas of schema/, which the manifest and the pre-registration use too', () => {
    expect(RuntimeStartConfig.shape.capabilities).toBe(Capabilities);
    expect(RuntimeStartConfig.shape.retrieval_policy).toBe(RetrievalPolicy);
    expect(PreRegistration.shape.retrieval_policy).toBe(RetrievalPolicy);
    const start = {
      type: 'start',
      subject_id: 's',
      socket_path: '/tmp/x.sock',
      token: 'a'.repeat(24),
      capabilities: GROUP_CAPABILITIES.C,
      retrieval_policy: PREREG.retrieval_policy,
      workspace_dir: '/tmp/workspace',
      model: { adapter: 'reference' },
      protocol: 'ds-model-output/2',
      writer_request_timeout_ms: 5_000,
      schema_subset: { dialect: 'none', policy: 'refuse' },
    };
    expect(RuntimeStartConfig.safeParse(start).success).toBe(true);
    // The workspace, the model and the answer protocol are part of the start message: without them there is no wake to run.
    const { workspace_dir: _w, ...noWorkspace } = start;
    const { model: _m, ...noModel } = start;
    const { protocol: _p, ...noProtocol } = start;
    // The writer request timeout too (the pre-registration's, design/prereg.ts), within its bounds.
    const { writer_request_timeout_ms: _t, ...noTimeout } = start;
    expect(RuntimeStartConfig.safeParse(noTimeout).success).toBe(false);
    expect(RuntimeStartConfig.safeParse({ ...start, writer_request_timeout_ms: 50 }).success).toBe(false);
    expect(RuntimeStartConfig.safeParse(noWorkspace).success).toBe(false);
    expect(RuntimeStartConfig.safeParse(noModel).success).toBe(false);
    expect(RuntimeStartConfig.safeParse(noProtocol).success).toBe(false);
    expect(RuntimeStartConfig.safeParse({ ...start, protocol: 'ds-model-output/1' }).success).toBe(true);
    expect(RuntimeStartConfig.safeParse({ ...start, protocol: 'ds-model-output/3' }).success).toBe(false);
    expect(RuntimeStartConfig.safeParse({ ...start, model: { adapter: 'oracle' } }).success).toBe(false);
    // Re-planning without persistent state is no group; a group letter smuggled in is refused.
    expect(RuntimeStartConfig.safeParse({ ...start, capabilities: { persistent_state: false, autonomous_replanning: true } }).success).toBe(false);
    expect(RuntimeStartConfig.safeParse({ ...start, capabilities: { ...GROUP_CAPABILITIES.C, group: 'C' } }).success).toBe(false);
    expect(RuntimeStartConfig.safeParse({ ...start, group: 'C' }).success).toBe(false);
    expect(RuntimeStartConfig.safeParse({ ...start, retrieval_policy: { ...PREREG.retrieval_policy, event_types: ['WorldEvent.NoSuchThing'] } }).success).toBe(false);
  });
});

/**
 * Every file the runtime process loads from this repository (relative imports followed
 * from runtime/main.ts), and the packages they import. Bounded by the repository's size.
 */
function runtimeImportGraph(): { files: string[]; packages: string[]; importsOf: Map<string, string[]> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const importsOf = new Map<string, string[]>();
  const queue = [RUNTIME_MAIN];
  for (let guard = 0; queue.length > 0 && guard < 1_000; guard++) {
    const file = queue.shift()!;
    if (files.has(file)) continue;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    const local: string[] = [];
    for (const match of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
      const target = match[1]!;
      if (target.startsWith('.')) {
        const resolved = path.resolve(path.dirname(file), target.replace(/\.js$/, '.ts'));
        local.push(path.relative(REPO_ROOT, resolved));
        queue.push(resolved);
      } else packages.add(target);
    }
    importsOf.set(path.relative(REPO_ROOT, file), local);
  }
  return { files: [...files].map((f) => path.relative(REPO_ROOT, f)), packages: [...packages], importsOf };
}

describe('ds-runtime: what the process can reach', () => {
  test('it loads foundation/, schema/, projector/ and runtime/ code and the writer client, but no controller code, no store code and no database driver', () => {
    const { files, packages, importsOf } = runtimeImportGraph();
    expect(files).toContain('writer/client.ts');
    // The wake loop folds what it reads with the subject projector.
    expect(files).toContain('projector/subject-projection.ts');
    expect(files).toContain('runtime/wake-loop.ts');
    expect(files.filter((f) => f.startsWith('controller/'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('writer/') && !['writer/client.ts', 'writer/protocol.ts'].includes(f))).toEqual([]);
    // Nothing else: the rooms below the runtime (foundation/rooms.ts: foundation ← schema ← projector ← writer ← runtime).
    expect(files.filter((f) => !/^(foundation|schema|projector|runtime)\//.test(f) && !f.startsWith('writer/'))).toEqual([]);
    // The projector it loads depends on foundation/, schema/ and itself only.
    const projectorImports = files.filter((f) => f.startsWith('projector/')).flatMap((f) => importsOf.get(f) ?? []);
    expect(projectorImports.filter((f) => !/^(foundation|schema|projector)\//.test(f))).toEqual([]);
    expect(packages.filter((p) => /sqlite/i.test(p))).toEqual([]);
  });
});

describe('ds-runtime: real wakes against a live writer', () => {
  let f: WriterFixture;
  let exp: WriterClient;
  let script: ControllerScript;
  let workspace: string;
  let runtime: RuntimeProcess;
  const progress: WakeProgress[] = [];
  /** Seq the runtime has observed up to (the last visible_to_seq of a wake it finished), as the test expects it. */
  let observed = 0;
  /** Wake 1's reads, which wake 2's window shows. */
  let firstReads: EventEnvelope[] = [];

  /** The runtime's events of an open wake: after its WakeStarted, up to the head. */
  async function runtimeEventsOf(wake: OpenWake): Promise<EventEnvelope[]> {
    const head = (await exp.head()).seq;
    return (await readEvents(exp, wake.started.seq + 1, head)).filter((e) => RUNTIME_ACTORS.has(e.actor));
  }

  /** One wake as the controller runs it: WakeStarted, the runtime's wake, CheckpointRecorded and WakeEnded. */
  async function fullWake(): Promise<{ wake: OpenWake; report: WakeDone; appended: EventEnvelope[] }> {
    const wake = await script.startWake();
    const report = await runtime.wake(wake.request, WAKE_TIMEOUT_MS);
    const appended = await runtimeEventsOf(wake);
    await script.endWake(wake, report);
    return { wake, report, appended };
  }

  beforeAll(async () => {
    f = await startWriterFixture();
    exp = await f.connect('experiment');
    script = new ControllerScript(exp, BUDGET);
    workspace = runtimeWorkspace();
    await script.initialize();
    await exp.append([messageDraft(), messageDraft()]);
    runtime = await spawnRuntime(startConfig(f, workspace));
    runtime.onProgress((p) => progress.push(p));
  });

  afterAll(async () => {
    await runtime?.stop().catch(() => undefined);
    await f?.cleanup().catch(() => undefined);
    if (workspace) rmSync(workspace, { recursive: true, force: true });
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

  test('a wake after WakeStarted: one model call recorded before use, actions through the gate and the tools, a checkpoint at visible_to_seq', async () => {
    const wake = await script.startWake();
    const visibleToSeq = wake.request.visible_to_seq;
    expect(wake.started.seq).toBe(visibleToSeq + 1);
    const report = await runtime.wake(wake.request, WAKE_TIMEOUT_MS);
    expect(report).toMatchObject({ wake_id: wake.wakeId, observed_from_seq: 1, observed_to_seq: visibleToSeq, events_read: visibleToSeq, not_built: [] });
    expect(report.appends).toBeGreaterThan(0);
    expect(report.counts.model_calls).toBe(1);
    expect(report.checkpoint.observed_event_seq).toBe(visibleToSeq);
    expect(report.checkpoint.current_goal_id).toBe(RUNTIME_GOAL_ID);

    const visible = await readEvents(exp, 1, visibleToSeq);
    expect(visible).toHaveLength(visibleToSeq);
    const { shown } = expectWindowStatement(report.window_statement, visible);
    expect(shown).toBeGreaterThan(0);
    // The checkpoint cites only what the wake could see.
    const visibleIds = new Set(visible.map((e) => e.event_id));
    expect(report.checkpoint.evidence_event_ids.filter((id) => !visibleIds.has(id))).toEqual([]);

    const appended = await runtimeEventsOf(wake);
    expectCountsMatch(report, appended);
    expectCognitiveOrder(appended, wake.wakeId);
    // The reference policy reads the sources: real file intents, and outcomes hashing the files on disk.
    const intents = ofType(appended, 'ActionEvent.ExecutionIntentRecorded');
    expect(intents.map((i) => str(i, 'path')).sort()).toEqual(Object.keys(WORKSPACE_FILES).sort());
    firstReads = ofType(appended, 'ActionEvent.ToolSucceeded');
    expect(firstReads).toHaveLength(intents.length);
    for (const read of firstReads) {
      const intent = intents.find((i) => i.event_id === read.causation_id)!;
      expect(read.payload['content']).toBe(WORKSPACE_FILES[str(intent, 'path')]);
      expect(str(read, 'observed_post_hash')).toBe(hashText(readFileSync(path.join(workspace, str(intent, 'path')))));
    }
    // Every FACT rests on an event the wake could see.
    for (const claim of ofType(appended, 'MemoryEvent.ClaimRecorded').filter((c) => str(c, 'claim_type') === 'FACT')) {
      expect((claim.payload['evidence_event_ids'] as string[]).every((id) => visibleIds.has(id))).toBe(true);
    }

    // wake_progress: one per append, before wake_done, counting the execution intents as they come.
    const mine = progress.filter((p) => p.wake_id === wake.wakeId);
    expect(mine.map((p) => p.appends)).toEqual(appended.map((_, i) => i + 1));
    expect(mine.map((p) => p.execution_intents)).toEqual(appended.map((_, i) => appended.slice(0, i + 1).filter((e) => e.event_type === 'ActionEvent.ExecutionIntentRecorded').length));
    expect(mine.at(-1)!.execution_intents).toBe(intents.length);

    await script.endWake(wake, report);
    observed = visibleToSeq;
    expect(openFiles(runtime.pid).filter((target) => target.startsWith(f.dbPath))).toEqual([]);
  });

  test('the next wake reads only the events after the first; an event appended after its WakeStarted waits for the wake after', async () => {
    const between = (await exp.append([messageDraft()])).events[0]!;
    const wake = await script.startWake();
    // Arrives during the wake, after visible_to_seq: not this wake's to see.
    const late = (await exp.append([messageDraft({ payload: { from: 'reviewer', subject: 'late news', body: 'The dataset arrived a minute ago.', in_reply_to: null } })])).events[0]!;
    const visibleToSeq = wake.request.visible_to_seq;
    const report = await runtime.wake(wake.request, WAKE_TIMEOUT_MS);
    expect(report).toMatchObject({ wake_id: wake.wakeId, observed_from_seq: observed + 1, observed_to_seq: visibleToSeq, events_read: visibleToSeq - observed, not_built: [] });
    expect(between.seq).toBeLessThanOrEqual(visibleToSeq);
    expect(late.seq).toBeGreaterThan(visibleToSeq);
    expect(report.checkpoint.observed_event_seq).toBe(visibleToSeq);
    expectWindowStatement(report.window_statement, await readEvents(exp, 1, visibleToSeq));

    const appended = await runtimeEventsOf(wake);
    expectCountsMatch(report, appended);
    expectCognitiveOrder(appended, wake.wakeId);
    // Nothing of the wake refers to the late message, and its checkpoint does not cite it.
    expect(JSON.stringify(appended)).not.toContain(late.event_id);
    expect(report.checkpoint.evidence_event_ids).not.toContain(late.event_id);
    // Wake 1's reads are in this wake's window now: the FACTs rest on them.
    const cited = ofType(appended, 'MemoryEvent.ClaimRecorded').filter((c) => str(c, 'claim_type') === 'FACT').flatMap((c) => c.payload['evidence_event_ids'] as string[]);
    expect(firstReads.map((r) => r.event_id).every((id) => cited.includes(id))).toBe(true);
    await script.endWake(wake, report);
    observed = visibleToSeq;

    // The wake after sees the late message, and only what came after wake 2's visible_to_seq.
    const next = await fullWake();
    expect(next.report).toMatchObject({ observed_from_seq: observed + 1, observed_to_seq: next.wake.request.visible_to_seq });
    expect(next.report.observed_from_seq).toBeLessThanOrEqual(late.seq);
    expect(next.report.observed_to_seq).toBeGreaterThanOrEqual(late.seq);
    const nextCited = ofType(next.appended, 'MemoryEvent.ClaimRecorded').flatMap((c) => c.payload['evidence_event_ids'] as string[]);
    expect(nextCited).toContain(late.event_id);
    expectCognitiveOrder(next.appended, next.wake.wakeId);
    observed = next.wake.request.visible_to_seq;
  });

  test('more events than one read page are read in several pages, all counted; the window keeps the pre-registered count', async () => {
    const drafts = Array.from({ length: 2_500 }, () => messageDraft());
    for (let i = 0; i < drafts.length; i += 1_000) await exp.append(drafts.slice(i, i + 1_000));
    const { wake, report, appended } = await fullWake();
    const visibleToSeq = wake.request.visible_to_seq;
    expect(report).toMatchObject({ observed_from_seq: observed + 1, observed_to_seq: visibleToSeq, events_read: visibleToSeq - observed });
    expect(report.events_read).toBeGreaterThan(2_500);
    const { shown, eligible } = expectWindowStatement(report.window_statement, await readEvents(exp, 1, visibleToSeq));
    expect(eligible).toBeGreaterThan(2_500);
    expect(shown).toBeLessThanOrEqual(PREREG.retrieval_policy.window_events);
    expectCountsMatch(report, appended);
    expectCognitiveOrder(appended, wake.wakeId);
    observed = visibleToSeq;
  });

  test('visible_to_seq beyond the head fails the wake as beyond_head, below what was observed as seq_regressed; neither appends or observes anything', async () => {
    const wake = await script.startWake();
    const head = (await exp.head()).seq;
    const beyond = await expectWakeError(runtime.wake({ ...wake.request, visible_to_seq: head + 5 }, WAKE_TIMEOUT_MS), 'wake_failed');
    expect(beyond.failure?.code).toBe('beyond_head');
    expect(beyond.message).toContain(String(head + 5));
    const regressed = await expectWakeError(runtime.wake({ ...wake.request, visible_to_seq: observed - 1 }, WAKE_TIMEOUT_MS), 'wake_failed');
    expect(regressed.failure?.code).toBe('seq_regressed');
    expect(regressed.message).toContain(String(observed - 1));
    expect((await exp.head()).seq).toBe(head);
    expect(progress.filter((p) => p.wake_id === wake.wakeId)).toEqual([]);
    // Nothing was taken as observed by the failures: the same wake with the right visible_to_seq reads from where the last one stopped.
    const report = await runtime.wake(wake.request, WAKE_TIMEOUT_MS);
    expect(report).toMatchObject({ wake_id: wake.wakeId, observed_from_seq: observed + 1, observed_to_seq: wake.request.visible_to_seq });
    expect(report.counts.model_calls).toBe(1);
    expectCognitiveOrder(await runtimeEventsOf(wake), wake.wakeId);
    await script.endWake(wake, report);
    observed = wake.request.visible_to_seq;
  });

  test('a wake that outlives its timeout rejects with timeout; a wake meanwhile is refused as busy', async () => {
    const slowWake = await script.startWake();
    let slowReport: WakeDone;
    const thaw = freeze(f);
    try {
      const slow = runtime.wake(slowWake.request, WAKE_TIMEOUT_MS);
      const busy = await expectWakeError(runtime.wake(probeRequest(slowWake.request.visible_to_seq), WAKE_TIMEOUT_MS), 'wake_failed');
      // The second wake reached the runtime while the first waited on the frozen writer.
      expect(busy.failure?.code).toBe('busy');
      expect(busy.failure?.message).toContain('one wake at a time');
      expect(busy.failure?.message).toContain(slowWake.wakeId);
      thaw();
      slowReport = await slow;
    } finally {
      thaw();
    }
    expect(slowReport).toMatchObject({ wake_id: slowWake.wakeId, observed_from_seq: observed + 1, observed_to_seq: slowWake.request.visible_to_seq });
    expect(slowReport.counts.model_calls).toBe(1);
    await script.endWake(slowWake, slowReport);
    observed = slowWake.request.visible_to_seq;

    const timedOut = await script.startWake();
    const thaw2 = freeze(f);
    try {
      const error = await expectWakeError(runtime.wake(timedOut.request, 300), 'timeout');
      expect(error.message).toContain('300 ms');
    } finally {
      thaw2();
    }
    // The timed-out wake goes on inside the runtime once the writer thaws; until it ends, a
    // wake is busy. A probe asking for more than the head is refused before anything is
    // read or written: busy while the wake runs, beyond_head once the runtime is free.
    const probeSeq = (await exp.head()).seq + 10_000;
    let free = false;
    for (let attempt = 0; attempt < 100 && !free; attempt++) {
      const probe = await expectWakeError(runtime.wake(probeRequest(probeSeq), WAKE_TIMEOUT_MS), 'wake_failed');
      if (probe.failure?.code === 'beyond_head') free = true;
      else {
        expect(probe.failure?.code).toBe('busy');
        await sleep(100);
      }
    }
    expect(free).toBe(true);
    // Nobody waited for its wake_done, but it did the whole wake, in order; the progress still came.
    const appended = await runtimeEventsOf(timedOut);
    expectCognitiveOrder(appended, timedOut.wakeId);
    expect(ofType(appended, 'MemoryEvent.FocusUpdated')).toHaveLength(1);
    expect(progress.filter((p) => p.wake_id === timedOut.wakeId).map((p) => p.appends)).toEqual(appended.map((_, i) => i + 1));
    await script.endWake(timedOut, null);
    observed = timedOut.request.visible_to_seq;
  });

  test('a wake while the writer is gone fails as writer_unavailable; after a restart the same wake runs where the runtime was', async () => {
    const wake = await script.startWake();
    await f.stop();
    const error = await expectWakeError(runtime.wake(wake.request, WAKE_TIMEOUT_MS), 'wake_failed');
    expect(error.failure?.code).toBe('writer_unavailable');
    expect(error.failure?.message).toMatch(/cannot connect to the writer/);

    f = await f.restart();
    exp = await f.connect('experiment');
    script.client = exp;
    expect(await runtimeEventsOf(wake)).toEqual([]);
    const report = await runtime.wake(wake.request, WAKE_TIMEOUT_MS);
    expect(report).toMatchObject({ wake_id: wake.wakeId, observed_from_seq: observed + 1, observed_to_seq: wake.request.visible_to_seq, events_read: wake.request.visible_to_seq - observed });
    expect(report.counts.model_calls).toBe(1);
    expectCognitiveOrder(await runtimeEventsOf(wake), wake.wakeId);
    await script.endWake(wake, report);
    observed = wake.request.visible_to_seq;
  });

  test('a wake message that fails its schema, or reuses a waiting wake_id, is refused before sending', async () => {
    const bad = await expectWakeError(runtime.wake({ ...probeRequest(1), wake_at: 'tomorrow' }, WAKE_TIMEOUT_MS), 'bad_request');
    expect(bad.message).toContain('wake_at');
    const wake = await script.startWake();
    let report: WakeDone;
    const thaw = freeze(f);
    try {
      const first = runtime.wake(wake.request, WAKE_TIMEOUT_MS);
      const duplicate = await expectWakeError(runtime.wake(wake.request, WAKE_TIMEOUT_MS), 'bad_request');
      expect(duplicate.message).toContain('already waiting');
      thaw();
      report = await first;
    } finally {
      thaw();
    }
    expect(report).toMatchObject({ wake_id: wake.wakeId, observed_from_seq: observed + 1, observed_to_seq: wake.request.visible_to_seq });
    // One wake ran, not two: one model call in the store.
    expect(ofType(await runtimeEventsOf(wake), 'ModelOutputEvent.ModelAnswered')).toHaveLength(1);
    await script.endWake(wake, report);
    observed = wake.request.visible_to_seq;
  });

  test('a wrong token or another subject fails the wake, typed, and appends nothing', async () => {
    const wrongToken = await spawnRuntime(startConfig(f, workspace, { token: 'x'.repeat(32) }));
    const otherSubject = await spawnRuntime(startConfig(f, workspace, { subject_id: 'subject-999' }));
    try {
      const head = (await exp.head()).seq;
      const refused = await expectWakeError(wrongToken.wake(probeRequest(head), WAKE_TIMEOUT_MS), 'wake_failed');
      expect(refused.failure?.code).toBe('writer_refused');
      expect(refused.failure?.message).toMatch(/^unauthenticated/);
      const mismatch = await expectWakeError(otherSubject.wake(probeRequest(head), WAKE_TIMEOUT_MS), 'wake_failed');
      expect(mismatch.failure?.code).toBe('identity_mismatch');
      expect(mismatch.failure?.message).toContain('subject-999');
      // The writer records the refused hello (its own AppendRejected); the runtimes appended nothing.
      const after = await readEvents(exp, head + 1, (await exp.head()).seq);
      expect(after.map((e) => [e.event_type, e.payload['reason']])).toEqual([['SystemEvent.AppendRejected', 'unauthenticated']]);
    } finally {
      await wrongToken.stop();
      await otherSubject.stop();
    }
  });

  test('SIGKILL of the runtime mid-wake rejects the wake with exited and the signal', async () => {
    const victim = await spawnRuntime(startConfig(f, workspace));
    const wake = await script.startWake();
    const head = (await exp.head()).seq;
    const thaw = freeze(f);
    try {
      const waiting = victim.wake(wake.request, WAKE_TIMEOUT_MS);
      await sleep(200);
      const killed = victim.kill('SIGKILL');
      const error = await expectWakeError(waiting, 'exited');
      expect(error.exit).toEqual({ code: null, signal: 'SIGKILL' });
      expect(await killed).toEqual({ code: null, signal: 'SIGKILL' });
      // A dead runtime takes no more wakes.
      const after = await expectWakeError(victim.wake(probeRequest(head), WAKE_TIMEOUT_MS), 'bad_request');
      expect(after.exit?.signal).toBe('SIGKILL');
    } finally {
      thaw();
    }
    // Killed while it waited for the writer: it appended nothing. The controller ends the wake as crashed.
    expect((await exp.head()).seq).toBe(head);
    await script.endWake(wake, null, 'crashed');
  });

  test('codeRoot runs the runtime from that directory; a new runtime reads the whole store on its first wake', async () => {
    const fromRoot = await spawnRuntime(startConfig(f, workspace), { codeRoot: REPO_ROOT });
    try {
      expect(readlinkSync(`/proc/${fromRoot.pid}/cwd`)).toBe(path.resolve(REPO_ROOT));
      const wake = await script.startWake();
      const report = await fromRoot.wake(wake.request, WAKE_TIMEOUT_MS);
      expect(report).toMatchObject({ wake_id: wake.wakeId, observed_from_seq: 1, observed_to_seq: wake.request.visible_to_seq, events_read: wake.request.visible_to_seq });
      expect(report.counts.model_calls).toBe(1);
      expectCognitiveOrder(await runtimeEventsOf(wake), wake.wakeId);
      await script.endWake(wake, report);
    } finally {
      expect(await fromRoot.stop()).toEqual({ code: 0, signal: null });
    }
  });

  test('an answer that asks for nothing else: with steps_share_appends its focus update is committed with it (one append, one wake_progress); without, one append each', async () => {
    const server = await startScriptedModelServer(() => Promise.resolve({ kind: 'content', content: STUB_ANSWER }));
    const rules = modelCallRulesOf(PREREG);
    if (rules === null) throw new Error('the default pre-registration fixes the model-call rules');
    const stub = await spawnRuntime(startConfig(f, workspace, { model: resolveModel(server.modelChoice(), rules.transport_retry, 'strip').runtime, schema_subset: { dialect: 'json_schema', policy: 'strip' } }));
    const seen: WakeProgress[] = [];
    stub.onProgress((p) => seen.push(p));
    try {
      for (const share of [true, false]) {
        const wake = await script.startWake();
        const report = await stub.wake({ ...wake.request, steps_share_appends: share }, WAKE_TIMEOUT_MS);
        const appended = await runtimeEventsOf(wake);
        // The same events in the same order either way.
        expect(appended.map((e) => e.event_type), `share ${share}`).toEqual(['ModelOutputEvent.ModelAnswered', 'MemoryEvent.FocusUpdated']);
        expect(appended[1]!.seq).toBe(appended[0]!.seq + 1);
        expect(report.appends).toBe(2);
        expect(seen.filter((p) => p.wake_id === wake.wakeId).map((p) => p.appends), `share ${share}`).toEqual(share ? [2] : [1, 2]);
        // One commit: the writer stamps a batch with one recorded_at.
        if (share) expect(appended[1]!.recorded_at).toBe(appended[0]!.recorded_at);
        await script.endWake(wake, report);
      }
      expect(server.requests).toHaveLength(2);
    } finally {
      await stub.stop();
      await server.close();
    }
  });

  test('every event of the store, the controller\'s and the runtime\'s, folds through the subject projector', async () => {
    const head = (await exp.head()).seq;
    const state = subjectProjection.applyAll(subjectProjection.initial(), await readEvents(exp, 1, head));
    expect(state.last_applied_event_seq).toBe(head);
    expect(state).toMatchObject({ lifecycle_state: 'DORMANT', cognitive_state: 'IDLE', current_wake_id: null, open_intents: {} });
    expect(state.task_board['task-read-sources']?.status).toBe('done');
    // What the wakes wrote in the workspace is there: wake 2 wrote the findings from the sources it had read.
    expect(existsSync(path.join(workspace, 'notes', 'findings.md'))).toBe(true);
    expect(readFileSync(path.join(workspace, 'notes', 'findings.md'), 'utf8')).toContain('2,870');
  });

  test('stop() ends the runtime cleanly with exit code 0', async () => {
    const stopping = await spawnRuntime(startConfig(f, workspace));
    expect(await stopping.stop()).toEqual({ code: 0, signal: null });
    expect(await stopping.exited).toEqual({ code: 0, signal: null });
  });
});

// ---------------------------------------------------------------------------------------
// a stop while a wake is under way: bounded by the model's call timeout plus the margin

describe('ds-runtime: a stop lets the wake under way reach its step boundary within the model\'s call timeout plus 5 s', () => {
  const LOCAL_MODEL_FILE = fileURLToPath(new URL('../../../shared/models/stories260K.gguf', import.meta.url));
  /** How long the wake is held (the writer frozen) after the stop: past the runtime's 5 s margin, within the local model's call timeout plus it. */
  const HELD_MS = 6_500;
  const LOCAL_CALL_TIMEOUT_MS = 8_000;

  /** A runtime on its own writer, one wake sent and held on the frozen writer, then stopped; the wake's failure once HELD_MS have passed and the writer thawed. */
  async function stopHeldWake(model: RuntimeStartConfig['model']): Promise<{ failure: RuntimeWakeError; exit: Awaited<ReturnType<RuntimeProcess['stop']>> }> {
    const f = await startWriterFixture();
    const workspace = runtimeWorkspace();
    try {
      const script = new ControllerScript(await f.connect('experiment'), BUDGET);
      await script.initialize();
      // Writer requests wait longer than the wake is held: nothing but the stop's grace can end it early.
      const runtime = await spawnRuntime(startConfig(f, workspace, { model, writer_request_timeout_ms: 60_000 }), { startTimeoutMs: 120_000 });
      const wake = await script.startWake();
      const thaw = freeze(f);
      try {
        const outcome = settle(runtime.wake(wake.request, 60_000));
        await sleep(300);
        const exit = runtime.stop(60_000);
        await sleep(HELD_MS);
        thaw();
        const settled = await outcome;
        if (settled.ok) throw new Error(`the stopped wake succeeded: ${JSON.stringify(settled.value)}`);
        expect(settled.error).toBeInstanceOf(RuntimeWakeError);
        return { failure: settled.error as RuntimeWakeError, exit: await exit };
      } finally {
        thaw();
      }
    } finally {
      await f.cleanup().catch(() => undefined);
      rmSync(workspace, { recursive: true, force: true });
    }
  }

  // Issue 33 item 4: the grace once counted the openai adapter's timeout only, so a stop cut a
  // local model's wake after the bare margin — a call under way lost unrecorded — though the
  // controller waits the manifest's call_timeout_ms for it.
  test('a local model (waited for, in the runtime process): the wake held past the margin still ends at its step boundary, not cut', async () => {
    const { failure, exit } = await stopHeldWake({ adapter: 'local', model_file: LOCAL_MODEL_FILE, model_id: 'stories260K', params: { temperature: null, top_p: null, seed: 1, max_tokens: 16 }, threads: 1, context_size: 2_048, timeout_ms: LOCAL_CALL_TIMEOUT_MS, kv_reuse: true });
    expect(failure.failure?.code).toBe('stopped');
    expect(failure.failure?.message).toContain('at a step boundary of the wake; everything it did is recorded');
    expect(exit).toEqual({ code: 0, signal: null });
  }, 180_000);

  test('the reference policy (not waited for): the wake held past the margin is cut after it, and says so', async () => {
    const { failure, exit } = await stopHeldWake({ adapter: 'reference' });
    expect(failure.failure?.code).toBe('stopped');
    expect(failure.failure?.message).toContain('the wake did not reach a step boundary within 5000 ms and was cut');
    expect(exit).toEqual({ code: 0, signal: null });
  }, 120_000);
});

// ---------------------------------------------------------------------------------------
// start-up and the channel, as a parent sees them on raw IPC

interface RawRuntime {
  readonly child: ChildProcess;
  readonly messages: RuntimeChildMessage[];
  stderr(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  next(type: RuntimeChildMessage['type'], timeoutMs?: number): Promise<RuntimeChildMessage>;
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
    next(type, timeoutMs = 15_000) {
      const seen = messages.find((m) => m.type === type);
      if (seen) return Promise.resolve(seen);
      return withTimeout(new Promise((resolve) => waiters.push({ type, resolve })), timeoutMs, `a ${type} message`);
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
  workspace_dir: '/nonexistent/workspace',
  model: { adapter: 'reference' },
  protocol: 'ds-model-output/2',
  writer_request_timeout_ms: DEFAULT_WRITER_REQUEST_TIMEOUT_MS,
  schema_subset: { dialect: 'none', policy: 'refuse' },
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
    expect(raw.stderr()).toMatch(/fatal bad_start/);
  });

  test('a wake before start is refused as not_started; a malformed wake as bad_message; then start, ready, and exit on disconnect', async () => {
    const raw = forkRaw();
    try {
      raw.child.send({ type: 'wake', wake_id: 'wake-early', wake_at: '2026-07-20T09:00:00.000Z', visible_to_seq: 1, budget: BUDGET });
      expect(await raw.next('wake_failed')).toMatchObject({ wake_id: 'wake-early', code: 'not_started' });
      raw.child.send(VALID_START);
      // The reference policy has nothing to check before the first wake: no preflight, said as null.
      expect(await raw.next('ready')).toEqual({ type: 'ready', pid: raw.child.pid, preflight: null });
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
      // The child's own 10 s start timer runs from its start-up, which takes seconds more on a loaded machine (a suite under load 10 took over 15 s).
      const fatal = await raw.next('fatal', 30_000);
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
