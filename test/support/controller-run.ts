// Real experiment instances for tests: a locked copy of the default pre-registration, a key
// folder of its own, and the controller run in-process (it still spawns a real ds-writer and
// ds-runtime) or as the real `npm run experiment` command line.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNewInstance, resumeInstance, type Group, type InstanceResult, type NewInstanceOptions } from '../../controller/instance-runner.js';
import { loadOrCreateControllerKey, type ControllerKey } from '../../controller/key-store.js';
import { lockPrereg } from '../../design/prereg.js';
import { spawnCli, type SpawnedCli } from './cli.js';
import { tempDir } from './writer-fixture.js';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const SCENARIOS_DIR = path.join(REPO, 'experiments', 'scenario');
export const TEST_START_AT = '2026-03-02T08:00:00.000Z';

export interface ControllerSetup {
  readonly dir: string;
  readonly keyDir: string;
  readonly key: ControllerKey;
  /** A locked copy of experiments/prereg/default.json. */
  readonly preregFile: string;
}

/** A fresh setup in `dir` (by default a new temporary folder): a new key, a locked pre-registration, an empty runs/. */
export function controllerSetup(dir: string = tempDir('ds-controller-')): ControllerSetup {
  const keyDir = path.join(dir, 'keys');
  const key = loadOrCreateControllerKey(keyDir);
  const preregFile = path.join(dir, 'prereg.json');
  copyFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), preregFile);
  const locked = lockPrereg(preregFile, key.keys, '2026-01-01T00:00:00.000Z');
  if (!locked.ok) throw new Error(`test setup: lock failed: ${locked.message}`);
  mkdirSync(path.join(dir, 'runs'));
  return { dir, keyDir, key, preregFile };
}

/** A pre-registration's JSON as a test edits it: sections by name. */
export type PreregJson = Record<string, Record<string, unknown>>;

/**
 * A fresh setup whose pre-registration is the default one changed by `change`, written as
 * `name`.json beside it and locked with the setup's key (a short schedule, a fast retry policy).
 */
export function controllerSetupWith(name: string, change: (prereg: PreregJson) => void): ControllerSetup {
  const setup = controllerSetup();
  const prereg = JSON.parse(readFileSync(setup.preregFile, 'utf8')) as PreregJson;
  change(prereg);
  const preregFile = path.join(setup.dir, `${name}.json`);
  writeFileSync(preregFile, `${JSON.stringify(prereg, null, 2)}\n`);
  const locked = lockPrereg(preregFile, setup.key.keys, '2026-01-01T00:00:00.000Z');
  if (!locked.ok) throw new Error(`test setup: lock failed: ${locked.message}`);
  return { ...setup, preregFile };
}

/** The setup controllerSetup made in `dir`, reopened (in a copy of its folder, say): its key loaded, not made anew. */
export function reopenControllerSetup(dir: string): ControllerSetup {
  const keyDir = path.join(dir, 'keys');
  const preregFile = path.join(dir, 'prereg.json');
  if (!existsSync(keyDir) || !existsSync(preregFile)) throw new Error(`test setup: ${dir} holds no controller setup (keys/, prereg.json)`);
  return { dir, keyDir, key: loadOrCreateControllerKey(keyDir, { create: false }), preregFile };
}

export interface InstanceRun {
  readonly options: NewInstanceOptions;
  readonly lines: string[];
}

export function newInstanceOptions(setup: ControllerSetup, overrides: Partial<NewInstanceOptions> & { group?: Group; name?: string } = {}): InstanceRun {
  const lines: string[] = [];
  const { name, ...rest } = overrides;
  const options: NewInstanceOptions = {
    runDir: path.join(setup.dir, 'runs', name ?? 'instance'),
    keyDir: setup.keyDir,
    speed: null,
    signal: new AbortController().signal,
    operator: 'test',
    scenariosDir: SCENARIOS_DIR,
    isolation: { forceSameUid: 'test run in one uid' },
    log: (line) => lines.push(line),
    preregFile: setup.preregFile,
    seed: 'test-seed',
    group: 'C',
    startAt: TEST_START_AT,
    experimentId: 'exp-test-1',
    replicate: 1,
    groupBlindId: `inst-${name ?? 'instance'}`,
    startedAt: new Date().toISOString(),
    model: { adapter: 'reference' },
    ...rest,
  };
  return { options, lines };
}

export function runInstance(run: InstanceRun): Promise<InstanceResult> {
  return runNewInstance(run.options);
}

export function resume(run: InstanceRun, signal: AbortSignal = new AbortController().signal): Promise<InstanceResult> {
  const { runDir, keyDir, speed, operator, scenariosDir, isolation, log } = run.options;
  return resumeInstance({ runDir, keyDir, speed, signal, operator, scenariosDir, ...(isolation ? { isolation } : {}), log });
}

/** `npm run experiment` as a real process in its own process group (so a group SIGINT is a Ctrl-C). */
export function spawnExperimentCli(args: readonly string[]): SpawnedCli {
  return spawnCli('experiment', args, { detached: true });
}

/** Resolves once `output()` matches `pattern`; rejects after `timeoutMs`. */
export async function waitForOutput(output: () => string, pattern: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(output())) {
    if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms; output so far:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
