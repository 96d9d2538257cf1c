// Defaults shared by npm run experiment and npm run study: the bundled pre-registration (locked
// on first use), the scenario folder, hour 0 of the simulated study and the default seed.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrCreateControllerKey } from '../controller/key-store.js';
import { lockFileOf, lockPrereg } from '../design/prereg.js';
import { Seed } from '../design/experiment-plan.js';
import { SCENARIO_FLAG } from '../design/scenario-folder.js';
import { SCENARIO_FILE } from '../design/scenario.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { Identifier, Timestamp } from '../schema/event-definition.js';
import { UsageError } from './command-line.js';

export const REPO = fileURLToPath(new URL('../', import.meta.url));
export const DEFAULT_PREREG = path.join(REPO, 'experiments', 'prereg', 'default.json');
export const SCENARIOS_DIR = path.join(REPO, 'experiments', 'scenario');
/** Hour 0 of the simulated study: a fixed date, so one seed gives one schedule on every machine. */
export const DEFAULT_START_AT = '2026-03-02T08:00:00.000Z';
export const DEFAULT_SEED = 'seed-1';

export class BundledPreregError extends TypedErrorOf('bundled_prereg', EXIT_CODES.misused) {
  override readonly name = 'BundledPreregError';
}

/**
 * The bundled pre-registration is locked on first use, so that `npm run experiment` works on a
 * fresh clone — and says so. The lock is signed before the manifest, so it still precedes the
 * run; a lock by another key, or a bundled file changed after its lock, is refused by the run's
 * own check as for any file. A pre-registration given with --prereg is never locked here.
 */
export function lockBundledPrereg(keyDir: string, log: (line: string) => void): void {
  if (existsSync(lockFileOf(DEFAULT_PREREG))) return;
  const key = loadOrCreateControllerKey(keyDir);
  const outcome = lockPrereg(DEFAULT_PREREG, key.keys, new Date().toISOString());
  if (!outcome.ok) throw new BundledPreregError(`cannot lock the bundled pre-registration ${DEFAULT_PREREG}: ${outcome.message}`);
  log(`locked the bundled pre-registration on first use: ${outcome.lock.prereg_sha256} by key ${outcome.keyid.slice(0, 16)}… into ${outcome.lock_file}${key.created ? ` (new controller key in ${key.keyDir})` : ''}`);
}

/** `--start-at ISO`: an ISO 8601 instant in UTC (as the plan records it), checked before anything is written. */
export function startAtFlag(text: string | undefined): string {
  if (text === undefined) return DEFAULT_START_AT;
  if (!Timestamp.safeParse(text).success) throw new UsageError(`--start-at must be an ISO 8601 instant in UTC such as ${DEFAULT_START_AT}, got ${JSON.stringify(text)}`);
  return text;
}

/** A folder flag that names a file is misuse, said before anything is created (an ENOTDIR deep inside otherwise). */
export function folderFlag(flag: string, dir: string | undefined): void {
  if (dir !== undefined && existsSync(dir) && !statSync(dir).isDirectory()) throw new UsageError(`--${flag} ${dir} is a file; give a folder`);
}

/**
 * `--scenario DIR` (issue 35): a scenario folder anywhere (its scenario.json and workspace/,
 * design/scenario-folder.ts), resolved; absent: the checkout's folder of the pre-registration's
 * scenario id. A path that is no folder is misuse, said before anything is written.
 */
export function scenarioFlag(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined;
  if (!existsSync(dir)) throw new UsageError(`${SCENARIO_FLAG} ${dir} does not exist: give the folder of your scenario (its ${SCENARIO_FILE} and workspace/; docs/own-study.md)`);
  if (!statSync(dir).isDirectory()) throw new UsageError(`${SCENARIO_FLAG} ${dir} is a file: give the folder that holds it (its ${SCENARIO_FILE} and workspace/; docs/own-study.md)`);
  return path.resolve(dir);
}

/** `--seed S` as the plan records it, checked before anything is written. */
export function seedFlag(text: string | undefined): string {
  if (text === undefined) return DEFAULT_SEED;
  const parsed = Seed.safeParse(text);
  if (!parsed.success) throw new UsageError(`--seed ${JSON.stringify(text)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  return parsed.data;
}

/** An id flag (--experiment-id, --study-id): an identifier the manifest and folder names can carry. */
export function idFlag(flag: string, text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const parsed = Identifier.safeParse(text);
  if (!parsed.success) throw new UsageError(`--${flag} ${JSON.stringify(text)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  return parsed.data;
}
