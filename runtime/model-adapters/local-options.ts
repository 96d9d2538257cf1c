// The local adapter's configuration and fixed facts: its options (as the start message and a
// model configuration give them), its limits, its sampling defaults and its configuration errors.
// Apart from local-adapter.ts so that what a researcher sets reads on one page.
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { InternalError } from '../../foundation/typed-error.js';
import { DEFAULT_LOCAL_KV_REUSE, LocalContextTokens, MAX_LOCAL_CONTEXT_TOKENS } from '../protocol.js';

export const LOCAL_ADAPTER_LIMITS = {
  /** A context of more tokens is beyond what a CPU evaluates in a call's time (prompt evaluation grows with its square). */
  maxContextSize: MAX_LOCAL_CONTEXT_TOKENS,
  /** Compiled grammars kept (one per distinct answer schema; a wake's schema differs by its shown seqs). */
  grammarCacheEntries: 16,
  /** Engine log lines kept for preflight and failure details, each cut to maxEngineLogChars. */
  maxEngineLogLines: 32,
  maxEngineLogChars: 300,
  /** The probe's answer cap when params.max_tokens is null (the wake loop's largest cap). */
  probeMaxTokens: 4_096,
  /** How much of a raw answer a preflight fact or a detail quotes. */
  quotedChars: 2_000,
} as const;

/** The seed used when params.seed is null: fixed, so that runs are reproducible (the record names it). */
export const LOCAL_DEFAULT_SEED = 0;

/** node-llama-cpp 3.21.1's own defaults, used when params leave temperature / top_p null. */
export const ENGINE_DEFAULT_TEMPERATURE = 0;

export const ENGINE_DEFAULT_TOP_P = 0.95;

/** Sampling parameters ModelParams does not carry, fixed here (and named in every call's fingerprint). */
export const LOCAL_FIXED_SAMPLING = { top_k: 40, min_p: 0, repeat_penalty: 'off' } as const;

export class LocalAdapterConfigError extends InternalError {
  override readonly name = 'LocalAdapterConfigError';
}

export const LocalAdapterOptions = z.strictObject({
  /** The .gguf file, as an absolute path (the CLI resolves relative ones). */
  modelFile: z.string().min(1).max(4_096).refine((p) => isAbsolute(p), { message: 'modelFile must be an absolute path' }),
  /** What records call the model; default: the file's name without .gguf. */
  modelId: z.string().min(1).max(200).optional(),
  params: z.strictObject({
    temperature: z.number().min(0).max(2).nullable(),
    top_p: z.number().gt(0).max(1).nullable(),
    /** llama.cpp seeds with an unsigned 32-bit integer (node-llama-cpp would clamp a negative one to 0 unsaid). */
    seed: z.number().int().min(0).max(0xffff_ffff).nullable(),
    max_tokens: z.number().int().min(1).nullable(),
  }),
  threads: z.number().int().min(1).max(256).default(1),
  /** The context in tokens: prompt + answer cap must fit in it. Explicit: it decides what fits and how long prompts take. */
  contextSize: LocalContextTokens,
  /** Only the CPU build is installed (docs/local-model.md). */
  gpu: z.literal(false).default(false),
  flashAttention: z.boolean().default(false),
  /** Keep the KV cache of the prompt's common prefix between calls (kv-prefix.ts says why that carries no memory); in every call's fingerprint. */
  kvReuse: z.boolean().default(DEFAULT_LOCAL_KV_REUSE),
  /** Where the engine's nested package is (tests point it elsewhere); default runtime/model-adapters/local-engine. */
  enginePackageRoot: z.string().min(1).max(4_096).optional(),
});

export type LocalAdapterOptions = z.input<typeof LocalAdapterOptions>;
