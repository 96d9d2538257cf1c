// The run contract is one module (design/run-contract.ts): the controller takes its keys from it
// and the verifier checks against it. Here the contract's WakeStarted key is changed (vi.mock) and
// a real instance is run in-process (real ds-writer and ds-runtime): the store carries the
// changed key, a resume finds the wakes by it (none is repeated), and the verifier built on the
// same changed contract finds the run follows its plan. The unchanged verifier — npm run verify
// in a child process, which the mock does not reach — fails the same store, naming the key.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { CONTROLLER_KEYS } from '../../design/run-contract.js';
import { WakeStarted } from '../../schema/events/experiment-events.js';
import { eventIs } from '../../schema/typed-event.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { runCli } from '../support/cli.js';
import { controllerSetup, newInstanceOptions, resume, runInstance, SCENARIOS_DIR, type ControllerSetup, type InstanceRun } from '../support/controller-run.js';
import { storedEvents, type StoredEvent } from '../support/stored-events.js';

/** The changed key: what a contract under change might say instead of `wake:<id>:started`. */
const begun = (wakeId: string): string => `wake:${wakeId}:begun`;

vi.mock('../../design/run-contract.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../design/run-contract.js')>();
  return { ...original, CONTROLLER_KEYS: { ...original.CONTROLLER_KEYS, wakeStarted: (wakeId: string) => `wake:${wakeId}:begun` } };
});

let setup: ControllerSetup;
let run: InstanceRun;
let started: StoredEvent[];

beforeAll(async () => {
  setup = controllerSetup();
  // One short run: stopped after its second wake, resumed, stopped again after one more.
  const first = new AbortController();
  run = newInstanceOptions(setup, { name: 'changed-contract', signal: first.signal, log: (line) => line.startsWith('wake-0002 ') && first.abort('test: stop after wake-0002') });
  expect((await runInstance(run)).status).toBe('stopped');
  const second = new AbortController();
  const resumed = await resume({ ...run, options: { ...run.options, log: (line) => line.startsWith('wake-0003 ') && second.abort('test: stop after wake-0003') } }, second.signal);
  expect(resumed.status).toBe('stopped');
  started = storedEvents(run.options.runDir).filter((e) => eventIs(e, WakeStarted.type));
}, 120_000);

afterAll(() => {
  if (setup) rmSync(setup.dir, { recursive: true, force: true });
});

describe('a key changed in the run contract', () => {
  test('the mock is in force here: the contract says the changed key', () => {
    expect(CONTROLLER_KEYS.wakeStarted('wake-0001')).toBe(begun('wake-0001'));
  });

  test('the controller writes it: every WakeStarted carries the changed key, and the resume repeated no wake', () => {
    expect(started.length).toBeGreaterThanOrEqual(3);
    const wakeIds = started.map((e) => String(e.payload.wake_id));
    expect(started.map((e) => e.idempotency_key)).toEqual(wakeIds.map(begun));
    expect(new Set(wakeIds).size).toBe(wakeIds.length);
  });

  test('the verifier on the same contract finds the run follows its plan', () => {
    const report = checkRunFollowsPlan(run.options.runDir, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.checked.wakes_started).toBe(started.length);
    expect(report.checked.emergency_stops).toBe(2);
  });

  test('the unchanged verifier (npm run verify, another process) fails the store, naming the key', async () => {
    const result = await runCli('verify', [run.options.runDir, '--json', '--open']);
    const report = JSON.parse(result.stdout) as { ok: boolean; failures: { store: string; seq: number | null; reason: string }[] };
    expect(report.ok).toBe(false);
    expect(report.failures).toEqual(
      started.map((e) => ({
        store: 'events.db',
        seq: e.seq,
        reason: `WakeStarted of ${String(e.payload.wake_id)}: idempotency_key ${begun(String(e.payload.wake_id))}, expected wake:${String(e.payload.wake_id)}:started`,
      })),
    );
    expect(result.code).toBe(1);
  }, 60_000);
});
