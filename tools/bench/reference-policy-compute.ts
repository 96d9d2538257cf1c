// The reference policy's own compute per wake, for the wake-overhead benchmark
// (wake-overhead-bench.ts): the runtime records latency_ms 0 for the reference policy (it has
// no server to wait for; runtime/model-adapters/reference-policy.ts), so the policy's thinking
// sits inside the measured "overhead" of a reference wake. To report it apart, this re-runs
// the policy, after the instance, on each wake's context bundle rebuilt from the finished store:
//   events     every stored event before the wake's ModelAnswered (the window takes those up to
//              WakeStarted's visible_to_seq)
//   state      the subject projection folded over the same events (group B/C's view)
//   workspace  the scenario's initial listing, moved forward by each ToolSucceeded of a
//              write/modify/move/delete and each FileChangedExternally (path and hash are what
//              the policy reads; bytes are not, and a file created in the run is listed as 0 B)
// and times ReferencePolicy.call on it (the same call the runtime makes; median of a few
// repeats). Each rebuilt answer is compared byte for byte with the stored raw_output: a wake
// whose answer is not reproduced is counted and said, so a drift in the rebuilding is visible
// rather than a silent wrong figure. The re-run is in this process with a warm JIT, so it is a
// lower estimate of what the runtime's (also warm, after the first wakes) call cost.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Capabilities } from '../../schema/capabilities.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { eventIs } from '../../schema/typed-event.js';
import { subjectProjection } from '../../projector/subject-projection.js';
import { buildContextBundle, type WorkspaceEntry } from '../../runtime/context-bundle.js';
import { listWorkspaceCounted } from '../../runtime/tools/workspace-files.js';
import { ReferencePolicy } from '../../runtime/model-adapters/reference-policy.js';
import { renderPrompt } from '../../runtime/prompt.js';
import { openStoreReadOnly } from '../../writer/store-reader.js';
import { median, roundTo } from './bench-util.js';

/** Timed calls per wake; the median is kept (the first call of a wake warms nothing the next needs). */
export const POLICY_REPEATS = 3;
/** A store this benchmark reads is one instance's: far below this; the bound keeps a wrong folder from filling memory. */
const MAX_EVENTS = 200_000;

export interface PolicyCompute {
  /** ModelAnswered events of the reference adapter found in the store. */
  readonly calls: number;
  /** Of those, how many rebuilt answers equal the stored raw_output byte for byte. */
  readonly reproduced: number;
  /** The first wake whose answer was not reproduced (null: all were). */
  readonly first_mismatch_wake: string | null;
  /** Per wake, the median of POLICY_REPEATS timed calls, in ms. */
  readonly per_wake_ms: ReadonlyMap<string, number>;
}

interface RunPrereg {
  readonly scenario: { readonly id: string };
  readonly retrieval_policy: Parameters<typeof buildContextBundle>[0]['policy'];
}

/** Re-runs the reference policy on every reference wake of the finished run in `runDir`. */
export async function measureReferencePolicyCompute(runDir: string, scenariosDir: string, capabilities: Capabilities): Promise<PolicyCompute> {
  const prereg = JSON.parse(readFileSync(path.join(runDir, RUN_FILES.prereg), 'utf8')) as RunPrereg;
  const listing = listWorkspaceCounted(path.join(scenariosDir, prereg.scenario.id, RUN_FILES.workspace));
  const workspace = new Map<string, WorkspaceEntry>(listing.entries.map((e) => [e.path, { ...e }]));

  const db = openStoreReadOnly(path.join(runDir, RUN_FILES.store));
  let envelopes: string[];
  try {
    const count = (db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
    if (count > MAX_EVENTS) throw new Error(`reference policy compute: ${runDir} holds ${count} events, over the ${MAX_EVENTS} this re-run reads`);
    envelopes = (db.prepare('SELECT envelope FROM events ORDER BY seq').all() as { envelope: string }[]).map((r) => r.envelope);
  } finally {
    db.close();
  }

  const policy = new ReferencePolicy();
  const state = structuredClone(subjectProjection.initial());
  const events: EventEnvelope[] = [];
  const intents = new Map<string, { op: string; path: string; to_path: string | null }>();
  let wake: { wake_id: string; wake_at: string; visible_to_seq: number; budget: { model_calls: number; tokens: number; tool_calls: number } } | null = null;
  let calls = 0;
  let reproduced = 0;
  let firstMismatch: string | null = null;
  const perWake = new Map<string, number>();

  for (const text of envelopes) {
    const event = JSON.parse(text) as EventEnvelope;
    if (eventIs(event, 'ModelOutputEvent.ModelAnswered') && event.payload.adapter === policy.name && wake !== null) {
      // The bundle as the runtime built it before this call: everything stored before the answer.
      const bundle = buildContextBundle({ wake, events, policy: prereg.retrieval_policy, capabilities, persistentState: state, workspace: [...workspace.values()] });
      const prompt = renderPrompt(bundle);
      const request = { wake_id: wake.wake_id, call_number: 1, bundle, system: prompt.system, user: prompt.user, max_tokens: 1, answer_schema: {} };
      const samples: number[] = [];
      let outcome: Awaited<ReturnType<ReferencePolicy['call']>> | null = null;
      for (let i = 0; i < POLICY_REPEATS; i += 1) {
        const t = performance.now();
        // The call's work is synchronous (it returns an already resolved Promise): this times the policy, not a tick.
        const pending = policy.call(request);
        samples.push(performance.now() - t);
        outcome = await pending;
      }
      const raw = outcome?.kind === 'answered' ? outcome.raw_output : null;
      calls += 1;
      if (raw === event.payload.raw_output) reproduced += 1;
      else firstMismatch ??= wake.wake_id;
      perWake.set(wake.wake_id, (perWake.get(wake.wake_id) ?? 0) + median(samples));
    }
    subjectProjection.applyInPlace(state, event);
    events.push(event);
    if (eventIs(event, 'ExperimentEvent.WakeStarted')) {
      const p = event.payload;
      wake = { wake_id: p.wake_id, wake_at: event.occurred_at, visible_to_seq: p.visible_to_seq, budget: { ...p.budget } };
    } else if (eventIs(event, 'ActionEvent.ExecutionIntentRecorded')) {
      intents.set(event.event_id, { op: event.payload.op, path: event.payload.path, to_path: event.payload.to_path });
    } else if (eventIs(event, 'ActionEvent.ToolSucceeded')) {
      const intent = intents.get(event.payload.intent_event_id);
      const hash = event.payload.observed_post_hash;
      if (!intent) continue;
      if (intent.op === 'write' || intent.op === 'modify') {
        if (hash !== null) workspace.set(intent.path, { path: intent.path, bytes: workspace.get(intent.path)?.bytes ?? 0, sha256: hash });
      } else if (intent.op === 'delete') workspace.delete(intent.path);
      else if (intent.op === 'move' && intent.to_path !== null) {
        const moved = workspace.get(intent.path);
        workspace.delete(intent.path);
        if (moved) workspace.set(intent.to_path, { ...moved, path: intent.to_path });
      }
    } else if (eventIs(event, 'WorldEvent.FileChangedExternally')) {
      const { path: file, post_hash: hash, change } = event.payload;
      if (change === 'deleted' || hash === null) workspace.delete(file);
      else workspace.set(file, { path: file, bytes: workspace.get(file)?.bytes ?? 0, sha256: hash });
    }
  }
  return { calls, reproduced, first_mismatch_wake: firstMismatch, per_wake_ms: perWake };
}

export function policyComputeSummary(c: PolicyCompute): { readonly median_ms: number; readonly p95_ms: number; readonly max_ms: number } {
  const values = [...c.per_wake_ms.values()].sort((a, b) => a - b);
  if (values.length === 0) return { median_ms: Number.NaN, p95_ms: Number.NaN, max_ms: Number.NaN };
  return { median_ms: roundTo(median(values), 2), p95_ms: roundTo(values[Math.min(values.length, Math.ceil(0.95 * values.length)) - 1]!, 2), max_ms: roundTo(values[values.length - 1]!, 2) };
}
