// One Ctrl-C is one stop (issue 16, class 1), tested the way a terminal does it: the command is
// started through npm (`npm run experiment -- …`, `npm run study -- …`, as the README says) in a
// process group of its own, and SIGINT goes to the whole group. node then gets the signal twice —
// from the group and forwarded by npm a few ms later — and must take it as one press: exactly one
// recorded SystemEvent.EmergencyStopped, exit 3 (docs/controller.md), a store `verify --open`
// accepts. A second press after cli/operator-stop.ts's SAME_PRESS_WINDOW_MS abandons
// (exit 130) and leaves the stores intact. The dedupe itself is tested on a small process first
// (relays folded in, a stalled event loop, a real second press seen).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SAME_PRESS_WINDOW_MS } from '../../cli/operator-stop.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { runCli } from '../support/cli.js';
import { controllerSetup, REPO, waitForOutput } from '../support/controller-run.js';
import { EMPTY_ANSWER, SCRIPTED_MODEL_ID, startScriptedModelServer } from '../../faults/scripted-model-server.js';
import { ofType, storedEvents } from '../support/stored-events.js';
import { tempDir } from '../support/writer-fixture.js';

/** How long a run may take to reach the moment of the press, and to stop after it. */
const REACH_TIMEOUT_MS = 30_000;
/** A press this long after the first is a new press: the window, and a margin for a loaded machine's late timers. */
const SECOND_PRESS_AFTER_MS = SAME_PRESS_WINDOW_MS + 1_000;

interface Started {
  readonly child: ChildProcess;
  /** Whether it leads a process group of its own (then the whole group is ended after a failed test). */
  readonly group: boolean;
  /** stdout and stderr so far, interleaved as they arrived. */
  output(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: Started[] = [];

function track(child: ChildProcess, group: boolean): Started {
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const run = { child, group, output: () => output, exited };
  started.push(run);
  return run;
}

/** `npm run SCRIPT -- ARGS` from the repository root, `npm` from PATH, in a process group of its own (a terminal's foreground job). */
function npmRun(script: 'experiment' | 'study' | 'audit', args: readonly string[]): Started {
  return track(spawn('npm', ['run', script, '--', ...args], { cwd: REPO, detached: true, stdio: ['ignore', 'pipe', 'pipe'] }), true);
}

/** Ctrl-C in the terminal: SIGINT to every process of the group (npm and the node it runs). */
function pressCtrlC(run: Started): void {
  process.kill(-run.child.pid!, 'SIGINT');
}

afterEach(() => {
  // A failed test leaves nothing running: its group gets SIGKILL (the writer and runtime exit when their parent goes).
  for (const run of started.splice(0)) {
    if (run.child.exitCode === null && run.child.signalCode === null) {
      try {
        process.kill(run.group ? -run.child.pid! : run.child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
});

const count = (text: string, pattern: RegExp): number => text.split('\n').filter((l) => pattern.test(l)).length;

describe('the press detector (cli/operator-stop.ts onOperatorPress)', () => {
  // A small process that prints one line per press; `stallMs` > 0 blocks its event loop that long at the first press.
  function pressPrinter(stallMs: number): Started {
    const file = path.join(tempDir('ds-press-'), 'press-printer.ts');
    writeFileSync(
      file,
      [
        `import { onOperatorPress } from ${JSON.stringify(path.join(REPO, 'cli', 'operator-stop.ts'))};`,
        `onOperatorPress((p) => {`,
        `  process.stdout.write('press ' + p.count + ' ' + p.signal + '\\n');`,
        `  if (p.count === 1 && ${stallMs} > 0) { const until = Date.now() + ${stallMs}; while (Date.now() < until); process.stdout.write('stall over\\n'); }`,
        `});`,
        `process.stdout.write('ready\\n');`,
        `setTimeout(() => process.exit(0), 10_000);`,
      ].join('\n'),
    );
    return track(spawn(process.execPath, ['--import', 'tsx', file], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] }), false);
  }
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

  it('takes a signal relayed within the window as the same press, and one after it as the next press', async () => {
    const p = pressPrinter(0);
    await waitForOutput(p.output, /^ready$/m, REACH_TIMEOUT_MS);
    p.child.kill('SIGINT');
    await sleep(6); // npm's forward, as measured
    p.child.kill('SIGINT');
    await sleep(30); // tsx's relay
    p.child.kill('SIGTERM');
    await sleep(SECOND_PRESS_AFTER_MS);
    p.child.kill('SIGINT');
    await waitForOutput(p.output, /^press 2 /m, REACH_TIMEOUT_MS);
    await sleep(200);
    p.child.kill('SIGKILL');
    await p.exited;
    expect(p.output().trim().split('\n')).toEqual(['ready', 'press 1 SIGINT', 'press 2 SIGINT']);
  });

  it('does not count a stalled event loop toward the window: a relay handled after a 2 s stall is still the same press', async () => {
    const p = pressPrinter(2_000);
    await waitForOutput(p.output, /^ready$/m, REACH_TIMEOUT_MS);
    p.child.kill('SIGINT');
    await waitForOutput(p.output, /^press 1 /m, REACH_TIMEOUT_MS);
    // Arrives during the stall; handled when it ends, > SAME_PRESS_WINDOW_MS after the first by the wall clock.
    p.child.kill('SIGINT');
    await waitForOutput(p.output, /^stall over$/m, REACH_TIMEOUT_MS);
    await sleep(300);
    p.child.kill('SIGKILL');
    await p.exited;
    expect(p.output().trim().split('\n')).toEqual(['ready', 'press 1 SIGINT', 'stall over']);
  });
});

describe('one Ctrl-C through npm is one recorded emergency stop', () => {
  // Three presses at different moments: waiting on the virtual clock (--speed), and inside the
  // busy wake loop of a run as fast as possible (no --speed), early and later.
  it.each([
    { name: 'speed 20000, after wake-0003', speed: ['--speed', '20000'], after: /wake-0003 at/ },
    { name: 'as fast as possible, after wake-0002', speed: [], after: /wake-0002 at/ },
    { name: 'as fast as possible, after wake-0008', speed: [], after: /wake-0008 at/ },
  ])('experiment ($name): exit 3, one EmergencyStopped, no abandon, verify --open passes', async ({ speed, after }) => {
    const setup = controllerSetup();
    const runDir = path.join(setup.dir, 'runs', 'pressed');
    const run = npmRun('experiment', ['--group', 'C', ...speed, '--out', runDir, '--key-dir', setup.keyDir, '--prereg', setup.preregFile, '--same-uid', 'interrupt test']);
    await waitForOutput(run.output, after, REACH_TIMEOUT_MS);
    pressCtrlC(run);
    const exit = await run.exited;
    const output = run.output();
    expect(exit, output).toEqual({ code: 3, signal: null });
    expect(output).not.toMatch(/second SIGINT/);
    expect(count(output, /SIGINT: emergency stop/)).toBe(1);
    expect(output).toMatch(/^STOPPED: /m);
    const events = storedEvents(runDir);
    const stops = ofType(events, 'SystemEvent.EmergencyStopped');
    expect(stops.map((e) => e.payload['reason'])).toEqual(['operator signal SIGINT']);
    expect(ofType(events, 'SystemEvent.StoreSealed')).toEqual([]);
    // The summary's verify command is the one that works on a stopped store: run it as printed.
    const printed = /details: npm run verify -- (.+)$/m.exec(output)?.[1]?.split(' ');
    expect(printed).toEqual([runDir, '--open']);
    const verified = await runCli('verify', printed!);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 60_000);

  it('study --n 1: exit 3, and every instance it started has exactly one recorded stop (or finished before the press)', async () => {
    const setup = controllerSetup();
    const studyDir = path.join(setup.dir, 'study');
    const run = npmRun('study', ['--n', '1', '--exploratory', 'interrupt test: one replicate per group', '--out', studyDir, '--key-dir', setup.keyDir, '--prereg', setup.preregFile, '--same-uid', 'interrupt test']);
    // The screen shows wakes only as live lines on a terminal; every instance's own lines are in its processes.log.
    const instanceLogs = (): string => (existsSync(path.join(studyDir, 'instances')) ? readdirSync(path.join(studyDir, 'instances')).map((name) => path.join(studyDir, 'instances', name, RUN_FILES.processLog)) : []).map((f) => (existsSync(f) ? readFileSync(f, 'utf8') : '')).join('\n');
    await waitForOutput(instanceLogs, /\] wake-0004 at/, REACH_TIMEOUT_MS);
    pressCtrlC(run);
    const exit = await run.exited;
    const output = run.output();
    expect(exit, output).toEqual({ code: 3, signal: null });
    expect(output).not.toMatch(/second SIGINT/);
    expect(count(output, /SIGINT: emergency stop/)).toBe(1);
    const instancesDir = path.join(studyDir, 'instances');
    const stores = readdirSync(instancesDir).filter((name) => existsSync(path.join(instancesDir, name, RUN_FILES.store)));
    const byState = stores.map((name) => {
      const events = storedEvents(path.join(instancesDir, name));
      const sealed = ofType(events, 'SystemEvent.StoreSealed').length === 1;
      return { name, state: sealed ? 'finished' : 'stopped', stops: ofType(events, 'SystemEvent.EmergencyStopped').map((e) => e.payload['reason']), cutWakes: ofType(events, 'ExperimentEvent.WakeEnded').filter((e) => e.payload['outcome'] === 'stopped').length };
    });
    expect(byState.filter((i) => i.state === 'stopped').length, JSON.stringify(byState)).toBeGreaterThan(0);
    for (const i of byState) expect(i.stops, i.name).toEqual(i.state === 'finished' ? [] : ['operator signal SIGINT']);
    // A study's stop lands between wakes (the wake under way finishes first): no wake was cut.
    for (const i of byState) expect(i.cutWakes, i.name).toBe(0);
    expect(existsSync(path.join(studyDir, 'report.json'))).toBe(true);
    const verified = await runCli('verify', [studyDir, '--open']);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 60_000);
});

describe('the audit desk', () => {
  it('stops at one Ctrl-C through npm with its documented exit 0, whatever copy of the signal comes second', async () => {
    const setup = controllerSetup();
    const runDir = path.join(setup.dir, 'runs', 'audited');
    const experiment = npmRun('experiment', ['--group', 'B', '--out', runDir, '--key-dir', setup.keyDir, '--prereg', setup.preregFile, '--same-uid', 'interrupt test']);
    await waitForOutput(experiment.output, /wake-0002 at/, REACH_TIMEOUT_MS);
    pressCtrlC(experiment);
    expect((await experiment.exited).code, experiment.output()).toBe(3);
    for (let round = 1; round <= 2; round += 1) {
      const audit = npmRun('audit', [runDir, '--port', '0']);
      await waitForOutput(audit.output, /serving http:\/\/127\.0\.0\.1:\d+/, REACH_TIMEOUT_MS);
      pressCtrlC(audit);
      const exit = await audit.exited;
      expect(exit, audit.output()).toEqual({ code: 0, signal: null });
      expect(count(audit.output(), /audit desk: SIGINT, stopping/), `round ${round}`).toBe(1);
      expect(audit.output()).not.toMatch(/again: exiting now/);
    }
  }, 90_000);
});

describe('two presses further apart than the window', () => {
  it('abandon the stop at the second press (exit 130, saying so), and the store stays intact', async () => {
    // The first stop waits for wake-0002's model call, which this server holds: the stop is still under way at the second press.
    const server = await startScriptedModelServer((request) => (request.wakeId === 'wake-0002' ? { kind: 'hang' } : { kind: 'content', content: JSON.stringify(EMPTY_ANSWER) }));
    try {
      const setup = controllerSetup();
      const runDir = path.join(setup.dir, 'runs', 'abandoned');
      const model = ['--model', 'openai', '--base-url', server.baseUrl, '--model-id', SCRIPTED_MODEL_ID, '--api-key-env', 'none', '--structured-output', 'vllm', '--no-stream', '--model-timeout-ms', '30000'];
      const run = npmRun('experiment', ['--group', 'A', ...model, '--out', runDir, '--key-dir', setup.keyDir, '--prereg', setup.preregFile, '--same-uid', 'interrupt test']);
      const deadline = Date.now() + REACH_TIMEOUT_MS;
      while (server.requestsFor('wake-0002') === 0) {
        if (Date.now() > deadline) throw new Error(`wake-0002's model call never came; output so far:\n${run.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      pressCtrlC(run);
      await waitForOutput(run.output, /SIGINT: emergency stop/, REACH_TIMEOUT_MS);
      await new Promise((resolve) => setTimeout(resolve, SECOND_PRESS_AFTER_MS));
      expect(run.child.exitCode, `the stop finished before the second press:\n${run.output()}`).toBeNull();
      pressCtrlC(run);
      const exit = await run.exited;
      const output = run.output();
      expect(exit, output).toEqual({ code: 130, signal: null });
      expect(count(output, /SIGINT: emergency stop/)).toBe(1);
      expect(output).toMatch(/second SIGINT \(a new press, \d+\.\d s after the first\): abandoning now without recording the stop \(exit 130\); the stores are intact and npm run experiment -- --resume DIR records the interruption/);
      // Abandoned inside the stop: nothing of it recorded, nothing lost.
      expect(ofType(storedEvents(runDir), 'SystemEvent.EmergencyStopped')).toEqual([]);
      const verified = await runCli('verify', [runDir, '--open']);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    } finally {
      await server.close();
    }
  }, 60_000);
});
