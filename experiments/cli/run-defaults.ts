// Defaults shared by npm run experiment and npm run study: the bundled pre-registration (locked
// on first use), the scenario folder, hour 0 of the simulated study and the default seed.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrCreateControllerKey } from '../../controller/key-store.js';
import { lockFileOf, lockPrereg } from '../../controller/prereg.js';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const DEFAULT_PREREG = path.join(REPO, 'experiments', 'prereg', 'default.json');
export const SCENARIOS_DIR = path.join(REPO, 'experiments', 'scenario');
/** Hour 0 of the simulated study: a fixed date, so one seed gives one schedule on every machine. */
export const DEFAULT_START_AT = '2026-03-02T08:00:00.000Z';
export const DEFAULT_SEED = 'seed-1';

export class BundledPreregError extends Error {
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
