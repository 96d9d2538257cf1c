// The context bundle of one wake (DESIGN §6 step 3, issue 5 item 2): the retrieval window
// chosen by the pre-registered rule — identical for every group — plus a view of the Subject
// State (B/C: the persistent projection; A: rebuilt from the window alone) and the workspace
// listing. It always states what it left out.
//
// Everything here is a pure function of its arguments (no clock, no randomness, no I/O), so a
// replayed wake builds the byte-identical bundle. buildContextBundle is the only place where
// the persistent_state switch decides what the subject observes; nothing else that builds
// what the model sees looks at the capabilities.
//
// The parts have their own files: the retrieval rule (retrieval-window.ts), the subject views
// (subject-view.ts); this file is the bundle and the one choice between the views.
import { z } from 'zod';
import { canonicalJson } from '../schema/canonical-json.js';
import type { Capabilities } from '../schema/capabilities.js';
import { Budget } from '../schema/events/experiment-events.js';
import { Identifier, Timestamp } from '../schema/event-definition.js';
import { HashString } from '../schema/hash.js';
import type { RetrievalPolicy } from '../schema/retrieval-policy.js';
import type { SubjectState } from '../projector/subject-state.js';
import { keepsStateAcrossWakes } from './capability-policy.js';
import { ContextBundleError } from './context-bundle-error.js';
import { buildRetrievalWindow, RetrievalWindow, retrievalWindowOf, type RetrievalIndex, type VisibleEvent } from './retrieval-window.js';
import { persistentView, SubjectView, windowView } from './subject-view.js';

export const WorkspaceEntry = z.strictObject({ path: z.string(), bytes: z.number().int().min(0), sha256: HashString });
export type WorkspaceEntry = z.infer<typeof WorkspaceEntry>;

export const ContextBundle = z.strictObject({
  wake: z.strictObject({ wake_id: Identifier, wake_at: Timestamp, budget: Budget, visible_to_seq: z.number().int().min(1) }),
  state: SubjectView,
  window: RetrievalWindow,
  workspace: z.array(WorkspaceEntry),
  /** Workspace files the listing's limits left out (runtime/tools/workspace-files.ts): stated, never silent. */
  workspace_omitted: z.strictObject({ too_deep: z.number().int().min(0), too_large: z.number().int().min(0), over_count: z.number().int().min(0) }).default({ too_deep: 0, too_large: 0, over_count: 0 }),
});
export type ContextBundle = z.infer<typeof ContextBundle>;

export interface ContextBundleInput {
  readonly wake: ContextBundle['wake'];
  /** The events visible to this wake, in seq order (more may be given: only seq ≤ wake.visible_to_seq count). */
  readonly events: readonly VisibleEvent[];
  readonly policy: RetrievalPolicy;
  readonly capabilities: Capabilities;
  /**
   * The projection of the store at or after wake.visible_to_seq (the runtime projects to the
   * head, which includes this wake's WakeStarted). Read only when the capabilities keep state;
   * a group without persistent state never looks at it, whatever is passed.
   */
  readonly persistentState: SubjectState | null;
  readonly workspace: readonly WorkspaceEntry[];
  /**
   * `events` already classified by the rule (the runtime keeps one RetrievalIndex next to its
   * event cache, so a wake does not walk the whole history): the window is cut from it. It must
   * be of this policy and have classified exactly the visible events, else the bundle is refused.
   */
  readonly retrieval?: RetrievalIndex;
  readonly workspaceOmitted?: { readonly too_deep: number; readonly too_large: number; readonly over_count: number };
}

/** The bundle of one wake. Same input ⇒ the same bundle, field for field. */
export function buildContextBundle(input: ContextBundleInput): ContextBundle {
  const { wake, events, policy, capabilities, persistentState } = input;
  const window = input.retrieval === undefined ? buildRetrievalWindow(events, policy, wake.visible_to_seq) : windowFromIndex(input.retrieval, events, policy, wake.visible_to_seq);
  let state: SubjectView;
  if (keepsStateAcrossWakes(capabilities)) {
    if (persistentState === null) throw new ContextBundleError('persistent state is switched on but none was given');
    if (persistentState.last_applied_event_seq < wake.visible_to_seq) {
      throw new ContextBundleError(`the persistent state is at seq ${persistentState.last_applied_event_seq}, behind visible_to_seq ${wake.visible_to_seq}: it would not describe what the window shows`);
    }
    state = persistentView(persistentState, events);
  } else {
    state = windowView(window);
  }
  // Code-unit order, as JCS sorts: the listing's order must not depend on the file system.
  const workspace = [...input.workspace].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map((f) => ({ path: f.path, bytes: f.bytes, sha256: f.sha256 }));
  return ContextBundle.parse({ wake: { ...wake, budget: { ...wake.budget } }, state, window, workspace, workspace_omitted: { ...(input.workspaceOmitted ?? { too_deep: 0, too_large: 0, over_count: 0 }) } });
}

/** The window from a kept classification, refused unless it is of this policy and covers exactly the visible events. */
function windowFromIndex(index: RetrievalIndex, events: readonly VisibleEvent[], policy: RetrievalPolicy, visibleToSeq: number): RetrievalWindow {
  if (index.policy !== policy && canonicalJson(index.policy) !== canonicalJson(policy)) throw new ContextBundleError('the retrieval index was built for another retrieval policy');
  const lastVisible = lastVisibleSeq(events, visibleToSeq);
  if (index.lastSeq !== lastVisible) throw new ContextBundleError(`the retrieval index has classified the events up to seq ${index.lastSeq}, the visible events end at seq ${lastVisible}`);
  return retrievalWindowOf(index, policy);
}

/** The seq of the last of the (seq-ordered) events at or below visibleToSeq, 0 when none (binary search: the log can be long). */
function lastVisibleSeq(events: readonly VisibleEvent[], visibleToSeq: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (events[mid]!.seq <= visibleToSeq) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? 0 : events[lo - 1]!.seq;
}
