// The run's and a group's prompt reuse (schema/prompt-reuse-summary.ts): the share is over the
// calls that reported reuse only; the calls that did not are counted beside it, not as zero.
import { describe, expect, test } from 'vitest';
import { describePromptReuse, summarizePromptReuse } from '../../schema/prompt-reuse-summary.js';

describe('summarizePromptReuse', () => {
  test('sums what was reported, counts the silent calls apart', () => {
    const s = summarizePromptReuse([
      { reused_tokens: 900, evaluated_tokens: 100, source: 'server_timings' },
      null,
      { reused_tokens: 0, evaluated_tokens: 1_000, source: 'engine' },
    ]);
    expect(s).toEqual({ calls_reported: 2, calls_unreported: 1, reused_tokens: 900, evaluated_tokens: 1_100, reevaluated_share: 0.55, sources: ['server_timings', 'engine'] });
    expect(describePromptReuse(s)).toBe('prompt reuse: re-evaluated 55.0 % of 2,000 prompt tokens (2 call(s), server_timings, engine); 1 call(s) reported no reuse');
  });

  test('no call reported: no share, said so', () => {
    const s = summarizePromptReuse([null, null]);
    expect(s.reevaluated_share).toBeNull();
    expect(describePromptReuse(s)).toBe('prompt reuse: not reported by any call; 2 call(s) reported no reuse');
    expect(summarizePromptReuse([]).calls_unreported).toBe(0);
  });
});
