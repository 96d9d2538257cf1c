// What of a call's prompt a server's cache served, read from what the server said (issue 34
// item 1): llama.cpp's `timings` and OpenAI-style `usage.prompt_tokens_details.cached_tokens`
// (OpenAI, vLLM with prefix caching, newer llama.cpp). Pure and lenient like server-timings.ts: a
// figure missing, not a count, or inconsistent (more cached than the prompt) gives null — "nobody
// said" — never a guess. The local adapter counts its own reuse (source `engine`).
import { z } from 'zod';
import type { PromptReuse } from '../../schema/events/model-output-events.js';
import { serverTimingsOf } from './server-timings.js';

const Count = z.number().int().min(0);
const UsageWithCache = z.object({ prompt_tokens: Count, prompt_tokens_details: z.object({ cached_tokens: Count }) });
const UsagePrompt = z.object({ prompt_tokens: Count });

/** From llama.cpp's timings: `cache_n` when the build sends it, else the server's prompt count less `prompt_n` (b4748 sends no cache_n). */
function fromTimings(timings: unknown, usage: unknown): PromptReuse | null {
  const t = serverTimingsOf(timings);
  if (t === null) return null;
  if (t.cache_n !== undefined) return { reused_tokens: t.cache_n, evaluated_tokens: t.prompt_n, source: 'server_timings' };
  const counted = UsagePrompt.safeParse(usage);
  if (!counted.success || counted.data.prompt_tokens < t.prompt_n) return null;
  return { reused_tokens: counted.data.prompt_tokens - t.prompt_n, evaluated_tokens: t.prompt_n, source: 'server_timings' };
}

function fromUsage(usage: unknown): PromptReuse | null {
  const u = UsageWithCache.safeParse(usage);
  if (!u.success || u.data.prompt_tokens_details.cached_tokens > u.data.prompt_tokens) return null;
  const reused = u.data.prompt_tokens_details.cached_tokens;
  return { reused_tokens: reused, evaluated_tokens: u.data.prompt_tokens - reused, source: 'server_usage' };
}

/**
 * The reuse a server reported for one call: its timings when they carry `cache_n` (its own
 * split), else `cached_tokens` in the usage, else the timings' `prompt_n` against the usage's
 * prompt count; null when it reported none of these.
 */
export function promptReuseOf(usage: unknown, timings: unknown): PromptReuse | null {
  const t = serverTimingsOf(timings);
  if (t !== null && t.cache_n !== undefined) return fromTimings(timings, usage);
  return fromUsage(usage) ?? fromTimings(timings, usage);
}

/**
 * The prompt tokens an OpenAI-style usage says its provider's cache served
 * (`prompt_tokens_details.cached_tokens`: OpenAI, vLLM with prefix caching) — what a provider
 * bills at its cache-read price (issue 36 item 4); null when it said none, or more than the prompt.
 */
export function cachedTokensOf(usage: unknown): number | null {
  return fromUsage(usage)?.reused_tokens ?? null;
}
