// The context bundle rendered as the two chat messages an LLM reads (issue 5 item 3,
// docs/model-protocol.md). The reference policy reads the structured bundle; the openai
// adapter sends these messages; both come from the same bundle.
//
// Two promises:
// - The system message describes the subject's situation generically and the output
//   protocol (ds-model-output/2) exactly, with what the model needs and nothing more (issue 15
//   item 2: every token of it is paid at every wake, and a small model's context is small).
//   It is the same text for every subject and every wake, and it names
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
import { z } from 'zod';
import { InternalError } from '../foundation/typed-error.js';
import { canonicalJson } from '../schema/canonical-json.js';
import type { PayloadOf } from '../schema/event-catalog.js';
import { PermissionDecided } from '../schema/events/action-events.js';
import { SubjectInitialized } from '../schema/events/system-events.js';
import type { ContextBundle } from './context-bundle.js';
import { windowPayload } from './retrieval-window.js';
import { ModelAnswerV2 } from './model-protocol.js';
import { DEFAULT_FRAMING } from './prompt-framing.js';

export interface RenderedPrompt {
  readonly system: string;
  readonly user: string;
}

/** The one token estimate used wherever a server does not count: ceil(UTF-16 code units / 4). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

// Every bound and every word the answer is checked against is read from the protocol's own
// zod schema (runtime/model-protocol.ts ModelAnswerV2), so the prompt cannot drift from the
// check the answer will face: string lengths from the schemas, list lengths and the id
// pattern from the JSON Schema zod makes of them, enums and literals from their options. A
// schema that loses a bound, or fields the prompt describes with one name (BRIEF, TEXT, …)
// whose bounds come apart, fail here at load, not in a model's answer.
/** A forged or future answer schema the prompt cannot describe (a lost bound, a shared name whose bounds came apart). */
export class PromptSchemaError extends InternalError {
  override readonly name = 'PromptSchemaError';
}

type StringSchema = z.ZodString | z.ZodNullable<z.ZodString>;
function stringBounds(schema: StringSchema, what: string): { min: number; max: number } {
  const s = schema instanceof z.ZodNullable ? schema.unwrap() : schema;
  if (s.maxLength === null) throw new PromptSchemaError(`runtime/prompt.ts: ${what} has no maximum length in the protocol schema`);
  return { min: s.minLength ?? 0, max: s.maxLength };
}
/** The bounds shared by every field the prompt describes with one name. */
function sameBounds(what: string, fields: Record<string, StringSchema>): { min: number; max: number } {
  const all = Object.entries(fields).map(([name, schema]) => ({ name, ...stringBounds(schema, name) }));
  const first = all[0]!;
  const odd = all.filter((b) => b.min !== first.min || b.max !== first.max);
  if (odd.length > 0) throw new PromptSchemaError(`runtime/prompt.ts: the fields it calls ${what} no longer share one bound (${all.map((b) => `${b.name} ${b.min}-${b.max}`).join(', ')}): describe them apart`);
  return { min: first.min, max: first.max };
}
function itemBounds(schema: z.ZodType, what: string): { min: number; max: number } {
  const json = z.toJSONSchema(schema) as { maxItems?: number; minItems?: number };
  if (json.maxItems === undefined) throw new PromptSchemaError(`runtime/prompt.ts: ${what} has no maximum number of items in the protocol schema`);
  return { min: json.minItems ?? 0, max: json.maxItems };
}
function patternOf(schema: z.ZodType, what: string): string {
  const json = z.toJSONSchema(schema) as { pattern?: string };
  if (json.pattern === undefined) throw new PromptSchemaError(`runtime/prompt.ts: ${what} has no pattern in the protocol schema`);
  return json.pattern;
}
function numberBounds(schema: z.ZodNumber, what: string): { min: number; max: number } {
  if (schema.minValue === null || schema.maxValue === null) throw new PromptSchemaError(`runtime/prompt.ts: ${what} has no range in the protocol schema`);
  return { min: schema.minValue, max: schema.maxValue };
}
const range = (b: { min: number; max: number }): string => `${b.min}-${b.max}`;
const oneOf = (options: readonly string[]): string => options.map((o) => JSON.stringify(o)).join('|');

/**
 * The system message for answers in `answer` (ModelAnswerV2, the one new runs answer in):
 * every bound and word read from it. Exported so a test can hand it a forged schema and see
 * the drift caught; the runtime uses the one text built at load.
 */
export function systemPrompt(answer: typeof ModelAnswerV2 = ModelAnswerV2, framing: string = DEFAULT_FRAMING): string {
  const ANSWER = answer.shape;
  const ACTIONS_ALLOWED = ANSWER.actions.element.options;
  const [READ, WRITE, MODIFY, MOVE, BOARD, JOURNAL] = ACTIONS_ALLOWED;
  // One line below per kind of action: an action the answer allows and the prompt does not
  // describe (a tool added to the tool table, schema/tools.ts, and to the protocol) fails here,
  // not in a model's answer.
  const DESCRIBED = 6;
  if (ACTIONS_ALLOWED.length !== DESCRIBED) {
    const tools = ACTIONS_ALLOWED.map((a) => `${a.shape.tool.value}.${'value' in a.shape.op ? a.shape.op.value : a.shape.op.options.join('|')}`);
    throw new PromptSchemaError(`runtime/prompt.ts: the answer allows ${ACTIONS_ALLOWED.length} kinds of action (${tools.join(', ')}); the prompt describes ${DESCRIBED}: describe each`);
  }
  const [FACT, PLAN, INFERENCE] = ANSWER.claims.element.options;
  const REVISION = ANSWER.plan_revision.unwrap().shape;
  const STEP = REVISION.steps.element.shape;
  const FOCUS = ANSWER.focus.shape;
  const CHECKPOINT = ANSWER.checkpoint.shape;

  const PROTOCOL = ANSWER.protocol.value;
  const BRIEF = sameBounds('BRIEF', {
    'focus.attention_target': FOCUS.attention_target,
    'focus.waiting_condition': FOCUS.waiting_condition,
    'steps.title': STEP.title,
    'task_board.title': BOARD.shape.title,
    'INFERENCE.alternatives': INFERENCE.shape.alternatives.element,
    'checkpoint.attention_target': CHECKPOINT.attention_target,
    'checkpoint.waiting_condition': CHECKPOINT.waiting_condition,
    'checkpoint.next_action': CHECKPOINT.next_action,
  });
  const TEXT = sameBounds('TEXT', {
    'plan_revision.reason': REVISION.reason,
    'plan_revision.goal_description': REVISION.goal_description,
    'journal.text': JOURNAL.shape.text,
    'FACT.statement': FACT.shape.statement,
    'PLAN.statement': PLAN.shape.statement,
    'INFERENCE.statement': INFERENCE.shape.statement,
  });
  const WHY = sameBounds('WHY', { read: READ.shape.rationale, write: WRITE.shape.rationale, modify: MODIFY.shape.rationale, move: MOVE.shape.rationale, task_board: BOARD.shape.rationale, journal: JOURNAL.shape.rationale });
  const PATH = sameBounds('PATH', { read: READ.shape.path, write: WRITE.shape.path, modify: MODIFY.shape.path, move: MOVE.shape.path, to_path: MOVE.shape.to_path });
  const CONTENT = stringBounds(WRITE.shape.content, 'write.content');
  const FIND = stringBounds(MODIFY.shape.find, 'modify.find');
  const REPLACE = stringBounds(MODIFY.shape.replace, 'modify.replace');
  const ID = patternOf(REVISION.goal_id, 'plan_revision.goal_id');
  for (const [what, schema] of [['current_goal_id', CHECKPOINT.current_goal_id.unwrap()], ['steps.task_id', STEP.task_id], ['task_board.task_id', BOARD.shape.task_id], ['depends_on', BOARD.shape.depends_on.element]] as const) {
    if (patternOf(schema, what) !== ID) throw new PromptSchemaError(`runtime/prompt.ts: ${what} no longer has the pattern it calls ID`);
  }
  const ACTIONS = itemBounds(ANSWER.actions, 'actions');
  const CLAIMS = itemBounds(ANSWER.claims, 'claims');
  const STEPS = itemBounds(REVISION.steps, 'plan_revision.steps');
  const DEPENDS_ON = itemBounds(BOARD.shape.depends_on, 'task_board.depends_on');
  const FACT_EVIDENCE = itemBounds(FACT.shape.evidence_seqs, 'FACT.evidence_seqs');
  const ALTERNATIVES = itemBounds(INFERENCE.shape.alternatives, 'INFERENCE.alternatives');
  const CHECKPOINT_EVIDENCE = itemBounds(CHECKPOINT.evidence_seqs, 'checkpoint.evidence_seqs');
  const PRIORITY = numberBounds(BOARD.shape.priority.unwrap(), 'task_board.priority');
  const CONFIDENCE = numberBounds(INFERENCE.shape.confidence, 'INFERENCE.confidence');
  const literal = (schema: { value: string }): string => JSON.stringify(schema.value);
  const files = (action: typeof READ | typeof WRITE | typeof MODIFY | typeof MOVE): string => `"tool": ${literal(action.shape.tool)}, "op": ${literal(action.shape.op)}`;
  const claim = (c: typeof FACT | typeof PLAN | typeof INFERENCE): string => `"claim_type": ${literal(c.shape.claim_type)}`;
  // The checkpoint's sentence below explains these two words; another vocabulary needs another sentence.
  const STATUS = CHECKPOINT.goal_status.unwrap().options;
  if (STATUS.length !== 2 || !STATUS.includes('active') || !STATUS.includes('submitted')) throw new PromptSchemaError(`runtime/prompt.ts: checkpoint.goal_status is ${oneOf(STATUS)}; the prompt explains "active" and "submitted" only`);

  // What the model needs and nothing more (issue 15 item 2): its situation in two sentences, the
  // answer's exact shape, what each kind of claim needs, what the checkpoint fields mean, and the
  // atoms. How answers are parsed, repaired or recorded beyond "a broken answer is not used" is
  // not its business. The words describe the subject's world, never the study around it.
  return [
    `You are a digital subject working in ${framing} over several simulated days, woken at scheduled moments. Each wake shows you your goal, tasks, files, recent events (oldest first), focus, and last the wake's time and budget; nothing else.`,
    'Pursue your goal. Keep your task board and journal up to date. Notice when something you waited for has happened, when an event makes your plan wrong, and when files changed without you.',
    '',
    `ANSWER: one JSON object in protocol ${PROTOCOL}, nothing else; an answer breaking a rule below fails and is not used. Every key is required (null where allowed, [] if empty); no other keys.`,
    `{"protocol": "${PROTOCOL}",`,
    `"focus": {"attention_target": BRIEF|null, "waiting_condition": BRIEF|null},`,
    `"actions": [${range(ACTIONS)} ACTION],`,
    `"claims": [${range(CLAIMS)} CLAIM],`,
    `"plan_revision": null|{"reason": TEXT, "goal_id": ID, "goal_description": TEXT, "deadline_at": TIME|null, "steps": [${range(STEPS)} {"task_id": ID, "title": BRIEF}]},`,
    `"checkpoint": {"current_goal_id": ID|null, "goal_status": ${oneOf(CHECKPOINT.goal_status.unwrap().options)}|null, "attention_target": BRIEF|null, "waiting_condition": BRIEF|null, "next_action": BRIEF|null, "evidence_seqs": [${range(CHECKPOINT_EVIDENCE)} SEQ]}}`,
    'ACTION: a proposal; a permission gate checks it and may deny it (then it is not carried out). One of:',
    `{${files(READ)}, "path": PATH, "rationale": WHY}`,
    `{${files(WRITE)}, "path": PATH, "content": string of ${range(CONTENT)} chars, "rationale": WHY}`,
    `{${files(MODIFY)}, "path": PATH, "find": string of ${range(FIND)} chars that occurs in the file (its first occurrence is replaced), "replace": string of ${range(REPLACE)} chars, "rationale": WHY}`,
    `{${files(MOVE)}, "path": PATH, "to_path": PATH, "rationale": WHY}`,
    `{"tool": ${literal(BOARD.shape.tool)}, "op": ${oneOf(BOARD.shape.op.options)}, "task_id": ID, "title": BRIEF|null, "status": ${oneOf(BOARD.shape.status.unwrap().options)}|null, "priority": integer ${range(PRIORITY)}|null, "depends_on": [${range(DEPENDS_ON)} ID], "rationale": WHY}`,
    `{"tool": ${literal(JOURNAL.shape.tool)}, "op": ${literal(JOURNAL.shape.op)}, "text": TEXT, "rationale": WHY}`,
    'CLAIM, one of:',
    `{${claim(FACT)}, "statement": TEXT, "evidence_seqs": [${range(FACT_EVIDENCE)} SEQ]}: something the cited events establish. Cite events from the world or successful or reconciled tool results, never answers, plans or proposals; a FACT without such evidence is refused.`,
    `{${claim(PLAN)}, "statement": TEXT}: something you intend to do.`,
    `{${claim(INFERENCE)}, "statement": TEXT, "confidence": number ${range(CONFIDENCE)}, "alternatives": [${range(ALTERNATIVES)} BRIEF]}: a conclusion without direct evidence; alternatives are other explanations.`,
    'CHECKPOINT: where you stand at the end of this wake. current_goal_id: your goal. goal_status: "active" while you work on it, "submitted" once its result is submitted. attention_target: the task_id you work on, null when all tasks are done. waiting_condition: what you wait for, naming its thread id, or null. next_action: the task_id of your next step and what you will do, "wait for …" naming the thread, or "none" when all tasks are done. evidence_seqs: the events it rests on.',
    `BRIEF: string of ${range(BRIEF)} chars. TEXT: string of ${range(TEXT)} chars. WHY: why you propose it, string of ${range(WHY)} chars. PATH: a path relative to the workspace, ${range(PATH)} chars. ID: string matching ${ID}. SEQ: the seq of an event shown at this wake. TIME: ISO-8601 UTC, e.g. 2026-07-20T09:00:00.000Z.`,
  ].join('\n');
}

/** The system message of the default framing, built at load (a broken schema fails here); another framing's is built once when first asked. */
const SYSTEM_PROMPTS = new Map<string, string>([[DEFAULT_FRAMING, systemPrompt()]]);

function systemPromptOf(framing: string): string {
  let text = SYSTEM_PROMPTS.get(framing);
  if (text === undefined) {
    text = systemPrompt(ModelAnswerV2, framing);
    // A process shows one scenario's framing; a bound all the same, so a caller that varies it cannot grow the map.
    if (SYSTEM_PROMPTS.size < 8) SYSTEM_PROMPTS.set(framing, text);
  }
  return text;
}

/** Free text on one line with its boundaries visible (JSON string syntax). */
function quoted(text: string): string {
  return JSON.stringify(text);
}

/**
 * The user message's layout (issue 34 item 2), recorded in the manifest (design/manifest.ts
 * `prompt`). A server that caches prompt prefixes (llama.cpp's KV cache, OpenAI, vLLM's prefix
 * caching, the local adapter's kv-prefix.ts) evaluates only what follows the first byte that
 * changed since the last call, so the parts are ordered by how they change. Appending is cheap
 * (the events grow at their end every wake; the window drops a whole page at once,
 * runtime/retrieval-window.ts); a part changed in place costs everything after it. In order:
 *   1. the goal and task board (changed only by the subject's board or plan, or a goal change);
 *   2. the workspace listing (changed only by a file write or an outside change);
 *   3. the events oldest first, pinned ones ahead, a time line opening each run of events that
 *      occurred at one moment; then what the window left out;
 *   4. what changes at most wakes: focus, journal size, actions denied before;
 *   5. last the wake line and its budget.
 * Each fact is shown once: the starting conditions leave their goal and tasks to part 1, a
 * permission decision its passed rules (payloadText), and a task without dependencies says
 * nothing of them.
 * ds-prompt/1 (before issue 34) opened with the wake line and listed full sha256s; ds-prompt/2
 * put the whole state view after the events, so every wake re-sent the goal and task board, and
 * gave each event its own timestamp.
 */
export const PROMPT_LAYOUT = 'ds-prompt/3';

/** The user message's last lines are the wake's own (its line and its budget): what is not a wake (a speed check) leaves them out. */
export const WAKE_LINES = 2;

/** Hex digits of a file's sha256 the listing shows: enough to tell a change (32 bits: a changed file keeps its short hash once in 4 billion), an eighth of the tokens of the full hash. */
export const LISTED_HASH_HEX_CHARS = 8;

/**
 * The starting conditions' fields the first part shows (the goal and the task board): its event
 * leaves them out and says where they are, so the first wake does not pay for them twice. Every
 * group's view shows a goal and tasks (the persistent projection, or the view rebuilt from the
 * window, which includes this pinned event), so no group loses sight of them. Its format's version
 * is left out too: it is not a fact of the subject's world.
 */
const SHOWN_ABOVE = ['goal', 'tasks'] as const satisfies readonly (keyof PayloadOf<typeof SubjectInitialized.type>)[];
const NOT_SHOWN = ['identity_schema_version'] as const satisfies readonly (keyof PayloadOf<typeof SubjectInitialized.type>)[];

/** The opening of a run of events that occurred at one moment. */
function timeLine(occurredAt: string): string {
  return `at ${occurredAt}:`;
}

/**
 * An event's payload as the prompt shows it (ds-prompt/3): whole, in canonical JSON, except where
 * the record spends tokens on nothing the subject can use, and then the line says what it left out.
 * A permission decision shows the rules its proposal failed; the ones it passed only restate the
 * proposal (a tool allowed, a path inside, the budget left), and are counted. Read against the
 * catalogue (windowPayload): a payload that does not parse is shown whole.
 */
function payloadText(e: ContextBundle['window']['events'][number]): string {
  const start = windowPayload(e, SubjectInitialized.type);
  if (start !== null) {
    const left: readonly string[] = [...SHOWN_ABOVE, ...NOT_SHOWN];
    const rest = Object.fromEntries(Object.entries(start).filter(([key]) => !left.includes(key)));
    return `${canonicalJson(rest)} (its ${SHOWN_ABOVE.join(' and ')}: under GOAL AND TASKS)`;
  }
  const decision = windowPayload(e, PermissionDecided.type);
  if (decision !== null) {
    const failed = decision.rules.filter((r) => !r.passed);
    const passed = decision.rules.length - failed.length;
    return `${canonicalJson({ ...decision, rules: failed })}${passed === 0 ? '' : ` (${passed} passed rule${passed === 1 ? '' : 's'} not shown)`}`;
  }
  return canonicalJson(e.payload);
}

function renderEvents(window: ContextBundle['window']): string[] {
  // No event_id column: an answer cites events by seq (ds-model-output/2), and a UUID per event
  // costs a model some twenty tokens for nothing it can use. No timestamp per event either: the
  // time line above a run of events says when they occurred (distractors and messages come in
  // bursts at one moment), and appending an event never changes a line before it.
  const lines = ['EVENTS (seq · type · payload), oldest first, under the time they occurred'];
  let at: string | null = null;
  for (const e of window.events) {
    if (e.occurred_at !== at) lines.push(timeLine(e.occurred_at));
    at = e.occurred_at;
    lines.push(`${e.seq} · ${e.event_type} · ${payloadText(e)}`);
  }
  // What the window leaves out is part of what the subject is told; it changes every wake, so it follows the events.
  lines.push(`(${window.statement})`);
  return lines;
}

/** What the subject changes only by acting on its board or plan: it opens the message, ahead of the events that grow every wake. */
function renderPlan(state: ContextBundle['state']): string[] {
  const lines = ['GOAL AND TASKS'];
  lines.push(state.goal ? `goal: ${state.goal.goal_id} ${quoted(state.goal.description)}, deadline ${state.goal.deadline_at ?? 'none'}` : 'goal: none');
  lines.push(`tasks (${state.tasks.length}):`);
  for (const t of state.tasks) {
    lines.push(`- ${t.task_id} · ${t.status} · priority ${t.priority} · ${quoted(t.title)}${t.depends_on.length === 0 ? '' : ` · depends on: ${t.depends_on.join(', ')}`}`);
  }
  return lines;
}

/** What changes at most wakes (focus, journal size, denials): after the events, with the wake line. */
function renderFocus(state: ContextBundle['state']): string[] {
  const lines = ['NOW'];
  lines.push(`attention_target: ${state.attention_target === null ? 'none' : quoted(state.attention_target)}`);
  lines.push(`waiting_condition: ${state.waiting_condition === null ? 'none' : quoted(state.waiting_condition)}`);
  lines.push(`journal entries: ${state.journal_entries}`);
  lines.push(`actions denied before (${state.denied_actions.length}):`);
  // What was denied and why: without the target a subject cannot tell which action not to propose again.
  for (const a of state.denied_actions) lines.push(`- ${a.tool}.${a.op}${a.target === null ? '' : ` ${quoted(a.target)}`}${a.failed_rules.length === 0 ? '' : ` · failed: ${a.failed_rules.join(', ')}`} · repeats ${a.repeats}`);
  return lines;
}

function renderWorkspace(bundle: ContextBundle): string[] {
  const o = bundle.workspace_omitted;
  const left = o.too_deep + o.too_large + o.over_count;
  const lines = [`WORKSPACE (${bundle.workspace.length} files: path · bytes · sha256 first ${LISTED_HASH_HEX_CHARS} hex)${left > 0 ? `; not listed: ${o.over_count} over the listing limit, ${o.too_large} too large, ${o.too_deep} folder(s) nested too deep` : ''}`];
  for (const f of bundle.workspace) lines.push(`${quoted(f.path)} · ${f.bytes} · ${f.sha256.replace(/^sha256:/, '').slice(0, LISTED_HASH_HEX_CHARS)}`);
  return lines;
}

function wakeLines(wake: ContextBundle['wake']): string[] {
  const lines = [
    `WAKE ${wake.wake_id} at ${wake.wake_at}; events up to seq ${wake.visible_to_seq} are visible.`,
    `Budget of this wake: ${wake.budget.model_calls} model calls, ${wake.budget.tokens} tokens, ${wake.budget.tool_calls} tool calls.`,
  ];
  if (lines.length !== WAKE_LINES) throw new Error('bug: WAKE_LINES is not the wake lines\' count');
  return lines;
}

function renderUser(bundle: ContextBundle): string {
  return [
    ...renderPlan(bundle.state),
    '',
    ...renderWorkspace(bundle),
    '',
    ...renderEvents(bundle.window),
    '',
    ...renderFocus(bundle.state),
    '',
    ...wakeLines(bundle.wake),
  ].join('\n');
}

/**
 * One event line of a rendered user message, read back, with the time line above it. No event
 * id: the prompt shows none (ds-model-output/2 cites events by seq). The payload is what the line
 * shows (the starting conditions without their goal and tasks).
 */
export interface PromptEvent {
  readonly seq: number;
  readonly event_type: string;
  readonly occurred_at: string;
  readonly payload: Record<string, unknown>;
}

/** A user message that is not one `renderUser` wrote (an event line with no time line above it). */
export class PromptReadError extends InternalError {
  override readonly name = 'PromptReadError';
}

/** The events `renderUser` shows, read back from its text: what a scripted model may cite, and nothing more. */
export function promptEvents(user: string): PromptEvent[] {
  const events: PromptEvent[] = [];
  let at: string | null = null;
  for (const line of user.split('\n')) {
    const time = /^at (\S+):$/.exec(line);
    if (time) at = time[1]!;
    const m = /^(\d+) · (\S+) · (\{.*\})(?: \(.*\))?$/.exec(line);
    if (!m) continue;
    if (at === null) throw new PromptReadError(`runtime/prompt.ts: event line ${m[1]} has no time line above it: not a message renderUser wrote`);
    events.push({ seq: Number(m[1]), event_type: m[2]!, occurred_at: at, payload: JSON.parse(m[3]!) as Record<string, unknown> });
  }
  return events;
}

/** The system and user messages for one model call; same bundle and framing ⇒ byte-identical messages. `framing`: the scenario's (runtime/prompt-framing.ts). */
export function renderPrompt(bundle: ContextBundle, framing: string = DEFAULT_FRAMING): RenderedPrompt {
  return { system: systemPromptOf(framing), user: renderUser(bundle) };
}
