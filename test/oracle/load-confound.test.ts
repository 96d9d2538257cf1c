// The load-confound check (oracle/load-confound.ts, issue 31 item 2) on forged counts: a block
// whose groups differ beyond the pre-registered tolerance in a compared kind is confounded; a
// difference at the tolerance, a kind not compared (null) and a group whose events were not read
// are not; no tolerance at all checks nothing.
import { describe, expect, test } from 'vitest';
import type { LoadConfoundTolerance } from '../../design/prereg.js';
import { checkLoadConfound, type LoadInstance } from '../../oracle/load-confound.js';
import { FAILURE_KINDS, type ByFailure } from '../../schema/usable-data.js';

const TOLERANCE: LoadConfoundTolerance = { timeout: 2, transport: 2, stream_broken: 2, truncated: 2, length: null, schema: null };
const none = (): ByFailure => Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])) as ByFailure;
const failures = (counts: Partial<ByFailure>): ByFailure => ({ ...none(), ...counts });

function block(replicate: number, a: ByFailure | null, b: ByFailure | null, c: ByFailure | null): LoadInstance[] {
  return [
    { group: 'A', replicate, byFailure: a },
    { group: 'B', replicate, byFailure: b },
    { group: 'C', replicate, byFailure: c },
  ];
}

describe('the load-confound check', () => {
  test('one group timing out more often than the tolerance allows confounds its block, and only its block', () => {
    const loads = checkLoadConfound([...block(1, failures({ timeout: 5 }), failures({ timeout: 2 }), none()), ...block(2, failures({ timeout: 2 }), none(), failures({ timeout: 1 }))], TOLERANCE)!;
    expect(loads.map((l) => l.confounded)).toEqual([true, false]);
    expect(loads[0]!.over).toEqual(['timeout: A 5, B 2, C 0 — differ by 5, tolerance 2']);
    expect(loads[0]!.detail).toMatch(/^replicate 1: CONFOUNDED by the server's load/);
    expect(loads[1]!.detail).toMatch(/^replicate 2: within tolerance \(compared truncated, timeout, transport, stream_broken; not compared \(tolerance null\): schema, length\)$/);
  });

  test('each compared kind on its own; kinds pre-registered null are never compared', () => {
    const [transport] = checkLoadConfound(block(1, none(), failures({ transport: 3 }), none()), TOLERANCE)!;
    expect(transport!.over).toEqual(['transport: A 0, B 3, C 0 — differ by 3, tolerance 2']);
    const [behaviour] = checkLoadConfound(block(1, failures({ schema: 20, length: 9 }), none(), none()), TOLERANCE)!;
    expect(behaviour!.confounded).toBe(false);
    const [strict] = checkLoadConfound(block(1, failures({ schema: 1 }), none(), none()), { ...TOLERANCE, schema: 0 })!;
    expect(strict!.over).toEqual(['schema: A 1, B 0, C 0 — differ by 1, tolerance 0']);
  });

  test('a group whose events were not read is left out (it is no data already), and said', () => {
    const [load] = checkLoadConfound(block(1, failures({ timeout: 9 }), null, null), TOLERANCE)!;
    expect(load!.confounded).toBe(false);
    expect(load!.detail).toContain('B, C not read (not scored)');
    const [two] = checkLoadConfound(block(1, failures({ timeout: 9 }), none(), null), TOLERANCE)!;
    expect(two!.confounded).toBe(true);
  });

  test('without a pre-registered tolerance nothing is checked', () => {
    expect(checkLoadConfound(block(1, failures({ timeout: 30 }), none(), none()), null)).toBeNull();
  });
});
