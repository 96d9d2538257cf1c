// Which planned interventions the store already holds, and the event ids of their events (an
// InterventionDelivered lists them). Filled as the controller writes them, and on a resume from
// the store's own keys (design/run-contract.ts parseInterventionEventKey): the store, not memory,
// says what was written, so a resumed wake injects only what is still missing.
import { parseInterventionEventKey } from '../design/run-contract.js';
import type { Intervention } from '../design/intervention-plan.js';
import type { AppendResult } from '../writer/protocol.js';
import { InstanceError } from './instance-error.js';
import type { RecordedEvent } from './instance-progress.js';

export class WrittenInterventions {
  /** intervention_id → event_id of each of its events, by index. */
  private readonly eventIds = new Map<string, string[]>();

  /** The controller events already recorded, by idempotency key (instance-progress.ts). */
  restore(byKey: ReadonlyMap<string, RecordedEvent>): void {
    for (const [key, recorded] of byKey) {
      const parsed = parseInterventionEventKey(key);
      if (parsed === null) continue;
      const ids = this.eventIds.get(parsed.interventionId) ?? [];
      ids[parsed.index] = recorded.event_id;
      this.eventIds.set(parsed.interventionId, ids);
    }
  }

  /** The intervention's events were appended in one request: `result` holds them in order. */
  add(intervention: Intervention, result: AppendResult): void {
    this.eventIds.set(intervention.intervention_id, result.events.map((e) => e.event_id));
  }

  has(interventionId: string): boolean {
    return this.eventIds.has(interventionId);
  }

  /** The ids an InterventionDelivered of `intervention` lists; every one of its events must be written. */
  idsOf(intervention: Intervention): string[] {
    const ids = this.eventIds.get(intervention.intervention_id);
    if (!ids || ids.length !== intervention.events.length) throw new InstanceError('plan', `${intervention.intervention_id} is due for delivery but its events were not all written`);
    return ids;
  }
}
