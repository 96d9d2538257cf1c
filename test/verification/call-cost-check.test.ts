// Every call priced and every price checked (issue 36 item 4), through the real `npm run
// experiment` against a llama.cpp-like server on loopback that reports cached tokens as vLLM does:
// the model configuration file's prices reach every call record, each record's cost_nano_usd is
// its own counts at those prices (recomputed here from the store read with better-sqlite3), the
// run summary's cost is their sum, and the verifier (verification/call-cost-check.ts) passes it.
// Forged: one call's cost changed in a copy whose chain is rebuilt around the edit — caught at
// that seq; the same store held to a manifest without prices — every cost caught as unpriced.
import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSignedManifest, type InstanceManifest } from '../../design/manifest.js';
import { NANO_USD_PER_USD } from '../../schema/model-prices.js';
import { parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { checkCallCosts } from '../../verification/call-cost-check.js';
import { Findings } from '../../verification/plan-findings.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetupWith, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';
import { startLlamaLikeServer, type LlamaLikeServer } from '../support/llamacpp-like-server.js';
import { editPayloadRechained, RunCopies, tamper } from '../support/store-forgery.js';

/** Example prices (US dollars per million tokens), not any provider's: cache reads a tenth of input. */
const PRICES = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

interface CallRow {
  readonly seq: number;
  readonly usage: { prompt_tokens: number; completion_tokens: number } | null;
  readonly cache_read_tokens: number | null;
  readonly cache_write_tokens: number | null;
  readonly cost_nano_usd: number | null;
}

/** The model calls as the store holds them, read with better-sqlite3 alone (none of the runtime's code). */
function callsOf(runDir: string): CallRow[] {
  const db = new Database(path.join(runDir, RUN_FILES.store), { readonly: true });
  try {
    const rows = db.prepare("select seq, envelope from events where event_type in ('ModelOutputEvent.ModelAnswered', 'ModelOutputEvent.ModelCallFailed') order by seq").all() as { seq: number; envelope: string }[];
    return rows.map((r) => ({ seq: r.seq, ...(JSON.parse(r.envelope) as { payload: Omit<CallRow, 'seq'> }).payload }));
  } finally {
    db.close();
  }
}

/** A call's cost by hand: each kind of token at its price, in nano-USD (a price per million tokens is p × 1,000 nano-USD a token). */
function byHand(call: CallRow): number {
  if (call.usage === null) return 0;
  const cached = call.cache_read_tokens ?? 0;
  const usd = ((call.usage.prompt_tokens - cached) * PRICES.input + cached * PRICES.cache_read + call.usage.completion_tokens * PRICES.output) / 1e6;
  return Math.round(usd * NANO_USD_PER_USD);
}

let setup: ControllerSetup;
let server: LlamaLikeServer;
let runDir: string;
let run: CliResult;
const copies: RunCopies[] = [];

beforeAll(async () => {
  // schema_subset "strip": the answer schema's minimum/maximum on a number are outside llama.cpp's documented subset (issue 36 item 2).
  setup = controllerSetupWith('prereg-short', (p) => {
    p['wake_schedule']!['base_period_sim_minutes'] = 720;
    p['model_calls']!['schema_subset'] = 'strip';
  });
  server = await startLlamaLikeServer({ prefixCache: true, reportsCachedTokens: true, promptTokensPerS: 200_000, generatedTokensPerS: 100_000 });
  const configFile = path.join(setup.dir, 'model-priced.json');
  writeFileSync(configFile, JSON.stringify({ adapter: 'openai', base_url: server.baseUrl, model_id: server.alias, api_key_env: null, structured_output: 'llamacpp', timeout_ms: 30_000, params: { temperature: 0, seed: 7 }, prices: PRICES }));
  runDir = path.join(setup.dir, 'runs', 'priced');
  run = await runCli('experiment', ['--group', 'C', '--model-config', configFile, '--out', runDir, '--json', '--prereg', setup.preregFile, '--key-dir', setup.keyDir, '--same-uid', 'test run in one uid']);
}, 180_000);

afterAll(async () => {
  await server?.close();
  for (const c of copies) c.removeAll();
});

const publicKey = (): Uint8Array => parsePublicKeyHex(readFileSync(path.join(runDir, RUN_FILES.publicKey), 'utf8'));

describe('a priced run through npm run experiment', () => {
  it('every call carries its counts at the configured prices; the summary sums them; verify OK', () => {
    // 4: the server's empty answers are no usable data — beside the point here, which is their cost.
    expect([0, 4], run.stderr.slice(-3_000)).toContain(run.code);
    expect(run.stderr).toContain('model prices: US dollars per million tokens: input 3, output 15, cache read 0.3, cache write 3.75');
    const calls = callsOf(runDir);
    expect(calls.length).toBeGreaterThan(2);
    for (const call of calls) expect(call.cost_nano_usd, `seq ${call.seq}`).toBe(byHand(call));
    // The server's cache served later prompts: those tokens are billed at the cache-read price.
    expect(calls.filter((c) => (c.cache_read_tokens ?? 0) > 0).length).toBeGreaterThan(0);
    const total = calls.reduce((sum, c) => sum + c.cost_nano_usd!, 0);
    const out = JSON.parse(run.stdout) as { summary: { cost: unknown }; verify: { ok: boolean } };
    expect(out.summary.cost).toEqual({ calls: calls.length, priced_calls: calls.length, nano_usd: total });
    expect(out.verify.ok).toBe(true);
    // The ledger: each wake's cost is its calls' (counted from the store by the controller), so the ledgers add up to the same.
    const db = new Database(path.join(runDir, RUN_FILES.store), { readonly: true });
    const ledgers = (db.prepare("select envelope from events where event_type = 'ExperimentEvent.BudgetLedgerRecorded'").all() as { envelope: string }[]).map((r) => JSON.parse(r.envelope) as { schema_version: string; payload: { used: { cost_nano_usd: number } } });
    db.close();
    expect(ledgers.map((l) => l.schema_version)).toEqual(ledgers.map(() => '1.1.0'));
    expect(ledgers.reduce((sum, l) => sum + l.payload.used.cost_nano_usd, 0)).toBe(total);
  });

  it('forged: one call\'s cost changed, the chain rebuilt around it — the verifier names the call and what its counts cost', () => {
    const c = new RunCopies(runDir);
    copies.push(c);
    const forged = c.copy();
    const victim = callsOf(runDir)[1]!;
    tamper(forged, (db) => editPayloadRechained(db, victim.seq, (p) => void (p['cost_nano_usd'] = victim.cost_nano_usd! + 1)));
    const report = checkRunFollowsPlan(forged, publicKey(), { scenariosDir: SCENARIOS_DIR });
    const costFailures = report.failures.filter((f) => f.message.includes('records a cost of'));
    expect(costFailures).toEqual([{ file: RUN_FILES.store, seq: victim.seq, message: expect.stringContaining(`records a cost of ${victim.cost_nano_usd! + 1} nano-USD`) as unknown }]);
    expect(costFailures[0]!.message).toContain(`cost ${victim.cost_nano_usd} nano-USD`);
    // The control: the untouched run passes the same check.
    expect(checkRunFollowsPlan(runDir, publicKey(), { scenariosDir: SCENARIOS_DIR }).failures).toEqual([]);
  });

  it('forged: a cost where the manifest states no prices, and no cost where it does, are each caught', () => {
    const signed = checkSignedManifest(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.manifest), 'utf8')), publicKey());
    if (!signed.ok) throw new Error('test setup: the manifest does not verify');
    const manifest: InstanceManifest = signed.manifest;
    const unpriced = new Findings();
    checkCallCosts(runDir, { ...manifest, model: { ...manifest.model, prices: null } }, unpriced);
    const calls = callsOf(runDir);
    expect(unpriced.finish().map((f) => f.seq)).toEqual(calls.map((c) => c.seq));
    expect(unpriced.failures[0]!.message).toContain('states no prices (model.prices null)');
    const c = new RunCopies(runDir);
    copies.push(c);
    const forged = c.copy();
    tamper(forged, (db) => editPayloadRechained(db, calls[0]!.seq, (p) => void (p['cost_nano_usd'] = null)));
    const missing = new Findings();
    checkCallCosts(forged, manifest, missing);
    expect(missing.finish()).toEqual([{ file: RUN_FILES.store, seq: calls[0]!.seq, message: expect.stringContaining('records no cost, but') as unknown }]);
  });
});
