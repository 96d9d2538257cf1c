// The fault points' switch (schema/fault-switch.ts) and the harness's plan (faults/
// fault-plan.ts): arming only through DS_FAULT_INJECTION, counting across processes of a role,
// firing once, freezing a real process with SIGSTOP, and coverage of every cell by construction.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { APPLICABLE_KINDS, BAD_FILE_KINDS, FAULT_ENV, FAULT_FILES, FAULT_KINDS, FAULT_POINTS, FaultReached, harnessActionOf, killedRole, SELF_HANDLED_KINDS, STALL_KINDS, type FaultArming } from '../../schema/fault-points.js';
import { childEnvironment, FaultArmingError, FaultSwitch, processStartTicks } from '../../schema/fault-switch.js';
import { FAULT_CELLS, FaultPlanError, planFaultRun, planFaultRuns, type Calibration, type GroupCalibration, type PointHits } from '../../faults/fault-plan.js';
import { REPO } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

const env = (arming: FaultArming | string): NodeJS.ProcessEnv => ({ [FAULT_ENV]: typeof arming === 'string' ? arming : JSON.stringify(arming) });

describe('arming', () => {
  test('without the variable every point is a no-op and nothing is written', () => {
    const lines: string[] = [];
    const faults = FaultSwitch.fromEnv('writer', (l) => lines.push(l), {});
    expect(faults.armed).toBe(false);
    expect(faults.hit('writer.append.before_commit')).toBeNull();
    faults.recordAcks([{ seq: 1, event_hash: 'sha256:00' }]);
    expect(lines).toEqual([]);
  });

  test.each([
    ['not JSON', '{', /not JSON/],
    ['a relative folder', JSON.stringify({ dir: 'faults', armed: null }), /absolute path/],
    ['an unknown point', JSON.stringify({ dir: '/tmp', armed: { point: 'writer.nowhere', kind: 'kill_writer', hit: 1 } }), /invalid/],
    ['a missing folder', JSON.stringify({ dir: '/tmp/ds-no-such-fault-folder-x', armed: null }), /does not exist/],
  ])('a variable with %s refuses with a message naming it', (_what, value, message) => {
    expect(() => FaultSwitch.fromEnv('runtime', () => undefined, env(value))).toThrow(FaultArmingError);
    expect(() => FaultSwitch.fromEnv('runtime', () => undefined, env(value))).toThrow(message);
  });

  test('an armed process says so, records its pid, and refuses a point of another role', () => {
    const dir = tempDir('ds-fault-');
    const lines: string[] = [];
    const faults = FaultSwitch.fromEnv('runtime', (l) => lines.push(l), env({ dir, armed: { point: 'runtime.model_call.in_flight', kind: 'model_timeout', hit: 2 } }));
    expect(lines).toEqual([expect.stringContaining('FAULT INJECTION (DS_FAULT_INJECTION, npm run faults): armed: model_timeout at hit 2 of runtime.model_call.in_flight')]);
    // The pid with its start time, so the harness never signals a reused pid.
    expect(readFileSync(path.join(dir, FAULT_FILES.pid('runtime')), 'utf8').trim()).toBe(`${process.pid} ${processStartTicks(process.pid)}`);
    expect(processStartTicks(process.pid)).toMatch(/^\d+$/);
    expect(() => faults.hit('writer.append.before_commit')).toThrow(/the writer's, hit in the runtime/);
  });
});

describe('children', () => {
  test('a writer or runtime gets DS_FAULT_INJECTION only when its parent hands it on (a variable left in a shell arms no study)', () => {
    const before = process.env[FAULT_ENV];
    process.env[FAULT_ENV] = '{"dir":"/tmp","armed":null}';
    try {
      expect(childEnvironment(null)[FAULT_ENV]).toBeUndefined();
      expect(childEnvironment('{"dir":"/x","armed":null}')[FAULT_ENV]).toBe('{"dir":"/x","armed":null}');
      expect(childEnvironment(null).PATH).toBe(process.env.PATH);
    } finally {
      if (before === undefined) delete process.env[FAULT_ENV];
      else process.env[FAULT_ENV] = before;
    }
  });
});

describe('counting and firing', () => {
  test('hits are counted over every process of the role; the armed hit fires once, a self-handled kind is returned', () => {
    const dir = tempDir('ds-fault-');
    const arming: FaultArming = { dir, armed: { point: 'writer.socket.append_request', kind: 'duplicate_message', hit: 3 } };
    const first = FaultSwitch.fromEnv('writer', () => undefined, env(arming));
    expect([first.hit('writer.socket.append_request'), first.hit('writer.socket.append_request')]).toEqual([null, null]);
    // A restarted writer (a new switch on the same folder) goes on counting: its first hit is the third.
    const lines: string[] = [];
    const second = FaultSwitch.fromEnv('writer', (l) => lines.push(l), env(arming));
    expect(second.hit('writer.socket.append_request', () => ({ request_id: '7' }))).toBe('duplicate_message');
    expect(lines.at(-1)).toBe('FAULT INJECTION fires: duplicate_message at hit 3 of writer.socket.append_request');
    const reached = FaultReached.parse(JSON.parse(readFileSync(path.join(dir, FAULT_FILES.reached), 'utf8')));
    expect(reached).toEqual({ point: 'writer.socket.append_request', kind: 'duplicate_message', hit: 3, role: 'writer', pid: process.pid, frozen: false, context: { request_id: '7' } });
    expect(readFileSync(path.join(dir, FAULT_FILES.hits('writer.socket.append_request')), 'utf8')).toBe('3');
    // The fired file is claimed: the same hit number reached again (a counter reset) does not fire twice.
    writeFileSync(path.join(dir, FAULT_FILES.hits('writer.socket.append_request')), '2');
    expect(second.hit('writer.socket.append_request')).toBeNull();
  });

  test('acknowledgements are logged per process, one line per event', () => {
    const dir = tempDir('ds-fault-');
    const faults = FaultSwitch.fromEnv('controller', () => undefined, env({ dir, armed: null }));
    faults.recordAcks([
      { seq: 4, event_hash: 'sha256:aa' },
      { seq: 5, event_hash: 'sha256:bb' },
    ]);
    const lines = readFileSync(path.join(dir, FAULT_FILES.acks('controller', process.pid)), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as unknown);
    expect(lines).toEqual([
      { seq: 4, event_hash: 'sha256:aa', role: 'controller' },
      { seq: 5, event_hash: 'sha256:bb', role: 'controller' },
    ]);
  });

  test('a kill kind freezes the real process at the point until it is continued', async () => {
    const dir = tempDir('ds-fault-');
    const script = `import { FaultSwitch } from ${JSON.stringify(path.join(REPO, 'schema', 'fault-switch.ts'))};
      const f = FaultSwitch.fromEnv('runtime', (l) => process.stderr.write(l + '\\n'));
      f.hit('runtime.intent.before_file_op', () => ({ path: 'notes.md' }));
      process.stdout.write('after the point\\n');`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO, env: { ...process.env, ...env({ dir, armed: { point: 'runtime.intent.before_file_op', kind: 'kill_runtime', hit: 1 } }) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const reachedFile = path.join(dir, FAULT_FILES.reached);
    const state = (): string => {
      const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    };
    const deadline = Date.now() + 20_000;
    while (!(existsSync(reachedFile) && state() === 'T')) {
      if (Date.now() > deadline) throw new Error('the child never stopped at the point');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(FaultReached.parse(JSON.parse(readFileSync(reachedFile, 'utf8')))).toMatchObject({ point: 'runtime.intent.before_file_op', kind: 'kill_runtime', pid: child.pid, frozen: true, context: { path: 'notes.md' } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(stdout).toBe('');
    process.kill(child.pid!, 'SIGCONT');
    expect(await exited).toBe(0);
    expect(stdout).toBe('after the point\n');
  }, 30_000);
});

describe('the catalogue', () => {
  test('every kill kind applies at every point; every other kind where its object exists; one cell per applicable (point, kind)', () => {
    for (const point of FAULT_POINTS) expect(APPLICABLE_KINDS[point]).toEqual(expect.arrayContaining(['kill_writer', 'kill_runtime', 'kill_controller']));
    expect(new Set(FAULT_CELLS.map((c) => c.kind))).toEqual(new Set(FAULT_KINDS));
    expect(FAULT_CELLS).toHaveLength(FAULT_POINTS.reduce((n, point) => n + new Set(APPLICABLE_KINDS[point]).size, 0));
    expect(new Set(FAULT_CELLS.map((c) => `${c.point} ${c.kind}`)).size).toBe(FAULT_CELLS.length);
    // The 32 of issue 8; in issue 20 the stalled writer at four points, the stalled runtime at three, the full disk at three, the four bad files, the stalled model server and the random subject at one each.
    expect(FAULT_CELLS).toHaveLength(48);
    expect(FAULT_CELLS.filter((c) => c.kind === 'stall_model')).toEqual([{ point: 'runtime.model_call.in_flight', kind: 'stall_model' }]);
    expect(FAULT_CELLS.filter((c) => c.kind === 'random_subject')).toEqual([{ point: 'runtime.model_call.in_flight', kind: 'random_subject' }]);
    expect(harnessActionOf('random_subject')).toEqual({ act: 'none' });
    // A kind kills someone, fills the disk or holds the frozen process a while (the harness acts), or is carried out by the process itself.
    for (const kind of FAULT_KINDS) expect(harnessActionOf(kind).act === 'none').toBe(SELF_HANDLED_KINDS.includes(kind));
    for (const kind of FAULT_KINDS) expect(killedRole(kind) !== null).toBe(harnessActionOf(kind).act === 'kill');
    expect(harnessActionOf('disk_full')).toEqual({ act: 'fill_disk' });
    expect([...STALL_KINDS].sort()).toEqual(['stall_model', 'stall_runtime', 'stall_writer']);
    // The model server is no process of the instance: the frozen runtime is continued and the server held instead.
    expect(harnessActionOf('stall_model')).toEqual({ act: 'stall', held: 'model_server' });
    expect(harnessActionOf('stall_writer')).toEqual({ act: 'stall', held: 'frozen_process' });
    // Every bad-file kind is planned somewhere and kills someone first (the harness plants the file once every process is gone).
    for (const kind of BAD_FILE_KINDS) {
      expect(FAULT_CELLS.some((c) => c.kind === kind), kind).toBe(true);
      expect(killedRole(kind), kind).not.toBeNull();
    }
  });
});

describe('the plan', () => {
  const hits = (n: number): PointHits => Object.fromEntries(FAULT_POINTS.map((p) => [p, n])) as PointHits;
  /** A group whose intents 1 and 2 are reads, the rest writes. */
  /** …and of the writes, 3 and 4 are moves (no new space), the rest writes or modifies. */
  const group = (n: number): GroupCalibration => ({
    hits: hits(n),
    mutating: { 'runtime.intent.before_file_op': range(3, n), 'runtime.file_op.before_outcome': range(3, n) },
    writing: { 'runtime.intent.before_file_op': range(5, n), 'runtime.file_op.before_outcome': range(5, n) },
  });
  const CELLS = FAULT_CELLS.length;
  const cellsOf = (kind: string): number => FAULT_CELLS.filter((c) => c.kind === kind).length;
  const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const calibration: Calibration = { A: group(5), B: group(7), C: group(9) };

  test('any round of consecutive runs (one per cell) exercises every cell, and the hit stays within the calibration', () => {
    const plans = planFaultRuns('s', 2 * CELLS, calibration);
    for (const round of [plans.slice(0, CELLS), plans.slice(CELLS)]) expect(new Set(round.map((p) => `${p.point} ${p.kind}`)).size).toBe(CELLS);
    for (const plan of plans) {
      expect(plan.hit).toBeGreaterThanOrEqual(1);
      expect(plan.hit).toBeLessThanOrEqual(calibration[plan.group].hits[plan.point]);
      expect(plan.hits_in_calibration).toBe(calibration[plan.group].hits[plan.point]);
    }
  });

  test('workspace_tampered is placed only at intents that write, modify or move (never at a read)', () => {
    const tampered = planFaultRuns('s', CELLS * 8, calibration).filter((p) => p.kind === 'workspace_tampered');
    expect(tampered.length).toBe(8 * cellsOf('workspace_tampered'));
    for (const plan of tampered) expect(plan.hit).toBeGreaterThanOrEqual(3);
    const onlyReads: Calibration = { A: { hits: hits(5), mutating: {}, writing: {} }, B: { hits: hits(5), mutating: {}, writing: {} }, C: { hits: hits(5), mutating: { 'runtime.intent.before_file_op': [] }, writing: {} } };
    // Run by run: disk_full at the intent point is refused too (a read writes nothing), and which of the two comes first depends on the shuffle.
    const refusals = Array.from({ length: CELLS }, (_, i) => {
      try {
        planFaultRun('s', i + 1, onlyReads);
        return null;
      } catch (error) {
        return (error as Error).message;
      }
    }).filter((m): m is string => m !== null);
    expect(refusals).toContainEqual(expect.stringMatching(/workspace_tampered can be placed/));
  });

  test('disk_full is placed at any hit of a writer point, and only at intents that write or modify (never a read or a move)', () => {
    const full = planFaultRuns('s', CELLS * 8, calibration).filter((p) => p.kind === 'disk_full');
    expect(full.length).toBe(8 * cellsOf('disk_full'));
    const atIntent = full.filter((p) => p.point === 'runtime.intent.before_file_op');
    expect(atIntent.length).toBe(8);
    for (const plan of atIntent) expect(plan.hit).toBeGreaterThanOrEqual(5);
    expect(full.filter((p) => p.point !== 'runtime.intent.before_file_op').some((p) => p.hit < 5)).toBe(true);
  });

  test('random_subject fires at the first model call, in any group, with a model seed of its own per run; no other kind carries one', () => {
    const plans = planFaultRuns('s', CELLS * 8, calibration);
    const random = plans.filter((p) => p.kind === 'random_subject');
    expect(random.length).toBe(8);
    for (const plan of random) expect(plan).toMatchObject({ point: 'runtime.model_call.in_flight', hit: 1, model_seed: expect.any(Number) });
    // Drawn from the seed and the index: one per run, not one per batch.
    expect(new Set(random.map((p) => p.model_seed)).size).toBe(random.length);
    expect(new Set(random.map((p) => p.group)).size).toBeGreaterThan(1);
    expect(plans.filter((p) => p.kind !== 'random_subject').every((p) => p.model_seed === undefined)).toBe(true);
    const one = random[0]!;
    expect(planFaultRun('s', one.index, calibration)).toEqual(one);
    expect(planFaultRun('t', one.index, calibration).model_seed).not.toBe(one.model_seed);
  });

  test('a run is rebuilt from the seed and its index alone; another seed plans otherwise', () => {
    expect(planFaultRun('s', 17, calibration)).toEqual(planFaultRuns('s', 20, calibration)[16]);
    expect(planFaultRuns('s', CELLS, calibration)).not.toEqual(planFaultRuns('t', CELLS, calibration));
  });

  test('a point a group never reached is placed in another group, and refused when none reached it', () => {
    const noIntentsInA: Calibration = { ...calibration, A: { hits: { ...hits(5), 'runtime.intent.before_file_op': 0 }, mutating: {}, writing: {} } };
    const intents = planFaultRuns('s', 2 * CELLS, noIntentsInA).filter((p) => p.point === 'runtime.intent.before_file_op');
    expect(intents.length).toBeGreaterThan(0);
    expect(intents.every((p) => p.group !== 'A')).toBe(true);
    const unsigned = (c: GroupCalibration): GroupCalibration => ({ ...c, hits: { ...c.hits, 'controller.head.signing': 0 } });
    const nobody: Calibration = { A: unsigned(calibration.A), B: unsigned(calibration.B), C: unsigned(calibration.C) };
    expect(() => planFaultRuns('s', CELLS, nobody)).toThrow(FaultPlanError);
  });
});
