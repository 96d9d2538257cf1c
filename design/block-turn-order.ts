// The order in which the instances of a block take their turns at the model within one wake
// (issue 31 item 1; DESIGN §12 "Blocks under real load"). A block is one replicate's A, B and C,
// run side by side against the same model server, their wakes in lockstep. Within wake k their
// model calls are made one after another (or as many at once as the server has slots) in an order
// drawn here from the replicate's seed — the seed all three instances share — so that no group's
// call waits behind another's more often than chance allows, and anybody can redraw the order
// from the plan alone and hold the recorded turns to it.
//
// Pure: the seed and the wake's index in, the order out. The draw is a Fisher–Yates shuffle of
// `members` (given in their canonical order) on its own stream of the seed, so it does not move
// any other draw of the plan.
import { seededRandom } from './seeded-random.js';

/** The turn before the first wake: the runtime's start, whose model check is a call too. */
export const START_TURN_INDEX = -1;

/** The stream of the seed the turn orders are drawn from (kept apart from the schedule's and the interventions'). */
function streamOf(seed: string, wakeIndex: number): string {
  return `${seed}/block-turns/${wakeIndex}`;
}

/**
 * The order of `members` at wake `wakeIndex` (0-based; START_TURN_INDEX for the runtimes' start)
 * of the block whose instances share `seed`. Every member once; the same arguments give the
 * same order on every machine.
 */
export function blockTurnOrder<T>(seed: string, wakeIndex: number, members: readonly T[]): T[] {
  if (!Number.isSafeInteger(wakeIndex) || wakeIndex < START_TURN_INDEX) throw new RangeError(`a wake index is a whole number from ${START_TURN_INDEX}, got ${wakeIndex}`);
  const order = [...members];
  const random = seededRandom(streamOf(seed, wakeIndex));
  for (let i = order.length - 1; i > 0; i -= 1) {
    const j = random.intBetween(0, i);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}
