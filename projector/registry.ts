// Projections a writer can be started with, by name.
import { eventCountsProjection } from './event-counts.js';
import type { Projection } from './projection.js';
import { subjectProjection } from './subject-projection.js';

const PROJECTIONS: ReadonlyMap<string, Projection<unknown>> = new Map([
  [eventCountsProjection.name, eventCountsProjection as Projection<unknown>],
  [subjectProjection.name, subjectProjection as unknown as Projection<unknown>],
]);

export function projectionNamed(name: string): Projection<unknown> {
  const found = PROJECTIONS.get(name);
  if (!found) throw new Error(`unknown projection ${JSON.stringify(name)}; known: ${[...PROJECTIONS.keys()].join(', ')}`);
  return found;
}
