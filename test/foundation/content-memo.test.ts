// ContentMemo (foundation/content-memo.ts): an answer is given again only for the same content
// key, frozen so no reader can change it for the next; an answer that throws is not kept; the
// memo holds at most its limit. And deepFrozen freezes all the way down.
import { describe, expect, test } from 'vitest';
import { ContentMemo } from '../../foundation/content-memo.js';
import { deepFrozen } from '../../foundation/deep-frozen.js';

describe('ContentMemo', () => {
  test('computes once per content key; another key is computed afresh', () => {
    const memo = new ContentMemo<{ n: number }>(4);
    let computed = 0;
    const first = memo.get('sha256:a', () => ({ n: (computed += 1) }));
    expect(memo.get('sha256:a', () => ({ n: (computed += 1) }))).toBe(first);
    expect(memo.get('sha256:b', () => ({ n: (computed += 1) }))).toEqual({ n: 2 });
    expect(computed).toBe(2);
    expect(memo.hits).toBe(1);
  });

  test('forged: a reader that changes a kept answer throws and changes nothing', () => {
    const memo = new ContentMemo<{ inner: { list: number[] } }>(2);
    const answer = memo.get('k', () => ({ inner: { list: [1, 2] } }));
    expect(() => {
      answer.inner.list.push(3);
    }).toThrow(TypeError);
    expect(memo.get('k', () => ({ inner: { list: [] } }))).toEqual({ inner: { list: [1, 2] } });
  });

  test('an answer that throws is not kept; beyond the limit the oldest is dropped', () => {
    const memo = new ContentMemo<number>(2);
    expect(() => memo.get('bad', () => {
      throw new Error('not a pre-registration');
    })).toThrow('not a pre-registration');
    expect(memo.get('bad', () => 7)).toBe(7);
    memo.get('x', () => 1);
    memo.get('y', () => 2); // 'bad' (the oldest) is dropped
    expect(memo.get('bad', () => 8)).toBe(8);
    expect(() => new ContentMemo<number>(0)).toThrow(RangeError);
  });

  test('deepFrozen freezes nested objects and arrays, and refuses a value nested deeper than its bound', () => {
    const value = deepFrozen({ a: [{ b: 1 }], c: { d: 'x' } });
    expect(Object.isFrozen(value.a[0])).toBe(true);
    expect(Object.isFrozen(value.c)).toBe(true);
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 70; i += 1) deep = { deep };
    expect(() => deepFrozen(deep)).toThrow(RangeError);
  });
});
