// The check behind every 72-hour picture test: the marks a page draws, counted in the browser's
// DOM per lane, against the events of a store counted here from the raw envelopes — by type and
// raw payload field, never through timeline/ or the schema's readers — so a builder that drops
// or doubles an event is caught, not confirmed by itself.
import type { Locator } from 'playwright-core';
import type { EventEnvelope } from '../../schema/envelope.js';

const count = (events: readonly EventEnvelope[], type: string, keep: (payload: Record<string, unknown>) => boolean = () => true): number =>
  events.filter((e) => e.event_type === type && keep(e.payload as Record<string, unknown>)).length;

/** Per lane, how many marks a picture of `events` must hold, and the event type each mark's seq must be. */
export const STORE_LANE_COUNTS: Readonly<Record<string, { readonly of: (events: readonly EventEnvelope[]) => number; readonly types: readonly string[] }>> = {
  wakes: { of: (es) => count(es, 'ExperimentEvent.WakeStarted'), types: ['ExperimentEvent.WakeStarted'] },
  interventions: { of: (es) => count(es, 'ExperimentEvent.InterventionDelivered'), types: ['ExperimentEvent.InterventionDelivered'] },
  crashes: { of: (es) => count(es, 'SystemEvent.ProcessRestarted'), types: ['SystemEvent.ProcessRestarted'] },
  stops: { of: (es) => count(es, 'SystemEvent.EmergencyStopped') + count(es, 'SystemEvent.Paused') + count(es, 'SystemEvent.Resumed'), types: ['SystemEvent.EmergencyStopped', 'SystemEvent.Paused', 'SystemEvent.Resumed'] },
  model_failures: { of: (es) => count(es, 'ModelOutputEvent.ModelCallFailed'), types: ['ModelOutputEvent.ModelCallFailed'] },
  denials: { of: (es) => count(es, 'ActionEvent.PermissionDecided', (p) => p.decision === 'deny'), types: ['ActionEvent.PermissionDecided'] },
  facts: { of: (es) => count(es, 'MemoryEvent.ClaimRecorded', (p) => p.claim_type === 'FACT'), types: ['MemoryEvent.ClaimRecorded'] },
  // A finished reference run checkpoints every scored wake: one accuracy mark per CheckpointRecorded.
  accuracy: { of: (es) => count(es, 'ExperimentEvent.CheckpointRecorded'), types: ['ExperimentEvent.CheckpointRecorded'] },
};

export interface DrawnMark {
  readonly lane: string;
  readonly seq: number;
  readonly title: string;
  readonly href: string | null;
}

/** Every mark under `svg` as the browser has it: lane, seq, tooltip and the link around it. */
export async function drawnMarks(svg: Locator): Promise<DrawnMark[]> {
  return svg.locator('g.mark').evaluateAll((groups) =>
    groups.map((g) => ({
      lane: g.getAttribute('data-lane') ?? '',
      seq: Number(g.getAttribute('data-seq')),
      title: g.querySelector('title')?.textContent ?? '',
      href: g.parentElement?.tagName.toLowerCase() === 'a' ? g.parentElement.getAttribute('href') : null,
    })),
  );
}

/** What differs between the marks drawn and the store: a wrong count per lane, a mark on an event of the wrong type or on no event. */
export function markDifferences(marks: readonly DrawnMark[], events: readonly EventEnvelope[]): string[] {
  const problems: string[] = [];
  const bySeq = new Map(events.map((e) => [e.seq, e]));
  for (const [lane, rule] of Object.entries(STORE_LANE_COUNTS)) {
    const drawn = marks.filter((m) => m.lane === lane);
    const expected = rule.of(events);
    if (drawn.length !== expected) problems.push(`${lane}: ${drawn.length} mark(s) drawn, the store has ${expected}`);
    for (const mark of drawn) {
      const event = bySeq.get(mark.seq);
      if (event === undefined || !rule.types.includes(event.event_type)) problems.push(`${lane}: the mark at seq ${mark.seq} is on ${event?.event_type ?? 'no event'}`);
    }
  }
  const unknown = marks.filter((m) => !(m.lane in STORE_LANE_COUNTS));
  if (unknown.length > 0) problems.push(`${unknown.length} mark(s) on lanes the check does not know: ${[...new Set(unknown.map((m) => m.lane))].join(', ')}`);
  return problems;
}
