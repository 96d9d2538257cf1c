// The folds the runtime keeps between wakes (issue 19 item 1): the Subject projection of the
// observed events (runtime/observed-state.ts) and the retrieval rule's classification
// (runtime/retrieval-window.ts RetrievalIndex) are advanced with the new events only, and must
// equal the full folds over every event at every wake of a real instance — the state hash, the
// context bundle and the rendered prompt byte for byte. The forged cases show the comparison
// would catch a difference, and that the kept folds refuse what they cannot vouch for.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { subjectProjection, subjectStateHash } from '../../projector/subject-projection.js';
import { buildContextBundle, type ContextBundleInput } from '../../runtime/context-bundle.js';
import { ContextBundleError } from '../../runtime/context-bundle-error.js';
import { ObservedState, ObservedStateError } from '../../runtime/observed-state.js';
import { renderPrompt } from '../../runtime/prompt.js';
import { buildRetrievalWindow, RetrievalIndex } from '../../runtime/retrieval-window.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import type { Capabilities } from '../../schema/capabilities.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { RetrievalPolicy } from '../../schema/retrieval-policy.js';
import { eventIs } from '../../schema/typed-event.js';
import { finishedRun, type FinishedRun } from '../support/finished-run.js';

const PERSISTENT: Capabilities = { persistent_state: true, autonomous_replanning: true };
const WINDOW_ONLY: Capabilities = { persistent_state: false, autonomous_replanning: false };

let run: FinishedRun;
let policy: RetrievalPolicy;
/** Each wake's WakeStarted: its seq and visible_to_seq. */
let wakes: { startedSeq: number; visibleToSeq: number; wakeId: string; wakeAt: string }[];

beforeAll(async () => {
  run = await finishedRun('C', 'incremental-folds');
  policy = RetrievalPolicy.parse((JSON.parse(readFileSync(path.join(run.runDir, 'prereg.json'), 'utf8')) as { retrieval_policy: unknown }).retrieval_policy);
  wakes = run.events.flatMap((e) => (eventIs(e, 'ExperimentEvent.WakeStarted') ? [{ startedSeq: e.seq, visibleToSeq: e.payload.visible_to_seq, wakeId: e.payload.wake_id, wakeAt: e.occurred_at }] : []));
}, 120_000);
afterAll(() => run?.cleanup());

const fullFold = (events: readonly EventEnvelope[]): string => subjectStateHash(subjectProjection.applyAll(subjectProjection.initial(), events));

/** The bundle input of a wake as wake-loop.ts builds it (the workspace left empty: it is not folded). */
function bundleInput(visible: readonly EventEnvelope[], wake: (typeof wakes)[number], state: ContextBundleInput['persistentState'], capabilities: Capabilities): ContextBundleInput {
  return { wake: { wake_id: wake.wakeId, wake_at: wake.wakeAt, budget: { model_calls: 1, tokens: 20_000, tool_calls: 5 }, visible_to_seq: wake.visibleToSeq }, events: visible, policy, capabilities, persistentState: state, workspace: [] };
}

describe('the kept folds over a real instance', () => {
  test('at every wake, the observed state (cache events, then the tail to the wake\'s own appends) hashes as applyAll over every event to the same seq', () => {
    expect(wakes.length).toBeGreaterThan(10);
    const observed = new ObservedState();
    let cached = 0;
    for (const [i, wake] of wakes.entries()) {
      // The runtime's steps: catch the cache up to visible_to_seq, fold it, then fold the tail to the head (here: the wake's events up to the next WakeStarted).
      const cache = run.events.slice(0, wake.visibleToSeq);
      observed.advance(cache.slice(cached));
      cached = wake.visibleToSeq;
      expect(subjectStateHash(observed.current)).toBe(fullFold(cache));
      const head = (wakes[i + 1]?.startedSeq ?? run.events.length + 1) - 1;
      observed.advance(run.events.slice(observed.seq, head));
      expect(observed.seq).toBe(head);
      expect(subjectStateHash(observed.current)).toBe(fullFold(run.events.slice(0, head)));
    }
  });

  test('at every wake, the bundle and the prompt from the kept retrieval index are the bytes of the ones from every event (both views)', () => {
    const index = new RetrievalIndex(policy);
    const observed = new ObservedState();
    for (const wake of wakes) {
      const visible = run.events.slice(0, wake.visibleToSeq);
      index.add(visible.slice(index.lastSeq));
      const state = observed.advance(run.events.slice(observed.seq, wake.startedSeq));
      for (const capabilities of [PERSISTENT, WINDOW_ONLY]) {
        const whole = buildContextBundle(bundleInput(visible, wake, subjectProjection.applyAll(subjectProjection.initial(), run.events.slice(0, wake.startedSeq)), capabilities));
        const kept = buildContextBundle({ ...bundleInput(visible, wake, state, capabilities), retrieval: index });
        expect(canonicalJson(kept)).toBe(canonicalJson(whole));
        expect(renderPrompt(kept)).toEqual(renderPrompt(whole));
      }
    }
    expect(index.lastSeq).toBe(wakes.at(-1)!.visibleToSeq);
  });

  test('forged: a changed event changes the full fold\'s hash and the bundle\'s bytes, so the comparisons above are not vacuous', () => {
    const focus = [...run.events].reverse().find((e) => eventIs(e, 'MemoryEvent.FocusUpdated'));
    expect(focus).toBeDefined();
    const forged = run.events.map((e) => (e === focus ? { ...e, payload: { ...e.payload, attention_target: 'forged-target' } } : e));
    expect(fullFold(forged)).not.toBe(fullFold(run.events));
    const observed = new ObservedState();
    observed.advance(forged.slice(0, 100));
    observed.advance(forged.slice(100));
    expect(subjectStateHash(observed.current)).toBe(fullFold(forged));

    const wake = wakes.at(-1)!;
    const visible = run.events.slice(0, wake.visibleToSeq);
    const shownLast = buildRetrievalWindow(visible, policy, wake.visibleToSeq).events.at(-1)!;
    const forgedVisible = visible.map((e) => (e.seq === shownLast.seq ? { ...e, payload: { ...e.payload, forged: true } } : e));
    const forgedIndex = new RetrievalIndex(policy);
    forgedIndex.add(forgedVisible);
    const fromForged = buildContextBundle({ ...bundleInput(forgedVisible, wake, null, WINDOW_ONLY), retrieval: forgedIndex });
    expect(canonicalJson(fromForged)).not.toBe(canonicalJson(buildContextBundle(bundleInput(visible, wake, null, WINDOW_ONLY))));
    expect(renderPrompt(fromForged).user).toContain('"forged":true');
  });
});

describe('what the kept folds refuse', () => {
  test('a gap in the events handed to the observed state is refused by the projector, and every later read says the state is no longer the store\'s', () => {
    const observed = new ObservedState();
    observed.advance(run.events.slice(0, 5));
    expect(() => observed.advance(run.events.slice(6, 10))).toThrow(/expected seq 6/);
    expect(() => observed.current).toThrow(ObservedStateError);
    expect(() => observed.advance(run.events.slice(5, 10))).toThrow(/no longer the store's/);
  });

  test('events already folded are skipped, not folded twice (an overlapping page)', () => {
    const observed = new ObservedState();
    observed.advance(run.events.slice(0, 20));
    observed.advance(run.events.slice(10, 30));
    expect(observed.seq).toBe(30);
    expect(subjectStateHash(observed.current)).toBe(fullFold(run.events.slice(0, 30)));
  });

  test('a retrieval index of another policy, or one that has not classified exactly the visible events, makes the bundle refuse', () => {
    const wake = wakes.at(-1)!;
    const visible = run.events.slice(0, wake.visibleToSeq);
    const other = new RetrievalIndex({ ...policy, window_events: policy.window_events + 1 });
    other.add(visible);
    expect(() => buildContextBundle({ ...bundleInput(visible, wake, null, WINDOW_ONLY), retrieval: other })).toThrow(ContextBundleError);
    const behind = new RetrievalIndex(policy);
    behind.add(visible.slice(0, -1));
    expect(() => buildContextBundle({ ...bundleInput(visible, wake, null, WINDOW_ONLY), retrieval: behind })).toThrow(/classified the events up to seq/);
    const same = new RetrievalIndex(structuredClone(policy));
    same.add(visible);
    expect(canonicalJson(buildContextBundle({ ...bundleInput(visible, wake, null, WINDOW_ONLY), retrieval: same }))).toBe(canonicalJson(buildContextBundle(bundleInput(visible, wake, null, WINDOW_ONLY))));
  });

  test('the index refuses events it has classified already or out of order', () => {
    const index = new RetrievalIndex(policy);
    index.add(run.events.slice(0, 10));
    expect(() => index.add(run.events.slice(9, 12))).toThrow(/increasing seq/);
    expect(index.lastSeq).toBe(10);
  });
});
