// The prompts a plan can produce, before any of it runs (issue 31 item 3a): rendered by the
// runtime's own renderer (runtime/prompt.ts) from context bundles built as the runtime builds
// them (runtime/context-bundle.ts), so the preflight counts what the model will be sent, not a
// guess at it.
//
// - first: the first wake's prompt as the runtime will render it — the store's first events
//   (SubjectInitialized, the world interventions written before wake 1 and their deliveries,
//   WakeStarted), the state rebuilt from that window (group A's view; B's and C's persistent state
//   holds the same at wake 1), the scenario's files as the workspace listing. The smallest prompt
//   of the plan: every later wake shows at least as much history.
// - largest: the same wake with the retrieval window filled to the pre-registered bounds (its
//   event count and its token cap), with the scenario's own prose as the events' text (a file the
//   subject reads comes back as long text). The state and the workspace listing are taken as at
//   the start: the pre-registration bounds neither (a subject that writes files lengthens the
//   listing), and the forecast says so.
// - speed: prompts for timing the server (controller/model-check.ts asks one of the first wake's
//   size and one of the largest sendable size): the largest's text cut to the size asked, after a
//   nonce so that no prefix cache can serve it. They carry nothing a subject will not see: the
//   scenario's own files, which are in its workspace from hour 0.
//
// Pure apart from the nonce (given): events get fixed ids, nothing is written or sent.
import { MessageReceived } from '../schema/events/world-events.js';
import type { EventDraft } from '../writer/protocol.js';
import { buildContextBundle, type WorkspaceEntry } from '../runtime/context-bundle.js';
import { renderPrompt, WAKE_LINES, type RenderedPrompt } from '../runtime/prompt.js';
import type { VisibleEvent } from '../runtime/retrieval-window.js';
import type { ExperimentPlan } from '../design/experiment-plan.js';
import type { PreRegistration } from '../design/prereg.js';
import { wakeScriptOf } from '../design/run-contract.js';
import { framingOf, subjectInitializedPayload, type Scenario } from '../design/scenario.js';
import { deliveredDraft, interventionDrafts, subjectInitializedDraft, wakeStartedDraft } from './controller-events.js';

export interface PromptBounds {
  readonly first: RenderedPrompt;
  readonly largest: RenderedPrompt;
  /** Events the largest window shows, and its estimated tokens (the pre-registered cap's unit). */
  readonly largestWindow: { readonly events: number; readonly tokensEstimated: number };
}

/** The filler events' body: at most this many characters (a long message or a file read back). */
const FILLER_BODY_CHARS = 2_000;
/** A bound on the filler loop: the window's event count is at most this anyway (schema/retrieval-policy.ts). */
const MAX_FILLER_EVENTS = 10_000;
const NO_STATE_KEPT = { persistent_state: false, autonomous_replanning: false } as const;

/** A fixed, well-formed event id for the n-th made-up event (the prompt shows seqs, not ids). */
function eventIdOf(seq: number): string {
  return `00000000-0000-8000-8000-${seq.toString(16).padStart(12, '0')}`;
}

function visible(drafts: readonly EventDraft[], firstSeq: number): VisibleEvent[] {
  return drafts.map((d, i) => ({ seq: firstSeq + i, event_id: eventIdOf(firstSeq + i), event_type: d.event_type, occurred_at: d.occurred_at, payload: d.payload }));
}

/** The events the store holds when wake 1 starts: seq 1 is the writer's StoreOpened (never shown), then the controller's. */
function firstWakeEvents(plan: ExperimentPlan, scenario: Scenario): VisibleEvent[] {
  const script = wakeScriptOf(plan)[0];
  if (script === undefined) return [];
  const drafts: EventDraft[] = [subjectInitializedDraft(plan.schedule.start_at, subjectInitializedPayload(scenario.definition, plan.schedule.start_at))];
  const ids = new Map<string, string[]>();
  for (const intervention of script.inject) {
    const made = interventionDrafts(intervention, intervention.inject_at);
    ids.set(intervention.intervention_id, made.map((_d, i) => eventIdOf(2 + drafts.length + i)));
    drafts.push(...made);
  }
  for (const intervention of script.deliver) drafts.push(deliveredDraft(script.wake, intervention, ids.get(intervention.intervention_id) ?? []));
  drafts.push(wakeStartedDraft(script.wake, 1 + drafts.length));
  return visible(drafts, 2);
}

function workspaceOf(scenario: Scenario): WorkspaceEntry[] {
  return scenario.files.map((f) => ({ path: f.path, bytes: Buffer.byteLength(f.content, 'utf8'), sha256: f.sha256 }));
}

/** The scenario's prose, cut into bodies of at most FILLER_BODY_CHARS (its files in order, over and over). */
function proseBodies(scenario: Scenario): () => string {
  const text = scenario.files.map((f) => f.content).join('\n').replace(/\s+/g, ' ').trim() || scenario.definition.subject_initialized.goal.description;
  let at = 0;
  return () => {
    const body = text.slice(at, at + FILLER_BODY_CHARS);
    at = at + FILLER_BODY_CHARS >= text.length ? 0 : at + FILLER_BODY_CHARS;
    return body.length > 0 ? body : text.slice(0, FILLER_BODY_CHARS);
  };
}

function render(events: readonly VisibleEvent[], plan: ExperimentPlan, prereg: PreRegistration, scenario: Scenario) {
  const wake = plan.schedule.wakes[0]!;
  const bundle = buildContextBundle({ wake: { wake_id: wake.wake_id, wake_at: wake.wake_at, budget: { ...wake.budget }, visible_to_seq: events[events.length - 1]?.seq ?? 1 }, events, policy: prereg.retrieval_policy, capabilities: NO_STATE_KEPT, persistentState: null, workspace: workspaceOf(scenario) });
  return { prompt: renderPrompt(bundle, framingOf(scenario.definition)), window: bundle.window };
}

/** The first and the largest prompt of the plan (see the file comment). */
export function promptBoundsOf(plan: ExperimentPlan, scenario: Scenario, prereg: PreRegistration): PromptBounds {
  const events = firstWakeEvents(plan, scenario);
  const first = render(events, plan, prereg, scenario);
  const nextBody = proseBodies(scenario);
  // Filler goes before WakeStarted (the last event): events the subject could have seen by a late wake.
  const before = events.slice(0, -1);
  const last = events.slice(-1);
  let largest = first;
  for (let n = 0; n < MAX_FILLER_EVENTS; n += 1) {
    before.push({ seq: 0, event_id: '', event_type: MessageReceived.type, occurred_at: plan.schedule.start_at, payload: MessageReceived.payload.parse({ from: 'a colleague', subject: 'notes', body: nextBody(), in_reply_to: null }) });
    const numbered = [...before, ...last].map((e, i) => ({ ...e, seq: 2 + i, event_id: eventIdOf(2 + i) }));
    const next = render(numbered, plan, prereg, scenario);
    // The window drops a whole page once it overflows (retrieval rule 2.0.0): the one before the first drop is the fullest.
    if (next.window.omitted_by_count > 0 || next.window.omitted_by_token_cap > 0) break;
    largest = next;
  }
  return { first: first.prompt, largest: largest.prompt, largestWindow: { events: largest.window.events.length, tokensEstimated: largest.window.tokens_estimated } };
}

/**
 * A prompt of about `userChars` characters of the largest prompt's text for timing the server,
 * with `nonce` first in its system message so that no prefix cache can serve any of it. Without
 * its wake line: it is no wake, and a server's log must not read it as one.
 */
export function speedPrompt(bounds: PromptBounds, userChars: number, nonce: string): RenderedPrompt {
  const withoutWakeLines = bounds.largest.user.split('\n').slice(0, -WAKE_LINES).join('\n');
  return { system: `speed check ${nonce}: this text is only measured, not answered.\n${bounds.largest.system}`, user: withoutWakeLines.slice(0, Math.max(0, userChars)) };
}
