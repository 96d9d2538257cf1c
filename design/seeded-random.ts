// The only source of randomness of the controller: seedrandom's ARC4 generator, never
// Math.random. Integers are drawn with Math.floor over a closed range, so a draw consumes
// exactly one number of the stream and the sequence of draws is the contract.
import seedrandom from 'seedrandom';

export interface SeededRandom {
  /** A uniform integer in [minInclusive, maxInclusive]. */
  intBetween(minInclusive: number, maxInclusive: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
}

export function seededRandom(seed: string): SeededRandom {
  const next = seedrandom(seed);
  const intBetween = (min: number, max: number): number => {
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max < min) throw new RangeError(`bad integer range [${min}, ${max}]`);
    return min + Math.floor(next() * (max - min + 1));
  };
  return {
    intBetween,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new RangeError('cannot pick from an empty list');
      return items[intBetween(0, items.length - 1)] as T;
    },
  };
}
