// Loads the `local` adapter's engine, node-llama-cpp, from its own nested package (issue 15
// item 6, docs/local-model.md). It is not a dependency of the project: with its prebuilt
// binaries it is ~730 MB (~540 MB of CUDA builds), which everyone who never runs a local model
// would pay at every `npm ci`. The nested package pins node-llama-cpp and the CPU-only
// linux-x64 binary exactly (83 MB) and is installed on demand:
//
//   npm run setup:local-model   (npm ci --prefix runtime/model-adapters/local-engine --omit=optional)
//
// The import is dynamic with a computed specifier, so neither tsc nor a fresh install needs
// the package; what this project uses of it is declared below as a narrow structural
// interface and checked at load (a changed API fails here with a typed error, not mid-run).
// Pure loading: nothing here reads a model or starts the engine.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { InternalError } from '../../foundation/typed-error.js';

/** The exact version the nested package pins (and the adapter's records name). */
export const LOCAL_ENGINE_VERSION = '3.21.1';
export const LOCAL_ENGINE_PACKAGE = 'node-llama-cpp';
/** Where the nested package lives; tests point the loader elsewhere to see the missing case. */
export const LOCAL_ENGINE_ROOT = fileURLToPath(new URL('./local-engine/', import.meta.url));
export const LOCAL_ENGINE_SETUP_COMMAND = 'npm run setup:local-model';
const SETUP_HINT = `run \`${LOCAL_ENGINE_SETUP_COMMAND}\` (installs the nested package runtime/model-adapters/local-engine: node-llama-cpp ${LOCAL_ENGINE_VERSION} with its linux-x64 CPU binary, ~83 MB), see docs/local-model.md`;

/** The engine is not installed where the adapter looks for it. */
export class LocalEngineMissingError extends InternalError {
  override readonly name = 'LocalEngineMissingError';
}

/** Something is installed there, but not the pinned version or not the API this adapter uses. */
export class LocalEngineMismatchError extends InternalError {
  override readonly name = 'LocalEngineMismatchError';
}

// ---------------------------------------------------------------------------------------
// What this project uses of node-llama-cpp 3.21.1 (names as in its dist/*.d.ts).

export type EngineToken = number;
export type EngineLogLevel = 'disabled' | 'fatal' | 'error' | 'warn' | 'info' | 'log' | 'debug';

export interface EngineGetLlamaOptions {
  readonly gpu: false;
  readonly build: 'never';
  readonly logLevel: EngineLogLevel;
  readonly logger: (level: EngineLogLevel, message: string) => void;
  readonly progressLogs: false;
  readonly skipDownload: true;
  readonly maxThreads: number;
}

export interface EngineLlama {
  loadModel(options: { readonly modelPath: string; readonly gpuLayers: 0 }): Promise<EngineModel>;
  createGrammar(options: { readonly grammar: string }): Promise<EngineGrammar>;
  dispose(): Promise<void>;
  readonly llamaCppRelease: { readonly repo: string; readonly release: string };
  readonly buildType: string;
}

/** Opaque: handed back to the engine only. */
export interface EngineGrammar {
  readonly grammar: string;
}

export interface EngineModel {
  tokenize(text: string, specialTokens?: boolean): EngineToken[];
  detokenize(tokens: readonly EngineToken[], specialTokens?: boolean): string;
  isEogToken(token: EngineToken): boolean;
  createContext(options: { readonly contextSize: number; readonly threads: number; readonly sequences: 1; readonly flashAttention: boolean }): Promise<EngineContext>;
  dispose(): Promise<void>;
  readonly trainContextSize: number;
  readonly vocabularyType: string;
  readonly tokens: { readonly bos: EngineToken | null; readonly shouldPrependBosToken: boolean };
  readonly fileInfo: { readonly metadata: { readonly general?: { readonly name?: unknown; readonly architecture?: unknown }; readonly tokenizer?: { readonly chat_template?: unknown } } };
  /** Its tokenizer as a function, for LlamaText.tokenize. */
  readonly tokenizer: unknown;
}

export interface EngineContextShiftStrategy {
  (options: { readonly sequence: unknown; readonly size: number }): never;
}

export interface EngineContext {
  getSequence(options?: { readonly contextShift?: { readonly strategy: EngineContextShiftStrategy } }): EngineSequence;
  dispose(): Promise<void>;
  readonly contextSize: number;
}

export interface EngineEvaluateOptions {
  readonly temperature: number;
  readonly topK: number;
  readonly topP: number;
  readonly minP: number;
  readonly seed: number;
  readonly grammarEvaluationState: unknown;
  readonly yieldEogToken: true;
}

export interface EngineSequence {
  evaluate(tokens: EngineToken[], options: EngineEvaluateOptions): AsyncGenerator<EngineToken, void, void>;
  clearHistory(): Promise<void>;
  dispose(): Promise<void>;
  readonly nextTokenIndex: number;
  /** The tokens whose KV the sequence holds, in order (kv-prefix.ts reads them to keep a common prefix). */
  readonly contextTokens: readonly EngineToken[];
  /** Erases [start, end) of what the sequence holds. */
  eraseContextTokenRanges(ranges: readonly { readonly start: number; readonly end: number }[]): Promise<void>;
}

/** A chat history item as node-llama-cpp's chat wrappers take it. */
export type EngineChatItem = { readonly type: 'system'; readonly text: string } | { readonly type: 'user'; readonly text: string } | { readonly type: 'model'; readonly response: readonly string[] };

export interface EngineChatWrapper {
  readonly wrapperName: string;
  generateContextState(options: { readonly chatHistory: readonly EngineChatItem[] }): { readonly contextText: { tokenize(tokenizer: unknown): EngineToken[] } };
}

export interface LocalEngine {
  readonly version: string;
  /** Where it was loaded from (for the record). */
  readonly packageRoot: string;
  getLlama(options: EngineGetLlamaOptions): Promise<EngineLlama>;
  /** `new LlamaGrammarEvaluationState({model, grammar})`. */
  grammarState(model: EngineModel, grammar: EngineGrammar): unknown;
  /** node-llama-cpp's chat-wrapper resolution for a model (used only when the GGUF has a chat template). */
  resolveChatWrapper(model: EngineModel): EngineChatWrapper | null;
}

const REQUIRED_EXPORTS = ['getLlama', 'LlamaGrammarEvaluationState', 'resolveChatWrapper'] as const;

/**
 * Imports node-llama-cpp from `packageRoot`'s node_modules (default: the nested package).
 * Throws LocalEngineMissingError when it is not installed there, LocalEngineMismatchError when
 * another version or an API without what this adapter calls is.
 */
export async function loadLocalEngine(packageRoot: string = LOCAL_ENGINE_ROOT): Promise<LocalEngine> {
  const packageDir = join(packageRoot, 'node_modules', LOCAL_ENGINE_PACKAGE);
  const manifestPath = join(packageDir, 'package.json');
  let manifest: { version?: unknown; exports?: unknown };
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as typeof manifest;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new LocalEngineMissingError(`the local model engine (${LOCAL_ENGINE_PACKAGE} ${LOCAL_ENGINE_VERSION}) is not installed: ${manifestPath} does not exist; ${SETUP_HINT}`);
    throw new LocalEngineMismatchError(`cannot read ${manifestPath}: ${error instanceof Error ? error.message : String(error)}; reinstall: ${SETUP_HINT}`);
  }
  if (manifest.version !== LOCAL_ENGINE_VERSION) {
    throw new LocalEngineMismatchError(`${manifestPath} is version ${JSON.stringify(manifest.version)}, but this runtime is built and tested against ${LOCAL_ENGINE_PACKAGE} ${LOCAL_ENGINE_VERSION} only; ${SETUP_HINT}`);
  }
  const entry = entryOf(manifest.exports);
  if (entry === null) throw new LocalEngineMismatchError(`${manifestPath} names no ESM entry point ("exports"["."].import); reinstall: ${SETUP_HINT}`);
  let mod: Record<string, unknown>;
  try {
    // A computed specifier: tsc does not resolve it, so the project type-checks without the package.
    mod = (await import(pathToFileURL(join(packageDir, entry)).href)) as Record<string, unknown>;
  } catch (error) {
    throw new LocalEngineMismatchError(`importing ${LOCAL_ENGINE_PACKAGE} from ${packageDir} failed: ${error instanceof Error ? error.message : String(error)}; reinstall: ${SETUP_HINT}`);
  }
  const absent = REQUIRED_EXPORTS.filter((name) => typeof mod[name] !== 'function');
  if (absent.length > 0) throw new LocalEngineMismatchError(`${LOCAL_ENGINE_PACKAGE} at ${packageDir} does not export ${absent.join(', ')} as functions; reinstall: ${SETUP_HINT}`);
  const getLlama = mod['getLlama'] as (options: EngineGetLlamaOptions) => Promise<EngineLlama>;
  const GrammarState = mod['LlamaGrammarEvaluationState'] as new (options: { model: EngineModel; grammar: EngineGrammar }) => unknown;
  const resolveChatWrapper = mod['resolveChatWrapper'] as (model: EngineModel) => EngineChatWrapper | null;
  return {
    version: LOCAL_ENGINE_VERSION,
    packageRoot,
    async getLlama(options) {
      const llama = await getLlama(options);
      for (const method of ['loadModel', 'createGrammar', 'dispose'] as const) {
        if (typeof (llama as unknown as Record<string, unknown>)[method] !== 'function') {
          await llama.dispose?.().catch(() => undefined);
          throw new LocalEngineMismatchError(`${LOCAL_ENGINE_PACKAGE}'s getLlama() returned an object without ${method}(); reinstall: ${SETUP_HINT}`);
        }
      }
      return llama;
    },
    grammarState: (model, grammar) => new GrammarState({ model, grammar }),
    resolveChatWrapper: (model) => resolveChatWrapper(model),
  };
}

/** Checks an engine model object has what the adapter calls (after loadModel). */
export function checkEngineModel(model: EngineModel): void {
  const record = model as unknown as Record<string, unknown>;
  const missing = ['tokenize', 'detokenize', 'isEogToken', 'createContext', 'dispose'].filter((m) => typeof record[m] !== 'function');
  if (typeof record['trainContextSize'] !== 'number') missing.push('trainContextSize');
  if (record['tokens'] === null || typeof record['tokens'] !== 'object') missing.push('tokens');
  if (missing.length > 0) throw new LocalEngineMismatchError(`${LOCAL_ENGINE_PACKAGE}'s model object lacks ${missing.join(', ')}; reinstall: ${SETUP_HINT}`);
}

/** Checks a context sequence has what the adapter calls. */
export function checkEngineSequence(sequence: EngineSequence): void {
  const record = sequence as unknown as Record<string, unknown>;
  const missing = ['evaluate', 'clearHistory', 'dispose', 'eraseContextTokenRanges'].filter((m) => typeof record[m] !== 'function');
  if (!Array.isArray(record['contextTokens'])) missing.push('contextTokens');
  if (missing.length > 0) throw new LocalEngineMismatchError(`${LOCAL_ENGINE_PACKAGE}'s context sequence lacks ${missing.join(', ')}; reinstall: ${SETUP_HINT}`);
}

function entryOf(exports: unknown): string | null {
  if (exports === null || typeof exports !== 'object') return null;
  const dot = (exports as Record<string, unknown>)['.'];
  if (typeof dot === 'string') return dot;
  if (dot === null || typeof dot !== 'object') return null;
  const d = dot as Record<string, unknown>;
  const entry = d['import'] ?? d['default'];
  return typeof entry === 'string' ? entry : null;
}
