// What every model adapter is (issue 5 item 3): one call in, one outcome out. The wake loop
// turns each outcome into exactly one ModelOutputEvent.* and commits it before anything
// uses the content; adapters never retry (a retry would be a second call beyond the shared
// budget) and never throw for a failed call — a timeout, an HTTP error or a refusal is an
// outcome like an answer.
import type { ContextBundle } from './context-bundle.js';

export type ModelAdapterName = 'reference' | 'openai' | 'replay';

export interface ModelParams {
  readonly temperature: number | null;
  readonly top_p: number | null;
  readonly seed: number | null;
  readonly max_tokens: number | null;
}

export interface ModelRequest {
  readonly wake_id: string;
  /** Which call of the wake (1-based); the budget bounds it. */
  readonly call_number: number;
  /** The structured bundle (the reference policy reads this) … */
  readonly bundle: ContextBundle;
  /** … and the same bundle rendered as chat messages (what an LLM reads). */
  readonly system: string;
  readonly user: string;
  /** Token cap for the answer, from the wake's remaining token budget. */
  readonly max_tokens: number;
}

export type ModelCallOutcome =
  | {
      readonly kind: 'answered';
      readonly raw_output: string;
      readonly usage: { readonly prompt_tokens: number; readonly completion_tokens: number };
      /**
       * True when `usage` is not what the model's server reported but an estimate
       * (ceil(chars / 4), runtime/prompt.ts estimateTokens) because the server sent none
       * (or, in a replay, the recorded event kept none): the budget still counts the call,
       * and the estimate is never passed off as measured.
       */
      readonly usage_estimated: boolean;
      readonly latency_ms: number;
      readonly system_fingerprint: string | null;
    }
  | {
      readonly kind: 'failed';
      readonly failure: 'timeout' | 'http_error' | 'refusal';
      readonly detail: string;
      readonly raw_output: string | null;
      readonly latency_ms: number;
    };

export interface ModelAdapter {
  readonly name: ModelAdapterName;
  readonly model_id: string;
  readonly params: ModelParams;
  /** The server's or build's fingerprint when known before a call; null otherwise. */
  readonly build: string | null;
  call(request: ModelRequest, timeoutMs: number): Promise<ModelCallOutcome>;
}
