// The instance's two children and the controller's connection (DESIGN §2): ds-writer (spawned on
// the run's store, with the socket both connect to) and ds-runtime (spawned with its start
// message, its model checked before it says ready). Start, stop, shut down, and the writer's
// restart after a planned kill — nothing here decides what to write: instance.ts,
// wake-sequence.ts and crash-drills.ts do, through `connected()`.
import { schemaSubsetPolicyOf } from '../schema/model-call-policy.js';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { writerRequestTimeoutMsOf } from '../design/prereg.js';
import type { InstanceManifest } from '../design/manifest.js';
import { framingOf } from '../design/scenario.js';
import { recordedAdapterOf } from '../runtime/model-adapters/adapter-list.js';
import { ConstraintShownEarlier, type PreflightReport } from '../runtime/protocol.js';
import { spawnRuntime, type RuntimeProcess } from '../runtime/spawn.js';
import { FaultSwitch } from '../schema/fault-switch.js';
import { RUN_FILES } from '../schema/run-files.js';
import type { WriterClient } from '../writer/client.js';
import type { WriterExit, WriterProcess } from '../writer/spawn.js';
import { InstanceError } from './instance-error.js';
import type { InstanceInput } from './instance-options.js';
import { prepareSocketDir, type SocketDir } from './isolation.js';
import { connectController, newWriterTokens, spawnSubjectWriter } from './writer-session.js';

/** A child asked to stop gets this long before SIGKILL. */
export const CHILD_STOP_TIMEOUT_MS = 10_000;
/** How long a runtime may take to say ready, before its model check's own time (the call timeout) is added. */
const RUNTIME_START_TIMEOUT_MS = 20_000;
/** A server's preflight side requests (models, props, tokenizer), each bounded by 10 s in the openai adapter. */
const PREFLIGHT_SIDE_REQUESTS_MS = 30_000;
/** Upper bound on the writer restarts one instance may need (one planned writer crash, plus margin). */
export const MAX_WRITER_RESTARTS = 4;

/** The longest one model call may take: every transport attempt its timeout, plus the pre-registered waits between them. */
export function modelCallBudgetMs(input: Pick<InstanceInput, 'rules' | 'manifest'>): number {
  const retry = input.rules.transport_retry;
  return (input.manifest.model.call_timeout_ms ?? 0) * retry.max_attempts + retry.backoff_ms.reduce((sum, ms) => sum + ms, 0);
}

export class InstanceProcesses {
  private readonly log: (line: string) => void;
  private readonly tokens = newWriterTokens();
  private socket: SocketDir | null = null;
  private writer: WriterProcess | null = null;
  private client: WriterClient | null = null;
  private runtimeProcess: RuntimeProcess | null = null;
  private writerRestarts = 0;
  /** The last start's model check, as the runtime reported it (instance-ending.ts words a refusal with its reason). */
  lastPreflight: PreflightReport | null = null;
  /** The server that showed its constraint honoured at a runtime start of this session: a restart on the same build is not probed again (runtime/model-adapters/probe-skip.ts). */
  private constraintShown: ConstraintShownEarlier | null = null;

  constructor(
    private readonly input: InstanceInput,
    /** The writer's subject id (instance.ts says how it is made). */
    private readonly subjectId: string,
  ) {
    this.log = input.options.log;
  }

  /** The fault harness's points in this process (npm run faults); off otherwise. */
  get faults(): FaultSwitch {
    return this.input.options.faults ?? FaultSwitch.off;
  }

  /** The controller's writer connection; a bug to ask before the writer started. */
  connected(): WriterClient {
    if (!this.client) throw new InstanceError('writer', 'no writer connection (bug: used before start)');
    return this.client;
  }

  /** The running ds-runtime; a bug to ask when none runs. */
  runtime(): RuntimeProcess {
    if (!this.runtimeProcess) throw new InstanceError('runtime', 'no runtime process (bug)');
    return this.runtimeProcess;
  }

  /** The running ds-writer (the writer-crash drill arms it); a bug to ask when none runs. */
  writerProcess(): WriterProcess {
    if (!this.writer) throw new InstanceError('writer', 'no writer process (bug)');
    return this.writer;
  }

  get hasWriter(): boolean {
    return this.writer !== null;
  }

  /** Where the children's own lines go (instance-options.ts childOutputToRunFolder). */
  private childOutput(): { outputFile?: string } {
    return this.input.options.childOutputToRunFolder === true ? { outputFile: path.join(this.input.runDir, RUN_FILES.processLog) } : {};
  }

  async startWriter(mode: 'create' | 'open'): Promise<void> {
    this.socket ??= prepareSocketDir(this.input.isolation);
    const { writer, codeRoot } = this.input.isolation;
    this.writer = await spawnSubjectWriter({
      storeFile: path.join(this.input.runDir, RUN_FILES.store),
      mode,
      identity: { subject_id: this.subjectId, experiment_id: this.input.manifest.experiment_id, manifest_sha256: this.input.manifestHash },
      socket: this.socket,
      tokens: this.tokens,
      process: { codeRoot, faultInjection: this.faults.environmentValue, ...this.childOutput(), ...(writer ? { uid: writer.uid, gid: writer.gid } : {}) },
    });
    const faults = this.faults;
    this.client = await connectController(this.socket, this.tokens, { requestTimeoutMs: writerRequestTimeoutMsOf(this.input.prereg), onAck: (events) => faults.recordAcks(events), onStray: (text) => this.log(`warning: ${text}`) });
    this.log(`ds-writer pid ${this.writer.pid} serving seq ${this.writer.head.seq}`);
  }

  /** The writer's exit after it became unavailable, waited for at most CHILD_STOP_TIMEOUT_MS (null: still running). */
  async writerExitAfterLoss(): Promise<WriterExit | null> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), CHILD_STOP_TIMEOUT_MS);
    });
    try {
      return await Promise.race([this.writerProcess().exited, late]);
    } finally {
      // A timer left running holds the controller's event loop: every instance with a writer restart ended CHILD_STOP_TIMEOUT_MS late.
      clearTimeout(timer);
    }
  }

  /** Counts one planned writer restart; more than MAX_WRITER_RESTARTS interrupt the instance. */
  countWriterRestart(): void {
    this.writerRestarts += 1;
    if (this.writerRestarts > MAX_WRITER_RESTARTS) throw new InstanceError('writer', `more than ${MAX_WRITER_RESTARTS} writer restarts in one instance`);
  }

  /** A writer killed as planned: its connection dropped, a new writer started on the same store. */
  async restartWriter(interventionId: string): Promise<void> {
    this.client?.close();
    this.log(`ds-writer killed as planned (${interventionId}); restarting it on the same store`);
    await this.startWriter('open');
  }

  async startRuntime(): Promise<void> {
    const { runtime, codeRoot } = this.input.isolation;
    this.runtimeProcess = await spawnRuntime(
      {
        subject_id: this.subjectId,
        socket_path: this.socket!.socketPath,
        token: this.tokens.runtime,
        capabilities: this.input.manifest.capabilities,
        retrieval_policy: this.input.prereg.retrieval_policy,
        workspace_dir: path.join(this.input.runDir, RUN_FILES.workspace),
        model: this.input.model,
        protocol: this.input.protocol,
        writer_request_timeout_ms: writerRequestTimeoutMsOf(this.input.prereg),
        schema_subset: { dialect: this.input.manifest.model.structured_output?.dialect ?? 'none', policy: schemaSubsetPolicyOf(this.input.rules) },
        constraint_shown_earlier: this.constraintShown,
        framing: framingOf(this.input.scenario.definition),
      },
      // The runtime checks its model before it says ready (loading a local model; a server's side requests and a probe call, retried like any call).
      { codeRoot, faultInjection: this.faults.environmentValue, ...this.childOutput(), startTimeoutMs: RUNTIME_START_TIMEOUT_MS + PREFLIGHT_SIDE_REQUESTS_MS + modelCallBudgetMs(this.input), ...(runtime ? { uid: runtime.uid, gid: runtime.gid } : {}) },
    );
    this.log(`ds-runtime pid ${this.runtimeProcess.pid}`);
    this.recordPreflight(this.runtimeProcess.preflight);
  }

  /** The runtime killed by the runtime-crash drill has exited: forgotten, so that startRuntime starts its successor. */
  forgetRuntime(): void {
    this.runtimeProcess = null;
  }

  /**
   * The runtime's model check before the first wake, appended to preflight.jsonl (one line per
   * start) and said on screen; a failed check ends the start before any wake (issue 15 item 5).
   */
  private recordPreflight(report: PreflightReport | null): void {
    this.lastPreflight = report;
    if (report === null) return;
    const line = { checked_at: new Date().toISOString(), adapter: this.input.manifest.model.adapter, model_id: this.input.manifest.model.model_id, ...report };
    appendFileSync(path.join(this.input.runDir, RUN_FILES.preflight), `${JSON.stringify(line)}\n`);
    for (const text of report.lines) this.log(`model preflight: ${text}`);
    if (!report.ok) throw new InstanceError('model', `the model failed its check at the runtime's start: ${report.reason}. ${pinnedModelAdvice(this.input)}`);
    const mismatch = pinnedBuildMismatch(this.input.manifest.model, report.facts);
    if (mismatch !== null) throw new InstanceError('model', mismatch);
    this.log('model preflight: OK');
    this.log(pricingLine(this.input.manifest.model));
    this.constraintShown = constraintShownBy(report.facts) ?? this.constraintShown;
  }

  async stopRuntime(): Promise<void> {
    const runtime = this.runtimeProcess;
    this.runtimeProcess = null;
    // A runtime stopped mid-wake finishes the step under way first (its model call included): wait that long.
    if (runtime) await runtime.stop(CHILD_STOP_TIMEOUT_MS + (this.input.manifest.model.call_timeout_ms ?? 0));
  }

  async shutdownQuietly(): Promise<void> {
    const failures: string[] = [];
    await this.stopRuntime().catch((e: unknown) => failures.push(`runtime: ${String(e)}`));
    this.client?.close();
    this.client = null;
    const writer = this.writer;
    this.writer = null;
    if (writer) {
      const exit = await writer.stop(CHILD_STOP_TIMEOUT_MS);
      if (exit.code !== 0) failures.push(`writer exited with code ${exit.code} signal ${exit.signal}`);
    }
    this.socket?.cleanup();
    this.input.isolation.cleanup();
    for (const f of failures) this.log(`warning: shutting down: ${f}`);
  }
}

/** Said at each start of the runtime (issue 36 item 4): the prices its calls are costed at, or that they are not priced. */
function pricingLine(model: InstanceManifest['model']): string {
  const p = model.prices;
  if (p === null) return 'model prices: none configured — calls are not priced (no cost in the call records, the ledger or the report; add "prices" to the model configuration, or --prices, to cost them)';
  return `model prices: US dollars per million tokens: input ${p.input}, output ${p.output}, cache read ${p.cache_read}, cache write ${p.cache_write} — every call record carries its cost`;
}

/**
 * Why the build the runtime's check reports is not the one the signed manifest pins, for an
 * adapter whose check reports the build it loaded (the local model: its file's sha256); null when
 * it is the same, or the adapter reports none. The controller hashed the model file into the
 * manifest; the runtime loaded a file of its own reading: they must be the same one.
 */
export function pinnedBuildMismatch(model: InstanceManifest['model'], facts: Readonly<Record<string, unknown>>): string | null {
  if (recordedAdapterOf(model.adapter)?.preflightReportsBuild !== true || facts['build'] === model.build) return null;
  return `the runtime loaded a model hashing to ${String(facts['build'])}, but the signed manifest pins ${String(model.build)}: the model file changed after the start; restore it, or start a new run`;
}

/**
 * What to do when the runtime's own check refuses a model in a folder that exists (issue 31 item
 * 5): its signed manifest pins the model, so a resume can only run it as pinned — the advice is to
 * make the server serve it so and resume, or to start a new folder with another value; never a
 * resume that can only repeat the refusal.
 */
export function pinnedModelAdvice(input: Pick<InstanceInput, 'runDir'> & { readonly manifest: Pick<InstanceManifest, 'model'> }): string {
  const m = input.manifest.model;
  const dialect = m.structured_output?.dialect ?? 'none';
  const served = recordedAdapterOf(m.adapter)?.answeredByServer === true ? ` (its server running, serving the model id ${JSON.stringify(m.model_id)} — for a llama.cpp server, llama-server --alias ${m.model_id} — and honouring dialect ${dialect})` : '';
  return `The signed manifest of ${input.runDir} pins the model (${m.adapter} ${m.model_id}, dialect ${dialect}${m.config_sha256 === null ? '' : `, configuration ${m.config_sha256.slice(0, 19)}…`}): a resume runs it as pinned. Make the model available as pinned${served}, then continue with npm run experiment -- --resume ${input.runDir}; to run another model, id or dialect, start a new run folder (a new --out) with the corrected value`;
}

/** The server and dialect a check's probe call showed honouring the constraint, or null (no probe made, or another outcome). */
export function constraintShownBy(facts: Readonly<Record<string, unknown>>): ConstraintShownEarlier | null {
  if (facts['probe_schema_valid'] !== true) return null;
  const shown = ConstraintShownEarlier.safeParse({ server_build: facts['server_build'], dialect: facts['dialect'] });
  return shown.success ? shown.data : null;
}
