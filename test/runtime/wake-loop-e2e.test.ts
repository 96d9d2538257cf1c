// The wake loop end to end with a real model server (issue 5 items 1, 3, 5, 6, 7, 10): real
// instances (controller in-process, real ds-writer and ds-runtime processes, same-uid
// isolation) whose model is the `openai` adapter pointed at a scripted OpenAI-compatible
// server on loopback (faults/scripted-model-server.ts). The script answers by the wake
// id the prompt names, so each chosen wake gets one crafted answer; every other wake gets a
// benign valid answer (nothing proposed, nothing claimed).
//
// The scripts answer in ds-model-output/2, the protocol new runs are asked for: events are
// cited by the seq the prompt shows (promptEvents), never by an id the prompt does not show.
//
// Two instances run side by side in beforeAll:
//   M — malformed output and HTTP failures (wakes 1–8);
//   P — paths, permissions, evidence and the causation chain (wakes 1–8).
// The scripted wakes are chosen before the first planned crash (runtime crash in wake 9,
// writer crash in wake 21 for this seed); a test checks that against plan.json, so a change
// of the plan cannot silently move a crash under a scripted wake.
//
// The timeout case runs a third instance, side by side with the others, whose model choice
// sets a short call timeout (--model-timeout-ms), so a server that never answers costs
// seconds, not the default minute.
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InstanceResult } from '../../controller/instance-runner.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { ExperimentPlan } from '../../design/experiment-plan.js';
import { WORKSPACE_FOLDER } from '../../controller/workspace.js';
import { MODEL_PROTOCOL_V2 } from '../../runtime/model-protocol.js';
import { hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { checkReplay } from '../../writer/replay-check.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { controllerSetup, newInstanceOptions, resume, runInstance, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';
import { promptEvents, SCRIPTED_MODEL_ID, startScriptedModelServer, type ScriptedModelServer, type ScriptedReply, type ScriptedRequest } from '../../faults/scripted-model-server.js';
import { storedEvents as stored, type StoredEvent as Stored } from '../support/stored-events.js';

/** The timeout instance's call timeout: long enough that a loaded machine answers the other wakes in time. */
const SHORT_MODEL_TIMEOUT_MS = 3_000;

// ---------------------------------------------------------------------------------------
// the store


const ofType = (events: readonly Stored[], type: string): Stored[] => events.filter((e) => e.event_type === type);

/** The events strictly between a wake's WakeStarted and its WakeEnded (what its runtime, the writer and the controller recorded for it). */
function inWake(events: readonly Stored[], wakeId: string): Stored[] {
  const started = events.find((e) => e.event_type === 'ExperimentEvent.WakeStarted' && e.payload['wake_id'] === wakeId);
  const ended = events.find((e) => e.event_type === 'ExperimentEvent.WakeEnded' && e.payload['wake_id'] === wakeId);
  if (!started || !ended) throw new Error(`${wakeId}: no WakeStarted/WakeEnded pair in the store`);
  return events.filter((e) => e.seq > started.seq && e.seq < ended.seq);
}

const MODEL_EVENT = /^ModelOutputEvent\./;
/** Anything a used model answer would have produced. */
const USED_OUTPUT = ['ActionEvent.ActionProposed', 'ActionEvent.PermissionDecided', 'ActionEvent.ExecutionIntentRecorded', 'ActionEvent.ToolSucceeded', 'ActionEvent.ToolFailed', 'MemoryEvent.ClaimRecorded', 'MemoryEvent.FocusUpdated', 'MemoryEvent.TaskBoardChanged', 'MemoryEvent.JournalEntryWritten', 'PlanEvent.PlanRevisionProposed'];

function ledgerOf(events: readonly Stored[], wakeId: string): { model_calls: number; tokens: number; tool_calls: number; retries: number } {
  const ledgers = ofType(events, 'ExperimentEvent.BudgetLedgerRecorded').filter((e) => e.payload['wake_id'] === wakeId);
  expect(ledgers, `${wakeId}: one ledger`).toHaveLength(1);
  return ledgers[0]!.payload['used'] as { model_calls: number; tokens: number; tool_calls: number; retries: number };
}

function checkpointOf(events: readonly Stored[], wakeId: string): Stored {
  const checkpoints = ofType(events, 'ExperimentEvent.CheckpointRecorded').filter((e) => e.payload['wake_id'] === wakeId);
  expect(checkpoints, `${wakeId}: one checkpoint`).toHaveLength(1);
  return checkpoints[0]!;
}

function wakeEndedOutcome(events: readonly Stored[], wakeId: string): unknown {
  return events.find((e) => e.event_type === 'ExperimentEvent.WakeEnded' && e.payload['wake_id'] === wakeId)?.payload['outcome'];
}

function expectRunVerifies(setup: ControllerSetup, run: InstanceResult): void {
  expect(run.status).toBe('finished');
  expect(verifyDirectory(run.runDir).failures).toEqual([]);
  expect(checkRunFollowsPlan(run.runDir, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR }).failures).toEqual([]);
  expect(checkReplay(path.join(run.runDir, RUN_FILES.store)).match).toBe(true);
}

// ---------------------------------------------------------------------------------------
// answers

const wake = (n: number): string => `wake-${String(n).padStart(4, '0')}`;
const json = (value: unknown): ScriptedReply => ({ kind: 'content', content: JSON.stringify(value) });

function checkpoint(fields: Partial<Record<'current_goal_id' | 'attention_target' | 'waiting_condition' | 'next_action', string | null>> & { goal_status?: 'active' | 'submitted' | null; evidence_seqs?: number[] } = {}): Record<string, unknown> {
  return { current_goal_id: null, goal_status: null, attention_target: null, waiting_condition: null, next_action: null, evidence_seqs: [], ...fields };
}

function answer(parts: { actions?: unknown[]; claims?: unknown[]; plan_revision?: unknown; checkpoint?: Record<string, unknown>; attention?: string } = {}): Record<string, unknown> {
  return {
    protocol: MODEL_PROTOCOL_V2,
    focus: { attention_target: parts.attention ?? null, waiting_condition: null },
    actions: parts.actions ?? [],
    claims: parts.claims ?? [],
    plan_revision: parts.plan_revision ?? null,
    checkpoint: parts.checkpoint ?? checkpoint({ attention_target: parts.attention ?? null }),
  };
}

/** What every wake without a scripted answer gets: valid, proposes nothing, claims nothing. */
const benign = (wakeId: string): ScriptedReply => json(answer({ attention: `idle in ${wakeId}` }));

const write = (p: string, content: string, rationale = 'Keep the notes current.'): Record<string, unknown> => ({ tool: 'files', op: 'write', path: p, content, rationale });
const modify = (p: string, find: string, replace: string, rationale = 'Adjust the file.'): Record<string, unknown> => ({ tool: 'files', op: 'modify', path: p, find, replace, rationale });
// ds-model-output/2 claims: each type has its own fields (a FACT cites seqs, a PLAN nothing, an INFERENCE a confidence).
const fact = (statement: string, evidence_seqs: number[]): Record<string, unknown> => ({ claim_type: 'FACT', statement, evidence_seqs });
const plan = (statement: string): Record<string, unknown> => ({ claim_type: 'PLAN', statement });
const inference = (statement: string, confidence: number | null): Record<string, unknown> => ({ claim_type: 'INFERENCE', statement, confidence, alternatives: [] });

function scripted(byWake: Record<string, (request: ScriptedRequest) => ScriptedReply>): (request: ScriptedRequest) => ScriptedReply {
  return (request) => {
    if (request.wakeId === null) throw new Error(`a request without a wake id in its prompt: ${request.method} ${request.url}`);
    return (byWake[request.wakeId] ?? (() => benign(request.wakeId!)))(request);
  };
}

// ---- instance M: malformed output, HTTP failures --------------------------------------

/** A valid answer that would do a lot if it were used: a write, a journal entry, a task, a claim, a plan revision. */
const ACTIVE_ANSWER = answer({
  actions: [
    write('notes/m-prose.md', 'written from a used answer\n'),
    { tool: 'journal', op: 'write', text: 'Worked on the notes.', rationale: 'Keep the journal.' },
    { tool: 'task_board', op: 'add', task_id: 'task-m-e2e', title: 'Check the notes', status: 'todo', priority: 3, depends_on: [], rationale: 'Track it.' },
  ],
  claims: [plan('I will check the notes next.')],
  plan_revision: { reason: 'The notes need a check first.', goal_id: 'goal-m-e2e', goal_description: 'Check the notes, then write the report.', deadline_at: null, steps: [{ task_id: 'task-m-plan', title: 'Check the notes first' }] },
  attention: 'the notes',
});
const ACTIVE_TEXT = JSON.stringify(ACTIVE_ANSWER);

const M_TEXT = {
  oversizedCjk: '漢'.repeat(23_000),
  notJson: 'I will start by reading the source notes, then update the task board and write the outline.',
  unknownTool: JSON.stringify(answer({ actions: [write('notes/m-unknown-tool.md', 'should never exist\n'), { tool: 'shell', op: 'exec', command: 'touch /tmp/ds-e2e-pwned', rationale: 'Faster.' }], claims: [plan('Use the shell.')], attention: 'shell' })),
  inferenceWithoutConfidence: JSON.stringify(answer({ actions: [write('notes/m-inference.md', 'should never exist\n')], claims: [plan('Write the inference note.'), inference('The reviewer is away.', null)], attention: 'inference' })),
  proseAround: `Here is my answer:\n${ACTIVE_TEXT}\nLet me know if you need anything else.`,
};
// A status that is the server's answer to this request (a 5xx is no answer: retried, issue 31 item 6).
const M_HTTP_422_BODY = '{"error":{"message":"unprocessable request","type":"invalid_request_error"}}';
const M_NON_JSON_BODY = '<html><body><h1>502 Bad Gateway</h1></body></html>';

const M_SCRIPT = {
  [wake(1)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.notJson }),
  [wake(2)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.unknownTool }),
  [wake(3)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.inferenceWithoutConfidence }),
  [wake(4)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.proseAround }),
  [wake(5)]: (): ScriptedReply => ({ kind: 'raw', status: 422, body: M_HTTP_422_BODY }),
  [wake(6)]: (): ScriptedReply => ({ kind: 'raw', status: 200, body: M_NON_JSON_BODY, contentType: 'text/html' }),
  // The control: wake 4's JSON without the prose around it is used.
  [wake(7)]: (): ScriptedReply => ({ kind: 'content', content: ACTIVE_TEXT }),
  // 23,000 CJK chars: under the 48,000-char guard, but ~69 KB as an event (3 bytes each), over the writer's 64 KiB.
  [wake(8)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.oversizedCjk }),
};
const M_SCRIPTED_WAKES = Object.keys(M_SCRIPT);

// ---- instance P: paths, evidence, causation -------------------------------------------

const P_BLIND_ID = 'inst-e2e-paths';
const CHAIN_PATH = 'notes/e2e-chain.md';
const CHAIN_CONTENT = 'The causation chain, written by wake 1.\n';
const BIG_PATH = 'data/big.txt';
const BIG_BYTES = 64_000;
const PASSWD = '/etc/passwd';

interface PFixture {
  outsideDir: string;
  victim: string;
  passwd: { content: string; ino: number; mtimeMs: number } | null;
  /** Seqs the script chose from the prompts (or, for the ModelAnswered, derived from them), for the tests to check against the store. */
  chosen: { initializedCited: number | null; proposalCited: number | null; toolSucceededCited: number | null; modelAnsweredCited: number | null };
}

function pScript(runDir: () => string, fixture: PFixture): Record<string, (request: ScriptedRequest) => ScriptedReply> {
  const passwdContent = fixture.passwd?.content ?? 'root:x:0:0:root:/root:/bin/bash\n';
  return {
    [wake(1)]: (request) => {
      // Set the stage before any wake acts: a link to a folder outside, a link to a file
      // outside, and a file near the write limit, all in the run's workspace.
      const ws = path.join(runDir(), WORKSPACE_FOLDER);
      symlinkSync(fixture.outsideDir, path.join(ws, 'link-out'));
      symlinkSync(fixture.victim, path.join(ws, 'link-file.md'));
      mkdirSync(path.join(ws, 'data'), { recursive: true });
      writeFileSync(path.join(ws, BIG_PATH), 'x'.repeat(BIG_BYTES));
      // The starting conditions are shown (pinned ahead of the window), but they are not evidence.
      const initialized = promptEvents(request.user).find((e) => e.event_type === 'SystemEvent.SubjectInitialized');
      if (!initialized) throw new Error('wake 1: the prompt does not show the SubjectInitialized');
      fixture.chosen.initializedCited = initialized.seq;
      return json(
        answer({
          actions: [write(CHAIN_PATH, CHAIN_CONTENT, 'Start the chain note.')],
          // The FACT cites a shown event that is not evidence: refused by the writer; the PLAN and the INFERENCE after it are recorded.
          claims: [fact('The dataset has already arrived.', [initialized.seq]), plan('I will draft the outline next.'), inference('The reviewer is busy this week.', 0.4)],
          checkpoint: checkpoint({ current_goal_id: 'goal-continuity-report', goal_status: 'active', attention_target: 'chain note', next_action: 'draft the outline' }),
          attention: 'chain note',
        }),
      );
    },
    [wake(2)]: () =>
      json(
        answer({
          actions: [
            write('../outside.md', 'escaped\n', 'Put it next to the workspace.'),
            write(PASSWD, passwdContent, 'Fix the system.'),
            write('link-out/pwned.md', 'escaped through a link\n', 'Use the shortcut folder.'),
            write('link-file.md', 'overwritten through a link\n', 'Update the linked note.'),
            modify(BIG_PATH, 'x', 'y'.repeat(2_000), 'Grow the data file.'),
            // The control: the same file, a result within the limit.
            modify(BIG_PATH, 'x', 'yz', 'Mark the data file.'),
          ],
          attention: 'paths',
        }),
      ),
    [wake(3)]: () =>
      json(
        answer({
          actions: [
            write('../outside.md', 'escaped\n', 'Try again, other words.'),
            write('link-out/pwned.md', 'escaped through a link\n', 'Try the shortcut again.'),
            modify(BIG_PATH, 'x', 'y'.repeat(2_000), 'Grow it again.'),
            // The control: denied, but never proposed before.
            write('../elsewhere.md', 'escaped\n', 'Somewhere new.'),
          ],
          attention: 'paths again',
        }),
      ),
    [wake(4)]: (request) => {
      const events = promptEvents(request.user);
      const firstProposal = events.find((e) => e.event_type === 'ActionEvent.ActionProposed' && e.payload['proposal_id'] === 'wake-0003-a1');
      if (!firstProposal) throw new Error('wake 4: the prompt does not show wake-0003-a1');
      fixture.chosen.proposalCited = firstProposal.seq;
      // wake 3 proposed without a plan revision: its ModelAnswered is the event just before its first
      // ActionProposed. It is not shown (model output is never in the window); wake 7 cites it.
      fixture.chosen.modelAnsweredCited = firstProposal.seq - 1;
      const succeeded = events.filter((e) => e.event_type === 'ActionEvent.ToolSucceeded').at(-1);
      if (!succeeded) throw new Error('wake 4: the prompt shows no ToolSucceeded');
      fixture.chosen.toolSucceededCited = succeeded.seq;
      return json(
        answer({
          claims: [
            // The subject's own proposal is shown, but it is an intention, not evidence: refused by the writer.
            fact('My last answer established the plan.', [firstProposal.seq]),
            fact('The data file was marked.', [succeeded.seq]),
            plan('I will verify the data file.'),
          ],
          checkpoint: checkpoint({ attention_target: 'evidence', next_action: 'verify the data file', evidence_seqs: [succeeded.seq] }),
          attention: 'evidence',
        }),
      );
    },
    // More than the protocol's 2,000 chars of content: the schema refuses the whole answer.
    [wake(5)]: () => json(answer({ actions: [write('notes/oversized.md', 'z'.repeat(40_000), 'Dump everything.')], attention: 'oversized' })),
    // A task board change the projector would refuse (the id is on the scenario's board): the gate denies it; a new id is the control.
    [wake(6)]: () =>
      json(
        answer({
          actions: [
            { tool: 'task_board', op: 'add', task_id: 'task-read-sources', title: 'Read the sources', status: 'todo', priority: 1, depends_on: [], rationale: 'Track it.' },
            { tool: 'task_board', op: 'add', task_id: 'task-e2e-new', title: 'A new task', status: 'todo', priority: 3, depends_on: [], rationale: 'Track the new one.' },
          ],
          attention: 'task board',
        }),
      ),
    // A FACT citing a seq the window did not show (wake 3's ModelAnswered: its seq follows from the
    // prompt, but model output is never shown): the runtime refuses the whole answer before the
    // writer sees anything of it. The write beside it is never made.
    [wake(7)]: () => {
      if (fixture.chosen.modelAnsweredCited === null) throw new Error('wake 7: wake 4 chose no ModelAnswered seq');
      return json(answer({ actions: [write('notes/p-unshown-seq.md', 'should never exist\n')], claims: [fact('My answer of wake 3 set the plan.', [fixture.chosen.modelAnsweredCited]), plan('Keep going.')], attention: 'unshown seq' }));
    },
    // A FACT citing nothing: /2 requires at least one seq, so the protocol refuses the whole answer
    // (under /1 it reached the writer, which refused the claim alone).
    [wake(8)]: () => json(answer({ actions: [write('notes/p-no-evidence.md', 'should never exist\n')], claims: [fact('The dataset has already arrived.', []), plan('Keep going.')], attention: 'no evidence' })),
  };
}
const P_SCRIPTED_WAKES = [1, 2, 3, 4, 5, 6, 7, 8].map(wake);

// ---------------------------------------------------------------------------------------

describe('the wake loop end to end with a scripted model server on loopback (openai adapter, real processes)', () => {
  let setup: ControllerSetup;
  let serverM: ScriptedModelServer;
  let serverP: ScriptedModelServer;
  let serverT: ScriptedModelServer | null = null;
  let runM: InstanceResult;
  let runP: InstanceResult;
  let runT: InstanceResult | null = null;
  let eventsM: Stored[];
  let eventsP: Stored[];
  let eventsT: Stored[] = [];
  const timings: Record<string, number> = {};
  let fixture: PFixture;

  beforeAll(async () => {
    setup = controllerSetup();
    const outsideDir = path.join(setup.dir, 'outside-dir');
    mkdirSync(outsideDir);
    const victim = path.join(outsideDir, 'victim.md');
    writeFileSync(victim, 'victim: must stay as it is\n');
    let passwd: PFixture['passwd'] = null;
    if (existsSync(PASSWD)) {
      const s = statSync(PASSWD);
      passwd = { content: readFileSync(PASSWD, 'utf8'), ino: s.ino, mtimeMs: s.mtimeMs };
    }
    fixture = { outsideDir, victim, passwd, chosen: { initializedCited: null, proposalCited: null, toolSucceededCited: null, modelAnsweredCited: null } };

    const m = newInstanceOptions(setup, { name: 'e2e-malformed', groupBlindId: 'inst-e2e-malformed' });
    const p = newInstanceOptions(setup, { name: 'e2e-paths', groupBlindId: P_BLIND_ID });
    serverM = await startScriptedModelServer(scripted(M_SCRIPT));
    serverP = await startScriptedModelServer(scripted(pScript(() => p.options.runDir, fixture)));
    const timed = async (name: string, promise: () => Promise<InstanceResult>): Promise<InstanceResult> => {
      const started = Date.now();
      try {
        return await promise();
      } finally {
        timings[name] = Date.now() - started;
      }
    };
    const jobs: Promise<InstanceResult>[] = [
      timed('M', () => runInstance({ ...m, options: { ...m.options, model: serverM.modelChoice() } })),
      timed('P', () => runInstance({ ...p, options: { ...p.options, model: serverP.modelChoice() } })),
    ];
    const t = newInstanceOptions(setup, { name: 'e2e-timeout', groupBlindId: 'inst-e2e-timeout' });
    serverT = await startScriptedModelServer(scripted({ [wake(1)]: () => ({ kind: 'hang' }) }));
    jobs.push(timed('T', () => runInstance({ ...t, options: { ...t.options, model: serverT!.modelChoice(SHORT_MODEL_TIMEOUT_MS) } })));
    const results = await Promise.all(jobs);
    [runM, runP] = results as [InstanceResult, InstanceResult];
    runT = results[2] ?? null;
    eventsM = stored(runM.runDir);
    eventsP = stored(runP.runDir);
    if (runT) eventsT = stored(runT.runDir);
    console.log(`instance run times (ms): ${JSON.stringify(timings)}`);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([serverM, serverP, serverT].filter((s): s is ScriptedModelServer => s != null).map((s) => s.close()));
  });

  it('sets up what it claims: the scripts ran without error, every scheduled wake asked the server exactly once, and no scripted wake is a planned crash wake', () => {
    for (const [name, run, server] of [['M', runM, serverM], ['P', runP, serverP]] as const) {
      expect(server.errors, name).toEqual([]);
      const plan = ExperimentPlan.parse(JSON.parse(readFileSync(path.join(run.runDir, RUN_FILES.plan), 'utf8')));
      const crashWakes = plan.interventions.filter((i) => i.kind === 'runtime_crash' || i.kind === 'writer_crash').map((i) => i.deliver_wake_id);
      expect(crashWakes.length, name).toBeGreaterThan(0);
      for (const w of [...M_SCRIPTED_WAKES, ...P_SCRIPTED_WAKES]) expect(crashWakes, `${name}: ${w}`).not.toContain(w);
      // One call is one request, for every wake of the run, and every request named a wake of the plan.
      for (const w of plan.schedule.wakes) expect(server.requestsFor(w.wake_id), `${name}: requests for ${w.wake_id}`).toBe(1);
      expect(server.requests).toHaveLength(plan.schedule.wakes.length);
      expect(server.requests.every((r) => r.method === 'POST' && r.url === '/v1/chat/completions' && r.body?.['model'] === SCRIPTED_MODEL_ID)).toBe(true);
      // Each asks for the answer in the configured dialect, constrained by the answer's JSON Schema.
      for (const r of server.requests) expect((r.body?.['response_format'] as { type?: unknown } | undefined)?.type, `${name}: request ${r.index}`).toBe('json_schema');
      // The preflight ran before the first wake (and again at each runtime start): its probes are not wakes' calls.
      expect(server.probes.length, name).toBeGreaterThan(0);
      // Every model event of the run records the protocol the scripts answer in.
      const modelEvents = (name === 'M' ? eventsM : eventsP).filter((e) => MODEL_EVENT.test(e.event_type) && e.event_type !== 'ModelOutputEvent.ModelCallAttemptFailed');
      expect(modelEvents.length, name).toBe(plan.schedule.wakes.length);
      expect(new Set(modelEvents.map((e) => e.payload['protocol'])), name).toEqual(new Set([MODEL_PROTOCOL_V2]));
      // The manifest names the openai adapter: these runs really thought with the server.
      const model = JSON.parse(readFileSync(path.join(run.runDir, RUN_FILES.model), 'utf8')) as Record<string, unknown>;
      expect(model['adapter'], name).toBe('openai');
    }
  });

  it('malformed model output never executes anything: not JSON, a protocol miss (unknown tool, INFERENCE without confidence) and prose around JSON each record one ModelCallFailed{schema_violation} with the raw text, the call record and the usage the server counted, and nothing else of the answer; the run verifies', () => {
    const cases: [string, string, RegExp][] = [
      [wake(1), M_TEXT.notJson, /not JSON/],
      [wake(2), M_TEXT.unknownTool, /fails ds-model-output\/2: actions\.1/],
      [wake(3), M_TEXT.inferenceWithoutConfidence, /fails ds-model-output\/2: claims\.1\.confidence: Invalid input: expected number, received null/],
      [wake(4), M_TEXT.proseAround, /not JSON/],
    ];
    for (const [w, raw, detail] of cases) {
      const events = inWake(eventsM, w);
      const model = events.filter((e) => MODEL_EVENT.test(e.event_type));
      expect(model.map((e) => e.event_type), w).toEqual(['ModelOutputEvent.ModelCallFailed']);
      expect(model[0]!.payload['failure'], w).toBe('schema_violation');
      expect(model[0]!.payload['raw_output'], w).toBe(raw);
      expect(model[0]!.payload['detail'], w).toMatch(detail);
      expect(model[0]!.payload['adapter'], w).toBe('openai');
      // The call record of an answer that failed the protocol (issue 15 item 3): the server's usage,
      // finish reason and model, the prompt as counted (estimated: the scripted server has no tokenizer), one attempt.
      expect(model[0]!.payload, w).toMatchObject({ protocol: MODEL_PROTOCOL_V2, usage: { prompt_tokens: 100, completion_tokens: 20 }, usage_source: 'server', finish_reason: 'stop', response_model: SCRIPTED_MODEL_ID, prompt_count_source: 'estimate', attempts: 1 });
      expect(model[0]!.payload['prompt_tokens_counted'] as number, w).toBeGreaterThan(0);
      expect(events.filter((e) => USED_OUTPUT.includes(e.event_type)).map((e) => e.event_type), w).toEqual([]);
      // The tokens the server counted are spent although nothing was used: a misbehaving model is not cheap.
      expect(ledgerOf(eventsM, w), w).toEqual({ model_calls: 1, tokens: 120, tool_calls: 0, retries: 0, cost_nano_usd: null });
      // The wake still ends normally, with an empty checkpoint (nothing of the answer is used).
      expect(wakeEndedOutcome(eventsM, w), w).toBe('completed');
      expect(checkpointOf(eventsM, w).payload['attention_target'], w).toBeNull();
    }
    // Nothing any malformed answer proposed exists; the shell "tool" left nothing either.
    const ws = path.join(runM.runDir, WORKSPACE_FOLDER);
    expect(existsSync(path.join(ws, 'notes/m-unknown-tool.md'))).toBe(false);
    expect(existsSync(path.join(ws, 'notes/m-inference.md'))).toBe(false);
    expect(existsSync('/tmp/ds-e2e-pwned')).toBe(false);

    // The control: the same JSON as wake 4 without the prose is answered, used and executed (wake 7) —
    // so what refused wake 4 was the prose, and the checks above can see a used answer.
    const control = inWake(eventsM, wake(7));
    const answered = ofType(control, 'ModelOutputEvent.ModelAnswered');
    expect(answered).toHaveLength(1);
    expect(answered[0]!.payload['raw_output']).toBe(ACTIVE_TEXT);
    expect(answered[0]!.payload['system_fingerprint']).toBe('fp_scripted_e2e');
    expect(answered[0]!.payload).toMatchObject({ protocol: MODEL_PROTOCOL_V2, usage: { prompt_tokens: 100, completion_tokens: 20 }, usage_source: 'server', finish_reason: 'stop', response_model: SCRIPTED_MODEL_ID, prompt_count_source: 'estimate', attempts: 1 });
    expect(ofType(control, 'ModelOutputEvent.ModelCallFailed')).toEqual([]);
    expect(ofType(control, 'ActionEvent.ActionProposed')).toHaveLength(3);
    expect(ofType(control, 'PlanEvent.PlanRevisionProposed')).toHaveLength(1);
    expect(ofType(control, 'MemoryEvent.ClaimRecorded')).toHaveLength(1);
    expect(ofType(control, 'MemoryEvent.FocusUpdated')).toHaveLength(1);
    expect(ofType(control, 'MemoryEvent.TaskBoardChanged')).toHaveLength(1);
    expect(ofType(control, 'MemoryEvent.JournalEntryWritten')).toHaveLength(1);
    // The file wake 4's answer would have written did not exist before wake 7 wrote it.
    const intent = ofType(control, 'ActionEvent.ExecutionIntentRecorded');
    expect(intent.map((e) => [e.payload['path'], e.payload['pre_hash']])).toEqual([['notes/m-prose.md', null]]);
    expect(readFileSync(path.join(ws, 'notes/m-prose.md'), 'utf8')).toBe('written from a used answer\n');
    expect(ledgerOf(eventsM, wake(7))).toEqual({ model_calls: 1, tokens: 120, tool_calls: 3, retries: 0, cost_nano_usd: null });
    expect(checkpointOf(eventsM, wake(7)).payload['attention_target']).toBe('the notes');

    expectRunVerifies(setup, runM);
  });

  it('HTTP 422 and a non-JSON body become ModelCallFailed{http_error}: one model event per call, one request, no retry, ledger model_calls 1 and retries 0; a 200 whose body is no completion still spent its prompt (estimated), an error status nothing known', () => {
    const cases: [string, RegExp, 'none' | 'prompt estimated'][] = [
      [wake(5), /HTTP 422 .*unprocessable request/, 'none'],
      [wake(6), /the body is not JSON.*502 Bad Gateway/, 'prompt estimated'],
    ];
    for (const [w, detail, spent] of cases) {
      expect(serverM.requestsFor(w), w).toBe(1);
      const events = inWake(eventsM, w);
      const model = events.filter((e) => MODEL_EVENT.test(e.event_type));
      expect(model.map((e) => e.event_type), w).toEqual(['ModelOutputEvent.ModelCallFailed']);
      expect(model[0]!.payload['failure'], w).toBe('http_error');
      expect(model[0]!.payload['detail'], w).toMatch(detail);
      expect(model[0]!.payload['raw_output'], w).toBeNull();
      expect(model[0]!.payload['attempts'], w).toBe(1);
      expect(events.filter((e) => USED_OUTPUT.includes(e.event_type)).map((e) => e.event_type), w).toEqual([]);
      // HTTP 422: the server said nothing of tokens, so nothing is counted. A 200 whose body is no
      // completion: the prompt was sent and read, so it counts as spent, at the estimate, said so.
      const promptCounted = model[0]!.payload['prompt_tokens_counted'] as number;
      expect(promptCounted, w).toBeGreaterThan(0);
      if (spent === 'none') expect(model[0]!.payload, w).toMatchObject({ usage: null, usage_source: null });
      else expect(model[0]!.payload, w).toMatchObject({ usage: { prompt_tokens: promptCounted, completion_tokens: 0 }, usage_source: 'estimate', prompt_count_source: 'estimate' });
      expect(ledgerOf(eventsM, w), w).toEqual({ model_calls: 1, tokens: spent === 'none' ? 0 : promptCounted, tool_calls: 0, retries: 0, cost_nano_usd: null });
      expect(wakeEndedOutcome(eventsM, w), w).toBe('completed');
    }
    // Failed calls are not retried in the next wake either: the wake after a failure is asked once, with its own prompt.
    expect(serverM.requests.filter((r) => r.wakeId === wake(7))).toHaveLength(1);
    // Across the whole run: as many model events as requests, and no wake with a retry.
    const modelEvents = eventsM.filter((e) => MODEL_EVENT.test(e.event_type));
    expect(modelEvents).toHaveLength(serverM.requests.length);
    const ledgers = ofType(eventsM, 'ExperimentEvent.BudgetLedgerRecorded').map((e) => e.payload['used'] as { model_calls: number; retries: number });
    expect(ledgers.every((l) => l.model_calls === 1 && l.retries === 0)).toBe(true);
    expectRunVerifies(setup, runM);
  });

  it('an answer too large for one event in bytes (CJK) is recorded with the prefix that fits and never used; the instance goes on', () => {
    const events = inWake(eventsM, wake(8));
    const model = events.filter((e) => MODEL_EVENT.test(e.event_type));
    expect(model.map((e) => e.event_type)).toEqual(['ModelOutputEvent.ModelCallFailed']);
    expect(model[0]!.payload['failure']).toBe('schema_violation');
    expect(String(model[0]!.payload['detail'])).toMatch(/bytes as an event\) exceeds what the store keeps/);
    const kept = String(model[0]!.payload['raw_output']);
    expect(kept.length).toBeGreaterThan(10_000);
    expect(kept.length).toBeLessThan(23_000);
    expect(M_TEXT.oversizedCjk.startsWith(kept)).toBe(true);
    expect(events.filter((e) => USED_OUTPUT.includes(e.event_type))).toEqual([]);
    expect(runM.status).toBe('finished');
  });

  it(`a server that never answers becomes ModelCallFailed{timeout} after the model's call timeout (${SHORT_MODEL_TIMEOUT_MS} ms), with one request and no retry`, () => {
    expect(runT).not.toBeNull();
    expect(serverT!.errors).toEqual([]);
    expect(serverT!.requestsFor(wake(1))).toBe(1);
    const events = inWake(eventsT, wake(1));
    const model = events.filter((e) => MODEL_EVENT.test(e.event_type));
    expect(model.map((e) => e.event_type)).toEqual(['ModelOutputEvent.ModelCallFailed']);
    expect(model[0]!.payload['failure']).toBe('timeout');
    expect(model[0]!.payload['latency_ms'] as number).toBeGreaterThanOrEqual(SHORT_MODEL_TIMEOUT_MS - 50);
    expect(model[0]!.payload['detail']).toMatch(/the request was aborted/);
    expect(model[0]!.payload['attempts']).toBe(1);
    expect(events.filter((e) => USED_OUTPUT.includes(e.event_type))).toEqual([]);
    // The request was sent, so its prompt counts as spent (estimated, said so); nothing came back.
    const promptCounted = model[0]!.payload['prompt_tokens_counted'] as number;
    expect(model[0]!.payload).toMatchObject({ usage: { prompt_tokens: promptCounted, completion_tokens: 0 }, usage_source: 'estimate', raw_output: null });
    expect(ledgerOf(eventsT, wake(1))).toEqual({ model_calls: 1, tokens: promptCounted, tool_calls: 0, retries: 0, cost_nano_usd: null });
    // The control: the next wake is answered normally.
    expect(ofType(inWake(eventsT, wake(2)), 'ModelOutputEvent.ModelAnswered')).toHaveLength(1);
    expectRunVerifies(setup, runT!);
  });

  it('path traversal is denied and recorded with the failing rule: "..", an absolute path, symlinks out (folder and file), an oversized modify; nothing is written outside; a re-proposal is marked repeat_of_denied; an oversized write fails the schema', () => {
    const decisionOf = (proposalId: string): { decision: unknown; failed: string[]; passed: string[]; repeat: unknown } => {
      const decided = ofType(eventsP, 'ActionEvent.PermissionDecided').filter((e) => e.payload['proposal_id'] === proposalId);
      expect(decided, proposalId).toHaveLength(1);
      const rules = decided[0]!.payload['rules'] as { rule: string; passed: boolean }[];
      return { decision: decided[0]!.payload['decision'], failed: rules.filter((r) => !r.passed).map((r) => r.rule), passed: rules.filter((r) => r.passed).map((r) => r.rule), repeat: decided[0]!.payload['repeat_of_denied'] };
    };
    const denied: [string, string[], boolean][] = [
      // proposal, the rules that must fail, repeat_of_denied
      ['wake-0002-a1', ['path_inside_workspace', 'no_symlink_escape'], false],
      ['wake-0002-a2', ['path_inside_workspace', 'no_symlink_escape'], false],
      ['wake-0002-a3', ['no_symlink_escape'], false],
      ['wake-0002-a4', ['no_symlink_escape'], false],
      ['wake-0002-a5', ['size_within_limit'], false],
      ['wake-0003-a1', ['path_inside_workspace', 'no_symlink_escape'], true],
      ['wake-0003-a2', ['no_symlink_escape'], true],
      ['wake-0003-a3', ['size_within_limit'], true],
      ['wake-0003-a4', ['path_inside_workspace', 'no_symlink_escape'], false],
    ];
    for (const [proposalId, failing, repeat] of denied) {
      const d = decisionOf(proposalId);
      expect(d.decision, proposalId).toBe('deny');
      expect(d.failed, proposalId).toEqual(failing);
      expect(d.repeat, proposalId).toBe(repeat);
      // Never executed: no intent and no outcome for it.
      expect(ofType(eventsP, 'ActionEvent.ExecutionIntentRecorded').filter((e) => e.payload['proposal_id'] === proposalId), proposalId).toEqual([]);
    }
    // The symlinks stay inside lexically: only the resolution fails.
    expect(decisionOf('wake-0002-a3').passed).toContain('path_inside_workspace');
    // The control: a modify of the same file whose result is within the limit is allowed and done.
    const allowed = decisionOf('wake-0002-a6');
    expect(allowed).toMatchObject({ decision: 'allow', failed: [], repeat: false });
    const intents = ofType(eventsP, 'ActionEvent.ExecutionIntentRecorded').filter((e) => e.payload['proposal_id'] === 'wake-0002-a6');
    expect(intents).toHaveLength(1);
    const ws = path.join(runP.runDir, WORKSPACE_FOLDER);
    expect(readFileSync(path.join(ws, BIG_PATH), 'utf8')).toBe(`yz${'x'.repeat(BIG_BYTES - 1)}`);
    expect(ofType(inWake(eventsP, wake(2)), 'ActionEvent.PermissionDecided').map((e) => e.payload['decision'])).toEqual(['deny', 'deny', 'deny', 'deny', 'deny', 'allow']);
    expect(ledgerOf(eventsP, wake(2)).tool_calls).toBe(1);
    expect(ledgerOf(eventsP, wake(3)).tool_calls).toBe(0);

    // Nothing was written outside the workspace.
    expect(existsSync(path.join(runP.runDir, 'outside.md'))).toBe(false);
    expect(existsSync(path.join(runP.runDir, 'elsewhere.md'))).toBe(false);
    expect(readdirSync(fixture.outsideDir)).toEqual(['victim.md']);
    expect(readFileSync(fixture.victim, 'utf8')).toBe('victim: must stay as it is\n');
    expect(lstatSync(path.join(ws, 'link-file.md')).isSymbolicLink()).toBe(true);
    expect(lstatSync(path.join(ws, 'link-out')).isSymbolicLink()).toBe(true);
    if (fixture.passwd) {
      const s = statSync(PASSWD);
      expect({ content: readFileSync(PASSWD, 'utf8'), ino: s.ino, mtimeMs: s.mtimeMs }).toEqual(fixture.passwd);
    }

    // An oversized write is refused by the protocol schema itself: the answer is not used at all.
    const oversized = inWake(eventsP, wake(5));
    const model = oversized.filter((e) => MODEL_EVENT.test(e.event_type));
    expect(model.map((e) => [e.event_type, e.payload['failure']])).toEqual([['ModelOutputEvent.ModelCallFailed', 'schema_violation']]);
    expect(model[0]!.payload['detail']).toMatch(/actions\.0/);
    expect((model[0]!.payload['raw_output'] as string).length).toBeGreaterThan(40_000);
    expect(oversized.filter((e) => USED_OUTPUT.includes(e.event_type))).toEqual([]);
    expect(existsSync(path.join(ws, 'notes/oversized.md'))).toBe(false);

    expectRunVerifies(setup, runP);
  });

  it('a FACT citing a shown event that is not evidence (the starting conditions, the subject\'s own proposal) is refused by the writer (AppendRejected evidence_rejected) and the wake goes on; one citing a seq the window did not show, or no seq at all, fails the protocol and nothing of its answer is used; the run verifies', () => {
    const chosen = fixture.chosen;
    const atSeq = (seq: number | null): Stored | undefined => eventsP.find((e) => e.seq === seq);
    const rejected = ofType(eventsP, 'SystemEvent.AppendRejected').filter((e) => e.payload['reason'] === 'evidence_rejected');
    // Wake 1: the FACT citing the pinned starting conditions. The script's seq really is the SubjectInitialized.
    expect(atSeq(chosen.initializedCited)?.event_type).toBe('SystemEvent.SubjectInitialized');
    const w1 = inWake(eventsP, wake(1));
    const w1Rejected = ofType(w1, 'SystemEvent.AppendRejected');
    expect(w1Rejected.map((e) => e.payload['reason'])).toEqual(['evidence_rejected']);
    expect(w1Rejected[0]!.payload['message']).toMatch(new RegExp(`cites an event that is not evidence \\(SystemEvent\\.SubjectInitialized at seq ${chosen.initializedCited}\\)`));
    const w1Claims = ofType(w1, 'MemoryEvent.ClaimRecorded');
    expect(w1Claims.map((e) => [e.payload['claim_id'], e.payload['claim_type']])).toEqual([['wake-0001-c2', 'PLAN'], ['wake-0001-c3', 'INFERENCE']]);
    expect(w1Claims[1]!.payload['confidence']).toBe(0.4);
    expect(checkpointOf(eventsP, wake(1)).payload).toMatchObject({ current_goal_id: 'goal-continuity-report', goal_status: 'active', attention_target: 'chain note', next_action: 'draft the outline' });
    expect(ofType(w1, 'MemoryEvent.FocusUpdated')).toHaveLength(1);
    expect(wakeEndedOutcome(eventsP, wake(1))).toBe('completed');

    // Wake 4: the FACT citing the model's own earlier proposal (wake-0003-a1), which the window shows.
    const proposal = atSeq(chosen.proposalCited);
    expect(proposal?.event_type).toBe('ActionEvent.ActionProposed');
    expect(proposal?.payload['proposal_id']).toBe('wake-0003-a1');
    const w4 = inWake(eventsP, wake(4));
    const w4Rejected = ofType(w4, 'SystemEvent.AppendRejected');
    expect(w4Rejected.map((e) => e.payload['reason'])).toEqual(['evidence_rejected']);
    expect(w4Rejected[0]!.payload['message']).toMatch(new RegExp(`cites an event that is not evidence \\(ActionEvent\\.ActionProposed at seq ${chosen.proposalCited}\\)`));
    // The control in the same wake: a FACT citing a ToolSucceeded by its seq is accepted, stored with that event's id; so is the PLAN.
    const succeeded = atSeq(chosen.toolSucceededCited);
    expect(succeeded?.event_type).toBe('ActionEvent.ToolSucceeded');
    const w4Claims = ofType(w4, 'MemoryEvent.ClaimRecorded');
    expect(w4Claims.map((e) => [e.payload['claim_id'], e.payload['claim_type'], e.payload['evidence_event_ids']])).toEqual([
      ['wake-0004-c2', 'FACT', [succeeded!.event_id]],
      ['wake-0004-c3', 'PLAN', []],
    ]);
    expect(checkpointOf(eventsP, wake(4)).payload).toMatchObject({ attention_target: 'evidence', next_action: 'verify the data file', evidence_event_ids: [succeeded!.event_id] });
    expect(wakeEndedOutcome(eventsP, wake(4))).toBe('completed');

    // Wakes 7 and 8: the protocol refuses the whole answer before anything of it reaches the writer.
    const modelAnswered = atSeq(chosen.modelAnsweredCited);
    expect(modelAnswered?.event_type).toBe('ModelOutputEvent.ModelAnswered');
    expect(modelAnswered?.correlation_id).toBe(wake(3));
    const w7Request = serverP.requests.find((r) => r.wakeId === wake(7))!;
    expect(promptEvents(w7Request.user).map((e) => e.seq)).not.toContain(chosen.modelAnsweredCited);
    const refusedByProtocol: [string, RegExp, string][] = [
      [wake(7), new RegExp(`cites 1 seq\\(s\\) this wake's window did not show \\(claims\\.0\\.evidence_seqs\\.0: seq ${chosen.modelAnsweredCited}\\)`), 'notes/p-unshown-seq.md'],
      [wake(8), /claims\.0\.evidence_seqs: Too small/, 'notes/p-no-evidence.md'],
    ];
    for (const [w, detail, file] of refusedByProtocol) {
      const events = inWake(eventsP, w);
      const model = events.filter((e) => MODEL_EVENT.test(e.event_type));
      expect(model.map((e) => [e.event_type, e.payload['failure']]), w).toEqual([['ModelOutputEvent.ModelCallFailed', 'schema_violation']]);
      expect(model[0]!.payload['detail'], w).toMatch(detail);
      expect(events.filter((e) => USED_OUTPUT.includes(e.event_type)).map((e) => e.event_type), w).toEqual([]);
      expect(ofType(events, 'SystemEvent.AppendRejected'), w).toEqual([]);
      expect(existsSync(path.join(runP.runDir, WORKSPACE_FOLDER, file)), w).toBe(false);
      expect(wakeEndedOutcome(eventsP, w), w).toBe('completed');
    }

    // Exactly these two refusals in the whole run, and no stored FACT without eligible evidence.
    expect(rejected).toHaveLength(2);
    for (const f of ofType(eventsP, 'MemoryEvent.ClaimRecorded').filter((e) => e.payload['claim_type'] === 'FACT')) {
      const ids = f.payload['evidence_event_ids'] as string[];
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) expect(eventsP.find((e) => e.event_id === id)?.event_type).toMatch(/^(WorldEvent\.|ActionEvent\.ToolSucceeded$|ActionEvent\.ToolReconciled$|MemoryEvent\.ClaimRecorded$)/);
    }
    expectRunVerifies(setup, runP);
  });

  it('a task board change the projector would refuse is denied at the gate (task_board_consistent), and the instance goes on; a new task id is added', () => {
    const decided = (proposalId: string) => ofType(eventsP, 'ActionEvent.PermissionDecided').find((e) => e.payload['proposal_id'] === proposalId)!;
    const denied = decided('wake-0006-a1');
    expect(denied.payload['decision']).toBe('deny');
    expect((denied.payload['rules'] as { rule: string; passed: boolean }[]).filter((r) => !r.passed).map((r) => r.rule)).toEqual(['task_board_consistent']);
    expect(decided('wake-0006-a2').payload['decision']).toBe('allow');
    const changes = ofType(eventsP, 'MemoryEvent.TaskBoardChanged').filter((e) => String(e.payload['proposal_id']).startsWith('wake-0006-'));
    expect(changes.map((e) => e.payload['task_id'])).toEqual(['task-e2e-new']);
    expect(runP.status).toBe('finished');
  });

  it('an allowed files write has the causation chain proposal ← decision ← intent ← outcome, and the workspace file has the intended post hash; a denied proposal stops at its decision', () => {
    const byId = new Map(eventsP.map((e) => [e.event_id, e]));
    const causedBy = (event: Stored, type: string): Stored[] => eventsP.filter((e) => e.causation_id === event.event_id && e.event_type === type);

    const proposed = ofType(eventsP, 'ActionEvent.ActionProposed').filter((e) => e.payload['proposal_id'] === 'wake-0001-a1');
    expect(proposed).toHaveLength(1);
    expect(proposed[0]!.payload).toMatchObject({ tool: 'files', op: 'write', args: { path: CHAIN_PATH, content: CHAIN_CONTENT } });
    const [decision] = causedBy(proposed[0]!, 'ActionEvent.PermissionDecided');
    expect(decision?.payload).toMatchObject({ proposal_id: 'wake-0001-a1', decision: 'allow' });
    const intents = causedBy(decision!, 'ActionEvent.ExecutionIntentRecorded');
    expect(intents).toHaveLength(1);
    const intent = intents[0]!;
    const postHash = hashText(CHAIN_CONTENT);
    expect(intent.payload).toMatchObject({ proposal_id: 'wake-0001-a1', permission_event_id: decision!.event_id, op: 'write', path: CHAIN_PATH, pre_hash: null, intended_post_hash: postHash });
    const outcomes = eventsP.filter((e) => e.causation_id === intent.event_id);
    expect(outcomes.map((e) => e.event_type)).toEqual(['ActionEvent.ToolSucceeded']);
    expect(outcomes[0]!.payload).toMatchObject({ intent_event_id: intent.event_id, observed_post_hash: postHash });
    // In store order, each link after the one it names.
    expect([proposed[0]!.seq, decision!.seq, intent.seq, outcomes[0]!.seq]).toEqual([...[proposed[0]!.seq, decision!.seq, intent.seq, outcomes[0]!.seq]].sort((a, b) => a - b));
    expect(byId.get(intent.causation_id!)).toBe(decision);
    const onDisk = readFileSync(path.join(runP.runDir, WORKSPACE_FOLDER, CHAIN_PATH));
    expect(hashText(onDisk)).toBe(postHash);

    // Every intent of the run hangs off an allowing decision, every outcome off an intent.
    for (const i of ofType(eventsP, 'ActionEvent.ExecutionIntentRecorded')) expect(byId.get(i.causation_id!)?.payload['decision']).toBe('allow');
    for (const o of [...ofType(eventsP, 'ActionEvent.ToolSucceeded'), ...ofType(eventsP, 'ActionEvent.ToolFailed')]) expect(byId.get(o.causation_id!)?.event_type).toBe('ActionEvent.ExecutionIntentRecorded');

    // The bad case: a denied proposal has its decision (caused by it) and nothing caused by the decision.
    const deniedProposal = ofType(eventsP, 'ActionEvent.ActionProposed').find((e) => e.payload['proposal_id'] === 'wake-0002-a1')!;
    const [deniedDecision] = causedBy(deniedProposal, 'ActionEvent.PermissionDecided');
    expect(deniedDecision?.payload['decision']).toBe('deny');
    expect(eventsP.filter((e) => e.causation_id === deniedDecision!.event_id)).toEqual([]);
  });
});


describe('an emergency stop while the model call is under way', () => {
  it('lets the call finish and records it (exactly one model event per request), ends the wake stopped, and the instance resumes to a verified finish', async () => {
    const setup = controllerSetup();
    const stop = new AbortController();
    let server: ScriptedModelServer | null = null;
    server = await startScriptedModelServer(async (request) => {
      if (request.wakeId === wake(3)) {
        // The operator stops while this answer is on its way; the runtime must still record it.
        stop.abort('test: emergency stop during the model call of wake-0003');
        await new Promise((resolve) => setTimeout(resolve, 1_500));
      }
      return benign(request.wakeId ?? 'unknown');
    });
    try {
      const run = newInstanceOptions(setup, { name: 'e2e-stop-mid-call', signal: stop.signal, model: server.modelChoice() });
      const stopped = await runInstance(run);
      expect(stopped.status).toBe('stopped');
      const events = stored(stopped.runDir);
      const modelEvents = events.filter((e) => MODEL_EVENT.test(e.event_type));
      expect(modelEvents).toHaveLength(server.requests.length);
      expect(modelEvents.at(-1)!.payload['wake_id']).toBe(wake(3));
      expect(wakeEndedOutcome(events, wake(3))).toBe('stopped');
      expect(events.some((e) => e.event_type === 'SystemEvent.EmergencyStopped')).toBe(true);
      const resumed = await resume(run);
      expect(resumed.status).toBe('finished');
      expect(stored(resumed.runDir).filter((e) => MODEL_EVENT.test(e.event_type))).toHaveLength(server.requests.length);
      expect(verifyDirectory(resumed.runDir).failures).toEqual([]);
      expect(checkRunFollowsPlan(resumed.runDir, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR }).failures).toEqual([]);
    } finally {
      await server.close();
    }
  }, 120_000);
});
