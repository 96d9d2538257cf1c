// The speed one call showed (issue 31 item 3b): from the server's own timings where it sent them
// (llama.cpp: prompt tokens evaluated and generated, each with its milliseconds) or the local
// engine's as its adapter timed them (until the first token, then after it), else from the
// call's wall time — then prompt and generation are not told apart, so both rates are lower
// bounds (each is charged the whole call), and the source says so. Shared by every adapter that
// measures (openai, anthropic, gemini: measureWith; local times its own engine the same way).
import type { MeasuredSpeed, ModelCallOutcome, ModelMeasurement, PromptSample, TokenCountSource } from '../model-adapter.js';

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

/** What an adapter lends the measurement: its count of a prompt, its call, its redaction. */
export interface MeasuringAdapter {
  count(system: string, user: string): Promise<{ readonly tokens: number; readonly source: TokenCountSource }>;
  complete(system: string, user: string, answerCap: number): Promise<ModelCallOutcome>;
  redact(text: string): string;
  /** A speed call's prompt tokens from its own outcome (absent: the prompt is counted again with `count`) — for an adapter whose count is a billed side request. */
  speedPromptTokens?(outcome: ModelCallOutcome): number;
}

/**
 * Each sample counted as a call counts it, then the speed samples made from those counts called
 * in turn through the adapter's own call path, each timed (measuredSpeedOf); a call that gives no
 * measurement ends the series (a larger one would say no more). Lines are the adapter's to redact.
 */
export async function measureWith(adapter: MeasuringAdapter, samples: readonly PromptSample[], speedSampleOf: (context: ModelMeasurement['context'], counts: ModelMeasurement['counts']) => readonly PromptSample[], context: ModelMeasurement['context']): Promise<ModelMeasurement> {
  const lines: string[] = [];
  const counts: ModelMeasurement['counts'][number][] = [];
  for (const sample of samples) {
    const count = await adapter.count(sample.system, sample.user);
    counts.push({ label: sample.label, tokens: count.tokens, source: count.source });
    lines.push(`${sample.label} prompt: ${count.tokens} tokens (${count.source === 'estimate' ? 'estimated: ceil(chars / 4), no tokenizer' : `counted by the ${count.source}`}), answer cap ${sample.answerCap}`);
  }
  const speeds: ModelMeasurement['speeds'][number][] = [];
  for (const sample of speedSampleOf(context, counts)) {
    const counted = adapter.speedPromptTokens === undefined ? (await adapter.count(sample.system, sample.user)).tokens : null;
    const outcome = await adapter.complete(sample.system, sample.user, sample.answerCap);
    const tokens = counted ?? adapter.speedPromptTokens?.(outcome) ?? 0;
    const speed = measuredSpeedOf(outcome);
    if (speed === null) {
      const why = adapter.redact(outcome.kind === 'failed' ? `${outcome.failure}: ${outcome.detail}` : 'the answer carried no usage');
      lines.push(`speed call (${sample.label}, ${tokens} prompt tokens): no measurement (${why})`);
      speeds.push({ label: sample.label, prompt_tokens: tokens, speed: null, failure: why, timed_out: outcome.kind === 'failed' && outcome.failure === 'timeout' });
      // A call that timed out says enough: a larger one would too.
      break;
    }
    lines.push(`speed call (${sample.label}): ${speed.prompt_tokens} prompt tokens in ${Math.round(speed.prompt_ms)} ms, ${speed.generated_tokens} generated in ${Math.round(speed.generated_ms)} ms (${speed.source === 'wall' ? 'wall clock: prompt and generation not told apart' : "the server's own timings"}), ${speed.latency_ms} ms in all`);
    speeds.push({ label: sample.label, prompt_tokens: tokens, speed, failure: null, timed_out: false });
  }
  return { context, counts, speeds, lines: lines.map((l) => adapter.redact(l)) };
}
