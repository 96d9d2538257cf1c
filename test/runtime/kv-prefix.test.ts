// keepCommonPrefix (runtime/model-adapters/kv-prefix.ts) on a sequence made here: it keeps
// exactly the tokens that begin the new prompt (never all of it: the last prompt token is
// evaluated anew), erases the rest, and refuses to go on when the erase left anything else
// behind — the invariant group A's promise rests on (forged with a sequence that erases nothing).
import { describe, expect, test } from 'vitest';
import { keepCommonPrefix } from '../../runtime/model-adapters/kv-prefix.js';
import type { EngineSequence, EngineToken } from '../../runtime/model-adapters/load-engine.js';

function sequenceHolding(tokens: number[], eraseWorks = true): EngineSequence & { held: number[] } {
  const seq = {
    held: [...tokens],
    get contextTokens() {
      return seq.held as unknown as EngineToken[];
    },
    get nextTokenIndex() {
      return seq.held.length;
    },
    async eraseContextTokenRanges(ranges: readonly { start: number; end: number }[]) {
      if (!eraseWorks) return;
      for (const r of [...ranges].reverse()) seq.held.splice(r.start, r.end - r.start);
    },
    evaluate: () => {
      throw new Error('not used');
    },
    clearHistory: async () => undefined,
    dispose: async () => undefined,
  };
  return seq as unknown as EngineSequence & { held: number[] };
}

const prompt = (tokens: number[]) => tokens as unknown as EngineToken[];

describe('keepCommonPrefix', () => {
  test('keeps the shared start, erases the previous answer and the differing rest', async () => {
    const seq = sequenceHolding([1, 2, 3, 4, 90, 91]);
    expect(await keepCommonPrefix(seq, prompt([1, 2, 3, 5, 6]))).toBe(3);
    expect(seq.held).toEqual([1, 2, 3]);
  });

  test('never keeps the whole prompt: its last token is evaluated by this call', async () => {
    const seq = sequenceHolding([1, 2, 3, 4]);
    expect(await keepCommonPrefix(seq, prompt([1, 2, 3]))).toBe(2);
    expect(seq.held).toEqual([1, 2]);
  });

  test('an empty sequence keeps nothing', async () => {
    const seq = sequenceHolding([]);
    expect(await keepCommonPrefix(seq, prompt([7, 8]))).toBe(0);
  });

  test('forged: an erase that leaves the old tokens behind is caught before anything is evaluated', async () => {
    const seq = sequenceHolding([1, 2, 3, 99], false);
    await expect(keepCommonPrefix(seq, prompt([1, 2, 5]))).rejects.toThrow(/bug: after keeping 2 shared tokens the sequence holds 4 tokens/);
  });
});
