// What the review tests' hand-built package folders share: the pre-registration and study report
// the commitment names, and package folders with a digest each (one file is enough for a digest).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packageDigest } from '../../blind-review/package-digest.js';
import { hashCanonical } from '../../schema/hash.js';
import { REPO } from './controller-run.js';

/** The bundled pre-registration's hash: what the fixtures' commitments name. */
export const COMMITTED_PREREG_SHA256 = hashCanonical(JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')));
/** The study report the fixtures write and commit to. */
export const STUDY_REPORT_TEXT = '{"report":"the study report committed to before review"}\n';

/** Writes one small package folder per blind id and returns their digests. */
export function writePackages(pkgDir: string, ids: readonly string[]): Record<string, string> {
  const digests: Record<string, string> = {};
  for (const id of ids) {
    mkdirSync(path.join(pkgDir, id), { recursive: true });
    writeFileSync(path.join(pkgDir, id, 'manifest.json'), JSON.stringify({ blind_id: id }));
    digests[id] = packageDigest(path.join(pkgDir, id));
  }
  return digests;
}
