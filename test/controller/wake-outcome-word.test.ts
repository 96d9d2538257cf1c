// The wake line's last word (issue 32 item 6): a wake that ran as planned but whose every model
// call ended in an answer cut at its token cap is "cut off" on screen, not "completed" (its
// WakeEnded still records the planned outcome, the same for every group). Forged event lists.
import { describe, expect, test } from 'vitest';
import { outcomeWordOf } from '../../controller/wake-sequence.js';
import type { EventEnvelope } from '../../schema/envelope.js';

const WAKE = 'wake-0004';
const answered = { event_type: 'ModelOutputEvent.ModelAnswered', correlation_id: WAKE, payload: {} };
const failed = (failure: string, wake = WAKE) => ({ event_type: 'ModelOutputEvent.ModelCallFailed', correlation_id: wake, payload: { failure } });
const word = (events: readonly object[], outcome: 'completed' | 'crashed' = 'completed'): string => outcomeWordOf(events as unknown as EventEnvelope[], WAKE, outcome);

describe("the wake line's outcome word", () => {
  test('every call of the wake cut at its token cap: cut off', () => {
    expect(word([failed('length')])).toMatch(/^cut off \(its answer reached the token cap; recorded completed, as planned\)$/);
    expect(word([failed('schema_violation'), failed('length')])).toMatch(/^cut off/);
  });

  test('an accepted answer, another last failure, a cut answer of another wake, or a crash: the outcome as recorded', () => {
    expect(word([failed('length'), answered])).toBe('completed');
    expect(word([failed('length'), failed('timeout')])).toBe('completed');
    expect(word([failed('length', 'wake-0003')])).toBe('completed');
    expect(word([failed('length')], 'crashed')).toBe('crashed');
    expect(word([])).toBe('completed');
  });
});
