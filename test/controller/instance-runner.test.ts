// The controller end to end, with real ds-writer and ds-runtime processes: a finished
// instance verifies (chain, signatures, plan conformance), an emergency stop is recorded and
// resumable, refusals leave nothing half-made, and groups of one seed get identical inputs.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { InstanceError, type InstanceResult } from '../../controller/instance-runner.js';
import { checkSignedManifest, manifestSha256, nonGroupDifferences, type InstanceManifest } from '../../design/manifest.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { KEY_FILES, loadOrCreateControllerKey } from '../../controller/key-store.js';
import { ExperimentPlan } from '../../design/experiment-plan.js';
import { hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { controllerSetup, newInstanceOptions, resume, runInstance, SCENARIOS_DIR, spawnExperimentCli, waitForOutput, type ControllerSetup } from '../support/controller-run.js';
import { storedEvents, type StoredEvent } from '../support/stored-events.js';
import { EMPTY_ANSWER, startScriptedModelServer } from '../../faults/scripted-model-server.js';
import { wakeScriptOf } from '../../design/run-contract.js';


function signedManifest(runDir: string, setup: ControllerSetup): InstanceManifest {
  const checked = checkSignedManifest(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.manifest), 'utf8')), setup.key.keys.publicKey);
  if (!checked.ok) throw new Error(checked.reason);
  return checked.manifest;
}

function expectVerified(runDir: string, setup: ControllerSetup, allowOpen = false): void {
  const report = verifyDirectory(runDir, { allowOpen });
  expect(report.failures).toEqual([]);
  expect(report.ok).toBe(true);
  const plan = checkRunFollowsPlan(runDir, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR });
  expect(plan.failures).toEqual([]);
  expect(plan.ok).toBe(true);
}

const isRoot = process.getuid?.() === 0;

describe('a finished instance (same uid)', () => {
  let setup: ControllerSetup;
  let result: InstanceResult;
  let lines: string[];
  let events: StoredEvent[];

  beforeAll(async () => {
    setup = controllerSetup();
    const run = newInstanceOptions(setup, { name: 'finished' });
    lines = run.lines;
    result = await runInstance(run);
    events = storedEvents(result.runDir);
  }, 120_000);

  it('runs every scheduled wake, seals the store and signs a final head on the seal', () => {
    const plan = ExperimentPlan.parse(JSON.parse(readFileSync(path.join(result.runDir, RUN_FILES.plan), 'utf8')));
    expect(result.status).toBe('finished');
    expect(result.wakesRun).toBe(plan.schedule.wakes.length);
    expect(events.filter((e) => e.event_type === 'ExperimentEvent.WakeStarted').map((e) => e.payload['wake_id'])).toEqual(plan.schedule.wakes.map((w) => w.wake_id));
    expect(events.at(-1)!.event_type).toBe('SystemEvent.StoreSealed');
    expect(result.finalHead).toMatchObject({ kind: 'final', seq: events.at(-1)!.seq });
    const heads = readFileSync(path.join(result.runDir, RUN_FILES.heads), 'utf8').trim().split('\n');
    const periodic = events.filter((e) => e.event_type === 'SystemEvent.ChainHeadSigned').length;
    // One periodic head every K = chain_head_signing_period_wakes wakes, plus the final one.
    expect(periodic).toBe(Math.floor(plan.schedule.wakes.length / 6));
    expect(heads).toHaveLength(periodic + 1);
  });

  it('verifies: chain, signatures, heads, and the run follows its signed plan', () => {
    expectVerified(result.runDir, setup);
  });

  it('signs the manifest before the first wake and binds the store to it', () => {
    const manifest = signedManifest(result.runDir, setup);
    expect(manifest.isolation).toEqual({ mode: 'same-uid', reason: 'test run in one uid' });
    expect(manifest.model).toMatchObject({ adapter: 'reference', model_id: 'reference-policy', params: null });
    expect(events[0]!.event_type).toBe('SystemEvent.StoreOpened');
    expect(events[0]!.payload['manifest_sha256']).toBe(manifestSha256(manifest));
    // Signed before the first wake: the manifest's file is older than any wake's record.
    expect(Date.parse(manifest.started_at)).toBeLessThanOrEqual(statSync(path.join(result.runDir, RUN_FILES.store)).birthtimeMs || Date.now());
    expect(statSync(path.join(result.runDir, RUN_FILES.store)).mode & 0o777).toBe(0o600);
  });

  it('writes each intervention before its delivery wake and changes the workspace before saying so', () => {
    const plan = ExperimentPlan.parse(JSON.parse(readFileSync(path.join(result.runDir, RUN_FILES.plan), 'utf8')));
    const change = plan.interventions.find((i) => i.kind === 'external_file_change');
    if (change?.kind !== 'external_file_change') throw new Error('the plan has no external file change');
    const file = path.join(result.runDir, 'workspace', change.path);
    if (change.new_content === null) expect(existsSync(file)).toBe(false);
    else expect(hashText(readFileSync(file))).toBe(hashText(change.new_content));
    const delivered = events.filter((e) => e.event_type === 'ExperimentEvent.InterventionDelivered').map((e) => e.payload['intervention_id']);
    expect(new Set(delivered)).toEqual(new Set(plan.interventions.filter((i) => i.kind !== 'long_absence').map((i) => i.intervention_id)));
  });

  it('carries out both planned crashes with real kills, and says where a kill point was not reached', () => {
    const restarts = events.filter((e) => e.event_type === 'SystemEvent.ProcessRestarted').map((e) => e.payload['process']);
    expect(restarts.sort()).toEqual(['runtime', 'writer']);
    expect(events.filter((e) => e.event_type === 'ExperimentEvent.WakeEnded' && e.payload['outcome'] === 'crashed')).toHaveLength(2);
    expect(lines.some((l) => /ds-writer killed as planned/.test(l))).toBe(true);
    expect(lines.some((l) => /runtime SIGKILLed/.test(l))).toBe(true);
    // Where a kill point was not reached inside the wake, a note says where the kill fell instead.
    for (const note of result.notes.filter((n) => /not reached|fewer than/.test(n))) expect(note).toMatch(/iv-(runtime|writer)-crash/);
  });

  it('refuses to resume a sealed instance', async () => {
    const run = newInstanceOptions(setup, { runDir: result.runDir });
    await expect(resume(run)).rejects.toThrow(/finished and sealed/);
  });

  it('a controller that died between the seal and its signature: verify fails it, --resume signs the final head on the seal', async () => {
    const headsFile = path.join(result.runDir, RUN_FILES.heads);
    const lines = readFileSync(headsFile, 'utf8').trim().split('\n');
    writeFileSync(headsFile, `${lines.slice(0, -1).join('\n')}\n`);
    expect(verifyDirectory(result.runDir).failures.map((f) => f.reason).join('\n')).toMatch(/final head was never signed/);
    const resumed = await resume(newInstanceOptions(setup, { runDir: result.runDir }));
    expect(resumed.status).toBe('finished');
    expect(resumed.finalHead).toMatchObject({ kind: 'final', seq: result.finalHead!.seq, event_hash: result.finalHead!.event_hash });
    expect(resumed.notes.join('\n')).toMatch(/never signed; signed it now/);
    expect(storedEvents(result.runDir)).toEqual(events);
    expectVerified(result.runDir, setup);
  });

});

describe('emergency stop and resume', () => {
  it('records the stop, signs the head, deletes nothing, and resumes to a verified finish', async () => {
    const setup = controllerSetup();
    const stop = new AbortController();
    const run = newInstanceOptions(setup, {
      name: 'stopped',
      signal: stop.signal,
      log: (line) => {
        if (line.startsWith('wake-0005 ')) stop.abort('test: operator stop after wake-0005');
      },
    });
    const stopped = await runInstance(run);
    expect(stopped.status).toBe('stopped');
    expect(stopped.stopReason).toBe('test: operator stop after wake-0005');
    const before = storedEvents(stopped.runDir);
    const stopEvent = before.find((e) => e.event_type === 'SystemEvent.EmergencyStopped');
    expect(stopEvent?.payload).toEqual({ operator: 'test', reason: 'test: operator stop after wake-0005' });
    expect(before.at(-1)!.event_type).toBe('SystemEvent.ChainHeadSigned');
    expect(before.filter((e) => e.event_type === 'ExperimentEvent.WakeStarted')).toHaveLength(5);
    // An unfinished instance verifies as open, and follows its plan as far as it went.
    expectVerified(stopped.runDir, setup, true);
    expect(verifyDirectory(stopped.runDir).ok).toBe(false);

    const resumed = await resume(run);
    expect(resumed.status).toBe('finished');
    const after = storedEvents(resumed.runDir);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after[before.length]!.event_type).toBe('SystemEvent.Resumed');
    expect(after.filter((e) => e.event_type === 'ExperimentEvent.WakeStarted').map((e) => e.payload['wake_id'])).toHaveLength(stopped.wakesTotal);
    expectVerified(resumed.runDir, setup);
  }, 120_000);
});

describe('a stop at the wake boundary (stopAtWakeEnd: a cluster task\'s SIGTERM, a study\'s Ctrl-C)', () => {
  const STOPPED_IN = 'wake-0003';
  /** wake id → WakeEnded outcome, in store order. */
  const outcomes = (events: readonly StoredEvent[]): Array<[unknown, unknown]> => events.filter((e) => e.event_type === 'ExperimentEvent.WakeEnded').map((e) => [e.payload['wake_id'], e.payload['outcome']]);

  /** A run whose model (a scripted server on loopback) is asked for a stop (`how`) while it answers STOPPED_IN's call; resumed to the end. */
  async function stoppedInsideAWake(setup: ControllerSetup, name: string, how: 'at_wake_end' | 'now') {
    const now = new AbortController();
    const atWakeEnd = new AbortController();
    let asked = false;
    const server = await startScriptedModelServer(async (request) => {
      if (request.wakeId === STOPPED_IN && !asked) {
        asked = true;
        (how === 'now' ? now : atWakeEnd).abort('operator signal SIGTERM');
        // The answer comes after the stop was asked: the wake is under way when it is.
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      return { kind: 'content', content: JSON.stringify(EMPTY_ANSWER) };
    });
    try {
      const run = newInstanceOptions(setup, { name, group: 'A', signal: now.signal, stopAtWakeEnd: atWakeEnd.signal, model: server.modelChoice(30_000) });
      const stopped = await runInstance(run);
      expect(asked, `${STOPPED_IN}'s model call came`).toBe(true);
      const before = storedEvents(stopped.runDir);
      const resumed = await resume(run);
      expect(resumed.status).toBe('finished');
      return { stopped, before, after: storedEvents(resumed.runDir), planned: wakeScriptOf(ExperimentPlan.parse(JSON.parse(readFileSync(path.join(stopped.runDir, RUN_FILES.plan), 'utf8')))).map((w) => [w.wake.wake_id, w.outcome]) };
    } finally {
      await server.close();
    }
  }

  it('lets the wake under way finish as planned and records the stop before the next one; resumed, every wake ended as planned (the emergency stop, for contrast, cuts that wake and it is not run again)', async () => {
    const setup = controllerSetup();
    const graceful = await stoppedInsideAWake(setup, 'at-wake-end', 'at_wake_end');
    expect(graceful.stopped.status).toBe('stopped');
    expect(graceful.stopped.stopReason).toBe('operator signal SIGTERM');
    // The stop follows STOPPED_IN's own WakeEnded (completed): nothing of the next wake before it.
    const stopAt = graceful.before.findIndex((e) => e.event_type === 'SystemEvent.EmergencyStopped');
    const lastEnded = graceful.before.map((e) => e.event_type).lastIndexOf('ExperimentEvent.WakeEnded');
    expect(graceful.before[lastEnded]!.payload).toMatchObject({ wake_id: STOPPED_IN, outcome: 'completed' });
    expect(graceful.before.slice(lastEnded + 1, stopAt).map((e) => e.event_type).filter((t) => t.startsWith('ExperimentEvent.'))).toEqual([]);
    expect(outcomes(graceful.after)).toEqual(graceful.planned);
    expectVerified(graceful.stopped.runDir, setup);

    const cut = await stoppedInsideAWake(setup, 'cut', 'now');
    expect(cut.stopped.stopReason).toBe('operator signal SIGTERM');
    expect(outcomes(cut.after)).toEqual(cut.planned.map(([w, o]) => [w, w === STOPPED_IN ? 'stopped' : o]));
  }, 120_000);
});

describe('refusals', () => {
  let setup: ControllerSetup;
  beforeAll(() => {
    setup = controllerSetup();
  });

  it('refuses an unlocked pre-registration and one changed after locking, saying which, and writes no run', async () => {
    const unlocked = path.join(setup.dir, 'unlocked.json');
    writeFileSync(unlocked, readFileSync(setup.preregFile));
    const a = newInstanceOptions(setup, { name: 'unlocked', preregFile: unlocked });
    await expect(runInstance(a)).rejects.toThrow(/not locked/);
    expect(existsSync(a.options.runDir)).toBe(false);

    const prereg = JSON.parse(readFileSync(setup.preregFile, 'utf8')) as { budgets_per_wake: { tool_calls: number } };
    const edited = path.join(setup.dir, 'edited.json');
    prereg.budgets_per_wake.tool_calls += 1;
    writeFileSync(edited, JSON.stringify(prereg));
    writeFileSync(`${edited}.lock.dsse.json`, readFileSync(`${setup.preregFile}.lock.dsse.json`));
    const b = newInstanceOptions(setup, { name: 'edited', preregFile: edited });
    const error = await runInstance(b).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InstanceError);
    expect((error as InstanceError).code).toBe('prereg');
    expect((error as Error).message).toMatch(/changed after it was locked/);
    expect(existsSync(b.options.runDir)).toBe(false);
  });

  it('refuses a run folder that is not empty', async () => {
    const run = newInstanceOptions(setup, { name: 'busy' });
    const { mkdirSync } = await import('node:fs');
    mkdirSync(run.options.runDir, { recursive: true });
    writeFileSync(path.join(run.options.runDir, 'something'), 'x');
    await expect(runInstance(run)).rejects.toThrow(/not empty/);
  });

  it('refuses to resume with another key, or with a plan changed after the start', async () => {
    const stop = new AbortController();
    const run = newInstanceOptions(setup, { name: 'tampered', signal: stop.signal, log: (l) => l.startsWith('wake-0002 ') && stop.abort('test stop') });
    expect((await runInstance(run)).status).toBe('stopped');

    const otherKeys = path.join(setup.dir, 'other-keys');
    loadOrCreateControllerKey(otherKeys);
    await expect(resume({ ...run, options: { ...run.options, keyDir: otherKeys } })).rejects.toThrow(/signed by key/);

    const planFile = path.join(run.options.runDir, RUN_FILES.plan);
    const plan = JSON.parse(readFileSync(planFile, 'utf8')) as { schedule: { wakes: unknown[] } };
    [plan.schedule.wakes[3], plan.schedule.wakes[4]] = [plan.schedule.wakes[4], plan.schedule.wakes[3]];
    writeFileSync(planFile, JSON.stringify(plan, null, 2));
    await expect(resume(run)).rejects.toThrow(/changed after the start/);
    // The same forgery is caught by verify's plan check.
    const report = checkRunFollowsPlan(run.options.runDir, setup.key.keys.publicKey, { scenariosDir: SCENARIOS_DIR });
    expect(report.ok).toBe(false);
  }, 120_000);
});

describe('fairness across groups', () => {
  it('gives A and C of one seed the same schedule, interventions and budgets: their manifests differ only in group fields', async () => {
    const setup = controllerSetup();
    // Three independent instances (own folders, one key): run side by side, as a study runs them.
    const [a, c, other] = await Promise.all([
      runInstance(newInstanceOptions(setup, { name: 'group-a', group: 'A' })),
      runInstance(newInstanceOptions(setup, { name: 'group-c', group: 'C' })),
      runInstance(newInstanceOptions(setup, { name: 'other-seed', seed: 'another-seed' })),
    ]);
    const manifestA = signedManifest(a.runDir, setup);
    const manifestC = signedManifest(c.runDir, setup);
    expect(nonGroupDifferences(manifestA, manifestC)).toEqual([]);
    expect(manifestA.capabilities).not.toEqual(manifestC.capabilities);
    // The controller's events (everything but the chain bookkeeping) are the same in both stores.
    const controllerView = (dir: string) =>
      storedEvents(dir)
        // StoreOpened/StoreSealed name the instance's own manifest and head; signed heads are bookkeeping.
        // The checkpoint is what the subject said and the ledger's `used` what it spent: compared on their own below.
        .filter((e) => e.actor === 'experiment' && !['SystemEvent.ChainHeadSigned', 'SystemEvent.StoreOpened', 'SystemEvent.StoreSealed', 'ExperimentEvent.CheckpointRecorded', 'ExperimentEvent.BudgetLedgerRecorded'].includes(e.event_type))
        // Seqs and event ids depend on how many events each subject wrote: everything else must be equal.
        .map((e) => ({
          type: e.event_type,
          at: e.occurred_at,
          key: e.idempotency_key,
          payload: e.event_type === 'ExperimentEvent.InterventionDelivered' ? { ...e.payload, event_ids: null } : e.event_type === 'ExperimentEvent.WakeStarted' ? { ...e.payload, visible_to_seq: null } : e.payload,
        }));
    const viewA = controllerView(a.runDir);
    const viewC = controllerView(c.runDir);
    expect(viewC.length).toBe(viewA.length);
    viewA.forEach((event, i) => expect(viewC[i], `controller event ${i}`).toEqual(event));
    const granted = (dir: string) => storedEvents(dir).filter((e) => e.event_type === 'ExperimentEvent.BudgetLedgerRecorded').map((e) => [e.payload['wake_id'], e.payload['granted']]);
    expect(granted(c.runDir)).toEqual(granted(a.runDir));

    expect(signedManifest(other.runDir, setup).wake_schedule_hash).not.toBe(manifestC.wake_schedule_hash);
  }, 180_000);
});

describe.skipIf(!isRoot)('process isolation as root (separate uids)', () => {
  it('runs the writer and runtime under their own uids: the runtime uid can open neither events.db nor the key', async () => {
    const setup = controllerSetup();
    // A run folder the writer's uid can reach (mkdtemp makes 0700 folders); the key folder stays 0700.
    chmodSync(setup.dir, 0o755);
    chmodSync(path.join(setup.dir, 'runs'), 0o755);
    const run = newInstanceOptions(setup, { name: 'isolated', isolation: {} });
    const result = await runInstance(run);
    expect(result.status).toBe('finished');
    const manifest = signedManifest(result.runDir, setup);
    expect(manifest.isolation).toEqual({ mode: 'separate-uids' });
    const db = path.join(result.runDir, RUN_FILES.store);
    const runtimeUid = Number(spawnSync('id', ['-u', 'ds-runtime'], { encoding: 'utf8' }).stdout.trim());
    const writerUid = Number(spawnSync('id', ['-u', 'ds-writer'], { encoding: 'utf8' }).stdout.trim());
    expect(statSync(db).uid).toBe(writerUid);
    expect(statSync(db).mode & 0o777).toBe(0o600);
    const tryRead = (file: string): string =>
      spawnSync(process.execPath, ['-e', `try { require('node:fs').readFileSync(${JSON.stringify(file)}); process.stdout.write('READ'); } catch (e) { process.stdout.write(String(e.code)); }`], { uid: runtimeUid, gid: runtimeUid === 0 ? 0 : Number(spawnSync('id', ['-g', 'ds-runtime'], { encoding: 'utf8' }).stdout.trim()), cwd: '/', encoding: 'utf8' }).stdout;
    expect(tryRead(db)).toBe('EACCES');
    expect(tryRead(path.join(setup.keyDir, KEY_FILES.secret))).toBe('EACCES');
    expectVerified(result.runDir, setup);
  }, 120_000);
});

describe('the command line', () => {
  it('treats Ctrl-C as an emergency stop (exit 3), and --resume finishes the instance (exit 0)', async () => {
    const setup = controllerSetup();
    const runDir = path.join(setup.dir, 'runs', 'cli');
    const common = ['--key-dir', setup.keyDir, '--same-uid', 'cli test'];
    const first = spawnExperimentCli(['--group', 'B', '--prereg', setup.preregFile, '--out', runDir, '--speed', '20000', ...common]);
    await waitForOutput(first.output, /wake-0003 at/, 60_000);
    // The whole process group, as a terminal's Ctrl-C: the writer and runtime are in groups of their own.
    process.kill(-first.child.pid!, 'SIGINT');
    expect(await first.exited).toBe(3);
    expect(first.output()).toMatch(/STOPPED: /);
    expect(first.output()).toMatch(/stop recorded; head signed/);
    expect(storedEvents(runDir).some((e) => e.event_type === 'SystemEvent.EmergencyStopped')).toBe(true);

    const second = spawnExperimentCli(['--resume', runDir, ...common]);
    expect(await second.exited).toBe(0);
    expect(second.output()).toMatch(/FINISHED: /);
    expectVerified(runDir, setup);
  }, 120_000);

  it('survives a controller killed outright: --resume records the stop it never wrote', async () => {
    const setup = controllerSetup();
    const runDir = path.join(setup.dir, 'runs', 'killed');
    const common = ['--key-dir', setup.keyDir, '--same-uid', 'cli test'];
    const first = spawnExperimentCli(['--group', 'A', '--prereg', setup.preregFile, '--out', runDir, '--speed', '20000', ...common]);
    await waitForOutput(first.output, /wake-0004 at/, 60_000);
    process.kill(first.child.pid!, 'SIGKILL');
    await first.exited;
    const second = spawnExperimentCli(['--resume', runDir, ...common]);
    expect(await second.exited).toBe(0);
    const events = storedEvents(runDir);
    const stop = events.find((e) => e.event_type === 'SystemEvent.EmergencyStopped');
    expect(stop?.payload['reason']).toMatch(/found on resume/);
    expectVerified(runDir, setup);
  }, 120_000);

  it('refuses bad input with exit 2 and a usable message', async () => {
    const noGroup = spawnExperimentCli(['--seed', 'x']);
    expect(await noGroup.exited).toBe(2);
    expect(noGroup.output()).toMatch(/give --group A, B or C/);
    const badSpeed = spawnExperimentCli(['--group', 'A', '--speed', 'fast']);
    expect(await badSpeed.exited).toBe(2);
    expect(badSpeed.output()).toMatch(/--speed must be a positive number/);
    const mixed = spawnExperimentCli(['--resume', '/nonexistent', '--group', 'A']);
    expect(await mixed.exited).toBe(2);
    expect(mixed.output()).toMatch(/cannot be combined with --resume/);
  }, 60_000);
});
