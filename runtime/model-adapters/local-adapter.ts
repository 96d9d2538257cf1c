// Why one file: one adapter's call path (load, render, count, decode, map failures) around node-llama-cpp's native handles, which never leave this file; its typed refusals sit with the step that raises them.
// The `local` model adapter (issue 15 item 6, docs/local-model.md): a GGUF model run inside
// the runtime process by node-llama-cpp (CPU), its answers decoded under a GBNF grammar made
// from the answer's JSON Schema (runtime/answer-grammar.ts), so that every answer that ends
// is valid JSON of the protocol's shape, whatever the model.
//
// One call, in order:
// 1. The prompt is rendered: with the model's own chat template when the GGUF carries one
//    (node-llama-cpp's chat-wrapper resolution), else as plain text "system\n\nuser\n\n"
//    after the BOS token. Which one is in every call's system_fingerprint.
// 2. It is counted with the model's tokenizer. A prompt that cannot fit the context together
//    with the answer's cap is refused as `truncated_prompt` before anything is evaluated:
//    nothing is silently cut (node-llama-cpp's higher-level classes would drop the start of
//    the prompt; this adapter evaluates token lists itself, and a context shift, should one
//    ever be asked for, fails the call as `truncated_prompt` instead of erasing tokens).
// 3. It is evaluated on a fresh context sequence (cleared before, disposed after): no state
//    is carried from one call to the next, so a group-A subject gets no memory through the
//    KV cache. Calls are serialised (one sequence).
// 4. Tokens are sampled under the grammar until an end-of-generation token (`stop`), the cap
//    (`length`), or the timeout, which stops decoding at once and records what arrived
//    (`timeout`). Usage is counted by the engine's own tokens (`tokenizer`).
//
// Sampling is fully stated, so a run is reproducible on the same build: temperature and
// top_p from params (null: node-llama-cpp's defaults, 0 = greedy and 0.95), top_k 40, min_p 0,
// no repeat penalty, and the seed from params or LOCAL_DEFAULT_SEED when null (node-llama-cpp
// would otherwise seed from the clock). Flash attention is off unless asked for: on this CPU
// build it made an 8,000-token prompt ~5x slower to evaluate (docs/local-model.md).
//
// Setup errors (the file missing, unreadable, not GGUF, the engine not installed, a schema
// the grammar cannot enforce) are typed errors: `preflight` reports them as a refusal before
// hour 0, `call` throws them. Everything a call itself can meet is an outcome.
import { sentAnswerCap } from '../answer-cap.js';
import { assertNever } from '../../foundation/assert-never.js';
import { basename } from 'node:path';
import { z } from 'zod';
import { InternalError } from '../../foundation/typed-error.js';
import { answerGrammar } from '../answer-grammar.js';
import { AnswerGrammarError } from '../answer-grammar-limits.js';
import type { CallFacts, ModelAdapter, ModelAdapterDefinition, ModelCallOutcome, ModelMeasurement, ModelParams, ModelRequest, PreflightResult, PromptSample, SpeedSampleOf } from '../model-adapter.js';
import { keepCommonPrefix } from './kv-prefix.js';
import { ENGINE_DEFAULT_TEMPERATURE, ENGINE_DEFAULT_TOP_P, LOCAL_ADAPTER_LIMITS, LOCAL_DEFAULT_SEED, LOCAL_FIXED_SAMPLING, LocalAdapterConfigError, LocalAdapterOptions } from './local-options.js';
import { measuredSpeedOf } from './measured-speed.js';
import { checkModelFile, sha256OfFile } from './local-model-file.js';
import { promptRenderer } from './local-prompt.js';
import { checkConstrainedAnswer } from './structured-output.js';
import {
  checkEngineModel,
  checkEngineSequence,
  LOCAL_ENGINE_ROOT,
  LocalEngineMissingError,
  loadLocalEngine,
  type EngineContext,
  type EngineGrammar,
  type EngineLlama,
  type EngineLogLevel,
  type EngineModel,
  type EngineSequence,
  type EngineToken,
  type LocalEngine,
} from './load-engine.js';

/** The engine could not load the model or make its context (corrupt file, unsupported architecture, memory). */
export class LocalModelLoadError extends InternalError {
  override readonly name = 'LocalModelLoadError';
}

/** What loading learnt; kept for the records. */
interface Loaded {
  readonly engine: LocalEngine;
  readonly llama: EngineLlama;
  readonly model: EngineModel;
  readonly context: EngineContext;
  readonly fileBytes: number;
  readonly sha256: string;
  readonly modelName: string;
  readonly architecture: string | null;
  readonly trainContextSize: number;
  readonly contextSize: number;
  /** 'plain' or 'chat-template:<wrapper>'. */
  readonly promptFormat: string;
  readonly render: (system: string, user: string) => EngineToken[];
  readonly fingerprint: string;
}

/** How one generation ended. */
type Ending =
  | { readonly kind: 'stop' | 'length' }
  | { readonly kind: 'abort' }
  | { readonly kind: 'shift' }
  | { readonly kind: 'ended' }
  | { readonly kind: 'error'; readonly error: unknown };

/** A call's timeout, started when the call was made. */
interface Clock {
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  readonly startedMs: number;
}

function startClock(timeoutMs: number): Clock {
  return { signal: AbortSignal.timeout(timeoutMs), timeoutMs, startedMs: performance.now() };
}

/** A generation's outcome, and what must finish before the next one may start. */
interface Generation {
  readonly outcome: ModelCallOutcome;
  readonly cleanup: Promise<void>;
}

/** Thrown by the context-shift strategy: the context is full, which the fit check should make impossible. */
class ContextShiftRefused extends InternalError {
  override readonly name = 'ContextShiftRefused';
}

const PROBE_SYSTEM = 'Preflight check of the answer constraint. This call is outside the study.';
const PROBE_USER = 'Answer with one JSON object.';

/** The local adapter as the house asks it (runtime/model-adapter.ts ModelAdapterDefinition; listed in adapter-list.ts). */
export const LOCAL_ADAPTER: ModelAdapterDefinition<'local'> = {
  name: 'local',
  callsModel: true,
  usageCountedBy: ['tokenizer'],
  promptCountedBy: ['tokenizer'],
  callTimeoutMs: (config) => config.timeout_ms,
  checkedBeforeStart: true,
  answeredByServer: false,
  preflightReportsBuild: true,
  // Nothing is loaded here: the engine and the model load in preflight (before the first wake), or at the first call.
  create: (config) => new LocalAdapter({ modelFile: config.model_file, modelId: config.model_id, params: config.params, threads: config.threads, contextSize: config.context_size, kvReuse: config.kv_reuse }),
};

export class LocalAdapter implements ModelAdapter {
  readonly name = 'local' as const;
  readonly model_id: string;
  /** As configured (null = the default named in LOCAL_DEFAULT_SEED / ENGINE_DEFAULT_*; every call's fingerprint states the values used). */
  readonly params: ModelParams;
  private readonly options: z.output<typeof LocalAdapterOptions>;
  private readonly sampling: { readonly temperature: number; readonly topP: number; readonly seed: number };
  private loading: Promise<Loaded> | null = null;
  private loaded: Loaded | null = null;
  private closed = false;
  /** Serialises calls: one context sequence, one call at a time (a timed-out call's cleanup included). */
  private tail: Promise<void> = Promise.resolve();
  private readonly grammars = new Map<string, Promise<EngineGrammar>>();
  private readonly engineLog: string[] = [];
  /** Lines logged since load, including those the bounded buffer let go. */
  private engineLogTotal = 0;
  /** With kvReuse: the sequence of the last call that ended well, holding its tokens' KV for the next call. */
  private kept: EngineSequence | null = null;

  constructor(options: LocalAdapterOptions) {
    const parsed = LocalAdapterOptions.safeParse(options);
    if (!parsed.success) throw new LocalAdapterConfigError(`local adapter options: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
    this.options = parsed.data;
    this.model_id = parsed.data.modelId ?? (basename(parsed.data.modelFile).replace(/\.gguf$/i, '') || 'local-model');
    this.params = { ...parsed.data.params };
    const p = parsed.data.params;
    this.sampling = { temperature: p.temperature ?? ENGINE_DEFAULT_TEMPERATURE, topP: p.top_p ?? ENGINE_DEFAULT_TOP_P, seed: p.seed ?? LOCAL_DEFAULT_SEED };
  }

  /** `gguf-sha256:<hex>` of the model file once loaded (preflight or the first call); null before. */
  get build(): string | null {
    return this.loaded === null ? null : `gguf-sha256:${this.loaded.sha256}`;
  }

  /**
   * Checks the file, hashes it, loads the engine, the model and its context. Idempotent;
   * throws the typed errors above (and LocalEngineMissingError / LocalEngineMismatchError).
   */
  async open(): Promise<void> {
    if (this.closed) throw new LocalAdapterConfigError('the local adapter is closed');
    if (this.loading === null) {
      this.loading = this.load();
      this.loading.then(
        (l) => (this.loaded = l),
        () => (this.loading = null), // a failed load may be retried (e.g. after the setup command)
      );
    }
    await this.loading;
  }

  async call(request: ModelRequest, timeoutMs: number): Promise<ModelCallOutcome> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new LocalAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    if (!Number.isSafeInteger(request.max_tokens) || request.max_tokens < 1) throw new LocalAdapterConfigError(`request.max_tokens must be a positive integer, got ${request.max_tokens}`);
    // Loading is not part of the call (preflight normally did it); its errors are setup errors.
    await this.open();
    const cap = sentAnswerCap(request.max_tokens, this.params.max_tokens);
    // The call's clock starts here, before waiting for an earlier call to end: timeoutMs bounds what the caller waits.
    const clock = startClock(timeoutMs);
    return this.serialised(() => this.generate(request.system, request.user, request.answer_schema, cap, clock));
  }

  /**
   * Before hour 0 (issue 31 item 3): each sample counted with the model's own tokenizer as a call
   * renders it, against the engine's context; then one generation of `speedSample` under the
   * grammar, timed by the wall clock (the engine's prompt evaluation and generation are not told
   * apart: both rates are lower bounds, and the source says so).
   */
  async measure(samples: readonly PromptSample[], speedSampleOf: SpeedSampleOf, answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<ModelMeasurement> {
    await this.open();
    const l = this.loaded!;
    const lines: string[] = [];
    const counts = samples.map((sample) => {
      const tokens = l.render(sample.system, sample.user).length;
      lines.push(`${sample.label} prompt: ${tokens} tokens (counted by the model's tokenizer), answer cap ${sample.answerCap}`);
      return { label: sample.label, tokens, source: 'tokenizer' as const };
    });
    const context = { size: l.contextSize, source: 'the local engine\'s context' };
    const speeds: ModelMeasurement['speeds'][number][] = [];
    for (const sample of speedSampleOf(context, counts)) {
      const tokens = l.render(sample.system, sample.user).length;
      const clock = startClock(timeoutMs);
      const outcome = await this.serialised(() => this.generate(sample.system, sample.user, answerSchema, sample.answerCap, clock));
      const speed = measuredSpeedOf(outcome);
      if (speed === null) {
        const why = outcome.kind === 'failed' ? `${outcome.failure}: ${outcome.detail}` : 'the answer carried no usage';
        lines.push(`speed call (${sample.label}, ${tokens} prompt tokens): no measurement (${why})`);
        speeds.push({ label: sample.label, prompt_tokens: tokens, speed: null, failure: why, timed_out: outcome.kind === 'failed' && outcome.failure === 'timeout' });
        break;
      }
      const how = speed.source === 'wall' ? 'wall clock: prompt and generation not told apart' : "the engine's split, timed by the adapter";
      lines.push(`speed call (${sample.label}): ${speed.prompt_tokens} prompt tokens in ${Math.round(speed.prompt_ms)} ms, ${speed.generated_tokens} generated in ${Math.round(speed.generated_ms)} ms (${how}), ${speed.latency_ms} ms in all`);
      speeds.push({ label: sample.label, prompt_tokens: tokens, speed, failure: null, timed_out: false });
    }
    return { context, counts, speeds, lines };
  }

  async preflight(answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<PreflightResult> {
    const lines: string[] = [];
    const refuse = (reason: string): PreflightResult => ({ ok: false, reason, lines: [...lines, ...this.engineLogLines()] });
    try {
      await this.open();
    } catch (error) {
      return refuse(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    }
    const l = this.loaded!;
    lines.push(`local model ${this.options.modelFile} (${l.fileBytes} bytes, build gguf-sha256:${l.sha256})`);
    lines.push(`model: ${JSON.stringify(l.modelName)}${l.architecture === null ? '' : `, architecture ${l.architecture}`}, training context ${l.trainContextSize} tokens`);
    lines.push(`engine: node-llama-cpp ${l.engine.version} (llama.cpp ${l.llama.llamaCppRelease.release}, ${l.llama.buildType} build), CPU, threads ${this.options.threads}, flash attention ${this.options.flashAttention ? 'on' : 'off'}`);
    lines.push(`context: ${l.contextSize} tokens${l.contextSize !== this.options.contextSize ? ` (configured ${this.options.contextSize}; the engine made ${l.contextSize}, which is what prompts are checked against)` : ''}`);
    const beyond = l.contextSize > l.trainContextSize;
    if (beyond) lines.push(`the context (${l.contextSize} tokens) is larger than the model's training context (${l.trainContextSize}): a prompt longer than ${l.trainContextSize} tokens puts positions the model never saw in training; its answers there are still grammar-valid but expect them to be worse`);
    lines.push(`prompt format: ${l.promptFormat === 'plain' ? 'plain text "system\\n\\nuser\\n\\n" after BOS (the GGUF has no chat template)' : `the model's chat template (${l.promptFormat})`}`);
    lines.push(`sampling: ${this.samplingText()}`);
    let grammarChars: number;
    try {
      grammarChars = answerGrammar(answerSchema).length;
      await this.grammarFor(answerSchema);
    } catch (error) {
      return refuse(`the answer schema cannot be turned into a grammar: ${error instanceof Error ? error.message : String(error)}`);
    }
    lines.push(`grammar: ${grammarChars} characters of GBNF from the answer schema (runtime/answer-grammar.ts)`);
    // With no configured cap the probe takes what the context leaves after its prompt (up to
    // probeMaxTokens); a configured cap is used as is, so a cap the context cannot hold fails here, not at wake 1.
    const probeCap = this.params.max_tokens ?? Math.max(1, Math.min(LOCAL_ADAPTER_LIMITS.probeMaxTokens, l.contextSize - l.render(PROBE_SYSTEM, PROBE_USER).length));
    let outcome: ModelCallOutcome;
    try {
      const clock = startClock(timeoutMs);
      outcome = await this.serialised(() => this.generate(PROBE_SYSTEM, PROBE_USER, answerSchema, probeCap, clock));
    } catch (error) {
      return refuse(`the probe call could not be made: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    }
    const facts: Record<string, string | number | boolean | null> = {
      model_file: this.options.modelFile,
      model_bytes: l.fileBytes,
      build: `gguf-sha256:${l.sha256}`,
      model_name: l.modelName,
      train_context_size: l.trainContextSize,
      context_size: l.contextSize,
      beyond_training_context: beyond,
      threads: this.options.threads,
      flash_attention: this.options.flashAttention,
      engine: `node-llama-cpp ${l.engine.version}`,
      llama_cpp: l.llama.llamaCppRelease.release,
      prompt_format: l.promptFormat,
      temperature: this.sampling.temperature,
      top_p: this.sampling.topP,
      top_k: LOCAL_FIXED_SAMPLING.top_k,
      min_p: LOCAL_FIXED_SAMPLING.min_p,
      seed: this.sampling.seed,
      grammar_chars: grammarChars,
      probe_finish_reason: outcome.finish_reason,
      probe_latency_ms: outcome.latency_ms,
      probe_prompt_tokens: outcome.usage?.prompt_tokens ?? null,
      probe_completion_tokens: outcome.usage?.completion_tokens ?? null,
      probe_schema_valid: null,
      probe_raw_output: outcome.raw_output === null ? null : outcome.raw_output.slice(0, LOCAL_ADAPTER_LIMITS.quotedChars),
    };
    if (outcome.kind === 'failed') return refuse(`the probe call under the grammar failed (${outcome.failure}): ${outcome.detail}`);
    const verdict = checkConstrainedAnswer('json_schema', answerSchema, outcome.raw_output);
    facts.probe_schema_valid = verdict.schema_valid;
    lines.push(`probe call (cap ${probeCap} tokens): ${outcome.usage.prompt_tokens}+${outcome.usage.completion_tokens} tokens in ${outcome.latency_ms} ms, finish_reason ${outcome.finish_reason}, schema checked with ${verdict.checked_with}`);
    if (outcome.finish_reason === 'length') return refuse(`the probe answer reached its cap (${probeCap} tokens, finish_reason length) before the grammar was complete, so no answer of this model is known to finish: raise params.max_tokens, or lower temperature`);
    if (!verdict.honoured) return refuse(`the grammar did not hold: ${verdict.reason}`);
    lines.push(...this.engineLogLines());
    return { ok: true, facts, lines };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail.catch(() => undefined);
    const loaded = this.loaded ?? (await this.loading?.catch(() => null)) ?? null;
    this.grammars.clear();
    if (loaded === null) return;
    // Each step is attempted even if one before failed: a half-freed engine must not keep the rest alive.
    const errors: string[] = [];
    for (const step of [() => loaded.context.dispose(), () => loaded.model.dispose(), () => loaded.llama.dispose()]) {
      await step().catch((error: unknown) => errors.push(error instanceof Error ? error.message : String(error)));
    }
    if (errors.length > 0) throw new LocalModelLoadError(`freeing the local model failed: ${errors.join('; ')}`);
  }

  // -------------------------------------------------------------------------------------

  /** Runs one generation after the previous one and its cleanup (a timed-out decode finishing its step, the sequence freed). */
  private serialised(task: () => Promise<Generation>): Promise<ModelCallOutcome> {
    const run = this.tail.then(task);
    this.tail = run.then(
      (g) => g.cleanup,
      () => undefined,
    );
    return run.then((g) => g.outcome);
  }

  private samplingText(): string {
    const p = this.params;
    const s = this.sampling;
    return `temperature ${s.temperature}${p.temperature === null ? ' (engine default)' : ''}, top_p ${s.topP}${p.top_p === null ? ' (engine default)' : ''}, top_k ${LOCAL_FIXED_SAMPLING.top_k}, min_p ${LOCAL_FIXED_SAMPLING.min_p}, repeat penalty ${LOCAL_FIXED_SAMPLING.repeat_penalty}, seed ${s.seed}${p.seed === null ? ' (LOCAL_DEFAULT_SEED)' : ''}`;
  }

  private engineLogLines(): string[] {
    const dropped = this.engineLogTotal - this.engineLog.length;
    return [...(dropped > 0 ? [`engine log: ${dropped} earlier line(s) not kept (maxEngineLogLines ${LOCAL_ADAPTER_LIMITS.maxEngineLogLines})`] : []), ...this.engineLog.map((line) => `engine log: ${line}`)];
  }

  /** What the engine logged since `total` lines had been logged (as much as the buffer still holds). */
  private engineLogSince(total: number): string[] {
    const count = Math.min(this.engineLogTotal - total, this.engineLog.length);
    return count <= 0 ? [] : this.engineLog.slice(-count);
  }

  private log(level: EngineLogLevel, message: string): void {
    const text = `${level}: ${message.trim()}`.slice(0, LOCAL_ADAPTER_LIMITS.maxEngineLogChars);
    if (this.engineLog.length >= LOCAL_ADAPTER_LIMITS.maxEngineLogLines) this.engineLog.shift();
    this.engineLog.push(text);
    this.engineLogTotal += 1;
  }

  private async load(): Promise<Loaded> {
    const file = this.options.modelFile;
    const fileBytes = checkModelFile(file);
    const sha256 = await sha256OfFile(file);
    const engine = await loadLocalEngine(this.options.enginePackageRoot ?? LOCAL_ENGINE_ROOT);
    let llama: EngineLlama;
    try {
      llama = await engine.getLlama({
        gpu: false,
        build: 'never',
        logLevel: 'warn',
        logger: (level, message) => this.log(level, message),
        progressLogs: false,
        skipDownload: true,
        maxThreads: this.options.threads,
      });
    } catch (error) {
      if (error instanceof Error && error.name === 'LocalEngineMismatchError') throw error;
      throw new LocalEngineMissingError(`node-llama-cpp found no usable prebuilt CPU binary (${error instanceof Error ? error.message : String(error)}); install the pinned linux-x64 build with \`npm run setup:local-model\` (docs/local-model.md)`);
    }
    let model: EngineModel | null = null;
    let context: EngineContext | null = null;
    try {
      try {
        model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
      } catch (error) {
        throw new LocalModelLoadError(`the engine could not load ${file} (${error instanceof Error ? error.message : String(error)}): a damaged file, or an architecture this llama.cpp build does not know`);
      }
      checkEngineModel(model);
      try {
        context = await model.createContext({ contextSize: this.options.contextSize, threads: this.options.threads, sequences: 1, flashAttention: this.options.flashAttention });
      } catch (error) {
        throw new LocalModelLoadError(`the engine could not make a context of ${this.options.contextSize} tokens for ${file} (${error instanceof Error ? error.message : String(error)}): lower contextSize`);
      }
      const metadata = model.fileInfo.metadata;
      const generalName = metadata.general?.name;
      const modelName = typeof generalName === 'string' && generalName.length > 0 ? generalName.slice(0, 200) : basename(file);
      const architecture = typeof metadata.general?.architecture === 'string' ? metadata.general.architecture : null;
      const { render, promptFormat } = promptRenderer(engine, model);
      const fingerprint = [
        `node-llama-cpp ${engine.version}`,
        `llama.cpp ${llama.llamaCppRelease.release}`,
        `prompt ${promptFormat}`,
        `ctx ${context.contextSize}`,
        `threads ${this.options.threads}`,
        `fa ${this.options.flashAttention ? 'on' : 'off'}`,
        // Said only when on, so fingerprints of runs without it read as before.
        ...(this.options.kvReuse ? ['kv reuse on'] : []),
        `t ${this.sampling.temperature} top_p ${this.sampling.topP} top_k ${LOCAL_FIXED_SAMPLING.top_k} min_p ${LOCAL_FIXED_SAMPLING.min_p} rp off seed ${this.sampling.seed}`,
      ].join('; ');
      return { engine, llama, model, context, fileBytes, sha256, modelName, architecture, trainContextSize: model.trainContextSize, contextSize: context.contextSize, promptFormat, render, fingerprint };
    } catch (error) {
      await context?.dispose().catch(() => undefined);
      await model?.dispose().catch(() => undefined);
      await llama.dispose().catch(() => undefined);
      throw error;
    }
  }

  /** The compiled grammar of a schema, from a small cache keyed by the schema's JSON text. */
  private grammarFor(schema: Readonly<Record<string, unknown>>): Promise<EngineGrammar> {
    const key = JSON.stringify(schema);
    const cached = this.grammars.get(key);
    if (cached !== undefined) {
      // Refresh its place: the map's order is the eviction order.
      this.grammars.delete(key);
      this.grammars.set(key, cached);
      return cached;
    }
    const text = answerGrammar(schema);
    const llama = this.loaded!.llama;
    const compiled = llama.createGrammar({ grammar: text }).catch((error: unknown) => {
      this.grammars.delete(key);
      throw new AnswerGrammarError(`llama.cpp refused the grammar generated from the answer schema (${error instanceof Error ? error.message : String(error)}; engine log: ${this.engineLog.slice(-3).join(' | ') || 'empty'}): runtime/answer-grammar.ts must be fixed`);
    });
    this.grammars.set(key, compiled);
    while (this.grammars.size > LOCAL_ADAPTER_LIMITS.grammarCacheEntries) this.grammars.delete(this.grammars.keys().next().value!);
    return compiled;
  }

  /**
   * One generation on a fresh sequence; throws only for setup errors (a schema the grammar
   * cannot enforce), never for what the model or the engine does mid-call.
   */
  private async generate(system: string, user: string, schema: Readonly<Record<string, unknown>>, cap: number, clock: Clock): Promise<Generation> {
    const { signal, timeoutMs } = clock;
    const elapsedMs = (): number => Math.max(0, Math.round(performance.now() - clock.startedMs));
    const l = this.loaded!;
    const done = (outcome: ModelCallOutcome, cleanup: Promise<void> = Promise.resolve()): Generation => ({ outcome, cleanup });
    const grammar = await this.grammarFor(schema);
    const prompt = l.render(system, user);
    const counted = { prompt_tokens_counted: prompt.length, prompt_count_source: 'tokenizer', response_model: l.modelName, attempts: 1 } as const;
    const failed = (failure: Extract<ModelCallOutcome, { kind: 'failed' }>['failure'], detail: string, rawOutput: string | null, facts: Pick<CallFacts, 'finish_reason' | 'usage' | 'usage_source'>): ModelCallOutcome => ({
      kind: 'failed',
      failure,
      detail,
      raw_output: rawOutput,
      latency_ms: elapsedMs(),
      system_fingerprint: l.fingerprint,
      ...counted,
      ...facts,
    });
    if (prompt.length + cap > l.contextSize) {
      return done(failed('truncated_prompt', `the prompt is ${prompt.length} tokens (model tokenizer) and the answer's cap ${cap}: ${prompt.length + cap} > the context's ${l.contextSize} tokens; nothing was evaluated (raise contextSize, or shorten the window)`, null, { finish_reason: null, usage: null, usage_source: null }));
    }
    if (signal.aborted) {
      return done(failed('timeout', `timeoutMs ${timeoutMs} passed while the call waited for the previous one to end; nothing was evaluated`, null, { finish_reason: null, usage: null, usage_source: null }));
    }

    const logBefore = this.engineLogTotal;
    const sequence = this.kept ?? l.context.getSequence({
      contextShift: {
        strategy: () => {
          throw new ContextShiftRefused('the context is full and the engine asked to shift it');
        },
      },
    });
    this.kept = null;
    checkEngineSequence(sequence);
    let reused = 0;
    const generated: EngineToken[] = [];
    let evaluationStartMs: number | null = null;
    let firstTokenMs: number | null = null;
    let ending: Ending;
    let pending: Promise<unknown> = Promise.resolve();
    let onAbort: (() => void) | null = null;
    try {
      if (this.options.kvReuse) reused = await keepCommonPrefix(sequence, prompt);
      else await sequence.clearHistory();
      const iterator = sequence.evaluate(prompt.slice(reused), {
        temperature: this.sampling.temperature,
        topP: this.sampling.topP,
        topK: LOCAL_FIXED_SAMPLING.top_k,
        minP: LOCAL_FIXED_SAMPLING.min_p,
        seed: this.sampling.seed,
        grammarEvaluationState: l.engine.grammarState(l.model, grammar),
        yieldEogToken: true,
      });
      const aborted = new Promise<'abort'>((resolve) => {
        if (signal.aborted) resolve('abort');
        else {
          onAbort = () => resolve('abort');
          signal.addEventListener('abort', onAbort, { once: true });
        }
      });
      ending = { kind: 'ended' };
      evaluationStartMs = performance.now();
      for (;;) {
        const next = iterator.next();
        const step = await Promise.race([next, aborted]);
        // The engine yields its first token once the prompt is evaluated: the split of the call's work.
        firstTokenMs ??= step === 'abort' ? null : performance.now();
        if (step === 'abort') {
          // The engine finishes the step it is in (it cannot be interrupted mid-batch); the
          // generator is then closed, and the next call waits for that (serialised).
          pending = next.then(() => iterator.return(undefined));
          ending = { kind: 'abort' };
          break;
        }
        if (step.done === true) break;
        const token = step.value;
        if (l.model.isEogToken(token)) {
          ending = { kind: 'stop' };
          await iterator.return(undefined);
          break;
        }
        generated.push(token);
        if (generated.length >= cap) {
          ending = { kind: 'length' };
          await iterator.return(undefined);
          break;
        }
      }
    } catch (error) {
      ending = error instanceof ContextShiftRefused || (error instanceof Error && error.name === 'ContextShiftRefused') ? { kind: 'shift' } : { kind: 'error', error };
    }
    if (onAbort !== null) signal.removeEventListener('abort', onAbort);
    // Failures of the cleanup change nothing already decided; the next call gets a fresh sequence
    // unless this one ended well and reuse is on (then it keeps what it holds for the next).
    const keep = this.options.kvReuse && (ending.kind === 'stop' || ending.kind === 'length');
    const cleanup = keep
      ? Promise.resolve().then(() => void (this.kept = sequence))
      : pending
          .catch(() => undefined)
          .then(() => sequence.dispose())
          .catch(() => undefined);

    const text = generated.length === 0 ? '' : l.model.detokenize(generated);
    const usage = { prompt_tokens: prompt.length, completion_tokens: generated.length };
    const endMs = performance.now();
    // The engine's own split, timed here (the speed the model check measures: runtime/model-adapters/measured-speed.ts).
    const engineTimings = evaluationStartMs === null || firstTokenMs === null ? null : { prompt_n: prompt.length - reused, prompt_ms: firstTokenMs - evaluationStartMs, predicted_n: generated.length, predicted_ms: endMs - firstTokenMs };
    const promptReuse = { reused_tokens: reused, evaluated_tokens: prompt.length - reused, source: 'engine' } as const;
    const spent = { usage, usage_source: 'tokenizer', engine_timings: engineTimings, prompt_reuse: promptReuse } as const;
    const engineSaid = this.engineLogSince(logBefore);
    const logNote = engineSaid.length === 0 ? '' : `; engine log: ${engineSaid.join(' | ')}`;
    switch (ending.kind) {
      case 'stop':
      case 'length':
        return done({ kind: 'answered', raw_output: text, ...spent, latency_ms: elapsedMs(), system_fingerprint: l.fingerprint, finish_reason: ending.kind, ...counted }, cleanup);
      case 'abort':
        return done(failed('timeout', `no complete answer within timeoutMs ${timeoutMs}: decoding was stopped after ${generated.length} generated token(s) (prompt ${prompt.length} tokens); what arrived is kept in raw_output and not used${logNote}`, generated.length === 0 ? null : text, { finish_reason: 'abort', ...spent }), cleanup);
      case 'shift':
        return done(failed('truncated_prompt', `the context (${l.contextSize} tokens) filled during the answer and the engine asked to drop its start; the adapter refused, so nothing was dropped and the answer is not used (prompt ${prompt.length} + ${generated.length} generated)${logNote}`, generated.length === 0 ? null : text, { finish_reason: 'context_full', ...spent }), cleanup);
      case 'ended':
        return done(failed('stream_broken', `the engine ended the generation after ${generated.length} token(s) without an end-of-generation token or reaching the cap ${cap}${logNote}`, generated.length === 0 ? null : text, { finish_reason: null, ...spent }), cleanup);
      case 'error':
        return done(failed('stream_broken', `the engine failed during the answer after ${generated.length} token(s): ${ending.error instanceof Error ? ending.error.message : String(ending.error)}${logNote}`, generated.length === 0 ? null : text, { finish_reason: null, ...spent }), cleanup);
      default: {
        assertNever(ending, 'ending');
      }
    }
  }
}

