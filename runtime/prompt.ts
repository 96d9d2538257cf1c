// The context bundle rendered as the two chat messages an LLM reads (issue 5 item 3,
// docs/model-protocol.md). The reference policy reads the structured bundle; the openai
// adapter sends these messages; both come from the same bundle.
//
// Two promises:
// - The system message describes the subject's situation generically and the output
//   protocol exactly. It is the same text for every subject and every wake, and it names
//   nothing of the study's design: not the subject's group, not its switches, not what is
//   scored or what will happen to it. A prompt that differed by group would be a second
//   treatment besides the one the experiment means to test.
// - The user message is a pure function of the bundle: the same bundle gives byte-identical
//   text (no clock, no locale, payloads in canonical JSON), so a replayed wake sends exactly
//   what the recorded wake sent.
//
// The bundle's `state.source` (persistent projection vs rebuilt from the window) is NOT
// rendered: it follows from a capability switch, and telling the model which kind of
// memory it has would be exactly such a second treatment. What the state holds is shown.
import { canonicalJson } from '../schema/canonical-json.js';
import { LongText, ShortText } from '../schema/event-definition.js';
import type { ContextBundle } from './context-bundle.js';
import { MODEL_OUTPUT_LIMITS, MODEL_PROTOCOL, ModelAction } from './model-protocol.js';

export interface RenderedPrompt {
  readonly system: string;
  readonly user: string;
}

/** The one token estimate used wherever a server does not count: ceil(UTF-16 code units / 4). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

// String bounds read from the protocol's own schemas, so the prompt cannot drift from the
// check the answer will face. (Array bounds that model-protocol.ts writes inline are
// stated below as numbers; test/runtime/model-adapters.test.ts checks them against the
// schema by parsing answers at and over each bound.)
function bound(maxLength: number | null, what: string): number {
  // A schema that lost its bound would make the prompt say "null"; fail at load instead.
  if (maxLength === null) throw new Error(`runtime/prompt.ts: ${what} has no maximum length in the protocol schema`);
  return maxLength;
}
const [FILES_READ, FILES_WRITE, FILES_MODIFY] = ModelAction.options;
const PATH_MAX = bound(FILES_READ.shape.path.maxLength, 'path');
const RATIONALE_MAX = bound(FILES_READ.shape.rationale.maxLength, 'rationale');
const CONTENT_MAX = bound(FILES_WRITE.shape.content.maxLength, 'content');
const FIND_MAX = bound(FILES_MODIFY.shape.find.maxLength, 'find');
const SHORT_MAX = bound(ShortText.maxLength, 'ShortText');
const LONG_MAX = bound(LongText.maxLength, 'LongText');
const L = MODEL_OUTPUT_LIMITS;

const SHORT = `string (1-${SHORT_MAX} chars)`;
const LONG = `string (1-${LONG_MAX} chars)`;

const SYSTEM_PROMPT = [
  'You are a digital subject working in a research workspace over several simulated days.',
  'You are woken at scheduled moments. At each wake you are shown the time and the budget of the wake, a view of your state (goal, task board, focus, how many journal entries you have, actions denied before), a window of recent events together with a statement of how many events it leaves out, and the files in your workspace. Nothing else is available to you.',
  'Pursue your goal. Keep your task board and journal up to date. Notice when something you were waiting for has happened, when an event makes your plan wrong, and when files changed without you.',
  '',
  `ANSWER FORMAT: exactly one JSON object in protocol ${MODEL_PROTOCOL}, and nothing else: no text before or after it (one \`\`\`json fence around the object is tolerated). An answer that is not such an object, or breaks any rule below, is recorded as failed and nothing of it is used; it is never repaired and you get no second attempt.`,
  'Every field is required; use null where null is allowed and [] for an empty list; no other keys.',
  '{',
  `  "protocol": "${MODEL_PROTOCOL}",`,
  `  "focus": {"attention_target": ${SHORT} or null, "waiting_condition": ${SHORT} or null},`,
  `  "actions": [at most ${L.maxActions} ACTION objects],`,
  `  "claims": [at most ${L.maxClaims} CLAIM objects],`,
  `  "plan_revision": null or {"reason": ${LONG}, "goal_id": ID, "goal_description": ${LONG}, "deadline_at": TIMESTAMP or null, "steps": [1-${L.maxPlanSteps} objects {"task_id": ID, "title": ${SHORT}}]},`,
  `  "checkpoint": {"current_goal_id": ID or null, "goal_status": ${SHORT} or null, "attention_target": ${SHORT} or null, "waiting_condition": ${SHORT} or null, "next_action": ${SHORT} or null, "evidence_event_ids": [at most 64 EVENT_ID]}`,
  '}',
  'ACTION, one of (each is a proposal: a permission gate checks it and may deny it; a denied action is not carried out, and proposing it again is recorded):',
  `  {"tool": "files", "op": "read", "path": PATH, "rationale": RATIONALE}`,
  `  {"tool": "files", "op": "write", "path": PATH, "content": string (at most ${CONTENT_MAX} chars), "rationale": RATIONALE}`,
  `  {"tool": "files", "op": "modify", "path": PATH, "find": string (1-${FIND_MAX} chars, must occur in the file; its first occurrence is replaced), "replace": string (at most ${CONTENT_MAX} chars), "rationale": RATIONALE}`,
  `  {"tool": "files", "op": "move", "path": PATH, "to_path": PATH, "rationale": RATIONALE}`,
  `  {"tool": "task_board", "op": "add" | "update" | "complete" | "remove", "task_id": ID, "title": ${SHORT} or null, "status": "todo" | "doing" | "blocked" | "done" | null, "priority": integer 0-9 or null, "depends_on": [at most 32 ID], "rationale": RATIONALE}`,
  `  {"tool": "journal", "op": "write", "text": ${LONG}, "rationale": RATIONALE}`,
  `CLAIM: {"claim_type": "FACT" | "PLAN" | "INFERENCE", "statement": ${LONG}, "evidence_event_ids": [at most ${L.maxEvidencePerClaim} EVENT_ID], "confidence": number 0-1 or null, "alternatives": [at most 16 ${SHORT}]}`,
  '  FACT: something the events establish. It must cite, in evidence_event_ids, events shown in your window that establish it: events from the world, successful tool results or reconciled tool outcomes (never model answers, plans or proposals). A FACT without such evidence is refused.',
  '  PLAN: something you intend to do.',
  '  INFERENCE: something you conclude without direct evidence. confidence is required (not null); list other explanations in alternatives.',
  'CHECKPOINT: where you stand at the end of this wake. current_goal_id: the id of the goal you pursue. goal_status: "active" while you work towards it, "submitted" once its result is submitted. attention_target: the task_id you are working on, or null when every task is done. waiting_condition: what you wait for, naming its thread id (e.g. "reply in thread <thread id>"), or null. next_action: the task_id of your next step and what you will do, "wait for …" naming the thread when waiting is your next step, or "none" when every task is done.',
  `PATH: a path relative to the workspace (1-${PATH_MAX} chars). RATIONALE: why you propose it, string (1-${RATIONALE_MAX} chars). ID: 1-128 chars of A-Z a-z 0-9 . _ : - starting with a letter or digit. EVENT_ID: the event_id (a UUID) of an event shown in your window. TIMESTAMP: ISO-8601 UTC, e.g. 2026-07-20T09:00:00.000Z.`,
  'Ids of proposals, claims and journal entries are assigned by the runtime; do not invent them.',
].join('\n');

/** Free text on one line with its boundaries visible (JSON string syntax). */
function quoted(text: string): string {
  return JSON.stringify(text);
}

function renderUser(bundle: ContextBundle): string {
  const { wake, state, window, workspace } = bundle;
  const lines: string[] = [];
  lines.push(`WAKE ${wake.wake_id} at ${wake.wake_at}; events up to seq ${wake.visible_to_seq} are visible.`);
  lines.push(`Budget of this wake: ${wake.budget.model_calls} model calls, ${wake.budget.tokens} tokens, ${wake.budget.tool_calls} tool calls.`);
  lines.push('');

  lines.push('STATE');
  lines.push(state.goal ? `goal: ${state.goal.goal_id} ${quoted(state.goal.description)}, deadline ${state.goal.deadline_at ?? 'none'}` : 'goal: none');
  lines.push(`tasks (${state.tasks.length}):`);
  for (const t of state.tasks) {
    lines.push(`- ${t.task_id} · ${t.status} · priority ${t.priority} · ${quoted(t.title)} · depends on: ${t.depends_on.length === 0 ? 'none' : t.depends_on.join(', ')}`);
  }
  lines.push(`attention_target: ${state.attention_target === null ? 'none' : quoted(state.attention_target)}`);
  lines.push(`waiting_condition: ${state.waiting_condition === null ? 'none' : quoted(state.waiting_condition)}`);
  lines.push(`journal entries: ${state.journal_entries}`);
  lines.push(`actions denied before (${state.denied_actions.length}):`);
  for (const a of state.denied_actions) lines.push(`- ${a.tool}.${a.op} · repeats ${a.repeats}`);
  lines.push('');

  lines.push('EVENTS (seq · event_id · type · occurred_at · payload)');
  // The statement comes first: what the window leaves out is part of what the subject is told.
  lines.push(window.statement);
  for (const e of window.events) {
    lines.push(`${e.seq} · ${e.event_id} · ${e.event_type} · ${e.occurred_at} · ${canonicalJson(e.payload)}`);
  }
  lines.push('');

  const o = bundle.workspace_omitted;
  const left = o.too_deep + o.too_large + o.over_count;
  lines.push(`WORKSPACE (${workspace.length} files: path · bytes · sha256)${left > 0 ? `; not listed: ${o.over_count} over the listing limit, ${o.too_large} too large, ${o.too_deep} folder(s) nested too deep` : ''}`);
  for (const f of workspace) lines.push(`${quoted(f.path)} · ${f.bytes} · ${f.sha256}`);
  return lines.join('\n');
}

/** The system and user messages for one model call; same bundle ⇒ byte-identical messages. */
export function renderPrompt(bundle: ContextBundle): RenderedPrompt {
  return { system: SYSTEM_PROMPT, user: renderUser(bundle) };
}
