// Where two JSON values first differ (schema/json-difference.ts): the path a finding names, so a
// person can go to the place in plan.json or in a payload. Equal means canonically equal.
import { describe, expect, test } from 'vitest';
import { firstDifference } from '../../schema/json-difference.js';

describe('firstDifference', () => {
  test('equal values, whatever their key order, have no difference', () => {
    expect(firstDifference({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 })).toBeNull();
    expect(firstDifference(null, null)).toBeNull();
  });

  test('names the first differing place as a dotted path, keys in sorted order', () => {
    expect(firstDifference({ schedule: { wakes: [{ at: 1 }, { at: 2 }] } }, { schedule: { wakes: [{ at: 1 }, { at: 3 }] } })).toBe('schedule.wakes[1].at');
    expect(firstDifference({ b: 1, a: 1 }, { b: 2, a: 2 })).toBe('a');
    expect(firstDifference(1, 2)).toBe('(root)');
  });

  test('a member or an element present on one side only is the difference', () => {
    expect(firstDifference({ a: 1 }, { a: 1, z: null })).toBe('z');
    expect(firstDifference({ list: [1, 2] }, { list: [1, 2, 3] })).toBe('list[2]');
  });

  test('values of different kinds differ where they stand', () => {
    expect(firstDifference({ a: [1] }, { a: { 0: 1 } })).toBe('a');
    expect(firstDifference({ a: '1' }, { a: 1 })).toBe('a');
  });

  test('past the depth bound the subtrees are compared whole, and named where the bound is reached', () => {
    const nested = (depth: number, leaf: number): unknown => (depth === 0 ? leaf : [nested(depth - 1, leaf)]);
    expect(firstDifference(nested(70, 1), nested(70, 1))).toBeNull();
    // 64 levels walked one by one; the 65th subtree (5 levels deep) differs as a whole.
    expect(firstDifference(nested(70, 1), nested(70, 2))).toBe('[0]'.repeat(65));
  });
});
