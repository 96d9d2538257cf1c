// Does a run follow its plan (verification/run-plan-check.ts)? A run written by a real writer
// the way the controller writes it passes; each forgery of plan.json, the manifest, the
// pre-registration or the store is caught with a message that names it. Store forgeries are
// written through the real writer, so the chain stays valid and only the plan check can tell.
import Database from 'better-sqlite3';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { operatorResolvedDraft } from '../../controller/controller-events.js';
import { CONTROLLER_KEYS } from '../../design/run-contract.js';
import type { ExperimentPlan } from '../../design/experiment-plan.js';
import { INTERVENTION_SCRIPT_VERSION } from '../../design/intervention-plan.js';
import type { PlanConformanceReport, PlanFinding } from '../../verification/plan-findings.js';
import { checkRunFollowsPlan } from '../../verification/run-plan-check.js';
import { PREREG_LOCK_PAYLOAD_TYPE } from '../../design/prereg.js';
import { writeSignedManifest } from '../../controller/run-signatures.js';
import { signDsse } from '../../schema/dsse.js';
import { generateKeyPair, parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { eventIdFor } from '../../schema/envelope-hash.js';
import { schemaVersionOf } from '../../schema/event-catalog.js';
import { hashCanonical, hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import type { EventDraft } from '../../writer/protocol.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { runCli } from '../support/cli.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import {
  appendDirectly,
  PLAN_RUN_SUBJECT_ID,
  planInputs,
  writePlanFollowingRun,
  type PlanFollower,
  type PlanFollowingRun,
  type PlanInputs,
  type WriteRunOptions,
} from '../support/plan-following-run.js';
import { tamper } from '../support/store-forgery.js';
import { tempDir } from '../support/writer-fixture.js';

let inputs: PlanInputs;
let sealed: PlanFollowingRun;
const scratch: string[] = [];

beforeAll(async () => {
  inputs = planInputs();
  sealed = await writePlanFollowingRun({ inputs });
});

afterAll(() => {
  sealed?.cleanup();
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

// ---- helpers

/** A fresh copy of the conforming sealed run, to forge a file of. */
function copyRun(): string {
  const dir = tempDir('ds-plan-forged-');
  scratch.push(dir);
  cpSync(sealed.dir, dir, { recursive: true });
  return dir;
}

function check(dir: string, publicKey: Uint8Array = sealed.keys.publicKey, scenariosDir: string = SCENARIOS_DIR): PlanConformanceReport {
  return checkRunFollowsPlan(dir, publicKey, { scenariosDir });
}

function lines(findings: readonly PlanFinding[]): string[] {
  return findings.map((f) => `${f.file}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.message}`);
}

function readPlan(dir: string): ExperimentPlan {
  return JSON.parse(readFileSync(path.join(dir, RUN_FILES.plan), 'utf8')) as ExperimentPlan;
}

function writePlan(dir: string, plan: unknown): void {
  writeFileSync(path.join(dir, RUN_FILES.plan), JSON.stringify(plan, null, 2));
}

function resignManifest(dir: string, manifest: unknown, keys = sealed.keys): void {
  rmSync(path.join(dir, RUN_FILES.manifest));
  writeSignedManifest(dir, manifest as Record<string, unknown>, keys);
}

/** A plan with wakes 3 and 4 swapped in the schedule: still a schema-valid ExperimentPlan. */
function swappedWakesPlan(): ExperimentPlan {
  const plan = readPlan(sealed.dir);
  const wakes = [...plan.schedule.wakes];
  [wakes[2], wakes[3]] = [wakes[3]!, wakes[2]!];
  return { ...plan, schedule: { ...plan.schedule, wakes } };
}

/** A store forgery written through the real writer (unfinished unless told otherwise). */
async function forgedRun(options: WriteRunOptions): Promise<PlanFollowingRun> {
  const run = await writePlanFollowingRun({ inputs, finish: 'open', ...options });
  scratch.push(run.dir);
  return run;
}

function seqOfKey(run: PlanFollowingRun, key: string): number {
  const db = new Database(run.dbPath, { readonly: true });
  try {
    const row = db.prepare('SELECT seq FROM events WHERE idempotency_key = ?').get(key) as { seq: number } | undefined;
    if (!row) throw new Error(`no event with key ${key}`);
    return row.seq;
  } finally {
    db.close();
  }
}

function eventIdOfKey(run: PlanFollowingRun, key: string): string {
  return eventIdFor(PLAN_RUN_SUBJECT_ID, seqOfKey(run, key));
}

/** Edits the one draft with this idempotency key. */
function editKey(key: string, change: (draft: EventDraft) => EventDraft | null): (draft: EventDraft) => EventDraft | null {
  return (draft) => (draft.idempotency_key === key ? change(draft) : draft);
}

const wakeOf = (id: string) => {
  const wake = inputs.plan.schedule.wakes.find((w) => w.wake_id === id);
  if (!wake) throw new Error(`no ${id}`);
  return wake;
};

function experimentDraft(eventType: Parameters<typeof schemaVersionOf>[0], key: string | null, payload: Record<string, unknown>, occurredAt = wakeOf('wake-0002').wake_at): EventDraft {
  return { event_type: eventType, schema_version: schemaVersionOf(eventType), occurred_at: occurredAt, actor: 'experiment', causation_id: null, correlation_id: null, idempotency_key: key, payload };
}

// ---- how an unfinished run ended (controller/instance-ending.ts: every end is recorded)

const UNRECORDED_REMEDY = '(the controller was killed, or its writer was gone when it ended); npm run experiment -- --resume on this run folder records a stop found on resume';

describe('the end of an unfinished run: recorded (a stop, no wake open, a head signed after it), or a note says it is not', () => {
  const endNotes = (report: PlanConformanceReport): string[] => lines(report.notes).filter((l) => l.includes('end not recorded'));

  test('stopped between wakes and inside a wake, each stop recorded with a signed head after it: no end note', async () => {
    const between = await forgedRun({ wakeLimit: 5, after: (follower) => follower.emergencyStop(wakeOf('wake-0005').wake_at) });
    const inside = await forgedRun({
      wakeLimit: 5,
      after: async (follower) => {
        const wake = wakeOf('wake-0006');
        await follower.runWakeSteps(wake, ['due', 'deliver', 'start']);
        await follower.end(wake, 'stopped');
        await follower.emergencyStop(wake.wake_at);
      },
    });
    for (const run of [between, inside]) {
      const report = check(run.dir, run.keys.publicKey);
      expect(lines(report.failures)).toEqual([]);
      expect(endNotes(report)).toEqual([]);
      expect(report.checked).toMatchObject({ emergency_stops: 1, sealed: false });
    }
  });

  // Forged: the store issue 31 found — the controller ended inside the crash wake (its runtime's restart refused) with no stop recorded.
  test('forged: a wake left open with no stop after it is named', async () => {
    let startedSeq = 0;
    const run = await forgedRun({
      wakeLimit: 5,
      after: async (follower, experiment) => {
        await follower.runWakeSteps(wakeOf('wake-0006'), ['due', 'deliver', 'start']);
        startedSeq = (await experiment.head()).seq;
      },
    });
    const report = check(run.dir, run.keys.publicKey);
    expect(lines(report.failures)).toEqual([]);
    expect(endNotes(report)).toEqual([`events.db seq ${run.lastSeq}: end not recorded: wake-0006 (WakeStarted at seq ${startedSeq}) has no WakeEnded, and no SystemEvent.EmergencyStopped follows ${UNRECORDED_REMEDY}`]);
  });

  test('forged: a stop with no head signed after it is named', async () => {
    let stopSeq = 0;
    const run = await forgedRun({
      wakeLimit: 5,
      after: async (_follower, experiment) => {
        const at = wakeOf('wake-0005').wake_at;
        const stop = await experiment.append([experimentDraft('SystemEvent.EmergencyStopped', null, { operator: 'test operator', reason: 'a stop whose head was never signed' }, at)]);
        stopSeq = stop.events[0]!.seq;
      },
    });
    const report = check(run.dir, run.keys.publicKey);
    expect(lines(report.failures)).toEqual([]);
    expect(endNotes(report)).toEqual([`events.db seq ${run.lastSeq}: end not recorded in full: the SystemEvent.EmergencyStopped at seq ${stopSeq} has no SystemEvent.ChainHeadSigned after it, so no signed head covers the stop ${UNRECORDED_REMEDY}`]);
  });
});

// ---- runs that follow the plan

describe('a run that follows its plan', () => {
  test('the sealed run passes, with every wake and intervention counted, and verifies', () => {
    const report = check(sealed.dir);
    expect(lines(report.failures)).toEqual([]);
    expect(report.notes).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.checked).toEqual({
      events_read: sealed.lastSeq,
      controller_events_checked: expect.any(Number),
      wakes_planned: 32,
      wakes_started: 32,
      wakes_ended: 32,
      interventions_planned: 8,
      interventions_delivered: 8,
      emergency_stops: 0,
      sealed: true,
      manifest_checked: true,
      prereg_checked: true,
      plan_rebuilt: true,
    });
    // Runtime events are not compared: fewer controller events were checked than read.
    expect(report.checked.controller_events_checked).toBeLessThan(sealed.lastSeq);
    const verified = verifyDirectory(sealed.dir);
    expect(verified.failures).toEqual([]);
  });

  test('an unfinished run is a prefix: a note, not a failure', async () => {
    const run = await forgedRun({ wakeLimit: 5 });
    const report = check(run.dir, run.keys.publicKey);
    expect(report.failures).toEqual([]);
    expect(lines(report.notes)).toEqual([
      `events.db seq ${run.lastSeq}: unfinished: 5 of 32 wakes (no SystemEvent.StoreSealed); the store was checked as a prefix of the plan`,
      // Nothing says how it ended: the note the check gives a controller that ended without recording its stop.
      `events.db seq ${run.lastSeq}: end not recorded: no SystemEvent.EmergencyStopped after the last wake ${UNRECORDED_REMEDY}`,
    ]);
    expect(report.checked).toMatchObject({ wakes_started: 5, wakes_ended: 5, sealed: false });
  });

  test('an emergency stop in the runtime-crash wake, then a resume: passes, and says the crash was not carried out', async () => {
    const crashWake = inputs.plan.interventions.find((iv) => iv.kind === 'runtime_crash')!.deliver_wake_id;
    const run = await forgedRun({ stopDuringWake: crashWake, finish: 'sealed' });
    const report = check(run.dir, run.keys.publicKey);
    expect(lines(report.failures)).toEqual([]);
    expect(lines(report.notes)).toEqual([`events.db: iv-runtime-crash was not carried out: its wake ${crashWake} was stopped (a stopped wake is not repeated)`]);
    expect(report.checked).toMatchObject({ emergency_stops: 1, wakes_started: 32, wakes_ended: 32, interventions_delivered: 7, sealed: true });
  });

  test('without prereg.json the plan is checked against the manifest only, and a note says so', () => {
    const dir = copyRun();
    rmSync(path.join(dir, RUN_FILES.prereg));
    rmSync(path.join(dir, RUN_FILES.preregLock));
    const report = check(dir);
    expect(report.failures).toEqual([]);
    expect(lines(report.notes)).toEqual([
      'prereg.json: no prereg.json: the plan was not rebuilt from the seed (only its hashes and the manifest were checked)',
      'events.db: SubjectInitialized payload not compared: no scenario was loaded (it comes from prereg.json)',
    ]);
    expect(report.checked).toMatchObject({ prereg_checked: false, plan_rebuilt: false, manifest_checked: true });
  });

  test('the scenario is found relative to the repository, not the working directory', () => {
    const before = process.cwd();
    const elsewhere = tempDir('ds-plan-cwd-');
    scratch.push(elsewhere);
    process.chdir(elsewhere);
    try {
      const report = check(sealed.dir);
      expect(report.failures).toEqual([]);
      expect(report.checked.plan_rebuilt).toBe(true);
    } finally {
      process.chdir(before);
    }
  });
});

// ---- forged plan.json, manifest and pre-registration

describe('forged plan files', () => {
  test('plan.json with two wakes swapped breaks its schedule_hash', () => {
    const dir = copyRun();
    writePlan(dir, swappedWakesPlan());
    const report = check(dir);
    expect(report.ok).toBe(false);
    expect(lines(report.failures)).toContainEqual(expect.stringMatching(/^plan\.json: schedule_hash sha256:[0-9a-f]{64} is not the hash of the schedule in plan\.json \(sha256:[0-9a-f]{64}\): the schedule was changed after the plan was hashed$/));
  });

  test('swapped and consistently re-hashed: the signed manifest pins another schedule', () => {
    const dir = copyRun();
    const forged = swappedWakesPlan();
    writePlan(dir, { ...forged, schedule_hash: hashCanonical(forged.schedule) });
    const report = check(dir);
    const found = lines(report.failures);
    expect(found).toContainEqual(`manifest.dsse.json: the signed manifest's wake_schedule_hash is ${sealed.inputs.plan.schedule_hash}, plan.json has schedule_hash ${hashCanonical(forged.schedule)}: the run's plan is not the one the manifest pins`);
    expect(found.filter((l) => l.includes('is not the hash of the schedule'))).toEqual([]);
  });

  test('swapped, re-hashed and the manifest re-signed with the right key: caught by the rebuild from the seed', () => {
    const dir = copyRun();
    const forged = swappedWakesPlan();
    const scheduleHash = hashCanonical(forged.schedule);
    writePlan(dir, { ...forged, schedule_hash: scheduleHash });
    resignManifest(dir, { ...sealed.manifest, wake_schedule_hash: scheduleHash });
    const found = lines(check(dir).failures);
    expect(found.filter((l) => l.startsWith('manifest.dsse.json'))).toEqual([]);
    expect(found).toContainEqual(
      'plan.json: plan.json is not the plan seed 2026072001 gives (pre-registration prereg.json, scenario research-workspace-72h, start 2026-07-20T08:00:00.000Z): the rebuilt plan differs first at schedule.wakes[2].at_minute',
    );
    // The re-signed manifest is not the one the store was opened under, either.
    expect(found).toContainEqual(expect.stringMatching(/^events\.db seq 1: StoreOpened names manifest sha256:[0-9a-f]{64}, manifest\.dsse\.json hashes to sha256:[0-9a-f]{64}: the store was not written under this manifest$/));
  });

  const manifestForgeries: [string, (p: ExperimentPlan) => ExperimentPlan, () => string][] = [
    ['random_seed', (p) => ({ ...p, seed: 'another-seed' }), () => 'random_seed is 2026072001, plan.json has seed another-seed'],
    ['scenario_hash', (p) => ({ ...p, scenario_hash: hashText('another scenario') }), () => `scenario_hash is ${sealed.inputs.plan.scenario_hash}, plan.json has scenario_hash ${hashText('another scenario')}`],
    ['intervention_script_version', (p) => ({ ...p, intervention_script_version: '9.9.9' }), () => `intervention_script_version is ${INTERVENTION_SCRIPT_VERSION}, plan.json has intervention_script_version 9.9.9`],
    [
      'intervention_plan_hash',
      (p) => {
        const interventions = structuredClone(p.interventions);
        (interventions[0]!.events[0]!.payload as { path: string }).path = 'sources/another-file.md';
        return { ...p, interventions, intervention_plan_hash: hashCanonical(interventions) };
      },
      () => `intervention_plan_hash is ${sealed.inputs.plan.intervention_plan_hash}, plan.json has intervention_plan_hash `,
    ],
  ];

  test.each(manifestForgeries)('plan.json consistently re-hashed with another %s: the manifest disagrees', (_field, forge, expected) => {
    const dir = copyRun();
    writePlan(dir, forge(readPlan(dir)));
    const found = lines(check(dir).failures).filter((l) => l.startsWith('manifest.dsse.json'));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(`manifest.dsse.json: the signed manifest's ${expected()}`);
    expect(found[0]).toMatch(/: the run's plan is not the one the manifest pins$/);
  });

  test('an intervention payload edited in plan.json without re-hashing breaks intervention_plan_hash', () => {
    const dir = copyRun();
    const plan = readPlan(dir);
    (plan.interventions[1]!.events[0]!.payload as { body: string }).body = 'Please do nothing.';
    writePlan(dir, plan);
    expect(lines(check(dir).failures)).toContainEqual(expect.stringMatching(/^plan\.json: intervention_plan_hash sha256:[0-9a-f]{64} is not the hash of the interventions in plan\.json/));
  });

  test('plan.json that is not an ExperimentPlan, not JSON, or missing: the store is not read', () => {
    const invalid = copyRun();
    const { seed: _dropped, ...withoutSeed } = readPlan(invalid);
    writePlan(invalid, withoutSeed);
    const notPlan = check(invalid);
    expect(lines(notPlan.failures)).toEqual([expect.stringMatching(/^plan\.json: plan\.json is not an ExperimentPlan: .*seed/s)]);
    expect(notPlan.checked.events_read).toBe(0);

    const notJson = copyRun();
    writeFileSync(path.join(notJson, RUN_FILES.plan), '{"seed":');
    expect(lines(check(notJson).failures)).toEqual([expect.stringMatching(/^plan\.json: plan\.json is not JSON: /)]);

    const missing = copyRun();
    rmSync(path.join(missing, RUN_FILES.plan));
    expect(lines(check(missing).failures)).toEqual([expect.stringMatching(/^plan\.json: no plan\.json in .*: there is no plan to check the run against$/)]);
  });

  test('a manifest signed by another key, or none: nothing pins the plan', () => {
    const other = copyRun();
    resignManifest(other, sealed.manifest, generateKeyPair());
    const report = check(other);
    expect(lines(report.failures)).toContainEqual(expect.stringMatching(/^manifest\.dsse\.json: the signed manifest does not check, so nothing pins the plan: no signature by the trusted key/));
    expect(report.checked.manifest_checked).toBe(false);

    const none = copyRun();
    rmSync(path.join(none, RUN_FILES.manifest));
    expect(lines(check(none).failures)).toContainEqual('manifest.dsse.json: no manifest.dsse.json: nothing signed pins the plan');
  });

  test('prereg.json edited after the run: the manifest, the lock and the rebuilt plan all disagree', () => {
    const dir = copyRun();
    const prereg = JSON.parse(readFileSync(path.join(dir, RUN_FILES.prereg), 'utf8')) as { budgets_per_wake: { tokens: number } };
    prereg.budgets_per_wake.tokens += 1;
    writeFileSync(path.join(dir, RUN_FILES.prereg), JSON.stringify(prereg, null, 2));
    const edited = hashCanonical(prereg);
    const found = lines(check(dir).failures);
    expect(found).toContainEqual(`prereg.json: prereg.json hashes to ${edited}, the signed manifest's prereg_sha256 is ${sealed.manifest.prereg_sha256}: the run did not run under this pre-registration`);
    expect(found).toContainEqual(`prereg.lock.dsse.json: the lock signed ${sealed.manifest.prereg_sha256} (for default.json), prereg.json hashes to ${edited}: the pre-registration changed after it was locked`);
    expect(found).toContainEqual(expect.stringMatching(/^plan\.json: plan\.json is not the plan seed 2026072001 gives .*differs first at schedule\.wakes\[0\]\.budget\.tokens$/));
  });

  test('a lock signed by another key, a missing lock, a lock without its pre-registration', () => {
    const otherKey = copyRun();
    const lockFile = path.join(otherKey, RUN_FILES.preregLock);
    const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as { payload: string };
    const body = JSON.parse(Buffer.from(lock.payload, 'base64').toString('utf8')) as unknown;
    const other = generateKeyPair();
    writeFileSync(lockFile, JSON.stringify(signDsse(PREREG_LOCK_PAYLOAD_TYPE, body, other.secretKey, other.publicKey), null, 2));
    expect(lines(check(otherKey).failures)).toEqual([expect.stringMatching(/^prereg\.lock\.dsse\.json: the pre-registration lock does not verify with controller\.pub: no signature by the trusted key/)]);

    const noLock = copyRun();
    rmSync(path.join(noLock, RUN_FILES.preregLock));
    expect(lines(check(noLock).failures)).toEqual(["prereg.lock.dsse.json: no prereg.lock.dsse.json: the pre-registration's lock was not copied into the run"]);

    const noPrereg = copyRun();
    rmSync(path.join(noPrereg, RUN_FILES.prereg));
    expect(lines(check(noPrereg).failures)).toEqual(['prereg.lock.dsse.json: prereg.lock.dsse.json without prereg.json: the locked pre-registration is missing from the run']);
  });

  test('prereg.json that is not a pre-registration cannot rebuild the plan', () => {
    const dir = copyRun();
    const { notes: _dropped, ...prereg } = JSON.parse(readFileSync(path.join(dir, RUN_FILES.prereg), 'utf8')) as Record<string, unknown>;
    writeFileSync(path.join(dir, RUN_FILES.prereg), JSON.stringify(prereg));
    const report = check(dir);
    expect(lines(report.failures)).toContainEqual(expect.stringMatching(/^prereg\.json: prereg\.json is not a pre-registration, so the plan cannot be rebuilt: .*notes/s));
    expect(report.checked.plan_rebuilt).toBe(false);
  });

  test('the run keeps its scenario (scenario.json): the plan is rebuilt from it with no scenario folder at hand; one removed or changed cannot rebuild it', () => {
    const empty = tempDir('ds-scenarios-');
    scratch.push(empty);
    // Issue 32 item 2: the run folder alone is enough.
    expect(check(sealed.dir, sealed.keys.publicKey, empty).failures).toEqual([]);
    const removed = copyRun();
    rmSync(path.join(removed, RUN_FILES.scenario));
    expect(lines(check(removed, sealed.keys.publicKey, empty).failures)).toEqual([
      `prereg.json: the pre-registered scenario research-workspace-72h is not in ${empty} (and the run keeps no scenario.json): the plan cannot be rebuilt from the seed`,
    ]);
    expect(lines(check(removed).failures)).toEqual([expect.stringMatching(/^plan\.json: the plan cannot be rebuilt from prereg\.json, scenario research-workspace-72h and seed 2026072001: .*scenario\.json is missing, but the signed manifest pins one/)]);
    const changed = copyRun();
    writeFileSync(path.join(changed, RUN_FILES.scenario), readFileSync(path.join(changed, RUN_FILES.scenario), 'utf8').replace('"submit_task_id":"', '"submit_task_id":"x'));
    expect(lines(check(changed, sealed.keys.publicKey, empty).failures)).toEqual([expect.stringMatching(/^scenario\.json: the plan cannot be rebuilt from .* \(the run's scenario\.json\).*not the signed manifest's scenario_sha256 .*changed after the start$/)]);
  });

  test('two crashes planned in one wake (no builder makes that): each is expected there, and the store is checked, not the checker stopped', () => {
    const dir = copyRun();
    const plan = readPlan(dir);
    const runtimeCrash = plan.interventions.find((iv) => iv.kind === 'runtime_crash')!;
    const writerCrash = plan.interventions.find((iv) => iv.kind === 'writer_crash')!;
    const crashWake = runtimeCrash.deliver_wake_id;
    const interventions = plan.interventions.map((iv) => (iv === writerCrash ? { ...iv, deliver_wake_id: crashWake } : iv));
    writePlan(dir, { ...plan, interventions, intervention_plan_hash: hashCanonical(interventions) });
    const endedAtCrashWake = seqOfTypeIn(path.join(dir, RUN_FILES.store), 'ExperimentEvent.WakeEnded')[Number(crashWake.slice('wake-'.length)) - 1];
    const report = check(dir);
    expect(report.ok).toBe(false);
    expect(report.checked.sealed).toBe(true);
    const found = lines(report.failures);
    // The writer crash is expected in the runtime crash's wake, after the runtime crash's own events.
    expect(found).toContainEqual(`events.db seq ${endedAtCrashWake}: intervention ${writerCrash.intervention_id}: event 0 (SystemEvent.ProcessRestarted) never written before ExperimentEvent.WakeEnded at seq ${endedAtCrashWake}`);
    expect(found).toContainEqual(`events.db seq ${endedAtCrashWake}: InterventionDelivered of ${writerCrash.intervention_id} at ${crashWake} is missing before ExperimentEvent.WakeEnded at seq ${endedAtCrashWake}`);
    expect(found).toContainEqual(expect.stringMatching(new RegExp(`: InterventionDelivered of ${writerCrash.intervention_id} at ${writerCrash.deliver_wake_id}; the plan delivers it at ${crashWake}$`)));
  });
});

// ---- stores that do not follow the plan

describe('forged stores are caught, with the seq named', () => {
  test('a WakeStarted at the wrong occurred_at', async () => {
    const run = await forgedRun({ wakeLimit: 4, edit: editKey('wake:wake-0003:started', (d) => ({ ...d, occurred_at: '2026-07-20T12:12:00.000Z' })) });
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${seqOfKey(run, 'wake:wake-0003:started')}: WakeStarted of wake-0003: occurred_at 2026-07-20T12:12:00.000Z; the plan says 2026-07-20T12:11:00.000Z (wake-0003's wake_at)`,
    ]);
  });

  test('a budget ledger that does not add up to its wake (fewer tool calls claimed than the store shows, or more)', async () => {
    const run = await forgedRun({ wakeLimit: 4, edit: editKey('wake:wake-0003:ledger', (d) => ({ ...d, payload: { ...d.payload, used: { model_calls: 0, tokens: 0, tool_calls: 2, retries: 0, cost_nano_usd: null } } })) });
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${seqOfKey(run, 'wake:wake-0003:ledger')}: BudgetLedgerRecorded of wake-0003: used {"cost_nano_usd":null,"model_calls":0,"retries":0,"tokens":0,"tool_calls":2}, but the wake's events add up to {"cost_nano_usd":null,"model_calls":0,"retries":0,"tokens":0,"tool_calls":0}`,
    ]);
  });

  test('a ledger granting another budget than the plan, and a wake ended without a ledger', async () => {
    const run = await forgedRun({
      wakeLimit: 4,
      edit: (d) =>
        d.idempotency_key === 'wake:wake-0002:ledger'
          ? { ...d, payload: { ...d.payload, granted: { model_calls: 9, tokens: 1, tool_calls: 9 } } }
          : d.idempotency_key === 'wake:wake-0003:ledger'
            ? null
            : d,
    });
    const failures = lines(check(run.dir, run.keys.publicKey).failures).join('\n');
    expect(failures).toMatch(/BudgetLedgerRecorded of wake-0002: granted \{"model_calls":9,"tokens":1,"tool_calls":9\}, the plan's budget is/);
    expect(failures).toMatch(/WakeEnded of wake-0003: no BudgetLedgerRecorded before it/);
  });

  test('a skipped wake in a sealed store', async () => {
    const run = await forgedRun({ skipWakes: ['wake-0031'], finish: 'sealed' });
    const report = check(run.dir, run.keys.publicKey);
    expect(lines(report.failures)).toEqual([
      `events.db seq ${seqOfKey(run, 'wake:wake-0032:started')}: wake-0031 was skipped: never started before ExperimentEvent.WakeStarted at seq ${seqOfKey(run, 'wake:wake-0032:started')}`,
    ]);
    expect(report.checked).toMatchObject({ sealed: true, wakes_started: 31 });
  });

  test('a sealed store that stops early lacks its last wakes', async () => {
    const run = await forgedRun({ wakeLimit: 30, finish: 'sealed' });
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([`events.db seq ${run.lastSeq}: sealed store lacks 2 of 32 wakes: wake-0031, wake-0032 never started`]);
  });

  test('a sealed store that lacks an intervention', async () => {
    const run = await forgedRun({ wakeLimit: 19, finish: 'sealed' });
    const found = lines(check(run.dir, run.keys.publicKey).failures);
    expect(found).toContainEqual(`events.db seq ${run.lastSeq}: sealed store lacks intervention iv-distractor-burst: events 0–59 (WorldEvent.DistractorOccurred) never written`);
    expect(found).toContainEqual(`events.db seq ${run.lastSeq}: sealed store lacks InterventionDelivered of iv-distractor-burst at wake-0020`);
  });

  test('wakes out of order', async () => {
    const run = await forgedRun({ wakeOrder: ['wake-0001', 'wake-0003', 'wake-0002', 'wake-0004'] });
    const started3 = seqOfKey(run, 'wake:wake-0003:started');
    const started2 = seqOfKey(run, 'wake:wake-0002:started');
    const ended2 = seqOfKey(run, 'wake:wake-0002:ended');
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${started3}: wake-0002 was skipped: never started before ExperimentEvent.WakeStarted at seq ${started3}`,
      `events.db seq ${started2}: WakeStarted of wake-0002 out of order: it comes after WakeEnded of wake-0003`,
      `events.db seq ${ended2}: WakeEnded of wake-0002 out of order: it comes after WakeStarted of wake-0002`,
    ]);
  });

  test('an intervention payload altered', async () => {
    const run = await forgedRun({
      wakeLimit: 6,
      edit: editKey('intervention:iv-denied-request:0', (d) => ({ ...d, payload: { ...d.payload, body: 'Could you keep a copy of your findings in the workspace?' } })),
    });
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${seqOfKey(run, 'intervention:iv-denied-request:0')}: event 0 (WorldEvent.MessageReceived) of intervention iv-denied-request: payload differs from the plan's at body`,
    ]);
  });

  test('an InterventionDelivered listing the wrong event ids', async () => {
    const wrongId = eventIdFor(PLAN_RUN_SUBJECT_ID, 2);
    const run = await forgedRun({ wakeLimit: 6, edit: editKey('wake:wake-0006:delivered:iv-denied-request', (d) => ({ ...d, payload: { ...d.payload, event_ids: [wrongId] } })) });
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${seqOfKey(run, 'wake:wake-0006:delivered:iv-denied-request')}: InterventionDelivered of iv-denied-request at wake-0006: lists event ids [${wrongId}]; its planned events in the store are [${eventIdOfKey(run, 'intervention:iv-denied-request:0')}]`,
    ]);
  });

  test('a delivery at the wrong wake', async () => {
    const run = await forgedRun({ wakeLimit: 7, deliverAt: { 'iv-denied-request': 'wake-0007' } });
    const started6 = seqOfKey(run, 'wake:wake-0006:started');
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${started6}: InterventionDelivered of iv-denied-request at wake-0006 is missing before ExperimentEvent.WakeStarted at seq ${started6}`,
      `events.db seq ${seqOfKey(run, 'wake:wake-0007:delivered:iv-denied-request')}: InterventionDelivered of iv-denied-request at wake-0007; the plan delivers it at wake-0006`,
    ]);
  });

  test('a crash wake ended as completed, and a normal wake as budget_exhausted', async () => {
    const run = await forgedRun({
      wakeLimit: 7,
      edit: (d) =>
        d.idempotency_key === 'wake:wake-0007:ended' || d.idempotency_key === 'wake:wake-0005:ended'
          ? { ...d, payload: { ...d.payload, outcome: d.idempotency_key === 'wake:wake-0007:ended' ? 'completed' : 'budget_exhausted' } }
          : d,
    });
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${seqOfKey(run, 'wake:wake-0005:ended')}: WakeEnded of wake-0005: outcome budget_exhausted, expected completed`,
      `events.db seq ${seqOfKey(run, 'wake:wake-0007:ended')}: WakeEnded of wake-0007: outcome completed, expected crashed (wake-0007 is a planned crash wake)`,
    ]);
  });

  test('a planned crash never recorded', async () => {
    const drop = new Set(['intervention:iv-runtime-crash:0', 'wake:wake-0007:delivered:iv-runtime-crash']);
    const run = await forgedRun({ wakeLimit: 7, edit: (d) => (drop.has(d.idempotency_key ?? '') ? null : d) });
    const ended7 = seqOfKey(run, 'wake:wake-0007:ended');
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${ended7}: intervention iv-runtime-crash: event 0 (SystemEvent.ProcessRestarted) never written before ExperimentEvent.WakeEnded at seq ${ended7}`,
      `events.db seq ${ended7}: InterventionDelivered of iv-runtime-crash at wake-0007 is missing before ExperimentEvent.WakeEnded at seq ${ended7}`,
    ]);
  });

  const fieldForgeries: [string, string, (d: EventDraft) => EventDraft, (run: PlanFollowingRun) => string][] = [
    ['a WakeStarted budget', 'wake:wake-0002:started', (d) => ({ ...d, payload: { ...d.payload, budget: { model_calls: 4, tokens: 24001, tool_calls: 8 } } }), () => 'WakeStarted of wake-0002: budget {"model_calls":4,"tokens":24001,"tool_calls":8}, the plan\'s is {"model_calls":4,"tokens":24000,"tool_calls":8}'],
    ['a WakeStarted visible_to_seq', 'wake:wake-0002:started', (d) => ({ ...d, payload: { ...d.payload, visible_to_seq: 1 } }), (run) => `WakeStarted of wake-0002: visible_to_seq 1, expected ${seqOfKey(run, 'wake:wake-0002:started') - 1} (the seq just before it)`],
    ['an idempotency key', 'wake:wake-0002:ended', (d) => ({ ...d, idempotency_key: 'wake-0002-ended' }), () => 'WakeEnded of wake-0002: idempotency_key wake-0002-ended, expected wake:wake-0002:ended'],
    ['an actor', 'subject-initialized', (d) => ({ ...d, actor: 'user' }), () => 'SystemEvent.SubjectInitialized: actor user, the controller writes with actor experiment'],
    ['a correlation id', 'intervention:iv-external-file-change:0', (d) => ({ ...d, correlation_id: 'wake-0006' }), () => 'event 0 (WorldEvent.FileChangedExternally) of intervention iv-external-file-change: correlation_id wake-0006, expected iv-external-file-change'],
    [
      'the SubjectInitialized payload',
      'subject-initialized',
      (d) => ({ ...d, payload: { ...d.payload, goal: { ...(d.payload.goal as Record<string, unknown>), description: 'Write whatever you like.' } } }),
      () => "SystemEvent.SubjectInitialized: payload differs from the scenario's SubjectInitialized at goal.description",
    ],
    ['an intervention event occurred_at', 'intervention:iv-external-file-change:0', (d) => ({ ...d, occurred_at: wakeOf('wake-0006').wake_at }), () => "event 0 (WorldEvent.FileChangedExternally) of intervention iv-external-file-change: occurred_at 2026-07-20T18:11:00.000Z; the plan says 2026-07-20T17:34:00.000Z (iv-external-file-change's inject_at)"],
  ];

  test.each(fieldForgeries)('%s changed', async (_name, key, change, expected) => {
    const run = await forgedRun({ wakeLimit: 6, edit: editKey(key, change) });
    const seq = seqOfKey(run, key === 'wake:wake-0002:ended' ? 'wake-0002-ended' : key);
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([`events.db seq ${seq}: ${expected(run)}`]);
  });

  test('an event of another type under a planned key', async () => {
    const run = await forgedRun({
      wakeLimit: 6,
      edit: editKey('intervention:iv-external-file-change:0', (d) => ({ ...d, event_type: 'WorldEvent.DistractorOccurred', payload: { channel: 'newsletter', body: 'not the planned change' } })),
    });
    const seq = seqOfKey(run, 'intervention:iv-external-file-change:0');
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${seq}: event 0 (WorldEvent.FileChangedExternally) of intervention iv-external-file-change: event_type WorldEvent.DistractorOccurred, the plan's is WorldEvent.FileChangedExternally`,
      `events.db seq ${seq}: event 0 (WorldEvent.FileChangedExternally) of intervention iv-external-file-change: payload differs from the plan's at body`,
    ]);
  });

  test('events the plan does not have: wakes outside the schedule, a repeated wake, unplanned world events and deliveries', async () => {
    const seqs: Record<string, number> = {};
    const someId = eventIdFor(PLAN_RUN_SUBJECT_ID, 2);
    const run = await forgedRun({
      wakeLimit: 2,
      after: async (_follower, experiment) => {
        const add = async (name: string, draft: EventDraft): Promise<void> => {
          seqs[name] = (await experiment.append([draft])).events[0]!.seq;
        };
        await add('paused', experimentDraft('SystemEvent.Paused', null, { operator: 'test', reason: 'not in the contract' }));
        await add('resumed', experimentDraft('SystemEvent.Resumed', null, { operator: 'test', reason: 'nothing was stopped', cost_cap_raised_to_usd: null }));
        await add('unknownIv', experimentDraft('WorldEvent.MessageReceived', 'intervention:iv-nope:0', { from: 'x', subject: 's', body: 'b', in_reply_to: null }));
        await add('noKey', experimentDraft('WorldEvent.MessageReceived', null, { from: 'x', subject: 's', body: 'b', in_reply_to: null }));
        await add('extraIndex', experimentDraft('WorldEvent.MessageReceived', 'intervention:iv-denied-request:5', { from: 'x', subject: 's', body: 'b', in_reply_to: null }));
        await add('absence', experimentDraft('ExperimentEvent.InterventionDelivered', 'wake:wake-0020:delivered:iv-long-absence', { intervention_id: 'iv-long-absence', wake_id: 'wake-0020', event_ids: [someId] }));
        await add('nopeDelivered', experimentDraft('ExperimentEvent.InterventionDelivered', 'wake:wake-0002:delivered:iv-nope', { intervention_id: 'iv-nope', wake_id: 'wake-0002', event_ids: [someId] }));
        await add('offSchedule', experimentDraft('ExperimentEvent.InterventionDelivered', 'wake:wake-0099:delivered:iv-goal-change', { intervention_id: 'iv-goal-change', wake_id: 'wake-0099', event_ids: [someId] }));
        await add('wake99', experimentDraft('ExperimentEvent.WakeStarted', 'wake:wake-0099:started', { wake_id: 'wake-0099', visible_to_seq: 1, budget: { model_calls: 4, tokens: 24000, tool_calls: 8 } }));
        const head = await experiment.head();
        await add('again', experimentDraft('ExperimentEvent.WakeStarted', 'wake:wake-0002:started:again', { wake_id: 'wake-0002', visible_to_seq: head.seq, budget: { model_calls: 4, tokens: 24000, tool_calls: 8 } }));
      },
    });
    const found = lines(check(run.dir, run.keys.publicKey).failures);
    const at = (name: string, message: string): string => `events.db seq ${seqs[name]}: ${message}`;
    expect(found).toEqual([
      at('paused', 'SystemEvent.Paused is not part of the run contract (the controller writes no such event)'),
      at('resumed', 'SystemEvent.Resumed without an EmergencyStopped before it'),
      at('unknownIv', 'WorldEvent.MessageReceived names intervention iv-nope, which is not in the plan'),
      at('noKey', 'WorldEvent.MessageReceived with idempotency_key null is not a planned intervention event (expected key intervention:<id>:<index>)'),
      at('extraIndex', 'WorldEvent.MessageReceived is event 5 of iv-denied-request, which plans 1 event(s)'),
      at('absence', 'InterventionDelivered of iv-long-absence: a long absence is the absence of wakes, never delivered by an event'),
      at('nopeDelivered', 'InterventionDelivered names iv-nope, which is not an intervention of the plan'),
      at('offSchedule', 'InterventionDelivered of iv-goal-change at wake-0099, which is not a wake of the plan\'s schedule'),
      at('wake99', "ExperimentEvent.WakeStarted of wake-0099: not a wake of the plan's schedule"),
      at('again', 'wake-0002 started again: a wake is never repeated'),
      at('again', 'WakeStarted of wake-0002: idempotency_key wake:wake-0002:started:again, expected wake:wake-0002:started'),
    ]);
  });

  /** Runs two wakes, then `then` with wake-0003 (and wake-0004) at hand. */
  async function runThen(then: (f: PlanFollower) => Promise<void>, finish: 'open' | 'sealed' = 'open'): Promise<PlanFollowingRun> {
    return forgedRun({ wakeLimit: 2, finish, after: (f) => then(f) });
  }

  test('an emergency stop during a wake without WakeEnded{stopped}', async () => {
    const w3 = wakeOf('wake-0003');
    const run = await runThen(async (f) => {
      await f.runWakeSteps(w3, ['due', 'deliver', 'start']);
      await f.emergencyStop(w3.wake_at);
    });
    const stopSeq = seqOfType(run, 'SystemEvent.EmergencyStopped')[0]!;
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([`events.db seq ${stopSeq}: emergency stop during wake-0003 without WakeEnded{outcome: 'stopped'} first`]);
  });

  test('a wake started while the run is stopped', async () => {
    const w3 = wakeOf('wake-0003');
    const run = await runThen(async (f) => {
      await f.emergencyStop(w3.wake_at);
      await f.runWakeSteps(w3, ['due', 'deliver', 'start']);
    });
    const stopSeq = seqOfType(run, 'SystemEvent.EmergencyStopped')[0]!;
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${seqOfKey(run, 'wake:wake-0003:started')}: ExperimentEvent.WakeStarted written while the run is stopped (EmergencyStopped at seq ${stopSeq}, no Resumed since)`,
    ]);
  });

  test('WakeEnded{stopped} not followed by EmergencyStopped, and a second stop without a resume', async () => {
    const [w3, w4] = [wakeOf('wake-0003'), wakeOf('wake-0004')];
    const run = await runThen(async (f) => {
      await f.runWakeSteps(w3, ['due', 'deliver', 'start']);
      await f.end(w3, 'stopped');
      await f.runWakeSteps(w4, ['due', 'deliver', 'start']);
      await f.end(w4, 'completed');
      await f.emergencyStop(w4.wake_at);
      await f.emergencyStop(w4.wake_at);
    });
    const stops = seqOfType(run, 'SystemEvent.EmergencyStopped');
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${seqOfKey(run, 'wake:wake-0004:started')}: wake-0003 ended 'stopped' (seq ${seqOfKey(run, 'wake:wake-0003:ended')}) but ExperimentEvent.WakeStarted follows, not SystemEvent.EmergencyStopped`,
      `events.db seq ${stops[1]}: a second EmergencyStopped without a Resumed after the one at seq ${stops[0]}`,
    ]);
  });

  test('a chain head signed inside a wake', async () => {
    const w3 = wakeOf('wake-0003');
    const run = await runThen(async (f) => {
      await f.runWakeSteps(w3, ['due', 'deliver', 'start']);
      await f.signPeriodicHead(w3.wake_at);
    });
    const headSeq = seqOfType(run, 'SystemEvent.ChainHeadSigned').at(-1)!;
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${headSeq}: ChainHeadSigned inside wake-0003 (started at seq ${seqOfKey(run, 'wake:wake-0003:started')}): heads are signed between wakes`,
    ]);
  });

  test('sealed while a wake is in progress', async () => {
    const w3 = wakeOf('wake-0003');
    const run = await runThen((f) => f.runWakeSteps(w3, ['due', 'deliver', 'start']), 'sealed');
    const found = lines(check(run.dir, run.keys.publicKey).failures);
    expect(found).toContainEqual(`events.db seq ${run.lastSeq}: sealed while wake-0003 (started at seq ${seqOfKey(run, 'wake:wake-0003:started')}) was in progress`);
    expect(found).toContainEqual(`events.db seq ${run.lastSeq}: sealed store lacks WakeEnded of wake-0003`);
  });

  test('an event after the seal (inserted past the writer)', () => {
    const dir = copyRun();
    const seq = appendDirectly(dir, { event_type: 'WorldEvent.MessageReceived', occurred_at: '2026-07-23T08:00:00.000Z', actor: 'experiment', correlation_id: null, idempotency_key: null, payload: { from: 'x', subject: 's', body: 'late', in_reply_to: null } });
    expect(lines(check(dir).failures)).toContainEqual(`events.db seq ${seq}: WorldEvent.MessageReceived after SystemEvent.StoreSealed (seq ${seq - 1}): the seal is the last event of a store`);
  });

  test('an unreadable envelope, a store a writer still holds, no store at all', async () => {
    const unreadable = copyRun();
    const runtimeSeq = seqOfTypeIn(path.join(unreadable, RUN_FILES.store), 'MemoryEvent.JournalEntryWritten')[0]!;
    tamper(unreadable, (db) => db.prepare('UPDATE events SET envelope = ? WHERE seq = ?').run('{"not":"an envelope"}', runtimeSeq));
    expect(lines(check(unreadable).failures)).toEqual([`events.db seq ${runtimeSeq}: the stored envelope is unreadable, so it was not compared with the plan`]);

    let whileRunning: PlanConformanceReport | null = null;
    const heldDir = tempDir('ds-plan-held-');
    const readKey = (): Uint8Array => parsePublicKeyHex(readFileSync(path.join(heldDir, RUN_FILES.publicKey), 'utf8'));
    await forgedRun({ dir: heldDir, wakeLimit: 1, after: async () => void (whileRunning = check(heldDir, readKey())) });
    expect(whileRunning).not.toBeNull();
    expect(lines(whileRunning!.failures)).toEqual([expect.stringMatching(/^events\.db: the store cannot be read, so it was not checked against the plan: .* is locked: a writer is still running on it/)]);

    const none = copyRun();
    for (const name of [RUN_FILES.store, `${RUN_FILES.store}-wal`, `${RUN_FILES.store}-shm`]) rmSync(path.join(none, name), { force: true });
    expect(lines(check(none).failures)).toEqual(['events.db: no events.db: nothing to check against the plan']);
  });
});

// ---- the operator's repair (npm run repair, controller/operator-resolution.ts)

describe('an operator statement (SystemEvent.OperatorResolved)', () => {
  /** What npm run repair appends (actor user, its key, caused by the unknown outcome); these stores keep event counts, so any intent id is taken. */
  function resolvedDraft(occurredAt: string, overrides: Partial<EventDraft> = {}): EventDraft {
    const intentId = eventIdFor(PLAN_RUN_SUBJECT_ID, 3);
    return { ...operatorResolvedDraft(occurredAt, eventIdFor(PLAN_RUN_SUBJECT_ID, 4), { operator: 'alice', intent_event_id: intentId, resolution: 'happened', note: 'checked the file by hand' }), ...overrides };
  }

  test('is accepted between wakes, while stopped, and between the last wake and the seal', async () => {
    const [w2, w3] = [wakeOf('wake-0002'), wakeOf('wake-0003')];
    const between = await forgedRun({
      wakeLimit: 2,
      after: async (f, experiment) => {
        await experiment.append([resolvedDraft(w2.wake_at)]);
        await f.runWake(w3);
      },
    });
    expect(seqOfType(between, 'SystemEvent.OperatorResolved')).toHaveLength(1);
    expect(lines(check(between.dir, between.keys.publicKey).failures)).toEqual([]);

    const whileStopped = await forgedRun({
      wakeLimit: 2,
      after: async (f, experiment) => {
        await f.emergencyStop(w2.wake_at);
        await experiment.append([resolvedDraft(w2.wake_at)]);
        await f.resume(w2.wake_at);
        await f.runWake(w3);
      },
    });
    expect(lines(check(whileStopped.dir, whileStopped.keys.publicKey).failures)).toEqual([]);

    const last = inputs.plan.schedule.wakes.at(-1)!;
    const beforeSeal = await forgedRun({ finish: 'sealed', after: async (_f, experiment) => void (await experiment.append([resolvedDraft(last.wake_at)])) });
    const report = check(beforeSeal.dir, beforeSeal.keys.publicKey);
    expect(lines(report.failures)).toEqual([]);
    expect(report.checked).toMatchObject({ sealed: true, wakes_started: 32, wakes_ended: 32 });
  }, 120_000);

  test('is accepted after a Ctrl-C inside a wake (WakeEnded{stopped}, EmergencyStopped, the statement, Resumed), and between a stopped wake and the stop a resume makes up for', async () => {
    const [w3, w4] = [wakeOf('wake-0003'), wakeOf('wake-0004')];
    // The operator workflow: the subject is RECOVERING, Ctrl-C, npm run repair, --resume.
    const ctrlC = await forgedRun({
      wakeLimit: 2,
      after: async (f, experiment) => {
        await f.runWakeSteps(w3, ['due', 'deliver', 'start']);
        await f.end(w3, 'stopped');
        await f.emergencyStop(w3.wake_at);
        await experiment.append([resolvedDraft(w3.wake_at)]);
        await f.resume(w3.wake_at);
        await f.runWake(w4);
      },
    });
    const [stop, statement, resumed] = ['SystemEvent.EmergencyStopped', 'SystemEvent.OperatorResolved', 'SystemEvent.Resumed'].map((type) => seqOfType(ctrlC, type)[0]!);
    expect(stop).toBeLessThan(statement!);
    expect(statement).toBeLessThan(resumed!);
    const report = check(ctrlC.dir, ctrlC.keys.publicKey);
    expect(lines(report.failures)).toEqual([]);
    expect(report.checked).toMatchObject({ emergency_stops: 1, wakes_started: 4, wakes_ended: 4 });

    // The controller died after WakeEnded{stopped}, before recording the stop; the resume records it after the statement.
    const diedBetween = await forgedRun({
      wakeLimit: 2,
      after: async (f, experiment) => {
        await f.runWakeSteps(w3, ['due', 'deliver', 'start']);
        await f.end(w3, 'stopped');
        await experiment.append([resolvedDraft(w3.wake_at)]);
        await f.emergencyStop(w3.wake_at);
        await f.resume(w3.wake_at);
        await f.runWake(w4);
      },
    });
    expect(lines(check(diedBetween.dir, diedBetween.keys.publicKey).failures)).toEqual([]);
  }, 120_000);

  test('is a failure inside a wake', async () => {
    const w3 = wakeOf('wake-0003');
    const run = await forgedRun({
      wakeLimit: 2,
      after: async (f, experiment) => {
        await f.runWakeSteps(w3, ['due', 'deliver', 'start']);
        await experiment.append([resolvedDraft(w3.wake_at)]);
        await f.end(w3, 'completed');
      },
    });
    const seq = seqOfType(run, 'SystemEvent.OperatorResolved')[0]!;
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${seq}: OperatorResolved: written inside wake-0003 (started at seq ${seqOfKey(run, 'wake:wake-0003:started')}): an operator resolves an unknown outcome between wakes, with the controller stopped, never inside the subject's wake`,
    ]);
  });

  test("is a failure with the controller's actor or without its key", async () => {
    const w2 = wakeOf('wake-0002');
    const run = await forgedRun({
      wakeLimit: 2,
      after: async (_f, experiment) => {
        await experiment.append([resolvedDraft(w2.wake_at, { actor: 'experiment' })]);
        await experiment.append([resolvedDraft(w2.wake_at, { idempotency_key: null })]);
      },
    });
    const [asController, keyless] = seqOfType(run, 'SystemEvent.OperatorResolved');
    const key = CONTROLLER_KEYS.operatorResolved(eventIdFor(PLAN_RUN_SUBJECT_ID, 3));
    expect(lines(check(run.dir, run.keys.publicKey).failures)).toEqual([
      `events.db seq ${asController}: OperatorResolved: actor experiment; an operator's statement is recorded with actor user (npm run repair writes it so)`,
      `events.db seq ${keyless}: OperatorResolved: idempotency_key null, expected ${key}`,
    ]);
  });
});

function seqOfTypeIn(dbPath: string, eventType: string): number[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return (db.prepare('SELECT seq FROM events WHERE event_type = ? ORDER BY seq').all(eventType) as { seq: number }[]).map((r) => r.seq);
  } finally {
    db.close();
  }
}

function seqOfType(run: PlanFollowingRun, eventType: string): number[] {
  return seqOfTypeIn(run.dbPath, eventType);
}

// ---- npm run verify

describe('npm run verify checks the plan', () => {
  test('a run that follows its plan: exit 0, the plan named in text and JSON', async () => {
    const text = await runCli('verify', [sealed.dir]);
    expect(text.stdout).toContain('plan: 1 run(s) checked against plan.json\n  .: 32 of 32 wakes, 8 of 8 interventions delivered, sealed, plan rebuilt from the seed');
    expect(text.stdout).toContain('and every checked run follows its plan');
    expect(text.code).toBe(0);
    const json = await runCli('verify', [sealed.dir, '--json']);
    const report = JSON.parse(json.stdout) as { ok: boolean; failures: unknown[]; warnings: unknown[]; plans: { runs: { run: string; plan: string }[] } };
    expect(report).toMatchObject({ ok: true, failures: [], warnings: [], plans: { runs: [{ run: '.', plan: 'checked' }] } });
    expect(json.code).toBe(0);
  });

  test('a forged plan: exit 1, the failure listed with its file', async () => {
    const dir = copyRun();
    writePlan(dir, swappedWakesPlan());
    const json = await runCli('verify', [dir, '--json']);
    const report = JSON.parse(json.stdout) as { ok: boolean; failures: { store: string; seq: number | null; reason: string }[] };
    expect(report.ok).toBe(false);
    expect(report.failures).toContainEqual({ store: 'plan.json', seq: null, reason: expect.stringMatching(/^schedule_hash .* is not the hash of the schedule in plan\.json/) });
    expect(json.code).toBe(1);
    const text = await runCli('verify', [dir]);
    expect(text.stdout).toMatch(/FAILED \(\d+\):\n(.*\n)*  plan\.json: schedule_hash /);
    expect(text.code).toBe(1);
  });

  test('a run without plan.json: a warning, not a failure', async () => {
    const dir = copyRun();
    rmSync(path.join(dir, RUN_FILES.plan));
    const text = await runCli('verify', [dir]);
    expect(text.stdout).toContain("WARNINGS (1):\n  plan.json: no plan.json: the run's plan was not checked\n");
    expect(text.stdout).toContain('plan: 0 run(s) checked against plan.json, 1 without a checkable plan (see warnings)');
    expect(text.code).toBe(0);
    const json = JSON.parse((await runCli('verify', [dir, '--json'])).stdout) as { ok: boolean; warnings: unknown[]; plans: unknown };
    expect(json).toMatchObject({ ok: true, warnings: [{ store: 'plan.json', seq: null, reason: "no plan.json: the run's plan was not checked" }], plans: { runs: [{ run: '.', plan: 'absent', checked: null }] } });
  });
});
