// The model protocol, the prompt and the replay adapter (issue 5 item 3,
// docs/model-protocol.md). The openai adapter's cases are in openai-adapter.test.ts and
// openai-preflight.test.ts; here it only proves, against a REAL HTTP server on loopback
// (node:http, port 0), that the network watch sees a real connection. The replay adapter is
// checked to serve recordings in order, to refuse to invent output, and to open no socket at
// all.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHook } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { z } from 'zod';
import { ContextBundle } from '../../runtime/context-bundle.js';
import { NO_CALL_FACTS, type ModelRequest } from '../../runtime/model-adapter.js';
import { OpenAiAdapter } from '../../runtime/model-adapters/openai-adapter.js';
import type { OpenAiAdapterOptions } from '../../runtime/model-adapters/openai-options.js';
import { recordedCallsFromEvents, ReplayAdapter, ReplayRecordingError } from '../../runtime/model-adapters/replay-adapter.js';
import { MODEL_OUTPUT_LIMITS, MODEL_OUTPUT_V2_LIMITS, MODEL_PROTOCOL_V1, MODEL_PROTOCOL_V2, ModelAnswerV2, ModelOutput, ModelProtocol, parseModelOutput, type ShownEvents } from '../../runtime/model-protocol.js';
import { answerJsonSchema } from '../../runtime/answer-schema.js';
import { estimateTokens, LISTED_HASH_HEX_CHARS, PROMPT_LAYOUT, promptEvents, PromptReadError, PromptSchemaError, renderPrompt, systemPrompt } from '../../runtime/prompt.js';
import type { RecordedModelCall } from '../../runtime/protocol.js';
import { recordedProtocolOf } from '../../runtime/recorded-model-calls.js';
import { ModelAnswered, ModelCallFailed } from '../../schema/events/model-output-events.js';
import type { EventDraft } from '../../writer/protocol.js';
import { d, draft, SubjectStream } from '../support/subject-events.js';

const API_KEY = 'sk-test-SECRET-7f3a9c1e5b2d4f60';
const EV1 = '0b6f3c1e-2a4d-4c8e-9f10-5a7b3c2d1e0f';
const EV2 = '7d1e2f30-4b5c-4d6e-8f70-112233445566';
const HASH = `sha256:${'ab'.repeat(32)}`;

// ---------------------------------------------------------------------------------------
// fixtures

const BUNDLE: ContextBundle = ContextBundle.parse({
  wake: { wake_id: 'wake-003', wake_at: '2026-07-20T09:00:00.000Z', budget: { model_calls: 1, tokens: 8_000, tool_calls: 4 }, visible_to_seq: 42 },
  state: {
    source: 'persistent',
    goal: { goal_id: 'goal-1', description: 'Prepare the Friday report', deadline_at: '2026-07-23T17:00:00.000Z' },
    tasks: [
      { task_id: 'task-1', title: 'Collect notes', status: 'doing', priority: 1, depends_on: [] },
      { task_id: 'task-2', title: 'Analyse the dataset', status: 'blocked', priority: 2, depends_on: ['task-1'] },
    ],
    attention_target: 'Friday report',
    waiting_condition: 'dataset from the reviewer',
    journal_entries: 3,
    denied_actions: [{ tool: 'files', op: 'write', repeats: 1 }],
  },
  window: {
    events: [
      { seq: 40, event_id: EV1, event_type: 'WorldEvent.MessageReceived', occurred_at: '2026-07-20T08:40:00.000Z', payload: { from: 'reviewer', subject: 'status', body: 'The dataset arrives Thursday.\nSorry for the delay.', in_reply_to: null } },
      { seq: 41, event_id: EV2, event_type: 'WorldEvent.FileChangedExternally', occurred_at: '2026-07-20T08:41:00.000Z', payload: { path: 'notes.md', change: 'modified', post_hash: HASH } },
    ],
    eligible_total: 312,
    omitted_by_count: 310,
    omitted_by_token_cap: 0,
    not_eligible: 90,
    tokens_estimated: 120,
    statement: 'window 2 of 312 eligible events (310 older left out, 0 over the token cap); 90 events of other types not shown',
  },
  workspace: [{ path: 'notes.md', bytes: 120, sha256: HASH }],
});

/** A ds-model-output/1 answer (events cited by id), as runs recorded before issue 15 hold them. */
const VALID_ANSWER = {
  protocol: MODEL_PROTOCOL_V1,
  focus: { attention_target: 'Friday report', waiting_condition: 'dataset from the reviewer' },
  actions: [{ tool: 'files', op: 'read', path: 'notes.md', rationale: 'See what is there.' }],
  claims: [
    { claim_type: 'FACT', statement: 'The dataset arrives Thursday.', evidence_event_ids: [EV1], confidence: null, alternatives: [] },
    { claim_type: 'INFERENCE', statement: 'The report can be finished by Friday.', evidence_event_ids: [EV1], confidence: 0.6, alternatives: ['It cannot.'] },
  ],
  plan_revision: null,
  checkpoint: { current_goal_id: 'goal-1', goal_status: 'in progress', attention_target: 'Friday report', waiting_condition: 'dataset', next_action: 'draft the outline', evidence_event_ids: [EV1] },
};
const VALID_TEXT = JSON.stringify(VALID_ANSWER);

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  const prompt = renderPrompt(BUNDLE);
  return { wake_id: 'wake-003', call_number: 1, bundle: BUNDLE, system: prompt.system, user: prompt.user, max_tokens: 300, answer_schema: answerJsonSchema(MODEL_PROTOCOL_V2), ...overrides };
}

// ---------------------------------------------------------------------------------------
// a real HTTP server on loopback

interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  body: string | null;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface TestServer {
  readonly baseUrl: string;
  readonly received: Received[];
  /** Errors the server side saw while writing (e.g. the client cancelled a large body). */
  readonly writeErrors: string[];
  close(): Promise<void>;
}

const servers: TestServer[] = [];

async function startServer(handler: Handler, options: { answerBeforeBody?: boolean } = {}): Promise<TestServer> {
  const received: Received[] = [];
  const writeErrors: string[] = [];
  const server: Server = createServer((req, res) => {
    // Counted when the request arrives, so a handler that never answers is counted too.
    const entry: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: null };
    received.push(entry);
    res.on('error', (error) => writeErrors.push(error.message));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      entry.body = Buffer.concat(chunks).toString('utf8');
      if (!options.answerBeforeBody) handler(req, res, entry.body);
    });
    if (options.answerBeforeBody) handler(req, res, '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const s: TestServer = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    writeErrors,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(s);
  return s;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

const PARAMS = { temperature: 0.2, top_p: 0.9, seed: 7, max_tokens: 512 };

function adapterFor(server: { baseUrl: string }, overrides: Partial<OpenAiAdapterOptions> = {}): OpenAiAdapter {
  return new OpenAiAdapter({ baseUrl: server.baseUrl, modelId: 'test-model', apiKey: API_KEY, params: PARAMS, dialect: 'none', retry: { max_attempts: 1, backoff_ms: [] }, contextSize: null, ...overrides });
}

// ---------------------------------------------------------------------------------------
// The openai adapter's own cases live in test/runtime/openai-adapter.test.ts and
// openai-preflight.test.ts; the adapter is used below only as a real network client.

// ---------------------------------------------------------------------------------------
// ds-model-output/2 (what new runs answer in) and /1 (what older runs recorded)

const V2 = MODEL_OUTPUT_V2_LIMITS;
/** What BUNDLE's wake showed: seq → event id. */
const SHOWN: ShownEvents = new Map(BUNDLE.window.events.map((e) => [e.seq, e.event_id]));

const V2_ANSWER = {
  protocol: MODEL_PROTOCOL_V2,
  focus: { attention_target: 'task-1', waiting_condition: 'dataset from the reviewer' },
  actions: [
    { tool: 'files', op: 'read', path: 'notes.md', rationale: 'See what is there.' },
    { tool: 'task_board', op: 'update', task_id: 'task-2', title: null, status: 'blocked', priority: null, depends_on: ['task-1'], rationale: 'It waits for the dataset.' },
  ],
  claims: [
    { claim_type: 'FACT', statement: 'The dataset arrives Thursday.', evidence_seqs: [40] },
    { claim_type: 'PLAN', statement: 'Draft the outline today.' },
    { claim_type: 'INFERENCE', statement: 'The report can be finished by Friday.', confidence: 0.6, alternatives: ['It cannot.'] },
  ],
  plan_revision: null,
  checkpoint: { current_goal_id: 'goal-1', goal_status: 'active', attention_target: 'task-1', waiting_condition: 'dataset', next_action: 'task-1: draft the outline', evidence_seqs: [40, 41] },
};
const V2_TEXT = JSON.stringify(V2_ANSWER);
/** A /1 answer, as runs recorded before issue 15 hold them. */
const V1_ANSWER = { ...VALID_ANSWER, protocol: MODEL_PROTOCOL_V1 };

describe('parseModelOutput', () => {
  test('a /2 answer parses, bare and inside one ```json fence, into the internal shape: each seq becomes the id of the event shown at it', () => {
    const bare = parseModelOutput(V2_TEXT, MODEL_PROTOCOL_V2, SHOWN);
    expect(bare).toEqual({
      ok: true,
      output: {
        focus: V2_ANSWER.focus,
        actions: V2_ANSWER.actions,
        claims: [
          { claim_type: 'FACT', statement: 'The dataset arrives Thursday.', evidence_event_ids: [EV1], confidence: null, alternatives: [] },
          { claim_type: 'PLAN', statement: 'Draft the outline today.', evidence_event_ids: [], confidence: null, alternatives: [] },
          { claim_type: 'INFERENCE', statement: 'The report can be finished by Friday.', evidence_event_ids: [], confidence: 0.6, alternatives: ['It cannot.'] },
        ],
        plan_revision: null,
        checkpoint: { current_goal_id: 'goal-1', goal_status: 'active', attention_target: 'task-1', waiting_condition: 'dataset', next_action: 'task-1: draft the outline', evidence_event_ids: [EV1, EV2] },
      },
    });
    const fenced = parseModelOutput(`\`\`\`json\n${JSON.stringify(V2_ANSWER, null, 2)}\n\`\`\``, MODEL_PROTOCOL_V2, SHOWN);
    expect(fenced).toEqual(bare);
  });

  test('a /1 answer still parses under /1 (recorded runs replay), ids as they were', () => {
    const parsed = parseModelOutput(JSON.stringify(V1_ANSWER), MODEL_PROTOCOL_V1, new Map());
    expect(parsed.ok).toBe(true);
    expect(parsed.ok && parsed.output.claims[0]!.evidence_event_ids).toEqual([EV1]);
  });

  const failures: [string, string, RegExp][] = [
    ['prose around the JSON', `Here is my answer:\n${V2_TEXT}\nHope this helps.`, /not JSON/],
    ['two objects', `${V2_TEXT}\n${V2_TEXT}`, /not JSON/],
    ['a /1 answer where /2 is the run’s protocol', JSON.stringify(V1_ANSWER), /fails ds-model-output\/2/],
    ['a seq the wake did not show', JSON.stringify({ ...V2_ANSWER, claims: [{ claim_type: 'FACT', statement: 'x', evidence_seqs: [39] }] }), /did not show.*claims\.0\.evidence_seqs\.0: seq 39/],
    ['a seq the wake did not show, in the checkpoint', JSON.stringify({ ...V2_ANSWER, checkpoint: { ...V2_ANSWER.checkpoint, evidence_seqs: [40, 7] } }), /checkpoint\.evidence_seqs\.1: seq 7/],
    ['an event id where a seq belongs', JSON.stringify({ ...V2_ANSWER, claims: [{ claim_type: 'FACT', statement: 'x', evidence_seqs: [EV1] }] }), /evidence_seqs/],
    ['a FACT without evidence', JSON.stringify({ ...V2_ANSWER, claims: [{ claim_type: 'FACT', statement: 'x', evidence_seqs: [] }] }), /evidence_seqs/],
    ['an INFERENCE without confidence', JSON.stringify({ ...V2_ANSWER, claims: [{ claim_type: 'INFERENCE', statement: 'x', alternatives: [] }] }), /confidence/],
    ['a PLAN with evidence (no such key)', JSON.stringify({ ...V2_ANSWER, claims: [{ claim_type: 'PLAN', statement: 'x', evidence_seqs: [40] }] }), /evidence_seqs/],
    ['a goal status outside the enum', JSON.stringify({ ...V2_ANSWER, checkpoint: { ...V2_ANSWER.checkpoint, goal_status: 'in progress' } }), /goal_status/],
    ['a key the protocol does not have (an id from the model)', JSON.stringify({ ...V2_ANSWER, actions: [{ ...V2_ANSWER.actions[0], proposal_id: 'p-1' }] }), /proposal_id/],
  ];
  test.each(failures)('%s fails with a detail', (_name, raw, detail) => {
    const parsed = parseModelOutput(raw, MODEL_PROTOCOL_V2, SHOWN);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.detail).toMatch(detail);
  });

  test('a /2 answer where /1 is the run’s protocol fails: versions are never mixed', () => {
    const parsed = parseModelOutput(V2_TEXT, MODEL_PROTOCOL_V1, SHOWN);
    expect(!parsed.ok && parsed.detail).toMatch(/fails ds-model-output\/1/);
  });

  test('every bound the system message states is the schema’s: at the bound the answer passes, one over it fails', () => {
    const system = renderPrompt(BUNDLE).system;
    const seqs = (n: number): number[] => Array.from({ length: n }, () => 40);
    const action = V2_ANSWER.actions[0]!;
    const fact = (n: number) => ({ claim_type: 'FACT', statement: 's', evidence_seqs: seqs(n) });
    const board = (n: number) => ({ ...V2_ANSWER.actions[1], depends_on: Array.from({ length: n }, () => 'x') });
    const inference = (n: number) => ({ claim_type: 'INFERENCE', statement: 's', confidence: 0.5, alternatives: Array.from({ length: n }, () => 'a') });
    const revision = (n: number) => ({ reason: 'r', goal_id: 'g', goal_description: 'd', deadline_at: null, steps: Array.from({ length: n }, (_, i) => ({ task_id: `t${i}`, title: 't' })) });
    const text = (n: number) => 'x'.repeat(n);
    const cases: Array<[string, (n: number) => unknown, number, string]> = [
      ['actions', (n) => ({ ...V2_ANSWER, actions: Array.from({ length: n }, () => action) }), V2.maxActions, `"actions": [0-${V2.maxActions} ACTION]`],
      ['claims', (n) => ({ ...V2_ANSWER, claims: Array.from({ length: n }, () => V2_ANSWER.claims[1]) }), V2.maxClaims, `"claims": [0-${V2.maxClaims} CLAIM]`],
      ['FACT evidence', (n) => ({ ...V2_ANSWER, claims: [fact(n)] }), V2.maxEvidencePerClaim, `"evidence_seqs": [1-${V2.maxEvidencePerClaim} SEQ]`],
      ['checkpoint evidence', (n) => ({ ...V2_ANSWER, checkpoint: { ...V2_ANSWER.checkpoint, evidence_seqs: seqs(n) } }), V2.maxCheckpointEvidence, `"evidence_seqs": [0-${V2.maxCheckpointEvidence} SEQ]`],
      ['depends_on', (n) => ({ ...V2_ANSWER, actions: [board(n)] }), V2.maxDependsOn, `"depends_on": [0-${V2.maxDependsOn} ID]`],
      ['alternatives', (n) => ({ ...V2_ANSWER, claims: [inference(n)] }), V2.maxAlternatives, `"alternatives": [0-${V2.maxAlternatives} BRIEF]`],
      ['plan steps', (n) => ({ ...V2_ANSWER, plan_revision: revision(n) }), V2.maxPlanSteps, `"steps": [1-${V2.maxPlanSteps} {`],
      ['BRIEF', (n) => ({ ...V2_ANSWER, checkpoint: { ...V2_ANSWER.checkpoint, next_action: text(n) } }), V2.briefChars, `BRIEF: string of 1-${V2.briefChars} chars`],
      ['TEXT', (n) => ({ ...V2_ANSWER, claims: [{ claim_type: 'PLAN', statement: text(n) }] }), V2.textChars, `TEXT: string of 1-${V2.textChars} chars`],
      ['WHY', (n) => ({ ...V2_ANSWER, actions: [{ ...action, rationale: text(n) }] }), V2.rationaleChars, `WHY: why you propose it, string of 1-${V2.rationaleChars} chars`],
      ['PATH', (n) => ({ ...V2_ANSWER, actions: [{ ...action, path: text(n) }] }), V2.pathChars, `PATH: a path relative to the workspace, 1-${V2.pathChars} chars`],
      ['ID', (n) => ({ ...V2_ANSWER, checkpoint: { ...V2_ANSWER.checkpoint, current_goal_id: text(n) } }), V2.idChars, `{0,${V2.idChars - 1}}`],
      ['write content', (n) => ({ ...V2_ANSWER, actions: [{ tool: 'files', op: 'write', path: 'a.md', content: text(n), rationale: 'r' }] }), V2.fileContentChars, `"content": string of 0-${V2.fileContentChars} chars`],
      ['modify find', (n) => ({ ...V2_ANSWER, actions: [{ tool: 'files', op: 'modify', path: 'a.md', find: text(n), replace: '', rationale: 'r' }] }), V2.findChars, `"find": string of 1-${V2.findChars} chars`],
    ];
    for (const [what, make, bound, stated] of cases) {
      expect(system, what).toContain(stated);
      expect(ModelAnswerV2.safeParse(make(bound)).success, `${what} at ${bound}`).toBe(true);
      expect(ModelAnswerV2.safeParse(make(bound + 1)).success, `${what} at ${bound + 1}`).toBe(false);
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('docs/model-protocol.md', () => {
  const doc = readFileSync(fileURLToPath(new URL('../../docs/model-protocol.md', import.meta.url)), 'utf8');

  test('its example answer parses, in the protocol it names', () => {
    // The block under "## Example" (other sections show request bodies in json blocks of their own).
    const block = /\n## Example\n[\s\S]*?```json\n([\s\S]*?)\n```/.exec(doc);
    expect(block).not.toBeNull();
    const example = JSON.parse(block![1]!) as { protocol: string };
    const protocol = ModelProtocol.parse(example.protocol);
    // A /2 example cites seqs of a window the page does not show: each cited seq stands for an event of it.
    const cited = [...block![1]!.matchAll(/"evidence_seqs":\s*\[([\d,\s]*)\]/g)].flatMap((m) => m[1]!.split(',').filter((x) => x.trim() !== '').map(Number));
    const parsed = parseModelOutput(block![1]!, protocol, new Map(cited.map((seq) => [seq, EV1])));
    expect(parsed.ok ? 'ok' : parsed.detail).toBe('ok');
  });

  test('it states the protocol limits', () => {
    const L = MODEL_OUTPUT_LIMITS;
    expect(doc).toContain(MODEL_PROTOCOL_V1);
    const flat = doc.replace(/\s+/g, ' ');
    expect(flat).toContain(`at most ${L.maxActions} actions, ${L.maxClaims} claims, ${L.maxEvidencePerClaim} evidence ids per claim, ${L.maxPlanSteps} plan steps, ${L.maxFileContentChars.toLocaleString('en').replace(',', ' ')} chars`);
  });
});

// ---------------------------------------------------------------------------------------

/** Every property name anywhere in a JSON Schema. */
function propertyNames(schema: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const s of schema) propertyNames(s, out);
  else if (schema !== null && typeof schema === 'object') {
    const props = (schema as { properties?: Record<string, unknown> }).properties;
    if (props) for (const k of Object.keys(props)) out.add(k);
    for (const v of Object.values(schema)) propertyNames(v, out);
  }
  return out;
}

/** Every const and enum value anywhere in a JSON Schema (tools, ops, claim types, statuses, the protocol). */
function literalValues(schema: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const s of schema) literalValues(s, out);
  else if (schema !== null && typeof schema === 'object') {
    const record = schema as { const?: unknown; enum?: unknown[] };
    if (typeof record.const === 'string') out.add(record.const);
    for (const v of record.enum ?? []) if (typeof v === 'string') out.add(v);
    for (const v of Object.values(schema)) literalValues(v, out);
  }
  return out;
}

describe('renderPrompt', () => {
  test('the same bundle gives a byte-identical prompt, whatever the key order of its payloads', () => {
    const a = renderPrompt(BUNDLE);
    const b = renderPrompt(structuredClone(BUNDLE));
    const reordered = structuredClone(BUNDLE);
    const first = reordered.window.events[0]!;
    first.payload = Object.fromEntries(Object.entries(first.payload).reverse());
    const c = renderPrompt(reordered);
    expect(b).toEqual(a);
    expect(c.user).toBe(a.user);
    expect(c.system).toBe(a.system);
  });

  test('the user message (ds-prompt/3): goal and tasks, the workspace with a short hash, the events oldest first under their times, what the window left out, then focus, and last the wake line', () => {
    const { user } = renderPrompt(BUNDLE);
    const lines = user.split('\n');
    // What the subject changes only by acting opens the message; the wake line, which changes every wake, closes it.
    expect(lines.slice(0, 5)).toEqual([
      'GOAL AND TASKS',
      'goal: goal-1 "Prepare the Friday report", deadline 2026-07-23T17:00:00.000Z',
      'tasks (2):',
      '- task-1 · doing · priority 1 · "Collect notes"',
      '- task-2 · blocked · priority 2 · "Analyse the dataset" · depends on: task-1',
    ]);
    const short = HASH.replace(/^sha256:/, '').slice(0, LISTED_HASH_HEX_CHARS);
    expect(LISTED_HASH_HEX_CHARS).toBe(8);
    const workspaceAt = lines.indexOf(`"notes.md" · 120 · ${short}`);
    expect(workspaceAt).toBe(7);
    const eventsAt = lines.indexOf('EVENTS (seq · type · payload), oldest first, under the time they occurred');
    expect(eventsAt).toBeGreaterThan(workspaceAt);
    expect(lines.slice(eventsAt + 1, eventsAt + 6)).toEqual([
      'at 2026-07-20T08:40:00.000Z:',
      '40 · WorldEvent.MessageReceived · {"body":"The dataset arrives Thursday.\\nSorry for the delay.","from":"reviewer","in_reply_to":null,"subject":"status"}',
      'at 2026-07-20T08:41:00.000Z:',
      `41 · WorldEvent.FileChangedExternally · {"change":"modified","path":"notes.md","post_hash":"${HASH}"}`,
      `(${BUNDLE.window.statement})`,
    ]);
    // /2 cites seqs: no event id of the window is anywhere in the message.
    for (const e of BUNDLE.window.events) expect(user).not.toContain(e.event_id);
    const nowAt = lines.indexOf('NOW');
    expect(nowAt).toBe(eventsAt + 7);
    expect(lines.slice(nowAt + 1, nowAt + 4)).toEqual(['attention_target: "Friday report"', 'waiting_condition: "dataset from the reviewer"', 'journal entries: 3']);
    expect(lines.at(-2)).toBe(`WAKE wake-003 at 2026-07-20T09:00:00.000Z; events up to seq ${BUNDLE.wake.visible_to_seq} are visible.`);
    expect(lines.at(-1)).toMatch(/^Budget of this wake: /);
    expect(PROMPT_LAYOUT).toBe('ds-prompt/3');
  });

  test('a server can reuse the prefix: a new event, a new focus or a new wake changes nothing before the last event shown; events of one moment share one time line', () => {
    const before = renderPrompt(BUNDLE).user;
    const lastEventLine = before.split('\n').find((l) => l.startsWith('41 · '))!;
    const kept = before.slice(0, before.indexOf(lastEventLine) + lastEventLine.length);
    const third = { seq: 42, event_id: EV1.replace(/.$/, '9'), event_type: 'WorldEvent.DistractorOccurred', occurred_at: '2026-07-20T08:41:00.000Z', payload: { channel: 'chat', body: 'lunch?' } };
    const next = ContextBundle.parse({
      ...BUNDLE,
      wake: { ...BUNDLE.wake, wake_id: 'wake-004', wake_at: '2026-07-20T10:00:00.000Z', visible_to_seq: 43 },
      state: { ...BUNDLE.state, attention_target: 'the dataset', journal_entries: 4 },
      window: { ...BUNDLE.window, events: [...BUNDLE.window.events, third], statement: 'window 3 of 313 eligible events (310 older left out, 0 over the token cap); 91 events of other types not shown' },
    });
    const after = renderPrompt(next).user;
    expect(after.startsWith(kept)).toBe(true);
    // The third event occurred at the second's moment: no time line of its own.
    expect(after.slice(kept.length).split('\n')[1]).toBe('42 · WorldEvent.DistractorOccurred · {"body":"lunch?","channel":"chat"}');
  });

  test('a permission decision shows the rules it failed and counts the ones it passed; a payload off its schema is shown whole', () => {
    const rules = [
      { rule: 'tool_allowed', passed: true, detail: 'files.write' },
      { rule: 'path_inside_workspace', passed: false, detail: 'path "../x" outside' },
      { rule: 'budget_left', passed: true, detail: '6 tool call(s) left' },
    ];
    const decided = (seq: number, payload: Record<string, unknown>) => ({ seq, event_id: EV1.replace(/.$/, String(seq % 10)), event_type: 'ActionEvent.PermissionDecided', occurred_at: '2026-07-20T08:42:00.000Z', payload });
    const bundle = ContextBundle.parse({ ...BUNDLE, window: { ...BUNDLE.window, events: [
      decided(43, { proposal_id: 'wake-003-a1', decision: 'deny', rules, repeat_of_denied: false }),
      decided(44, { proposal_id: 'wake-003-a2', decision: 'allow', rules: rules.map((r) => ({ ...r, passed: true })), repeat_of_denied: false }),
      decided(45, { proposal_id: 'wake-003-a3', decision: 'maybe', rules, repeat_of_denied: false }),
    ] } });
    const lines = renderPrompt(bundle).user.split('\n');
    expect(lines.find((l) => l.startsWith('43 · '))).toBe('43 · ActionEvent.PermissionDecided · {"decision":"deny","proposal_id":"wake-003-a1","repeat_of_denied":false,"rules":[{"detail":"path \\"../x\\" outside","passed":false,"rule":"path_inside_workspace"}]} (2 passed rules not shown)');
    expect(lines.find((l) => l.startsWith('44 · '))).toBe('44 · ActionEvent.PermissionDecided · {"decision":"allow","proposal_id":"wake-003-a2","repeat_of_denied":false,"rules":[]} (3 passed rules not shown)');
    // Forged: a decision the catalogue does not know is shown as recorded, every rule in it.
    expect(lines.find((l) => l.startsWith('45 · '))).toContain('"rule":"budget_left"');
    // What the scripted servers read back is what the line shows.
    expect(promptEvents(lines.join('\n')).map((e) => [e.seq, (e.payload['rules'] as unknown[]).length])).toEqual([[43, 1], [44, 0], [45, 3]]);
    // Forged: an event line with no time line above it is not a message renderUser wrote.
    expect(() => promptEvents(lines.filter((l) => !l.startsWith('at ')).join('\n'))).toThrow(PromptReadError);
  });

  test('the starting conditions leave their goal and tasks to the first part, and their format version out, and say so', () => {
    const start = { seq: 2, event_id: EV2.replace(/.$/, '8'), event_type: 'SystemEvent.SubjectInitialized', occurred_at: '2026-07-20T08:00:00.000Z', payload: {
      identity: { name: 'R-1', description: 'A research assistant.' }, identity_schema_version: '1.0.0',
      goal: { goal_id: 'goal-1', description: 'Prepare the Friday report', deadline_at: null },
      tasks: [{ task_id: 'task-1', title: 'Collect notes', priority: 1, depends_on: [] }],
      journal_first_page: { entry_id: 'journal-0001', text: 'My goal: the Friday report.' },
    } };
    const withStart = ContextBundle.parse({ ...BUNDLE, window: { ...BUNDLE.window, events: [start, ...BUNDLE.window.events], pinned: 1 } });
    const line = renderPrompt(withStart).user.split('\n').find((l) => l.startsWith('2 · '));
    expect(line).toBe('2 · SystemEvent.SubjectInitialized · {"identity":{"description":"A research assistant.","name":"R-1"},"journal_first_page":{"entry_id":"journal-0001","text":"My goal: the Friday report."}} (its goal and tasks: under GOAL AND TASKS)');
  });

  test('a denied action is listed with what it was aimed at and the rules it failed', () => {
    expect(renderPrompt(BUNDLE).user).toContain('- files.write · repeats 1');
    const denied = ContextBundle.parse({ ...BUNDLE, state: { ...BUNDLE.state, denied_actions: [{ tool: 'files', op: 'write', repeats: 0, target: '../outside/copy.md', failed_rules: ['path_inside_workspace'] }] } });
    expect(renderPrompt(denied).user).toContain('- files.write "../outside/copy.md" · failed: path_inside_workspace · repeats 0');
  });

  test('names no group, capability, oracle, intervention or score, and not how the state was made; one system text for every bundle', () => {
    const { system, user } = renderPrompt(BUNDLE);
    for (const word of ['group', 'capabilit', 'oracle', 'intervention', 'scor', 'hypothes', 'persistent', 'replanning', 'treatment', 'experiment', 'study', 'dry run']) {
      expect(system.toLowerCase(), word).not.toContain(word);
      expect(user.toLowerCase(), word).not.toContain(word);
    }
    // Rebuilt-from-the-window vs persistent state must not change a byte of the prompt.
    const windowOnly = renderPrompt({ ...BUNDLE, state: { ...BUNDLE.state, source: 'window' } });
    expect(windowOnly).toEqual(renderPrompt(BUNDLE));
    const other = ContextBundle.parse({ ...BUNDLE, wake: { ...BUNDLE.wake, wake_id: 'wake-999', budget: { model_calls: 2, tokens: 100, tool_calls: 1 } }, window: { ...BUNDLE.window, events: [] } });
    expect(renderPrompt(other).system).toBe(system);
  });

  test('the system message states ds-model-output/2: every field and every literal of its schema, FACT evidence, INFERENCE confidence, proposals a gate may deny', () => {
    const { system } = renderPrompt(BUNDLE);
    expect(system).toContain(MODEL_PROTOCOL_V2);
    const schema = answerJsonSchema(MODEL_PROTOCOL_V2);
    const fields = propertyNames(schema);
    expect(fields.size).toBeGreaterThan(20);
    for (const field of fields) expect(system, field).toContain(`"${field}"`);
    const literals = literalValues(schema);
    expect(literals.size).toBeGreaterThan(15);
    for (const value of literals) expect(system, value).toContain(`"${value}"`);
    // Nothing of /1 is left: no event ids to cite, no free-text goal status.
    expect(system).not.toContain('evidence_event_ids');
    expect(system).not.toMatch(/UUID|event_id/);
    expect(system).toMatch(/"claim_type": "FACT", "statement": TEXT, "evidence_seqs": \[1-\d+ SEQ\]\}: something the cited events establish\. Cite events from the world or successful or reconciled tool results, never answers, plans or proposals/);
    expect(system).toMatch(/"claim_type": "INFERENCE", "statement": TEXT, "confidence": number 0-1,/);
    expect(system).toMatch(/permission gate checks it and may deny it/);
    expect(system).toMatch(/SEQ: the seq of an event shown at this wake/);
    for (const slip of ['null chars', 'undefined', 'NaN', '[object']) expect(system).not.toContain(slip);
  });

  test('its size: the system message costs under a thousand estimated tokens, and the event lines no id column', () => {
    const { system, user } = renderPrompt(BUNDLE);
    // Measured for issue 15: 3,523 chars, 881 estimated tokens (was 4,428 chars under /1). A bound, not the figure: bloat shows here.
    expect(estimateTokens(system)).toBeLessThan(1_000);
    const eventLines = user.split('\n').filter((l) => /^\d+ · /.test(l));
    expect(eventLines).toHaveLength(BUNDLE.window.events.length);
    for (const line of eventLines) expect(line.split(' · ')).toHaveLength(3);
  });

  test('a schema the prompt cannot describe fails at load, with the field named (forged schemas)', () => {
    const A = ModelAnswerV2.shape;
    const forged: Array<[string, unknown, RegExp]> = [
      ['a BRIEF field with its own bound', ModelAnswerV2.extend({ checkpoint: A.checkpoint.extend({ next_action: z.string().min(1).max(150).nullable() }) }), /BRIEF no longer share one bound.*checkpoint\.next_action 1-150/],
      ['a list without a maximum', ModelAnswerV2.extend({ claims: z.array(A.claims.element) }), /claims has no maximum number of items/],
      ['a text without a maximum', ModelAnswerV2.extend({ focus: z.strictObject({ attention_target: z.string().min(1).nullable(), waiting_condition: A.focus.shape.waiting_condition }) }), /focus\.attention_target has no maximum length/],
      ['another goal-status vocabulary', ModelAnswerV2.extend({ checkpoint: A.checkpoint.extend({ goal_status: z.enum(['open', 'closed']).nullable() }) }), /goal_status is "open"\|"closed"/],
      ['an action the prompt does not describe (a fourth tool)', ModelAnswerV2.extend({ actions: z.array(z.union([...A.actions.element.options, z.strictObject({ tool: z.literal('clock'), op: z.literal('read'), rationale: z.string().min(1).max(160) })])).max(8) }), /allows 7 kinds of action \(.*clock\.read\); the prompt describes 6/],
    ];
    for (const [what, schema, detail] of forged) {
      expect(() => systemPrompt(schema as typeof ModelAnswerV2), what).toThrow(PromptSchemaError);
      expect(() => systemPrompt(schema as typeof ModelAnswerV2), what).toThrow(detail);
    }
    // The real schema builds the very text the runtime sends.
    expect(systemPrompt(ModelAnswerV2)).toBe(renderPrompt(BUNDLE).system);
  });
});

// ---------------------------------------------------------------------------------------

describe('replay adapter', () => {
  const SCHEMA_MISS = 'Sure! {"protocol": "nope"}';
  const MODEL_CALL = { adapter: 'openai' as const, model_id: 'test-model', params: { temperature: 0.2, top_p: 0.9, seed: 7, max_tokens: 512 } };
  const CONTEXT = { window_events: 0, eligible_total: 0, omitted_by_count: 0, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 0 };
  /** The call record of issue 15 as a server that reports everything leaves it (schema/events/model-output-events.ts). */
  const RECORD = { protocol: MODEL_PROTOCOL_V2, finish_reason: 'stop', response_model: 'test-model-q8', prompt_tokens_counted: 893, prompt_count_source: 'tokenizer' as const, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null, cost_nano_usd: null };
  const CUT = '{"protocol": "ds-model-output/2", "focus": {"attention_target": "tas';

  /** A store recorded under ds-model-output/2 (ModelAnswered 1.3.0, ModelCallFailed 1.2.0). */
  function recordedStore() {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1'));
    const answered = s.push(draft('ModelOutputEvent.ModelAnswered', { wake_id: 'w1', ...MODEL_CALL, ...RECORD, system_fingerprint: 'fp_1', latency_ms: 812, context: CONTEXT, raw_output: V2_TEXT, usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_source: 'server' }));
    const violated = s.push(draft('ModelOutputEvent.ModelCallFailed', { wake_id: 'w1', ...MODEL_CALL, ...RECORD, system_fingerprint: 'fp_1', latency_ms: 640, context: CONTEXT, failure: 'schema_violation', detail: 'not JSON', raw_output: SCHEMA_MISS, usage: { prompt_tokens: 900, completion_tokens: 9 }, usage_source: 'server' }));
    s.push(draft('ModelOutputEvent.ModelCallFailed', { wake_id: 'w1', ...MODEL_CALL, ...RECORD, system_fingerprint: 'fp_1', latency_ms: 2_900, context: CONTEXT, finish_reason: 'length', failure: 'length', detail: 'the answer ended at its token cap', raw_output: CUT, usage: { prompt_tokens: 900, completion_tokens: 512 }, usage_source: 'server' }));
    s.push(draft('ModelOutputEvent.ModelCallFailed', { wake_id: 'w1', ...MODEL_CALL, ...RECORD, finish_reason: null, response_model: null, prompt_tokens_counted: null, prompt_count_source: null, system_fingerprint: null, latency_ms: 0, context: null, failure: 'budget_exhausted', detail: 'no call left', raw_output: null, usage: null, usage_source: null }));
    s.push(d.wakeEnded('w1'));
    s.push(d.wakeStarted('w2'));
    s.push(draft('ModelOutputEvent.ModelCallFailed', { wake_id: 'w2', ...MODEL_CALL, ...RECORD, finish_reason: null, response_model: null, system_fingerprint: null, latency_ms: 60_001, context: CONTEXT, failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null, usage: { prompt_tokens: 893, completion_tokens: 0 }, usage_source: 'estimate' }));
    // Attempts that brought no answer are recorded but not replayed: a replay opens no connection.
    s.push(draft('ModelOutputEvent.ModelCallAttemptFailed', { wake_id: 'w2', call_number: 2, attempt: 1, kind: 'connection_refused', detail: 'connect ECONNREFUSED', latency_ms: 3, backoff_ms: 500 }));
    s.push(draft('ModelOutputEvent.ModelCallAttemptFailed', { wake_id: 'w2', call_number: 2, attempt: 2, kind: 'connection_refused', detail: 'connect ECONNREFUSED', latency_ms: 2, backoff_ms: null }));
    s.push(draft('ModelOutputEvent.ModelCallFailed', { wake_id: 'w2', ...MODEL_CALL, ...RECORD, finish_reason: null, response_model: null, attempts: 2, system_fingerprint: null, latency_ms: 505, context: CONTEXT, failure: 'transport', detail: 'no answer in 2 attempt(s)', raw_output: null, usage: null, usage_source: null }));
    s.push(d.wakeEnded('w2'));
    return { events: s.events, answered, violated };
  }

  /** A model event at an earlier schema version, checked against that version's schema (each definition's `earlier` map). */
  function earlierDraft(definition: typeof ModelAnswered | typeof ModelCallFailed, version: string, payload: Record<string, unknown>): EventDraft {
    const schema = definition.earlier[version];
    if (schema === undefined) throw new Error(`${definition.type} has no earlier version ${version}`);
    schema.parse(payload);
    const template = definition === ModelAnswered ? d.modelAnswered(String(payload['wake_id'])) : d.modelCallFailed(String(payload['wake_id']));
    return { ...template, schema_version: version, payload };
  }

  /** A store recorded before issue 15, under ds-model-output/1 (ModelAnswered 1.2.0, ModelCallFailed 1.1.0). */
  function recordedStoreV1() {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1'));
    const answered = s.push(earlierDraft(ModelAnswered, '1.2.0', { wake_id: 'w1', ...MODEL_CALL, system_fingerprint: 'fp_1', latency_ms: 812, context: CONTEXT, raw_output: VALID_TEXT, usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_estimated: false }));
    s.push(earlierDraft(ModelCallFailed, '1.1.0', { wake_id: 'w1', ...MODEL_CALL, system_fingerprint: 'fp_1', latency_ms: 640, context: CONTEXT, failure: 'schema_violation', detail: 'not JSON', raw_output: SCHEMA_MISS }));
    s.push(earlierDraft(ModelCallFailed, '1.1.0', { wake_id: 'w1', ...MODEL_CALL, system_fingerprint: null, latency_ms: 0, context: null, failure: 'budget_exhausted', detail: 'no call left', raw_output: null }));
    s.push(d.wakeEnded('w1'));
    s.push(d.wakeStarted('w2'));
    s.push(earlierDraft(ModelAnswered, '1.2.0', { wake_id: 'w2', ...MODEL_CALL, adapter: 'reference', system_fingerprint: null, latency_ms: 1, context: CONTEXT, raw_output: VALID_TEXT, usage: { prompt_tokens: 700, completion_tokens: 100 }, usage_estimated: true }));
    s.push(earlierDraft(ModelCallFailed, '1.1.0', { wake_id: 'w2', ...MODEL_CALL, system_fingerprint: null, latency_ms: 60_001, context: CONTEXT, failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null }));
    s.push(d.wakeEnded('w2'));
    return { events: s.events, answered };
  }

  test('recordedCallsFromEvents: seq order, numbered per wake, the call record as stored, schema violations and cut answers as answers, budget_exhausted and transport attempts skipped', () => {
    const { events } = recordedStore();
    expect(recordedProtocolOf(events)).toBe(MODEL_PROTOCOL_V2);
    const calls = recordedCallsFromEvents([...events].reverse());
    const facts = { finish_reason: 'stop', response_model: 'test-model-q8', prompt_tokens_counted: 893, prompt_count_source: 'tokenizer' as const, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null };
    expect(calls).toEqual<RecordedModelCall[]>([
      { wake_id: 'w1', call_number: 1, outcome: { kind: 'answered', raw_output: V2_TEXT, usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_source: 'server', latency_ms: 812, system_fingerprint: 'fp_1', ...facts } },
      // The usage the server counted for the failed answer is the recorded one, not an estimate.
      { wake_id: 'w1', call_number: 2, outcome: { kind: 'answered', raw_output: SCHEMA_MISS, usage: { prompt_tokens: 900, completion_tokens: 9 }, usage_source: 'server', latency_ms: 640, system_fingerprint: 'fp_1', ...facts } },
      // Served with its finish_reason, so the wake loop fails the cut text as `length` again.
      { wake_id: 'w1', call_number: 3, outcome: { kind: 'answered', raw_output: CUT, usage: { prompt_tokens: 900, completion_tokens: 512 }, usage_source: 'server', latency_ms: 2_900, system_fingerprint: 'fp_1', ...facts, finish_reason: 'length' } },
      { wake_id: 'w2', call_number: 1, outcome: { kind: 'failed', failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null, latency_ms: 60_001, usage: { prompt_tokens: 893, completion_tokens: 0 }, usage_source: 'estimate', ...facts, finish_reason: null, response_model: null } },
      { wake_id: 'w2', call_number: 2, outcome: { kind: 'failed', failure: 'transport', detail: 'no answer in 2 attempt(s)', raw_output: null, latency_ms: 505, usage: null, usage_source: null, ...facts, finish_reason: null, response_model: null, attempts: 2 } },
    ]);
  });

  /** Network handles (TCP, pipes, UDP, DNS look-ups) created while `run` runs. */
  async function networkHandlesDuring(run: () => Promise<void>): Promise<string[]> {
    const seen: string[] = [];
    const hook = createHook({ init: (_id, type) => { if (/^(TCP|PIPE|UDP|GETADDRINFO|TLS)/.test(type)) seen.push(type); } });
    hook.enable();
    try {
      await run();
    } finally {
      hook.disable();
    }
    return seen;
  }

  test('the network watch sees a real connection attempt (so its silence below means something)', async () => {
    const closed = await startServer(() => undefined);
    await closed.close();
    servers.splice(servers.indexOf(closed), 1);
    const seen = await networkHandlesDuring(async () => {
      const outcome = await adapterFor(closed).call(request(), 2_000);
      // Connection refused: no answer reached the runtime, so it is a transport failure (one attempt under adapterFor's no-retry policy).
      expect(outcome).toMatchObject({ kind: 'failed', failure: 'transport', attempts: 1, usage: null });
      expect(outcome.kind === 'failed' && outcome.detail).toMatch(/connection_refused/);
    });
    expect(seen).toContain('TCPWRAP');
  });

  test('serves the recordings in order with their latency and call record, fails a call with no recording, and never opens a socket', async () => {
    const fetchStub = vi.fn(() => Promise.reject(new Error('the replay adapter must not fetch')));
    vi.stubGlobal('fetch', fetchStub);
    const seen = await networkHandlesDuring(async () => {
      const calls = recordedCallsFromEvents(recordedStore().events);
      const replay = new ReplayAdapter('test-model', calls);
      expect(replay.name).toBe('replay');
      expect(replay.model_id).toBe('test-model');

      const first = await replay.call(request({ wake_id: 'w1', call_number: 1 }), 1);
      expect(first).toEqual(calls[0]!.outcome);
      expect(first.latency_ms).toBe(812);
      // The recorded /2 answer parses again against the wake's shown seqs.
      expect(first.kind === 'answered' && parseModelOutput(first.raw_output, MODEL_PROTOCOL_V2, SHOWN).ok).toBe(true);
      const second = await replay.call(request({ wake_id: 'w1', call_number: 2 }), 1);
      expect(second).toEqual(calls[1]!.outcome);
      // The wake loop fails the replayed text the same way it failed the original.
      expect(second.kind === 'answered' && parseModelOutput(second.raw_output, MODEL_PROTOCOL_V2, SHOWN).ok).toBe(false);
      const third = await replay.call(request({ wake_id: 'w1', call_number: 3 }), 1);
      expect(third).toMatchObject({ kind: 'answered', finish_reason: 'length', raw_output: CUT });
      expect(replay.unservedCalls()).toEqual([{ wake_id: 'w2', call_number: 1 }, { wake_id: 'w2', call_number: 2 }]);
      const fourth = await replay.call(request({ wake_id: 'w2', call_number: 1 }), 1);
      expect(fourth).toMatchObject({ kind: 'failed', failure: 'timeout', latency_ms: 60_001 });
      const fifth = await replay.call(request({ wake_id: 'w2', call_number: 2 }), 1);
      expect(fifth).toMatchObject({ kind: 'failed', failure: 'transport', attempts: 2 });

      const missing = await replay.call(request({ wake_id: 'w2', call_number: 3 }), 1);
      expect(missing).toEqual({ kind: 'failed', failure: 'http_error', detail: 'replay: no recorded call for wake w2 call 3', raw_output: null, latency_ms: 0, ...NO_CALL_FACTS });
      expect(replay.unservedCalls()).toEqual([]);
    });

    expect(seen).toEqual([]);
    expect(fetchStub).not.toHaveBeenCalled();
  });

  test('a store recorded under ds-model-output/1 (ModelAnswered 1.2.0, ModelCallFailed 1.1.0) still replays: lifted to the current shape, what it never recorded null, its answers parsed under /1', async () => {
    const { events, answered } = recordedStoreV1();
    expect(events.filter((e) => e.event_type.startsWith('ModelOutputEvent.')).map((e) => `${e.event_type}@${e.schema_version}`)).toEqual([
      'ModelOutputEvent.ModelAnswered@1.2.0',
      'ModelOutputEvent.ModelCallFailed@1.1.0',
      'ModelOutputEvent.ModelCallFailed@1.1.0',
      'ModelOutputEvent.ModelAnswered@1.2.0',
      'ModelOutputEvent.ModelCallFailed@1.1.0',
    ]);
    expect(recordedProtocolOf(events)).toBe(MODEL_PROTOCOL_V1);
    const calls = recordedCallsFromEvents(events);
    const unknown = { finish_reason: null, response_model: null, prompt_tokens_counted: null, prompt_count_source: null, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null };
    expect(calls).toEqual<RecordedModelCall[]>([
      // usage_estimated false ⇒ the server's count.
      { wake_id: 'w1', call_number: 1, outcome: { kind: 'answered', raw_output: VALID_TEXT, usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_source: 'server', latency_ms: 812, system_fingerprint: 'fp_1', ...unknown } },
      // /1 kept no usage for a failed answer: the estimate, said to be one (prompt unknown to the recording: 0).
      { wake_id: 'w1', call_number: 2, outcome: { kind: 'answered', raw_output: SCHEMA_MISS, usage: { prompt_tokens: 0, completion_tokens: estimateTokens(SCHEMA_MISS) }, usage_source: 'estimate', latency_ms: 640, system_fingerprint: 'fp_1', ...unknown } },
      // usage_estimated true ⇒ "estimate".
      { wake_id: 'w2', call_number: 1, outcome: { kind: 'answered', raw_output: VALID_TEXT, usage: { prompt_tokens: 700, completion_tokens: 100 }, usage_source: 'estimate', latency_ms: 1, system_fingerprint: null, ...unknown } },
      { wake_id: 'w2', call_number: 2, outcome: { kind: 'failed', failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null, latency_ms: 60_001, usage: null, usage_source: null, ...unknown } },
    ]);
    // Served as recorded; the /1 answer is an answer under /1 only, so a replay must check it in the recorded protocol.
    const replay = new ReplayAdapter('test-model', calls);
    const first = await replay.call(request({ wake_id: 'w1', call_number: 1 }), 1);
    expect(first).toEqual(calls[0]!.outcome);
    expect(first.kind === 'answered' && parseModelOutput(first.raw_output, MODEL_PROTOCOL_V1, new Map()).ok).toBe(true);
    expect(first.kind === 'answered' && parseModelOutput(first.raw_output, MODEL_PROTOCOL_V2, SHOWN).ok).toBe(false);
    // The envelopes are read, never rewritten: still at their own version and payload.
    const stored = events.find((e) => e.seq === answered.seq)!;
    expect(stored.schema_version).toBe('1.2.0');
    expect(stored.payload['usage_estimated']).toBe(false);
    expect(stored.payload).not.toHaveProperty('protocol');
  });

  test('recordedProtocolOf: a store that mixes /1 and /2 recordings is refused (forged), never replayed in either; one protocol, or none, is named', () => {
    const v2Answer = (wakeId: string, protocol: ModelProtocol): EventDraft => draft('ModelOutputEvent.ModelAnswered', { wake_id: wakeId, ...MODEL_CALL, ...RECORD, protocol, system_fingerprint: 'fp_1', latency_ms: 812, context: CONTEXT, raw_output: protocol === MODEL_PROTOCOL_V2 ? V2_TEXT : VALID_TEXT, usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_source: 'server' });
    const v1Answer = (wakeId: string): EventDraft => earlierDraft(ModelAnswered, '1.2.0', { wake_id: wakeId, ...MODEL_CALL, system_fingerprint: 'fp_1', latency_ms: 812, context: CONTEXT, raw_output: VALID_TEXT, usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_estimated: false });
    const v1Failed = (wakeId: string): EventDraft => earlierDraft(ModelCallFailed, '1.1.0', { wake_id: wakeId, ...MODEL_CALL, system_fingerprint: null, latency_ms: 60_001, context: CONTEXT, failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null });
    /** One call per wake, in the order given. */
    const store = (...calls: ((wakeId: string) => EventDraft)[]) => {
      const s = new SubjectStream().open();
      const seqs: number[] = [];
      calls.forEach((call, i) => {
        s.push(d.wakeStarted(`w${i + 1}`));
        seqs.push(s.push(call(`w${i + 1}`)).seq);
        s.push(d.wakeEnded(`w${i + 1}`));
      });
      return { events: s.events, seqs };
    };

    // Forged: a /2 run's store with a /1 recording (ModelAnswered 1.2.0) after its first call.
    const mixed = store((w) => v2Answer(w, MODEL_PROTOCOL_V2), v1Answer, (w) => v2Answer(w, MODEL_PROTOCOL_V2));
    expect(() => recordedProtocolOf(mixed.events)).toThrow(ReplayRecordingError);
    expect(() => recordedProtocolOf(mixed.events)).toThrow(`replay: the store mixes answer protocols (ds-model-output/2 from seq ${mixed.seqs[0]}, ds-model-output/1 from seq ${mixed.seqs[1]}); a replay would have to pick one`);
    // Forged the other way: a current-version event stating /2 in a store of /1 recordings (a failed call first).
    const other = store(v1Failed, v1Answer, (w) => v2Answer(w, MODEL_PROTOCOL_V2));
    expect(() => recordedProtocolOf(other.events)).toThrow(`(ds-model-output/1 from seq ${other.seqs[0]}, ds-model-output/2 from seq ${other.seqs[2]})`);

    // The controls: a current-version event that states /1 is no mix with 1.2.0 / 1.1.0 ones;
    // a /2 store names /2; a store without model calls names none.
    expect(recordedProtocolOf(store(v1Failed, v1Answer, (w) => v2Answer(w, MODEL_PROTOCOL_V1)).events)).toBe(MODEL_PROTOCOL_V1);
    expect(recordedProtocolOf(store((w) => v2Answer(w, MODEL_PROTOCOL_V2), (w) => v2Answer(w, MODEL_PROTOCOL_V2)).events)).toBe(MODEL_PROTOCOL_V2);
    expect(recordedProtocolOf(store().events)).toBeNull();
  });

  test('a recording it cannot serve faithfully is refused, never guessed', () => {
    const { events, answered, violated } = recordedStore();
    const calls = recordedCallsFromEvents(events);
    expect(() => new ReplayAdapter('test-model', [...calls, calls[0]!])).toThrow(ReplayRecordingError);

    const forgedPayload = { ...answered, payload: { ...answered.payload, usage: { prompt_tokens: -1, completion_tokens: 0 } } };
    expect(() => recordedCallsFromEvents([forgedPayload])).toThrow(/seq \d+ .*fails its schema/);

    const noRawText = { ...violated, payload: { ...violated.payload, raw_output: null } };
    expect(() => recordedCallsFromEvents([noRawText])).toThrow(/schema_violation without its raw text/);

    const otherVersion = { ...answered, schema_version: '2.0.0' };
    expect(() => recordedCallsFromEvents([otherVersion])).toThrow(ReplayRecordingError);

    // A /1-shaped payload under the current version number (a lifted event written back, say) fails that version's schema.
    const v1Answer = recordedStoreV1().answered;
    expect(() => recordedCallsFromEvents([{ ...v1Answer, schema_version: ModelAnswered.schemaVersion }])).toThrow(/fails its schema/);
  });
});
