// Every call's cost recomputed (issue 36 item 4): each ModelAnswered and ModelCallFailed carries
// cost_nano_usd, computed by the wake loop from the counts the same record holds at the prices the
// signed manifest pins (model.prices). The check computes it again from the record alone
// (design/recorded-call-cost.ts) and fails a call whose recorded cost differs, one that carries a cost
// when the manifest states no prices, and one that carries none when it does. A record from
// before costs were recorded (ModelAnswered < 1.5.0, ModelCallFailed < 1.4.0) has no cost and
// is held to none. Reads only.
import path from 'node:path';
import type { InstanceManifest } from '../design/manifest.js';
import { recordedCallCostNanoUsd } from '../design/recorded-call-cost.js';
import { usdText } from '../schema/cost-summary.js';
import { RUN_FILES } from '../schema/run-files.js';
import { MODEL_ANSWERED, MODEL_CALL_FAILED } from '../schema/usable-data.js';
import { openStoreReadOnly, StoreReadError } from '../writer/store-reader.js';
import type { Findings } from './plan-findings.js';

interface CostRow {
  readonly seq: number;
  readonly usage: string | null;
  readonly cache_read: number | null;
  readonly cache_write: number | null;
  readonly cost: number | null;
}

/** Holds every model call's recorded cost to its recomputation at the manifest's prices (null manifest: not checked, its own failure says why). */
export function checkCallCosts(runDir: string, manifest: InstanceManifest | null, out: Findings): void {
  if (manifest === null) return;
  const prices = manifest.model.prices;
  let rows: CostRow[];
  try {
    const db = openStoreReadOnly(path.join(runDir, RUN_FILES.store));
    try {
      rows = db
        .prepare(`select seq, json_extract(envelope, '$.payload.usage') as usage, json_extract(envelope, '$.payload.cache_read_tokens') as cache_read, json_extract(envelope, '$.payload.cache_write_tokens') as cache_write, json_extract(envelope, '$.payload.cost_nano_usd') as cost from events where event_type in (?, ?) order by seq`)
        .all(MODEL_ANSWERED, MODEL_CALL_FAILED) as CostRow[];
    } finally {
      db.close();
    }
  } catch (error) {
    // The plan walk, which reads the same store first, has already failed the run saying why (store-walk.ts checkStore): once is enough.
    if (!(error instanceof StoreReadError)) throw error;
    return;
  }
  for (const row of rows) checkOne(row, prices, out);
}

function checkOne(row: CostRow, prices: InstanceManifest['model']['prices'], out: Findings): void {
  if (prices === null) {
    if (row.cost !== null) out.fail(RUN_FILES.store, row.seq, `the call records a cost of ${row.cost} nano-USD, but ${RUN_FILES.manifest} states no prices (model.prices null): a cost nothing priced`);
    return;
  }
  if (row.cost === null) return out.fail(RUN_FILES.store, row.seq, `the call records no cost, but ${RUN_FILES.manifest} states prices (model.prices): every call is priced`);
  const usage = row.usage === null ? null : (JSON.parse(row.usage) as { prompt_tokens: number; completion_tokens: number });
  const expected = recordedCallCostNanoUsd({ usage, cache_read_tokens: row.cache_read, cache_write_tokens: row.cache_write }, prices);
  if (row.cost !== expected) {
    out.fail(RUN_FILES.store, row.seq, `the call records a cost of ${row.cost} nano-USD (${usdText(row.cost)}); its counts (${usage === null ? 'no usage' : `${usage.prompt_tokens} prompt, ${usage.completion_tokens} completion`}, cache read ${row.cache_read ?? 'not reported'}, cache write ${row.cache_write ?? 'not reported'}) at ${RUN_FILES.manifest}'s prices cost ${expected} nano-USD (${usdText(expected)})`);
  }
}
