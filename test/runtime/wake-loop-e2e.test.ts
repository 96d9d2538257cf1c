// The wake loop end to end with a real model server (issue 5 items 1, 3, 5, 6, 7, 10): real
// instances (controller in-process, real ds-writer and ds-runtime processes, same-uid
// isolation) whose model is the `openai` adapter pointed at a scripted OpenAI-compatible
// server on loopback (test/support/scripted-model-server.ts). The script answers by the wake
// id the prompt names, so each chosen wake gets one crafted answer; every other wake gets a
// benign valid answer (nothing proposed, nothing claimed).
//
// Two instances run side by side in beforeAll:
//   M — malformed output and transport failures (wakes 1–7);
//   P — paths, permissions, evidence and the causation chain (wakes 1–5).
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
import { checkRunFollowsPlan } from '../../controller/plan-conformance.js';
import { ExperimentPlan } from '../../controller/experiment-plan.js';
import { WORKSPACE_FOLDER } from '../../controller/workspace.js';
import { MODEL_PROTOCOL } from '../../runtime/model-protocol.js';
import { eventIdFor } from '../../schema/envelope-hash.js';
import { hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { checkReplay } from '../../writer/replay-check.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { controllerSetup, newInstanceOptions, resume, runInstance, type ControllerSetup } from '../support/controller-run.js';
import { promptEvents, SCRIPTED_MODEL_ID, startScriptedModelServer, type ScriptedModelServer, type ScriptedReply, type ScriptedRequest } from '../support/scripted-model-server.js';
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
  expect(checkRunFollowsPlan(run.runDir, setup.key.keys.publicKey).failures).toEqual([]);
  expect(checkReplay(path.join(run.runDir, RUN_FILES.store)).match).toBe(true);
}

// ---------------------------------------------------------------------------------------
// answers

const wake = (n: number): string => `wake-${String(n).padStart(4, '0')}`;
const json = (value: unknown): ScriptedReply => ({ kind: 'content', content: JSON.stringify(value) });

function checkpoint(fields: Partial<Record<'current_goal_id' | 'goal_status' | 'attention_target' | 'waiting_condition' | 'next_action', string | null>> & { evidence_event_ids?: string[] } = {}): Record<string, unknown> {
  return { current_goal_id: null, goal_status: null, attention_target: null, waiting_condition: null, next_action: null, evidence_event_ids: [], ...fields };
}

function answer(parts: { actions?: unknown[]; claims?: unknown[]; plan_revision?: unknown; checkpoint?: Record<string, unknown>; attention?: string } = {}): Record<string, unknown> {
  return {
    protocol: MODEL_PROTOCOL,
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
const claim = (claim_type: 'FACT' | 'PLAN' | 'INFERENCE', statement: string, evidence_event_ids: string[] = [], confidence: number | null = null): Record<string, unknown> => ({ claim_type, statement, evidence_event_ids, confidence, alternatives: [] });

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
  claims: [claim('PLAN', 'I will check the notes next.')],
  plan_revision: { reason: 'The notes need a check first.', goal_id: 'goal-m-e2e', goal_description: 'Check the notes, then write the report.', deadline_at: null, steps: [{ task_id: 'task-m-plan', title: 'Check the notes first' }] },
  attention: 'the notes',
});
const ACTIVE_TEXT = JSON.stringify(ACTIVE_ANSWER);

const M_TEXT = {
  oversizedCjk: '漢'.repeat(23_000),
  notJson: 'I will start by reading the source notes, then update the task board and write the outline.',
  unknownTool: JSON.stringify(answer({ actions: [write('notes/m-unknown-tool.md', 'should never exist\n'), { tool: 'shell', op: 'exec', command: 'touch /tmp/ds-e2e-pwned', rationale: 'Faster.' }], claims: [claim('PLAN', 'Use the shell.')], attention: 'shell' })),
  inferenceWithoutConfidence: JSON.stringify(answer({ actions: [write('notes/m-inference.md', 'should never exist\n')], claims: [claim('PLAN', 'Write the inference note.'), claim('INFERENCE', 'The reviewer is away.', [], null)], attention: 'inference' })),
  proseAround: `Here is my answer:\n${ACTIVE_TEXT}\nLet me know if you need anything else.`,
};
const M_HTTP_500_BODY = '{"error":{"message":"internal server error","type":"server_error"}}';
const M_NON_JSON_BODY = '<html><body><h1>502 Bad Gateway</h1></body></html>';

const M_SCRIPT = {
  [wake(1)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.notJson }),
  [wake(2)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.unknownTool }),
  [wake(3)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.inferenceWithoutConfidence }),
  [wake(4)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.proseAround }),
  [wake(5)]: (): ScriptedReply => ({ kind: 'raw', status: 500, body: M_HTTP_500_BODY }),
  [wake(6)]: (): ScriptedReply => ({ kind: 'raw', status: 200, body: M_NON_JSON_BODY, contentType: 'text/html' }),
  // The control: wake 4's JSON without the prose around it is used.
  [wake(7)]: (): ScriptedReply => ({ kind: 'content', content: ACTIVE_TEXT }),
  // 23,000 CJK chars: under the 48,000-char guard, but ~69 KB as an event (3 bytes each), over the writer's 64 KiB.
  [wake(8)]: (): ScriptedReply => ({ kind: 'content', content: M_TEXT.oversizedCjk }),
};
const M_SCRIPTED_WAKES = Object.keys(M_SCRIPT);

// ---- instance P: paths, evidence, causation -------------------------------------------

const P_BLIND_ID = 'inst-e2e-paths';
/** The subject id the controller derives from the batch (controller/instance-runner.ts): experiment id and replicate of newInstanceOptions. */
const P_SUBJECT_ID = 'subject-exp-test-1-r1';
const CHAIN_PATH = 'notes/e2e-chain.md';
const CHAIN_CONTENT = 'The causation chain, written by wake 1.\n';
const BIG_PATH = 'data/big.txt';
const BIG_BYTES = 64_000;
const PASSWD = '/etc/passwd';

interface PFixture {
  outsideDir: string;
  victim: string;
  passwd: { content: string; ino: number; mtimeMs: number } | null;
  /** Ids the script chose from the prompts, for the tests to check against the store. */
  chosen: { modelAnsweredCited: string | null; toolSucceededCited: string | null };
}

function pScript(runDir: () => string, fixture: PFixture): Record<string, (request: ScriptedRequest) => ScriptedReply> {
  const passwdContent = fixture.passwd?.content ?? 'root:x:0:0:root:/root:/bin/bash\n';
  return {
    [wake(1)]: () => {
      // Set the stage before any wake acts: a link to a folder outside, a link to a file
      // outside, and a file near the write limit, all in the run's workspace.
      const ws = path.join(runDir(), WORKSPACE_FOLDER);
      symlinkSync(fixture.outsideDir, path.join(ws, 'link-out'));
      symlinkSync(fixture.victim, path.join(ws, 'link-file.md'));
      mkdirSync(path.join(ws, 'data'), { recursive: true });
      writeFileSync(path.join(ws, BIG_PATH), 'x'.repeat(BIG_BYTES));
      return json(
        answer({
          actions: [write(CHAIN_PATH, CHAIN_CONTENT, 'Start the chain note.')],
          // The FACT cites nothing: refused by the writer; the PLAN and the INFERENCE after it are recorded.
          claims: [claim('FACT', 'The dataset has already arrived.'), claim('PLAN', 'I will draft the outline next.'), claim('INFERENCE', 'The reviewer is busy this week.', [], 0.4)],
          checkpoint: checkpoint({ current_goal_id: 'goal-continuity-report', goal_status: 'in progress', attention_target: 'chain note', next_action: 'draft the outline' }),
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
      // wake 3 proposed without a plan revision: its ModelAnswered is the event just before its first ActionProposed.
      const firstProposal = events.find((e) => e.event_type === 'ActionEvent.ActionProposed' && e.payload['proposal_id'] === 'wake-0003-a1');
      if (!firstProposal) throw new Error('wake 4: the prompt does not show wake-0003-a1');
      fixture.chosen.modelAnsweredCited = eventIdFor(P_SUBJECT_ID, firstProposal.seq - 1);
      const succeeded = events.filter((e) => e.event_type === 'ActionEvent.ToolSucceeded').at(-1);
      if (!succeeded) throw new Error('wake 4: the prompt shows no ToolSucceeded');
      fixture.chosen.toolSucceededCited = succeeded.event_id;
      return json(
        answer({
          claims: [
            claim('FACT', 'My last answer established the plan.', [fixture.chosen.modelAnsweredCited]),
            claim('FACT', 'The data file was marked.', [succeeded.event_id]),
            claim('PLAN', 'I will verify the data file.'),
          ],
          checkpoint: checkpoint({ attention_target: 'evidence', next_action: 'verify the data file', evidence_event_ids: [succeeded.event_id] }),
          attention: 'evidence',
        }),
      );
    },
    // More than the protocol's 32,768 chars of content: the schema refuses the whole answer.
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
  };
}
const P_SCRIPTED_WAKES = [1, 2, 3, 4, 5, 6].map(wake);

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
    fixture = { outsideDir, victim, passwd, chosen: { modelAnsweredCited: null, toolSucceededCited: null } };

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
      // The manifest names the openai adapter: these runs really thought with the server.
      const model = JSON.parse(readFileSync(path.join(run.runDir, RUN_FILES.model), 'utf8')) as Record<string, unknown>;
      expect(model['adapter'], name).toBe('openai');
    }
  });

  it('malformed model output never executes anything: not JSON, a protocol miss (unknown tool, INFERENCE without confidence) and prose around JSON each record one ModelCallFailed{schema_violation} with the raw text and nothing else of the answer; the run verifies', () => {
    const cases: [string, string, RegExp][] = [
      [wake(1), M_TEXT.notJson, /not JSON/],
      [wake(2), M_TEXT.unknownTool, /actions\.1/],
      [wake(3), M_TEXT.inferenceWithoutConfidence, /claims\.1\.confidence: an INFERENCE carries a confidence/],
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
      expect(events.filter((e) => USED_OUTPUT.includes(e.event_type)).map((e) => e.event_type), w).toEqual([]);
      expect(ledgerOf(eventsM, w), w).toEqual({ model_calls: 1, tokens: 0, tool_calls: 0, retries: 0 });
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
    expect(ledgerOf(eventsM, wake(7))).toEqual({ model_calls: 1, tokens: 120, tool_calls: 3, retries: 0 });
    expect(checkpointOf(eventsM, wake(7)).payload['attention_target']).toBe('the notes');

    expectRunVerifies(setup, runM);
  });

  it('HTTP 500 and a non-JSON body become ModelCallFailed{http_error}: one model event per call, one request, no retry, ledger model_calls 1 and retries 0', () => {
    const cases: [string, RegExp][] = [
      [wake(5), /HTTP 500 .*internal server error/],
      [wake(6), /the body is not JSON.*502 Bad Gateway/],
    ];
    for (const [w, detail] of cases) {
      expect(serverM.requestsFor(w), w).toBe(1);
      const events = inWake(eventsM, w);
      const model = events.filter((e) => MODEL_EVENT.test(e.event_type));
      expect(model.map((e) => e.event_type), w).toEqual(['ModelOutputEvent.ModelCallFailed']);
      expect(model[0]!.payload['failure'], w).toBe('http_error');
      expect(model[0]!.payload['detail'], w).toMatch(detail);
      expect(model[0]!.payload['raw_output'], w).toBeNull();
      expect(events.filter((e) => USED_OUTPUT.includes(e.event_type)).map((e) => e.event_type), w).toEqual([]);
      expect(ledgerOf(eventsM, w), w).toEqual({ model_calls: 1, tokens: 0, tool_calls: 0, retries: 0 });
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
    expect(events.filter((e) => USED_OUTPUT.includes(e.event_type))).toEqual([]);
    expect(ledgerOf(eventsT, wake(1))).toEqual({ model_calls: 1, tokens: 0, tool_calls: 0, retries: 0 });
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

  it('a FACT without evidence, and one citing a ModelAnswered, is refused by the writer (AppendRejected evidence_rejected); the wake goes on with its other claims and checkpoint; the run verifies', () => {
    const rejected = ofType(eventsP, 'SystemEvent.AppendRejected').filter((e) => e.payload['reason'] === 'evidence_rejected');
    // Wake 1: the FACT citing nothing.
    const w1 = inWake(eventsP, wake(1));
    const w1Rejected = ofType(w1, 'SystemEvent.AppendRejected');
    expect(w1Rejected.map((e) => e.payload['reason'])).toEqual(['evidence_rejected']);
    expect(w1Rejected[0]!.payload['message']).toMatch(/cites no evidence/);
    const w1Claims = ofType(w1, 'MemoryEvent.ClaimRecorded');
    expect(w1Claims.map((e) => [e.payload['claim_id'], e.payload['claim_type']])).toEqual([['wake-0001-c2', 'PLAN'], ['wake-0001-c3', 'INFERENCE']]);
    expect(w1Claims[1]!.payload['confidence']).toBe(0.4);
    expect(checkpointOf(eventsP, wake(1)).payload).toMatchObject({ current_goal_id: 'goal-continuity-report', goal_status: 'in progress', attention_target: 'chain note', next_action: 'draft the outline' });
    expect(ofType(w1, 'MemoryEvent.FocusUpdated')).toHaveLength(1);
    expect(wakeEndedOutcome(eventsP, wake(1))).toBe('completed');

    // Wake 4: the FACT citing the model's own earlier answer. The script's id really is wake 3's ModelAnswered.
    const cited = eventsP.find((e) => e.event_id === fixture.chosen.modelAnsweredCited);
    expect(cited?.event_type).toBe('ModelOutputEvent.ModelAnswered');
    expect(cited?.correlation_id).toBe(wake(3));
    const w4 = inWake(eventsP, wake(4));
    const w4Rejected = ofType(w4, 'SystemEvent.AppendRejected');
    expect(w4Rejected.map((e) => e.payload['reason'])).toEqual(['evidence_rejected']);
    expect(w4Rejected[0]!.payload['message']).toMatch(/cites an event that is not evidence \(ModelOutputEvent\.ModelAnswered/);
    // The control in the same wake: a FACT citing a ToolSucceeded is accepted, and so is the PLAN.
    const w4Claims = ofType(w4, 'MemoryEvent.ClaimRecorded');
    expect(w4Claims.map((e) => [e.payload['claim_id'], e.payload['claim_type'], e.payload['evidence_event_ids']])).toEqual([
      ['wake-0004-c2', 'FACT', [fixture.chosen.toolSucceededCited]],
      ['wake-0004-c3', 'PLAN', []],
    ]);
    expect(eventsP.find((e) => e.event_id === fixture.chosen.toolSucceededCited)?.event_type).toBe('ActionEvent.ToolSucceeded');
    expect(checkpointOf(eventsP, wake(4)).payload).toMatchObject({ attention_target: 'evidence', next_action: 'verify the data file', evidence_event_ids: [fixture.chosen.toolSucceededCited] });
    expect(wakeEndedOutcome(eventsP, wake(4))).toBe('completed');

    // Exactly these two refusals in the whole run, and no stored FACT without eligible evidence.
    expect(rejected).toHaveLength(2);
    for (const fact of ofType(eventsP, 'MemoryEvent.ClaimRecorded').filter((e) => e.payload['claim_type'] === 'FACT')) {
      const ids = fact.payload['evidence_event_ids'] as string[];
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
      expect(checkRunFollowsPlan(resumed.runDir, setup.key.keys.publicKey).failures).toEqual([]);
    } finally {
      await server.close();
    }
  }, 120_000);
});
