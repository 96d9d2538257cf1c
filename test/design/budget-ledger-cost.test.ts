// The ledger's cost (issue 36 item 4): design/budget-ledger.ts ledgerOf sums the costs the wake's
// call records carry (null when none carries one), and a ledger of catalogues before 1.3.0
// (BudgetLedgerRecorded 1.0.0) reads, through the upcaster, with no cost — not a made-up 0.
import { describe, expect, test } from 'vitest';
import { ledgerOf } from '../../design/budget-ledger.js';
import { currentPayloadOf } from '../../schema/current-payload.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { chain, d } from '../support/subject-events.js';

const withCost = (env: EventEnvelope, cost: number | null): EventEnvelope => ({ ...env, payload: { ...env.payload, cost_nano_usd: cost } });

describe('ledgerOf: the wake\'s cost', () => {
  test('the sum of its calls\' costs; null when none is priced; a call of an earlier version counts as unpriced', () => {
    const [answered, failed] = chain([d.modelAnswered('wake-0001'), d.modelCallFailed('wake-0001')]);
    expect(ledgerOf([withCost(answered!, 1_234), withCost(failed!, 66)]).cost_nano_usd).toBe(1_300);
    expect(ledgerOf([withCost(answered!, null), withCost(failed!, null)]).cost_nano_usd).toBeNull();
    const { cost_nano_usd: _none, ...before } = answered!.payload;
    expect(ledgerOf([{ ...answered!, schema_version: '1.4.0', payload: before }]).cost_nano_usd).toBeNull();
    expect(ledgerOf([]).cost_nano_usd).toBeNull();
  });
});

describe('BudgetLedgerRecorded 1.0.0 (before catalogue 1.3.0)', () => {
  test('is lifted to 1.1.0 with used.cost_nano_usd null, the rest as it was', () => {
    const payload = { wake_id: 'wake-0001', granted: { model_calls: 1, tokens: 9_000, tool_calls: 3 }, used: { model_calls: 1, tokens: 120, tool_calls: 0, retries: 0 } };
    const read = currentPayloadOf({ event_type: 'ExperimentEvent.BudgetLedgerRecorded', schema_version: '1.0.0', payload, seq: 7 });
    expect(read).toEqual({ ok: true, event: { event_type: 'ExperimentEvent.BudgetLedgerRecorded', payload: { ...payload, used: { ...payload.used, cost_nano_usd: null } } } });
    // Forged: a 1.0.0 ledger that already carries a cost is not a 1.0.0 ledger.
    const forged = currentPayloadOf({ event_type: 'ExperimentEvent.BudgetLedgerRecorded', schema_version: '1.0.0', payload: { ...payload, used: { ...payload.used, cost_nano_usd: 5 } }, seq: 7 });
    expect(forged.ok).toBe(false);
  });
});
