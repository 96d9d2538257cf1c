// A package's digest: sha256(JCS({file name: sha256 of its bytes})) over the files of one package
// folder. The export commits to every package's digest before review, and unblinding recomputes
// them: contents swapped between two packages (or edited) after the commitment are refused, so
// the scores revealed are the scores of the material each group produced.
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { hashCanonical, type HashString } from '../schema/hash.js';

/** A package holds 8 files; a folder with many more is not a package. */
const MAX_PACKAGE_ENTRIES = 64;

export class PackageDigestError extends TypedErrorOf('package_digest', EXIT_CODES.failed) {
  override readonly name = 'PackageDigestError';
}

export function packageDigest(packageDir: string): HashString {
  const names = readdirSync(packageDir).sort();
  if (names.length > MAX_PACKAGE_ENTRIES) throw new PackageDigestError(`${packageDir} holds ${names.length} entries, more than the ${MAX_PACKAGE_ENTRIES} a package can`);
  const files: Record<string, string> = {};
  for (const name of names) {
    const full = path.join(packageDir, name);
    // A folder or link inside a package is not package content: named, never followed or skipped.
    if (!lstatSync(full).isFile()) throw new PackageDigestError(`${full} is not a regular file; a package holds files only`);
    files[name] = `sha256:${createHash('sha256').update(readFileSync(full)).digest('hex')}`;
  }
  return hashCanonical({ files });
}
