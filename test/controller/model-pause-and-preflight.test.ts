// The controller's side of a failing model server (issue 15 item 5), with real instances (the
// controller in-process, real ds-writer and ds-runtime processes) whose model is the real
// `openai` adapter pointed at real HTTP servers on loopback:
//
// - the pre-registered pause rule (controller/instance-runner.ts applyPauseRule): a server that
//   dies mid-run (closed: its connections reset, then refused) costs the pre-registered number of
//   model calls, each tried under the pre-registered retry policy attempt by attempt, and then the
//   instance stops — recorded as an EmergencyStopped of the controller's own, verifying, and
//   resumable: a resume while the server is still down is refused by the preflight with nothing
//   lost, and a resume once it is back runs to the end. The forged case: as many transport
//   failures, but never two in a row (an answer between each), do not pause;
// - the preflight at instance level: a server that serves another model, or answers the probe with
//   prose, is refused by the controller's check before hour 0 (controller/model-check.ts) with the
//   reason and nothing written; a good server's check is recorded ok in preflight.jsonl, first the
//   controller's, then once per runtime start (instance-processes.ts recordPreflight).
//
// A pre-registration of the test's own (the default one with a 4-hour wake period, 16 wakes; a
// retry policy of 3 attempts with backoffs 10 and 20 ms; a pause after 2 transport failures) keeps
// it fast; the backoffs differ so that a test sees each used in its place.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExperimentPlan } from '../../design/experiment-plan.js';
import { InstanceError, type InstanceResult } from '../../controller/instance-runner.js';
import { ModelCheckError } from '../../controller/model-check-error.js';
import { constraintShownBy } from '../../controller/instance-processes.js';
import { lockPrereg } from '../../design/prereg.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { checkReplay } from '../../writer/replay-check.js';
import { runCli } from '../support/cli.js';
import { controllerSetup, controllerSetupWith, newInstanceOptions, resume, runInstance, type ControllerSetup, type InstanceRun } from '../support/controller-run.js';
import { closeAllLoopbacks, completion, json as sendJson, modelList, MODEL as LOOPBACK_MODEL, startLoopback } from '../runtime/openai-loopback-server.js';
import { EMPTY_ANSWER, SCRIPTED_MODEL_ID, startScriptedModelServer, type Script, type ScriptedModelServer, type ScriptedReply } from '../../faults/scripted-model-server.js';
import { ofType, storedEvents, type StoredEvent } from '../support/stored-events.js';
import { recordedUsableDataRule, summarizeRun, type RunSummary } from '../../controller/run-summary.js';
import { describeFailures } from '../../schema/usable-data.js';

const MAX_ATTEMPTS = 3;
const BACKOFF_MS = [10, 20];
const PAUSE_AFTER = 2;
/** No call here hangs (every server answers or refuses at once): the timeout only bounds the wake's own timeout. */
const MODEL_TIMEOUT_MS = 1_000;
const PAUSE_OPERATOR = 'controller (pre-registered pause rule)';

const wake = (n: number): string => `wake-${String(n).padStart(4, '0')}`;
const benign = (wakeId: string): ScriptedReply => ({ kind: 'content', content: JSON.stringify({ ...EMPTY_ANSWER, focus: { attention_target: `idle in ${wakeId}`, waiting_condition: null } }) });

/** The default pre-registration with a short schedule and a fast retry policy, locked with the test key. */
function pauseSetup(): ControllerSetup {
  return controllerSetupWith('prereg-pause', (prereg) => {
    prereg['wake_schedule']!['base_period_sim_minutes'] = 240;
    prereg['model_calls'] = { usable_data: { min_accepted_share: 0.5 }, transport_retry: { max_attempts: MAX_ATTEMPTS, backoff_ms: BACKOFF_MS }, pause_after_consecutive_transport_failures: PAUSE_AFTER };
  });
}

function preflightLines(runDir: string): Record<string, unknown>[] {
  return readFileSync(path.join(runDir, RUN_FILES.preflight), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    // The model's checks only: the schema subset's line (issue 36) checks no model.
    .filter((l) => !String(l['stage']).includes('schema subset'));
}

function inWake(events: readonly StoredEvent[], wakeId: string, type: string): StoredEvent[] {
  return events.filter((e) => e.event_type === type && e.payload['wake_id'] === wakeId);
}

function ledgerOf(events: readonly StoredEvent[], wakeId: string): unknown {
  const ledgers = inWake(events, wakeId, 'ExperimentEvent.BudgetLedgerRecorded');
  expect(ledgers, `${wakeId}: one ledger`).toHaveLength(1);
  return ledgers[0]!.payload['used'];
}

const startedWakes = (events: readonly StoredEvent[]): unknown[] => ofType(events, 'ExperimentEvent.WakeStarted').map((e) => e.payload['wake_id']);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection, the promise resolved');
    },
    (error: unknown) => error,
  );
}

// ---------------------------------------------------------------------------------------

describe('the pre-registered pause rule: a server that dies mid-run', () => {
  // Wake 1 is answered; in wake 2 the server closes (its open connection reset, every later one
  // refused): wakes 2 and 3 fail as transport, and the rule (2) pauses the instance after wake 3.
  const DIES_IN = wake(2);
  let setup: ControllerSetup;
  let run: InstanceRun;
  let server: ScriptedModelServer;
  let port: number;
  let died = false;
  let paused: InstanceResult;
  let pausedEvents: StoredEvent[];
  let pausedVerify: { code: number; stdout: string; stderr: string };
  let stillDown: unknown;
  let stillDownEvents: StoredEvent[];
  let stillDownLines: Record<string, unknown>[];
  let resumed: InstanceResult;
  let resumedEvents: StoredEvent[];
  let resumedVerify: { code: number; stdout: string; stderr: string };
  let wakesPlanned: number;

  const script: Script = (request) => {
    if (request.wakeId === null) throw new Error(`a request without a wake id: ${request.method} ${request.url}`);
    if (request.wakeId === DIES_IN && !died) {
      died = true;
      // Closes every connection (this request's too) and stops listening: the server is gone.
      void server.close();
      return { kind: 'hang' };
    }
    return benign(request.wakeId);
  };

  beforeAll(async () => {
    setup = pauseSetup();
    server = await startScriptedModelServer(script);
    port = Number(new URL(server.baseUrl).port);
    run = newInstanceOptions(setup, { name: 'pause', model: server.modelChoice(MODEL_TIMEOUT_MS) });
    paused = await runInstance(run);
    pausedEvents = storedEvents(paused.runDir);
    pausedVerify = await runCli('verify', [paused.runDir, '--open']);
    wakesPlanned = ExperimentPlan.parse(JSON.parse(readFileSync(path.join(paused.runDir, RUN_FILES.plan), 'utf8'))).schedule.wakes.length;
    // The server is still down: the resume's preflight refuses before any wake.
    stillDown = await rejection(resume(run));
    stillDownEvents = storedEvents(paused.runDir);
    stillDownLines = preflightLines(paused.runDir);
    // The server is back, where the run folder's model.json points.
    server = await startScriptedModelServer(script, { port });
    resumed = await resume(run);
    resumedEvents = storedEvents(resumed.runDir);
    resumedVerify = await runCli('verify', [resumed.runDir]);
  }, 150_000);

  afterAll(async () => {
    await server?.close();
  });

  it('stops after the pre-registered number of consecutive transport failures, with a reason naming the rule', () => {
    expect(paused.status).toBe('stopped');
    expect(paused.finalHead).toBeNull();
    expect(paused.wakesRun).toBe(3);
    expect(paused.stopReason).toMatch(/^paused: 2 model call\(s\) in a row got no answer from the server \(2 transport\), reaching/);
    expect(paused.stopReason).toContain(`no answer after ${MAX_ATTEMPTS} attempt(s) each`);
    expect(paused.stopReason).toContain(`the pre-registered limit of ${PAUSE_AFTER}`);
    expect(paused.stopReason).toContain(`--resume ${paused.runDir}`);
    // Nothing after the pause: wake 4 never started.
    expect(startedWakes(pausedEvents)).toEqual([wake(1), wake(2), wake(3)]);
    expect(pausedEvents.map((e) => e.event_type)).not.toContain('SystemEvent.StoreSealed');
  });

  it('records the pause as an EmergencyStopped of the controller itself, after the last wake ended, with the head signed', () => {
    const stops = ofType(pausedEvents, 'SystemEvent.EmergencyStopped');
    expect(stops).toHaveLength(1);
    expect(stops[0]!.payload).toEqual({ operator: PAUSE_OPERATOR, reason: paused.stopReason });
    const lastEnded = inWake(pausedEvents, wake(3), 'ExperimentEvent.WakeEnded');
    expect(lastEnded).toHaveLength(1);
    expect(lastEnded[0]!.payload['outcome']).toBe('completed');
    expect(stops[0]!.seq).toBeGreaterThan(lastEnded[0]!.seq);
    expect(pausedEvents.at(-1)!.event_type).toBe('SystemEvent.ChainHeadSigned');
    expect(paused.head.seq).toBe(pausedEvents.at(-1)!.seq);
  });

  it('records every attempt of the two failed calls, with the pre-registered backoffs, then one transport failure per call', () => {
    expect(inWake(pausedEvents, wake(1), 'ModelOutputEvent.ModelAnswered')).toHaveLength(1);
    expect(inWake(pausedEvents, wake(1), 'ModelOutputEvent.ModelCallAttemptFailed')).toEqual([]);
    for (const w of [wake(2), wake(3)]) {
      const attempts = inWake(pausedEvents, w, 'ModelOutputEvent.ModelCallAttemptFailed').map((e) => e.payload);
      expect(attempts.map((a) => [a['call_number'], a['attempt'], a['backoff_ms']]), w).toEqual([
        [1, 1, BACKOFF_MS[0]],
        [1, 2, BACKOFF_MS[1]],
        [1, 3, null],
      ]);
      // The server closed under wake 2's first attempt (a reset); every later connection is refused.
      const kinds = attempts.map((a) => a['kind']);
      expect(kinds.slice(1), w).toEqual(['connection_refused', 'connection_refused']);
      expect(w === DIES_IN ? ['connection_reset', 'connection_refused'] : ['connection_refused'], w).toContain(kinds[0]);
      const failed = inWake(pausedEvents, w, 'ModelOutputEvent.ModelCallFailed');
      expect(failed, w).toHaveLength(1);
      expect(failed[0]!.payload).toMatchObject({ failure: 'transport', attempts: MAX_ATTEMPTS, usage: null, raw_output: null });
      expect(String(failed[0]!.payload['detail'])).toContain(`in ${MAX_ATTEMPTS} attempt(s)`);
      expect(inWake(pausedEvents, w, 'ModelOutputEvent.ModelAnswered'), w).toEqual([]);
      // The ledger tells the attempts beyond the first apart from the one call made.
      expect(ledgerOf(pausedEvents, w), w).toMatchObject({ model_calls: 1, retries: MAX_ATTEMPTS - 1, tokens: 0 });
    }
  });

  it('leaves a folder that verifies with `npm run verify -- --open`', () => {
    expect(pausedVerify.stderr).toBe('');
    expect(pausedVerify.code, pausedVerify.stdout).toBe(0);
  });

  it('a resume while the server is still down is refused by the preflight (InstanceError model), with no wake started and nothing lost', () => {
    expect(stillDown).toBeInstanceOf(InstanceError);
    const error = stillDown as InstanceError;
    expect(error.code).toBe('model');
    // Three wakes ran before this resume: the refusal says so, never "Nothing ran" (issue 31 item 4).
    expect(error.message).toContain('the model failed its check at the start of this resume, after 3 of ');
    expect(error.message).toContain(`(none in this resume; ${wake(4)} comes next)`);
    expect(error.message).not.toContain('Nothing ran');
    expect(error.message).toMatch(/The stop is recorded \(head signed at seq \d+\)\. The signed manifest of /);
    expect(error.message).toContain('the model server does not answer');
    // The server is the problem, not what the manifest pins: the advice is to bring it back and resume.
    expect(error.message).toContain(`then continue with npm run experiment -- --resume ${paused.runDir}`);
    expect(error.message).toContain(`in ${MAX_ATTEMPTS} attempt(s)`);
    expect(startedWakes(stillDownEvents)).toEqual([wake(1), wake(2), wake(3)]);
    // Everything of the paused run is still there, unchanged, in front of what the refused resume added.
    expect(stillDownEvents.slice(0, pausedEvents.length)).toEqual(pausedEvents);
    const lines = stillDownLines;
    // the check before hour 0 and the first runtime start (ok), then this refused resume
    expect(lines.map((l) => l['ok'])).toEqual([true, true, false]);
    expect(String(lines[2]!['reason'])).toContain('the model server does not answer');
    // Each attempt of the model list is said, with the pre-registered waits between them.
    const said = (lines[2]!['lines'] as string[]).join('\n');
    expect(said).toContain(`attempt 1 brought no answer (connection_refused); trying again in ${BACKOFF_MS[0]} ms`);
    expect(said).toContain(`attempt 2 brought no answer (connection_refused); trying again in ${BACKOFF_MS[1]} ms`);
    expect(said).toContain('attempt 3 brought no answer (connection_refused)');
  });

  it('a resume once the server is back goes on to the end: sealed, verifying, replaying, every wake after the pause answered', () => {
    expect(resumed.status).toBe('finished');
    expect(resumed.finalHead).not.toBeNull();
    expect(startedWakes(resumedEvents)).toHaveLength(wakesPlanned);
    expect(resumed.wakesRun).toBe(wakesPlanned - 3);
    expect(resumedVerify.code, `${resumedVerify.stdout}\n${resumedVerify.stderr}`).toBe(0);
    expect(checkReplay(path.join(resumed.runDir, RUN_FILES.store)).match).toBe(true);
    // Only the two calls of the dead server failed; every other wake's call was answered.
    expect(ofType(resumedEvents, 'ModelOutputEvent.ModelCallFailed').map((e) => e.payload['wake_id'])).toEqual([wake(2), wake(3)]);
    const answeredWakes = new Set(ofType(resumedEvents, 'ModelOutputEvent.ModelAnswered').map((e) => e.payload['wake_id']));
    for (let n = 4; n <= wakesPlanned; n += 1) expect(answeredWakes.has(wake(n)), wake(n)).toBe(true);
    // Two resumes (the refused one and this one), each recorded; the pause is the first stop, by the controller.
    expect(ofType(resumedEvents, 'SystemEvent.Resumed').map((e) => e.payload['reason'])).toEqual([`--resume ${resumed.runDir}`, `--resume ${resumed.runDir}`]);
    expect(ofType(resumedEvents, 'SystemEvent.EmergencyStopped')[0]!.payload).toEqual({ operator: PAUSE_OPERATOR, reason: paused.stopReason });
  });

  // Found by this suite and fixed (issue 15 review).
  it('records a start refused by the preflight as a stop whose reason is the refusal (not as a controller that died unrecorded)', () => {
    const added = stillDownEvents.slice(pausedEvents.length);
    const refusal = ofType(added, 'SystemEvent.EmergencyStopped');
    expect(refusal).toHaveLength(1);
    expect(String(refusal[0]!.payload['reason'])).toContain('the model server does not answer');
    expect(ofType(resumedEvents, 'SystemEvent.EmergencyStopped').map((e) => String(e.payload['reason'])).filter((r) => r.startsWith('found on resume'))).toEqual([]);
  });

  it('records one preflight per runtime start: ok for the good server (the pre-registered policy among its facts), refused while it was down', () => {
    const lines = preflightLines(resumed.runDir);
    // the controller's check before hour 0 · the runtime's start · refused resume · resume · the planned runtime crash's restart
    expect(lines.map((l) => l['ok'])).toEqual([true, true, false, true, true]);
    expect(lines[0]!['stage']).toBe('before hour 0, with the plan (controller)');
    expect(lines[0]!['forecast']).toMatchObject({ forecast_version: '1.0.0' });
    for (const line of lines.filter((l) => l['ok'] === true)) {
      expect(line).toMatchObject({ adapter: 'openai', model_id: SCRIPTED_MODEL_ID });
      expect(line['facts']).toMatchObject({ served_model: SCRIPTED_MODEL_ID, dialect: 'vllm', retry_max_attempts: MAX_ATTEMPTS, retry_backoff_ms: BACKOFF_MS.join(','), probe_schema_valid: true });
      expect((line['lines'] as string[]).some((l) => l.includes('the constraint is honoured'))).toBe(true);
    }
    expect(run.lines).toContain('model preflight: OK');
  });
});

describe('the pre-registered pause rule: a server that answers HTTP 500 to every call (issue 31 item 6)', () => {
  // Wake 1 is answered; from wake 2 on, until the test heals it, the server answers every chat
  // request with HTTP 500 (it is up: /v1/models and the preflight's probe are answered). A 5xx is
  // no answer the subject could have given: each call is tried under the pre-registered policy and
  // ends `transport`, and the rule pauses the instance after as many calls as it would for a
  // server that is down. Once healthy, a resume runs to the end.
  const SICK_FROM = 2;
  let setup: ControllerSetup;
  let run: InstanceRun;
  let server: ScriptedModelServer;
  let sick = true;
  let paused: InstanceResult;
  let pausedEvents: StoredEvent[];
  let pausedVerify: { code: number; stdout: string; stderr: string };
  let resumed: InstanceResult;
  let resumedEvents: StoredEvent[];
  let resumedVerify: { code: number; stdout: string; stderr: string };
  let wakesPlanned: number;

  beforeAll(async () => {
    setup = pauseSetup();
    server = await startScriptedModelServer((request) => {
      if (request.wakeId === null) throw new Error(`a request without a wake id: ${request.method} ${request.url}`);
      if (sick && Number(request.wakeId.slice('wake-'.length)) >= SICK_FROM) return { kind: 'raw', status: 500, body: '{"error":{"code":500,"message":"the slot crashed","type":"server_error"}}' };
      return benign(request.wakeId);
    });
    run = newInstanceOptions(setup, { name: 'http-500', model: server.modelChoice(MODEL_TIMEOUT_MS) });
    paused = await runInstance(run);
    pausedEvents = storedEvents(paused.runDir);
    pausedVerify = await runCli('verify', [paused.runDir, '--open']);
    wakesPlanned = ExperimentPlan.parse(JSON.parse(readFileSync(path.join(paused.runDir, RUN_FILES.plan), 'utf8'))).schedule.wakes.length;
    sick = false;
    resumed = await resume(run);
    resumedEvents = storedEvents(resumed.runDir);
    resumedVerify = await runCli('verify', [resumed.runDir]);
  }, 150_000);

  afterAll(async () => {
    await server?.close();
  });

  it('pauses after the pre-registered number of calls, the reason naming the calls that got no answer', () => {
    expect(server.errors).toEqual([]);
    expect(paused.status).toBe('stopped');
    expect(paused.finalHead).toBeNull();
    expect(paused.wakesRun).toBe(SICK_FROM + PAUSE_AFTER - 1);
    expect(paused.stopReason).toMatch(/^paused: 2 model call\(s\) in a row got no answer from the server \(2 transport\), reaching/);
    expect(paused.stopReason).toContain(`the pre-registered limit of ${PAUSE_AFTER}`);
    expect(paused.stopReason).toContain(`--resume ${paused.runDir}`);
    expect(startedWakes(pausedEvents)).toEqual([wake(1), wake(2), wake(3)]);
  });

  it('tried every call under the policy, each attempt recorded as http_500, the call `transport` with the kinds in its detail', () => {
    for (const w of [wake(2), wake(3)]) {
      const attempts = inWake(pausedEvents, w, 'ModelOutputEvent.ModelCallAttemptFailed').map((e) => e.payload);
      expect(attempts.map((a) => [a['attempt'], a['kind'], a['backoff_ms']]), w).toEqual([
        [1, 'http_500', BACKOFF_MS[0]],
        [2, 'http_500', BACKOFF_MS[1]],
        [3, 'http_500', null],
      ]);
      expect(server.requestsFor(w), w).toBe(MAX_ATTEMPTS);
      const failed = inWake(pausedEvents, w, 'ModelOutputEvent.ModelCallFailed');
      expect(failed, w).toHaveLength(1);
      expect(failed[0]!.payload).toMatchObject({ failure: 'transport', attempts: MAX_ATTEMPTS, usage: null, raw_output: null });
      expect(String(failed[0]!.payload['detail']), w).toContain('(http_500, http_500, http_500)');
      expect(ledgerOf(pausedEvents, w), w).toMatchObject({ model_calls: 1, retries: MAX_ATTEMPTS - 1, tokens: 0 });
    }
  });

  it('records the pause as an EmergencyStopped of the controller, after the last wake ended, the head signed, and verifies --open', () => {
    const stops = ofType(pausedEvents, 'SystemEvent.EmergencyStopped');
    expect(stops.map((e) => e.payload)).toEqual([{ operator: PAUSE_OPERATOR, reason: paused.stopReason }]);
    expect(stops[0]!.seq).toBeGreaterThan(inWake(pausedEvents, wake(3), 'ExperimentEvent.WakeEnded')[0]!.seq);
    expect(pausedEvents.at(-1)!.event_type).toBe('SystemEvent.ChainHeadSigned');
    expect(pausedVerify.stderr).toBe('');
    expect(pausedVerify.code, pausedVerify.stdout).toBe(0);
  });

  it('once the server is healthy, a resume goes on to the end: sealed, verifying, every later wake answered', () => {
    expect(resumed.status).toBe('finished');
    expect(resumed.wakesRun).toBe(wakesPlanned - 3);
    expect(resumedVerify.code, `${resumedVerify.stdout}\n${resumedVerify.stderr}`).toBe(0);
    expect(ofType(resumedEvents, 'ModelOutputEvent.ModelCallFailed').map((e) => e.payload['wake_id'])).toEqual([wake(2), wake(3)]);
    const answeredWakes = new Set(ofType(resumedEvents, 'ModelOutputEvent.ModelAnswered').map((e) => e.payload['wake_id']));
    for (let n = 4; n <= wakesPlanned; n += 1) expect(answeredWakes.has(wake(n)), wake(n)).toBe(true);
  });
});

describe('the pause rule counts every call that got no answer from the server: a broken stream, then a 500 (issue 31 item 7)', () => {
  // Wake 2's answer starts (HTTP 200, an event stream) and breaks off without a finish_reason or
  // [DONE]: stream_broken. Wake 3's call gets HTTP 500 on every attempt: transport. Two calls in a
  // row without an answer from the server reach the limit (2); the pause line and the run's
  // usable-data summary name the same counts in the same words.
  let setup: ControllerSetup;
  let server: ScriptedModelServer;
  let paused: InstanceResult;
  let events: StoredEvent[];
  let summary: RunSummary;

  beforeAll(async () => {
    setup = pauseSetup();
    server = await startScriptedModelServer((request) => {
      if (request.wakeId === null) throw new Error(`a request without a wake id: ${request.method} ${request.url}`);
      if (request.wakeId === wake(2)) {
        const chunk = { id: 'c', object: 'chat.completion.chunk', created: 1, model: SCRIPTED_MODEL_ID, choices: [{ index: 0, delta: { content: '{"protocol":' }, finish_reason: null }] };
        return { kind: 'raw', status: 200, contentType: 'text/event-stream', body: `data: ${JSON.stringify(chunk)}\n\n` };
      }
      if (request.wakeId === wake(3)) return { kind: 'raw', status: 500, body: '{"error":"the slot crashed"}' };
      return benign(request.wakeId);
    });
    paused = await runInstance(newInstanceOptions(setup, { name: 'broken-then-500', model: server.modelChoice(MODEL_TIMEOUT_MS) }));
    events = storedEvents(paused.runDir);
    summary = summarizeRun(paused.runDir, recordedUsableDataRule(paused.runDir));
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it('set-up: wake 2 broke off mid-stream (one request, never retried), wake 3 got no answer in any attempt', () => {
    expect(server.errors).toEqual([]);
    expect(inWake(events, wake(2), 'ModelOutputEvent.ModelCallFailed').map((e) => e.payload['failure'])).toEqual(['stream_broken']);
    expect(server.requestsFor(wake(2))).toBe(1);
    expect(inWake(events, wake(3), 'ModelOutputEvent.ModelCallFailed').map((e) => e.payload['failure'])).toEqual(['transport']);
  });

  it('pauses after the two, its line naming both kinds in the words of the usable-data summary', () => {
    expect(paused.status).toBe('stopped');
    expect(startedWakes(events)).toEqual([wake(1), wake(2), wake(3)]);
    expect(summary.usable_data.by_failure).toMatchObject({ transport: 1, stream_broken: 1 });
    const words = describeFailures(summary.usable_data.by_failure);
    expect(words).toBe('1 transport, 1 stream_broken');
    expect(summary.usable_data.reason).toContain(`failed: ${words}`);
    expect(paused.stopReason).toMatch(/^paused: 2 model call\(s\) in a row got no answer from the server \(1 transport, 1 stream_broken\), reaching the pre-registered limit of 2/);
    expect(ofType(events, 'SystemEvent.EmergencyStopped').map((e) => e.payload)).toEqual([{ operator: PAUSE_OPERATOR, reason: paused.stopReason }]);
  });
});

describe('the pause rule, forged case: HTTP 500s interleaved with answers do not pause', () => {
  // Every odd wake's call fails as transport (HTTP 500 on each attempt), every even wake's is
  // answered: as many failures as the rule would need many times over, never two in a row.
  let setup: ControllerSetup;
  let server: ScriptedModelServer;
  let result: InstanceResult;
  let events: StoredEvent[];

  beforeAll(async () => {
    setup = pauseSetup();
    server = await startScriptedModelServer((request) => {
      if (request.wakeId === null) throw new Error(`a request without a wake id: ${request.method} ${request.url}`);
      const n = Number(request.wakeId.slice('wake-'.length));
      return n % 2 === 1 ? { kind: 'raw', status: 500, body: '{"error":{"message":"the slot crashed","type":"server_error","code":500}}' } : benign(request.wakeId);
    });
    result = await runInstance(newInstanceOptions(setup, { name: 'alternating', model: server.modelChoice(MODEL_TIMEOUT_MS) }));
    events = storedEvents(result.runDir);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it('runs to the end without a stop, though more transport failures than the limit were recorded', () => {
    expect(server.errors).toEqual([]);
    expect(result.stopReason).toBeNull();
    expect(result.status).toBe('finished');
    expect(ofType(events, 'SystemEvent.EmergencyStopped')).toEqual([]);
    const failedWakes = ofType(events, 'ModelOutputEvent.ModelCallFailed').filter((e) => e.payload['failure'] === 'transport').map((e) => e.payload['wake_id'] as string);
    expect(failedWakes.length).toBeGreaterThan(PAUSE_AFTER);
    expect(failedWakes.every((w) => Number(w.slice(5)) % 2 === 1)).toBe(true);
    expect(startedWakes(events)).toHaveLength(result.wakesTotal);
  });

  it('tried each failed call under the pre-registered policy: three requests per call, waiting at least the backoff between them', () => {
    for (const w of [wake(1), wake(3)]) {
      const attempts = inWake(events, w, 'ModelOutputEvent.ModelCallAttemptFailed').map((e) => e.payload);
      expect(attempts.map((a) => [a['attempt'], a['kind'], a['backoff_ms']]), w).toEqual([
        [1, 'http_500', BACKOFF_MS[0]],
        [2, 'http_500', BACKOFF_MS[1]],
        [3, 'http_500', null],
      ]);
      const received = server.requests.filter((r) => r.wakeId === w).map((r) => r.receivedAt);
      expect(received, w).toHaveLength(MAX_ATTEMPTS);
      expect(received[1]! - received[0]!, w).toBeGreaterThanOrEqual(BACKOFF_MS[0]!);
      expect(received[2]! - received[1]!, w).toBeGreaterThanOrEqual(BACKOFF_MS[1]!);
    }
    // An answered wake between them: one request, no attempt record.
    expect(server.requestsFor(wake(2))).toBe(1);
    expect(inWake(events, wake(2), 'ModelOutputEvent.ModelCallAttemptFailed')).toEqual([]);
  });
});

describe('the pause rule across a planned runtime crash', () => {
  // The planned runtime crash of this schedule is in wake 4 (checked against plan.json): its
  // answer proposes a write, so the runtime is killed at its first execution intent, after the
  // answer was recorded. Wakes 3 and 5 fail as transport. Wake 4's call reached the model, so
  // the failures are not consecutive and must not pause.
  let server: ScriptedModelServer;
  let result: InstanceResult;
  let events: StoredEvent[];
  let crashWake: string | undefined;

  beforeAll(async () => {
    const setup = pauseSetup();
    server = await startScriptedModelServer((request) => {
      if (request.wakeId === null) throw new Error(`a request without a wake id: ${request.method} ${request.url}`);
      if (request.wakeId === wake(3) || request.wakeId === wake(5)) return { kind: 'raw', status: 503, body: '{"error":"unavailable"}' };
      if (request.wakeId === wake(4)) {
        return { kind: 'content', content: JSON.stringify({ ...EMPTY_ANSWER, actions: [{ tool: 'files', op: 'write', path: 'notes/crash-wake.md', content: 'written in the crash wake\n', rationale: 'Keep the notes current.' }] }) };
      }
      return benign(request.wakeId);
    }, { build: 'scripted-b1' });
    result = await runInstance(newInstanceOptions(setup, { name: 'crash-between', model: server.modelChoice(MODEL_TIMEOUT_MS) }));
    events = storedEvents(result.runDir);
    const plan = ExperimentPlan.parse(JSON.parse(readFileSync(path.join(result.runDir, RUN_FILES.plan), 'utf8')));
    crashWake = plan.interventions.find((i) => i.kind === 'runtime_crash')?.deliver_wake_id;
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it('the set-up holds: wake 4 is the crash wake, its call answered and the runtime killed in it; wakes 3 and 5 failed as transport', () => {
    expect(crashWake).toBe(wake(4));
    expect(inWake(events, wake(4), 'ModelOutputEvent.ModelAnswered')).toHaveLength(1);
    expect(inWake(events, wake(4), 'ExperimentEvent.InterventionDelivered').map((e) => e.payload['intervention_id'])).toEqual(['iv-runtime-crash']);
    expect(inWake(events, wake(4), 'ExperimentEvent.WakeEnded').map((e) => e.payload['outcome'])).toEqual(['crashed']);
    // Killed at its first execution intent: the runtime never reported the wake's counts.
    const restarted = ofType(events, 'SystemEvent.ProcessRestarted').filter((e) => e.payload['process'] === 'runtime');
    expect(restarted).toHaveLength(1);
    expect(restarted[0]!.payload['previous_exit']).toEqual({ code: null, signal: 'SIGKILL' });
    expect(ofType(events, 'ActionEvent.ExecutionIntentRecorded').length).toBeGreaterThanOrEqual(1);
    for (const w of [wake(3), wake(5)]) expect(inWake(events, w, 'ModelOutputEvent.ModelCallFailed').map((e) => e.payload['failure']), w).toEqual(['transport']);
  });

  it('the restart is checked without a probe call (issue 34): the same build showed the constraint honoured at the first start, and a probe would evict the cache', () => {
    const lines = preflightLines(result.runDir) as unknown as { ok: boolean; facts: Record<string, unknown>; lines: string[] }[];
    // The check before hour 0, the runtime's first start, its restart after the crash.
    expect(lines).toHaveLength(3);
    expect(lines[1]!.facts).toMatchObject({ server_build: 'scripted-b1', probe_schema_valid: true, probe_skipped: null });
    expect(lines[2]!.ok).toBe(true);
    expect(lines[2]!.facts).toMatchObject({ server_build: 'scripted-b1', probe_schema_valid: null });
    expect(String(lines[2]!.facts['probe_skipped'])).toContain('this server (build scripted-b1) showed the constraint honoured');
    // Every call of no wake (the probes, the check's speed calls) came before the first wake's.
    const firstWake = Math.min(...server.requests.map((r) => r.receivedAt));
    expect(server.probes.length).toBeGreaterThan(0);
    expect(server.probes.filter((p) => p.receivedAt > firstWake)).toEqual([]);
  });

  it('forged: a check whose probe did not show the constraint honoured, or that names no build, lets no restart skip its probe', () => {
    const honoured = { probe_schema_valid: true, server_build: 'b1', dialect: 'llamacpp' };
    expect(constraintShownBy(honoured)).toEqual({ server_build: 'b1', dialect: 'llamacpp' });
    for (const facts of [{ ...honoured, probe_schema_valid: false }, { ...honoured, probe_schema_valid: null }, { ...honoured, server_build: null }, { ...honoured, dialect: 'grammar-of-my-own' }, {}]) expect(constraintShownBy(facts), JSON.stringify(facts)).toBeNull();
  });

  // Found by this suite and fixed (issue 15 review).
  it('does not pause: an answered call between two transport failures breaks the run, crash or not', () => {
    expect(result.stopReason).toBeNull();
    expect(result.status).toBe('finished');
  });
});

// ---------------------------------------------------------------------------------------

describe('the preflight at instance level', () => {
  let setup: ControllerSetup;

  beforeAll(() => {
    setup = pauseSetup();
  });

  afterAll(closeAllLoopbacks);

  /** Starts an instance that must be refused by its preflight; returns the error, the run folder's preflight lines and its events. */
  async function refusedStart(name: string, model: InstanceRun['options']['model']) {
    const run = newInstanceOptions(setup, { name, model });
    const error = await rejection(runInstance(run));
    return { run, error };
  }

  /** Refused by the check before hour 0 (controller/model-check.ts): nothing of the run folder was written. */
  function expectRefused(refused: Awaited<ReturnType<typeof refusedStart>>, reason: string): void {
    expect(refused.error).toBeInstanceOf(ModelCheckError);
    const error = refused.error as ModelCheckError;
    expect(error.errorCode).toBe('model_check_refused');
    expect(error.message).toContain('the model failed its check before hour 0');
    expect(error.message).toContain(reason);
    expect(error.message).toContain('Nothing was written: fix what it names and run the same command again');
    expect(error.message).not.toContain('--resume');
    expect(existsSync(refused.run.options.runDir)).toBe(false);
    // Said on screen, line by line.
    expect(refused.run.lines.some((l) => l.startsWith('model check: '))).toBe(true);
  }

  it('a server that serves another model: refused, the reason names both ids', async () => {
    const server = await startScriptedModelServer(() => {
      throw new Error('no wake may run');
    });
    try {
      const choice = server.modelChoice(MODEL_TIMEOUT_MS);
      if (choice.adapter !== 'openai') throw new Error('the scripted server names an openai model');
      const refused = await refusedStart('other-model', { ...choice, model_id: 'another-model' });
      expectRefused(refused, `the server serves one model, "${SCRIPTED_MODEL_ID}", not the configured "another-model"`);
      expect(server.requests).toEqual([]);
      expect(server.probes).toEqual([]);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('a server that answers the probe with prose (the constraint ignored): refused, the reason says the constraint is not honoured', async () => {
    const prose = 'Once upon a time, there was a little robot who loved to read notes.';
    const server = await startLoopback({ models: modelList(LOOPBACK_MODEL), chat: (_seen, res) => sendJson(res, 200, completion(prose, { usage: { prompt_tokens: 40, completion_tokens: 16 } })) });
    const refused = await refusedStart('prose-probe', {
      adapter: 'openai',
      base_url: server.baseUrl,
      model_id: LOOPBACK_MODEL,
      api_key_env: null,
      params: { temperature: 0, top_p: null, seed: 7, max_tokens: null },
      dialect: 'vllm',
      stream: false,
      context_size: null,
      timeout_ms: MODEL_TIMEOUT_MS,
      config_file: null,
      config_sha256: null,
    });
    expectRefused(refused, 'the server ignored the constraint (dialect vllm): the answer is not JSON');
    expect((refused.error as ModelCheckError).message).toContain('Once upon a time');
    // What the refused probe said is kept with the refusal (no run folder exists to keep it).
    expect((refused.error as ModelCheckError).facts['probe_raw_output']).toBe(prose);
    // The probe was made once (an answer is never retried).
    expect(server.to('/v1/chat/completions')).toHaveLength(1);
    const chat = server.to('/v1/chat/completions')[0]!.json!;
    expect(chat['response_format']).toMatchObject({ type: 'json_schema' });
  }, 60_000);
});
