// The speed one call showed (issue 31 item 3b): from the server's own timings where it sent them
// (llama.cpp: prompt tokens evaluated and generated, each with its milliseconds) or the local
// engine's as its adapter timed them (until the first token, then after it), else from the
// call's wall time — then prompt and generation are not told apart, so both rates are lower
// bounds (each is charged the whole call), and the source says so. Shared by every adapter that
// measures (openai; local times its own engine the same way).
import type { MeasuredSpeed, ModelCallOutcome } from '../model-adapter.js';

/** null when the call gave nothing to time: it failed before an answer, or no usage is known. */
export function measuredSpeedOf(outcome: ModelCallOutcome): MeasuredSpeed | null {
  for (const [timings, source] of [[outcome.server_timings ?? null, 'server_timings'], [outcome.engine_timings ?? null, 'engine_timings']] as const) {
    if (timings !== null && timings.prompt_n > 0 && timings.prompt_ms > 0) {
      return { prompt_tokens: timings.prompt_n, prompt_ms: timings.prompt_ms, generated_tokens: timings.predicted_n, generated_ms: timings.predicted_ms, source, latency_ms: outcome.latency_ms };
    }
  }
  // A call that failed (a timeout included: its prompt may not even be evaluated) gives no rate.
  if (outcome.kind !== 'answered') return null;
  const usage = outcome.usage;
  if (usage === null || usage.prompt_tokens === 0 || outcome.latency_ms === 0) return null;
  return { prompt_tokens: usage.prompt_tokens, prompt_ms: outcome.latency_ms, generated_tokens: usage.completion_tokens, generated_ms: outcome.latency_ms, source: 'wall', latency_ms: outcome.latency_ms };
}
