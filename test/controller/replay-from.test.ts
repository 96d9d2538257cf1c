// `npm run experiment -- --model replay --replay-from RUN` reproduces RUN (issue 16 item 5):
// the group, seed, start, experiment id and replicate default to the source's (event ids derive
// from the experiment id and replicate; the seqs the recorded answers cite, from the rest), and
// an explicit value that would not line up is refused before anything is written. Real parts:
// the source and the replay are real `npm run experiment` processes with their own writer and
// runtime. The source has a seed, experiment id, replicate and group other than the defaults,
// so that a replay under the defaults would diverge (its FACT claims cite other events).
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readReplaySource } from '../../design/model-choice.js';
import { ModelFlagError, replaySettingsOf } from '../../cli/model-flags.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetup, type ControllerSetup } from '../support/controller-run.js';
import { readProjectionRow } from '../support/store-forgery.js';
import { storedEvents, type StoredEvent } from '../support/stored-events.js';

const SOURCE = { group: 'B', seed: 'replay-source-seed', experimentId: 'exp-replay-source', replicate: '2' } as const;

let setup: ControllerSetup;
let sourceDir: string;
const infra = (out: string): string[] => ['--prereg', setup.preregFile, '--key-dir', setup.keyDir, '--out', out, '--same-uid', 'test run in one uid'];

beforeAll(async () => {
  setup = controllerSetup();
  sourceDir = path.join(setup.dir, 'runs', 'source');
  const source = await runCli('experiment', ['--group', SOURCE.group, '--seed', SOURCE.seed, '--experiment-id', SOURCE.experimentId, '--replicate', SOURCE.replicate, ...infra(sourceDir)]);
  if (source.code !== 0) throw new Error(`the source run failed (${source.code}):\n${source.stdout}\n${source.stderr}`);
}, 90_000);

afterAll(() => {
  if (setup) rmSync(setup.dir, { recursive: true, force: true });
});

const ofType = (events: readonly StoredEvent[], type: string): StoredEvent[] => events.filter((e) => e.event_type === type);

function expectRefused(cli: CliResult, out: string, message: string): void {
  expect(cli.code, `${cli.stdout}\n${cli.stderr}`).toBe(2);
  expect(cli.stderr).toContain(message);
  expect(cli.stdout).toBe('');
  expect(existsSync(out)).toBe(false);
}

describe('--model replay --replay-from RUN', () => {
  test('alone, it reproduces the run: the same answers accepted, the same claims, the same event ids and state hash', async () => {
    const replayDir = path.join(setup.dir, 'runs', 'replay');
    const replay = await runCli('experiment', ['--model', 'replay', '--replay-from', sourceDir, ...infra(replayDir)]);
    expect(replay.code, `${replay.stdout}\n${replay.stderr}`).toBe(0);
    expect(replay.stderr).toContain(`replay of ${sourceDir}: group B, seed ${SOURCE.seed}, hour 0 at 2026-03-02T08:00:00.000Z, experiment ${SOURCE.experimentId}, replicate 2: the source run's`);
    expect(replay.stdout).toContain(`experiment ${SOURCE.experimentId}`);

    const source = storedEvents(sourceDir);
    const replayed = storedEvents(replayDir);
    const answered = (events: readonly StoredEvent[]): unknown[] => ofType(events, 'ModelOutputEvent.ModelAnswered').map((e) => e.payload.raw_output);
    expect(answered(source).length).toBeGreaterThan(20);
    // Every recorded answer served and accepted again, none failed.
    expect(answered(replayed)).toEqual(answered(source));
    expect(ofType(replayed, 'ModelOutputEvent.ModelCallFailed')).toEqual([]);
    const claims = (events: readonly StoredEvent[]): unknown[] => ofType(events, 'MemoryEvent.ClaimRecorded').map((e) => [e.event_id, e.payload]);
    expect(ofType(source, 'MemoryEvent.ClaimRecorded').filter((e) => e.payload.claim_type === 'FACT').length).toBeGreaterThan(0);
    expect(claims(replayed)).toEqual(claims(source));
    expect(ofType(replayed, 'SystemEvent.AppendRejected')).toEqual([]);
    // The same history: the same event ids and types at every seq, and the same Subject state.
    expect(replayed.map((e) => [e.seq, e.event_id, e.event_type])).toEqual(source.map((e) => [e.seq, e.event_id, e.event_type]));
    expect(readProjectionRow(path.join(replayDir, RUN_FILES.store)).state_hash).toBe(readProjectionRow(path.join(sourceDir, RUN_FILES.store)).state_hash);
  }, 90_000);

  test('an explicit value that would not line up is refused (exit 2), nothing written; another experiment id is taken for /2 only', async () => {
    const out = path.join(setup.dir, 'runs', 'refused');
    const [seed, group] = await Promise.all([
      runCli('experiment', ['--model', 'replay', '--replay-from', sourceDir, '--seed', 'seed-1', ...infra(out)]),
      runCli('experiment', ['--model', 'replay', '--replay-from', sourceDir, '--group', 'C', ...infra(out)]),
    ]);
    expectRefused(seed, out, `--seed seed-1 conflicts with --replay-from ${sourceDir}, which ran with seed ${SOURCE.seed}`);
    expectRefused(group, out, `--group C conflicts with --replay-from ${sourceDir}, which ran with group B's capabilities`);

    // The decision for ids, on the real source's settings: /2 answers cite seqs, /1 answers cite event ids.
    const real = readReplaySource(sourceDir);
    expect(real).toMatchObject({ experimentId: SOURCE.experimentId, replicate: 2, seed: SOURCE.seed, protocol: 'ds-model-output/2' });
    const renamed = replaySettingsOf(real, { 'experiment-id': 'exp-other' }, real.preregSha256);
    expect(renamed).toMatchObject({ group: 'B', experimentId: 'exp-other', replicate: 2, seed: SOURCE.seed });
    expect(renamed.lines[1]).toContain('its events get other ids than the source\'s; the recorded ds-model-output/2 answers cite seqs');
    expect(() => replaySettingsOf({ ...real, protocol: 'ds-model-output/1' }, { 'experiment-id': 'exp-other' }, real.preregSha256)).toThrow(ModelFlagError);
    expect(() => replaySettingsOf(real, {}, `sha256:${'0'.repeat(64)}`)).toThrow(/the source ran under the pre-registration sha256:/);
  }, 60_000);
});
