// What a llama.cpp server says it did with one request (issue 31 item 3): every completion of
// llama-server carries `timings` — prompt tokens evaluated and how long that took, tokens
// generated and how long that took, and in newer builds how many prompt tokens its KV cache
// served (`cache_n`) — in the body of a plain answer and in the last chunk of a stream. The
// preflight measures the server's speed from them; a server that sends none is timed by the wall
// clock instead, and says so. Read leniently (a field missing or not a number: no timings), never
// trusted beyond its type: the numbers are the server's word.
import { z } from 'zod';

const Count = z.number().int().min(0);
const Ms = z.number().min(0);

export const ServerTimings = z.object({
  prompt_n: Count,
  prompt_ms: Ms,
  predicted_n: Count,
  predicted_ms: Ms,
  /** Prompt tokens the server's cache served (not evaluated); llama.cpp builds after b4748 only. */
  cache_n: Count.optional(),
});
export type ServerTimings = z.infer<typeof ServerTimings>;

/** The timings of an answer, or null when it carries none of this shape. */
export function serverTimingsOf(value: unknown): ServerTimings | null {
  const parsed = ServerTimings.safeParse(value);
  if (!parsed.success) return null;
  const t = parsed.data;
  return { prompt_n: t.prompt_n, prompt_ms: t.prompt_ms, predicted_n: t.predicted_n, predicted_ms: t.predicted_ms, ...(t.cache_n === undefined ? {} : { cache_n: t.cache_n }) };
}
