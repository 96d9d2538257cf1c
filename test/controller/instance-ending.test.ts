// Every end of an instance recorded (issue 31 item 4; controller/instance-ending.ts), with real
// instances: the controller in-process, real ds-writer and ds-runtime processes, the real
// `openai` adapter against a real OpenAI-compatible server on loopback.
//
// What happened against a real llama.cpp server: the runtime restarted by the planned
// runtime-crash drill checked its model again, the probe timed out (the server was busy), and the
// controller ended with "… Nothing ran" after the wakes had run — no stop, no signed head, the
// crash wake left open. Here the server answers the first preflight's probe and stalls every
// probe of the second (the restart's) past the call timeout:
// - the instance ends 'stopped' (no exception): the crash wake ended 'stopped', an EmergencyStopped
//   whose reason says where and after how many wakes, a signed periodic head after it; verify
//   --open passes and the plan check finds the end recorded; `--resume` with the server healthy
//   finishes sealed and verifying;
// - forged (the old store): the same run with the writer killed as the refusal is said, so the
//   end cannot be recorded — the command says so, the plan check names the open wake with no stop
//   after it, and the resume records the stop it finds and finishes.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InstanceError, type InstanceResult } from '../../controller/instance-runner.js';
import { ExperimentPlan } from '../../design/experiment-plan.js';
import { lockPrereg } from '../../design/prereg.js';
import type { ModelChoice } from '../../design/model-choice.js';
import { EMPTY_ANSWER, scriptedTimingsOf, wakeIdOf } from '../../faults/scripted-model-server.js';
import { parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { checkReplay } from '../../writer/replay-check.js';
import { readSignedHeads } from '../../writer/signed-files-check.js';
import { runCli } from '../support/cli.js';
import { controllerSetup, controllerSetupWith, newInstanceOptions, resume, runInstance, SCENARIOS_DIR, type ControllerSetup, type InstanceRun } from '../support/controller-run.js';
import { ofType, storedEvents, type StoredEvent } from '../support/stored-events.js';
import { closeAllLoopbacks, completion, json as sendJson, MODEL, modelList, startLoopback, type LoopbackServer } from '../runtime/openai-loopback-server.js';

const MAX_ATTEMPTS = 3;
const BACKOFF_MS = [10, 20];
/** A probe of the second preflight waits this long before its attempt is given up (each of MAX_ATTEMPTS). */
const MODEL_TIMEOUT_MS = 1_000;
// The controller's check before hour 0 is preflight 1, the runtime's first start 2, the planned
// runtime crash's restart 3: the one stalled.
const STALLED_PREFLIGHT = 3;
const PREFLIGHT_OPERATOR = 'controller (model preflight)';
const wake = (n: number): string => `wake-${String(n).padStart(4, '0')}`;

/** The default pre-registration with 16 wakes (a 4-hour period) and a fast retry policy, locked with the test key. */
function shortSetup(): ControllerSetup {
  return controllerSetupWith('prereg-ending', (prereg) => {
    prereg['wake_schedule']!['base_period_sim_minutes'] = 240;
    prereg['model_calls'] = { usable_data: { min_accepted_share: 0.5 }, transport_retry: { max_attempts: MAX_ATTEMPTS, backoff_ms: BACKOFF_MS }, pause_after_consecutive_transport_failures: 2 };
  });
}

/**
 * A server whose preflights are counted by their first request (GET /v1/models): the probe of
 * preflight `stalledPreflight` is never answered (every attempt of it), every other probe is.
 * A wake's call is answered with a valid answer; in `writeIn` the answer proposes a write, so the
 * planned runtime crash kills the runtime at its first execution intent, mid-wake.
 */
async function stallingServer(stalledPreflight: number, writeIn: () => string | null): Promise<LoopbackServer> {
  // Set before any request can come: the server's own count of preflights is read from it.
  let server: LoopbackServer | null = null;
  server = await startLoopback({
    models: modelList(MODEL),
    chat: (seen, res) => {
      const messages = (seen.json?.['messages'] ?? []) as { content?: unknown }[];
      const user = typeof messages[1]?.content === 'string' ? messages[1].content : '';
      const wakeId = wakeIdOf(user);
      const usage = { prompt_tokens: 100, completion_tokens: 20 };
      if (wakeId === null) {
        // The preflight's probe: it follows its own GET /v1/models.
        if (server!.to('/v1/models').length === stalledPreflight) return; // never answered: the client's timeout gives up on it
        // The check before hour 0 (controller/model-check.ts) also times its speed calls here.
        return sendJson(res, 200, checkAnswer());
      }
      const answer = wakeId === writeIn()
        ? { ...EMPTY_ANSWER, actions: [{ tool: 'files', op: 'write', path: 'notes/crash-wake.md', content: 'written in the crash wake\n', rationale: 'Keep the notes current.' }] }
        : { ...EMPTY_ANSWER, focus: { attention_target: `idle in ${wakeId}`, waiting_condition: null } };
      return sendJson(res, 200, completion(JSON.stringify(answer), { usage }));
    },
  });
  return server;
}

/** The answer to a call of the check before hour 0 (its probe, its speed calls): timed by llama.cpp's `timings`, so the forecast does not rest on this machine's load. */
function checkAnswer(): Record<string, unknown> {
  const usage = { prompt_tokens: 20_321, completion_tokens: 45 };
  return { ...completion(JSON.stringify(EMPTY_ANSWER), { usage }), timings: scriptedTimingsOf(usage) };
}

/**
 * An instance against stallingServer: the restart's preflight (STALLED_PREFLIGHT) is refused. The
 * crash wake is the plan's, read from plan.json once the start has written it (before the first
 * wake's call); `also` sees every log line after it is logged. `log` is the run's own, for a resume.
 */
async function restartRefusedRun(name: string, also: (line: string) => void = () => {}): Promise<{ readonly run: InstanceRun; crashWake(): string | null; readonly log: (line: string) => void }> {
  let crash: string | null = null;
  const server = await stallingServer(STALLED_PREFLIGHT, () => crash);
  const plain = newInstanceOptions(shortSetup(), { name, model: modelOf(server) });
  const log = plain.options.log;
  const logged = (line: string): void => {
    log(line);
    if (crash === null && line.startsWith('ds-writer pid ')) crash = planOf(plain.options.runDir).interventions.find((i) => i.kind === 'runtime_crash')?.deliver_wake_id ?? null;
    also(line);
  };
  return { run: { ...plain, options: { ...plain.options, log: logged } }, crashWake: () => crash, log };
}

function modelOf(server: LoopbackServer): ModelChoice {
  return {
    adapter: 'openai',
    base_url: server.baseUrl,
    model_id: MODEL,
    api_key_env: null,
    params: { temperature: 0, top_p: null, seed: 7, max_tokens: null },
    dialect: 'vllm',
    stream: false,
    context_size: null,
    timeout_ms: MODEL_TIMEOUT_MS,
    config_file: null,
    config_sha256: null,
  };
}

function preflightOks(runDir: string): unknown[] {
  return readFileSync(path.join(runDir, RUN_FILES.preflight), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    // The schema subset's line (issue 36) is no preflight of the model: the model's checks only.
    .filter((l) => !String(l['stage']).includes('schema subset'))
    .map((l) => l['ok']);
}

function inWake(events: readonly StoredEvent[], wakeId: string, type: string): StoredEvent[] {
  return events.filter((e) => e.event_type === type && e.payload['wake_id'] === wakeId);
}

function planOf(runDir: string): ExperimentPlan {
  return ExperimentPlan.parse(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.plan), 'utf8')));
}

/** The plan check's notes (npm run verify prints them as warnings), as one text per note. */
function planNotes(runDir: string): string[] {
  const key = parsePublicKeyHex(readFileSync(path.join(runDir, RUN_FILES.publicKey), 'utf8').trim());
  const report = checkRunFollowsPlan(runDir, key, { scenariosDir: SCENARIOS_DIR });
  expect(report.failures, JSON.stringify(report.failures)).toEqual([]);
  return report.notes.map((n) => n.message);
}

const startedWakes = (events: readonly StoredEvent[]): unknown[] => ofType(events, 'ExperimentEvent.WakeStarted').map((e) => e.payload['wake_id']);

// ---------------------------------------------------------------------------------------

describe('a preflight refused at the planned runtime crash restart ends the instance recorded', () => {
  let run: InstanceRun;
  let crashWake: string;
  let wakesTotal: number;
  let stopped: InstanceResult;
  let stoppedEvents: StoredEvent[];
  /** heads.jsonl as the stopped instance left it (the resume appends to it). */
  let headsAfterStop: ReturnType<typeof readSignedHeads>;
  let verifyOpen: { code: number; stdout: string; stderr: string };
  let verifyPlain: { code: number; stdout: string; stderr: string };
  let notesStopped: string[];
  let resumed: InstanceResult;
  let resumedEvents: StoredEvent[];
  let verifyResumed: { code: number; stdout: string; stderr: string };

  beforeAll(async () => {
    // The check before hour 0 (1) and the start's preflight (2) are answered; the restart's (3) stalls; the resume's (4) is answered.
    const made = await restartRefusedRun('restart-refused');
    run = made.run;
    stopped = await runInstance(run);
    crashWake = made.crashWake()!;
    stoppedEvents = storedEvents(stopped.runDir);
    headsAfterStop = readSignedHeads(path.join(stopped.runDir, RUN_FILES.heads), parsePublicKeyHex(readFileSync(path.join(stopped.runDir, RUN_FILES.publicKey), 'utf8').trim()));
    wakesTotal = stopped.wakesTotal;
    verifyOpen = await runCli('verify', [stopped.runDir, '--open']);
    verifyPlain = await runCli('verify', [stopped.runDir]);
    notesStopped = planNotes(stopped.runDir);
    resumed = await resume(run);
    resumedEvents = storedEvents(resumed.runDir);
    verifyResumed = await runCli('verify', [resumed.runDir]);
  }, 180_000);

  afterAll(closeAllLoopbacks);

  it('the set-up holds: the crash wake is planned, the runtime was killed in it and its restart checked the model twice over (ok, then refused on a timeout)', () => {
    expect(crashWake).toMatch(/^wake-\d{4}$/);
    const restarted = ofType(stoppedEvents, 'SystemEvent.ProcessRestarted').filter((e) => e.payload['process'] === 'runtime');
    expect(restarted).toHaveLength(1);
    expect(restarted[0]!.payload['previous_exit']).toEqual({ code: null, signal: 'SIGKILL' });
    expect(preflightOks(stopped.runDir).slice(0, 3)).toEqual([true, true, false]);
    const refused = readFileSync(path.join(stopped.runDir, RUN_FILES.preflight), 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['ok'] === false)!;
    expect(String(refused['reason'])).toContain('timeout');
  });

  it('ends stopped, not with an exception, with a reason that says where and after how many wakes — never "Nothing ran"', () => {
    const n = Number(crashWake.slice('wake-'.length));
    expect(stopped.status).toBe('stopped');
    expect(stopped.finalHead).toBeNull();
    expect(stopped.wakesRun).toBe(n - 1);
    expect(stopped.stopReason).toMatch(
      new RegExp(`^the model failed its check at the runtime's restart in ${crashWake} \\(the planned runtime crash iv-runtime-crash\\), after ${n} of ${wakesTotal} wakes \\(${crashWake} ends 'stopped' and is not repeated\\): the probe call in dialect vllm failed \\(timeout\\)`),
    );
    const screen = run.lines.join('\n');
    expect(screen).not.toContain('Nothing ran');
    expect(screen).toContain(`emergency stop: ${stopped.stopReason}`);
    expect(screen).toMatch(new RegExp(`stop recorded; head signed at seq \\d+; resume with: npm run experiment -- --resume ${stopped.runDir}`));
  });

  it("records the crash wake ended 'stopped' (its ledger first), then the EmergencyStopped with the reason, then a signed periodic head", () => {
    expect(startedWakes(stoppedEvents).at(-1)).toBe(crashWake);
    const ended = inWake(stoppedEvents, crashWake, 'ExperimentEvent.WakeEnded');
    expect(ended.map((e) => e.payload['outcome'])).toEqual(['stopped']);
    const ledger = inWake(stoppedEvents, crashWake, 'ExperimentEvent.BudgetLedgerRecorded');
    expect(ledger).toHaveLength(1);
    expect(ledger[0]!.seq).toBeLessThan(ended[0]!.seq);
    const stops = ofType(stoppedEvents, 'SystemEvent.EmergencyStopped');
    expect(stops.map((e) => e.payload)).toEqual([{ operator: PREFLIGHT_OPERATOR, reason: stopped.stopReason }]);
    expect(stops[0]!.seq).toBe(ended[0]!.seq + 1);
    const last = stoppedEvents.at(-1)!;
    expect(last.event_type).toBe('SystemEvent.ChainHeadSigned');
    expect((last.payload['head'] as Record<string, unknown>)['seq']).toBe(stops[0]!.seq);
    expect(headsAfterStop.at(-1)!.problem).toBeNull();
    expect(headsAfterStop.at(-1)!.head).toMatchObject({ kind: 'periodic', seq: stops[0]!.seq });
    expect(stopped.head.seq).toBe(last.seq);
  });

  it('verifies with --open (and, having no final head, not without it); the plan check finds the end recorded', () => {
    expect(verifyOpen.stderr).toBe('');
    expect(verifyOpen.code, verifyOpen.stdout).toBe(0);
    expect(verifyOpen.stdout).toContain('no final signed head');
    expect(verifyPlain.code).toBe(1);
    expect(notesStopped.filter((n) => n.includes('end not recorded'))).toEqual([]);
  });

  it('--resume with the server healthy finishes it: the stopped crash wake not repeated, sealed, verifying, replaying', () => {
    expect(resumed.status).toBe('finished');
    expect(resumed.finalHead).not.toBeNull();
    const n = Number(crashWake.slice('wake-'.length));
    expect(resumed.wakesRun).toBe(wakesTotal - n);
    expect(startedWakes(resumedEvents)).toHaveLength(wakesTotal);
    expect(inWake(resumedEvents, crashWake, 'ExperimentEvent.WakeStarted')).toHaveLength(1);
    expect(verifyResumed.code, `${verifyResumed.stdout}\n${verifyResumed.stderr}`).toBe(0);
    expect(checkReplay(path.join(resumed.runDir, RUN_FILES.store)).match).toBe(true);
    // The recorded stop is the only one: the resume found nothing to make up for (its notes are the later writer-crash drill's).
    expect(ofType(resumedEvents, 'SystemEvent.EmergencyStopped').map((e) => e.payload['operator'])).toEqual([PREFLIGHT_OPERATOR]);
    expect(resumed.notes.filter((n) => !n.startsWith('iv-writer-crash: '))).toEqual([]);
    expect(preflightOks(resumed.runDir)).toEqual([true, true, false, true]);
  });
});

// ---------------------------------------------------------------------------------------

/** Whether process `pid` has exited (gone, or a zombie not yet reaped by this process). */
function hasExited(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

describe('forged: the same refusal with the writer gone (the old store: the crash wake open, no stop)', () => {
  let run: InstanceRun;
  let crashWake: string;
  let error: unknown;
  let events: StoredEvent[];
  let notes: string[];
  let verifyOpen: { code: number; stdout: string; stderr: string };
  let resumed: InstanceResult;
  let resumedEvents: StoredEvent[];
  let verifyResumed: { code: number; stdout: string; stderr: string };

  beforeAll(async () => {
    let writerPid: number | null = null;
    const made = await restartRefusedRun('writer-gone', (line) => {
      const pid = /^ds-writer pid (\d+) /.exec(line);
      if (pid) writerPid = Number(pid[1]);
      // The restart's refusal, as it is said: the writer dies right there, before anything can record the end.
      if (line.startsWith('model preflight: refused: ') && writerPid !== null) {
        process.kill(writerPid, 'SIGKILL');
        const deadline = Date.now() + 5_000;
        while (!hasExited(writerPid)) if (Date.now() > deadline) throw new Error(`ds-writer ${writerPid} did not die within 5 s of SIGKILL`);
      }
    });
    run = made.run;
    error = await runInstance(run).then(
      () => new Error('expected the command to fail: its stop cannot be recorded'),
      (e: unknown) => e,
    );
    crashWake = made.crashWake()!;
    events = storedEvents(run.options.runDir);
    notes = planNotes(run.options.runDir);
    verifyOpen = await runCli('verify', [run.options.runDir, '--open']);
    resumed = await resume({ ...run, options: { ...run.options, log: made.log } });
    resumedEvents = storedEvents(resumed.runDir);
    verifyResumed = await runCli('verify', [resumed.runDir]);
  }, 180_000);

  afterAll(closeAllLoopbacks);

  it('the command fails saying the stop could not be recorded and that the resume records it — and what ran', () => {
    expect(error).toBeInstanceOf(InstanceError);
    const message = (error as InstanceError).message;
    expect((error as InstanceError).code).toBe('model');
    expect(message).toMatch(new RegExp(`^the model failed its check at the runtime's restart in ${crashWake} `));
    expect(message).toContain('The stop could not be recorded (');
    expect(message).toContain(`continue with npm run experiment -- --resume ${run.options.runDir}`);
    expect(message).not.toContain('Nothing ran');
    expect(run.lines.some((l) => l.startsWith('the stop could not be recorded ('))).toBe(true);
  });

  it('leaves the store the old behaviour left: the crash wake open, no stop, no head after it', () => {
    expect(startedWakes(events).at(-1)).toBe(crashWake);
    expect(inWake(events, crashWake, 'ExperimentEvent.WakeEnded')).toEqual([]);
    expect(ofType(events, 'SystemEvent.EmergencyStopped')).toEqual([]);
    expect(events.at(-1)!.event_type).not.toBe('SystemEvent.ChainHeadSigned');
  });

  it('the checker catches it: the plan check (a warning of verify --open) names the open wake with no stop after it', () => {
    const started = inWake(events, crashWake, 'ExperimentEvent.WakeStarted')[0]!;
    const expected = `end not recorded: ${crashWake} (WakeStarted at seq ${started.seq}) has no WakeEnded, and no SystemEvent.EmergencyStopped follows`;
    expect(notes.filter((n) => n.includes('end not recorded'))).toEqual([expect.stringContaining(expected)]);
    expect(verifyOpen.code, verifyOpen.stdout).toBe(0);
    expect(verifyOpen.stdout).toContain(expected);
  });

  it('the resume records the stop it finds (the crash wake ended stopped) and finishes, sealed and verifying', () => {
    expect(resumed.status).toBe('finished');
    expect(resumed.notes.filter((n) => !n.startsWith('iv-writer-crash: '))).toEqual([`${crashWake} was open when the instance stopped: ended as 'stopped' (it is not repeated)`, 'the previous controller ended without recording a stop; recorded one now']);
    expect(inWake(resumedEvents, crashWake, 'ExperimentEvent.WakeEnded').map((e) => e.payload['outcome'])).toEqual(['stopped']);
    expect(String(ofType(resumedEvents, 'SystemEvent.EmergencyStopped')[0]!.payload['reason'])).toMatch(/^found on resume/);
    expect(verifyResumed.code, `${verifyResumed.stdout}\n${verifyResumed.stderr}`).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------
// The other ends take the same path: a runtime that dies outside a planned crash (a stop order of
// the wake sequence), and the writer-crash drill's restart that loses its new writer (an error the
// ending cannot record: it says so, and the resume records it).

/** The pid of the last "<name> pid N" line the controller logged. */
function lastPid(lines: readonly string[], name: 'ds-writer' | 'ds-runtime'): number {
  const pid = [...lines].reverse().map((l) => new RegExp(`^${name} pid (\\d+)`).exec(l)?.[1]).find((p) => p !== undefined);
  if (pid === undefined) throw new Error(`test: no "${name} pid" line`);
  return Number(pid);
}

/** SIGKILL, then wait (bounded) until the process is gone or a zombie: its sockets are closed by then. */
function killNow(pid: number): void {
  process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + 5_000;
  while (!hasExited(pid)) if (Date.now() > deadline) throw new Error(`test: ${pid} did not die within 5 s of SIGKILL`);
}

describe('a runtime killed outside a planned crash ends through the same ending', () => {
  const DIES_IN = wake(2);
  let run: InstanceRun;
  let result: InstanceResult;
  let events: StoredEvent[];
  let notes: string[];

  beforeAll(async () => {
    const setup = shortSetup();
    let killed = false;
    const server = await startLoopback({
      models: modelList(MODEL),
      chat: (seen, res) => {
        const messages = (seen.json?.['messages'] ?? []) as { content?: unknown }[];
        const wakeId = wakeIdOf(typeof messages[1]?.content === 'string' ? messages[1].content : '');
        // Killed while its call to this server is open: the runtime dies mid-wake, its call never answered.
        if (wakeId === DIES_IN && !killed) {
          killed = true;
          killNow(lastPid(run.lines, 'ds-runtime'));
          return;
        }
        sendJson(res, 200, wakeId === null ? checkAnswer() : completion(JSON.stringify(EMPTY_ANSWER), { usage: { prompt_tokens: 100, completion_tokens: 20 } }));
      },
    });
    run = newInstanceOptions(setup, { name: 'runtime-killed', model: modelOf(server) });
    result = await runInstance(run);
    events = storedEvents(result.runDir);
    notes = planNotes(result.runDir);
  }, 120_000);

  afterAll(closeAllLoopbacks);

  it("stops recorded: the wake ended 'stopped' by the ending, the stop's reason names the runtime's death and the lost call, a signed head after it", () => {
    expect(result.status).toBe('stopped');
    expect(result.wakesRun).toBe(1);
    expect(result.stopReason).toMatch(new RegExp(`^the runtime failed in ${DIES_IN} outside any planned crash \\(exited: `));
    expect(result.stopReason).toContain('is lost, unrecorded, and the call is not repeated');
    expect(result.notes).toContain(`${DIES_IN} was open when the instance stopped: ended as 'stopped' (it is not repeated)`);
    const ended = inWake(events, DIES_IN, 'ExperimentEvent.WakeEnded');
    expect(ended.map((e) => e.payload['outcome'])).toEqual(['stopped']);
    const stops = ofType(events, 'SystemEvent.EmergencyStopped');
    expect(stops.map((e) => e.payload)).toEqual([{ operator: 'test', reason: result.stopReason }]);
    expect(stops[0]!.seq).toBe(ended[0]!.seq + 1);
    expect(events.at(-1)!.event_type).toBe('SystemEvent.ChainHeadSigned');
    expect(notes.filter((n) => n.includes('end not recorded'))).toEqual([]);
  });
});

describe("the writer-crash drill's restart losing its new writer: the ending says it cannot record, the resume does", () => {
  let run: InstanceRun;
  let writerCrashWake: string;
  let error: unknown;
  let events: StoredEvent[];
  let notes: string[];
  let resumed: InstanceResult;
  let verifyResumed: { code: number; stdout: string; stderr: string };

  beforeAll(async () => {
    const setup = shortSetup();
    let restarting = false;
    run = newInstanceOptions(setup, { name: 'writer-restart-lost' });
    const log = run.options.log;
    run = {
      ...run,
      options: {
        ...run.options,
        log: (line) => {
          log(line);
          if (line.startsWith('ds-writer killed as planned')) restarting = true;
          // The restarted writer dies as soon as it serves: before the drill has recorded the restart.
          else if (restarting && line.startsWith('ds-writer pid ')) {
            restarting = false;
            killNow(lastPid(run.lines, 'ds-writer'));
          }
        },
      },
    };
    error = await runInstance(run).then(
      () => new Error('expected the command to fail: its stop cannot be recorded'),
      (e: unknown) => e,
    );
    writerCrashWake = planOf(run.options.runDir).interventions.find((i) => i.kind === 'writer_crash')!.deliver_wake_id;
    events = storedEvents(run.options.runDir);
    notes = planNotes(run.options.runDir);
    resumed = await resume({ ...run, options: { ...run.options, log } });
    verifyResumed = await runCli('verify', [resumed.runDir]);
  }, 120_000);

  it('fails, saying on screen that the stop could not be recorded and that the resume records it', () => {
    expect(error).toBeInstanceOf(Error);
    const screen = run.lines.join('\n');
    expect(screen).toMatch(new RegExp(`the stop could not be recorded \\(.+\\); nothing was deleted: npm run experiment -- --resume ${run.options.runDir} records it \\(reason: the controller failed at the writer's restart in ${writerCrashWake} \\(the planned writer crash iv-writer-crash\\), after \\d+ of \\d+ wakes \\(${writerCrashWake} ends 'stopped' and is not repeated\\): `));
    expect(ofType(events, 'SystemEvent.EmergencyStopped')).toEqual([]);
    expect(notes.filter((n) => n.includes('end not recorded'))).toEqual([expect.stringContaining(`end not recorded: ${writerCrashWake} (WakeStarted at seq `)]);
  });

  it('the resume records the stop it finds and finishes, sealed and verifying', () => {
    expect(resumed.status).toBe('finished');
    expect(resumed.notes).toContain('the previous controller ended without recording a stop; recorded one now');
    expect(verifyResumed.code, `${verifyResumed.stdout}\n${verifyResumed.stderr}`).toBe(0);
  });
});
