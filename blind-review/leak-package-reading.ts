// Reading the packages a leak check is given (leak-check.ts): every package folder under the
// export's folder, each file's text. What else the folder holds is either a file the export writes
// beside the packages (the commitment, the controller's key, review/) or a finding: the sealed map
// where reviewers look, a stray file, a folder not named by a blind id, more packages than a study
// has, a package's entry that is not a file, a file too large to read.
import { existsSync, lstatSync, readdirSync, readFileSync, type Stats } from 'node:fs';
import path from 'node:path';
import { BLIND_REVIEW_FILES } from './blind-map.js';
import { LeakCheckInputError, MAX_PACKAGES, type PackageFiles } from './leak-check-input.js';
import type { LeakFinding } from './leak-finding.js';
import { BlindId, PACKAGE_FILE_NAMES } from './package-format.js';

/** A package file larger than this is not read (and is a finding). */
export const MAX_PACKAGE_FILE_BYTES = 64 * 1024 * 1024;
/** A finding about the folder holding the packages, not one package. */
const PACKAGE_FOLDER = '(package folder)';
/** Files the export writes beside the packages. */
const ALLOWED_FILES: ReadonlySet<string> = new Set<string>([BLIND_REVIEW_FILES.commitment, BLIND_REVIEW_FILES.publicKey]);

export interface PackagesRead {
  readonly packages: PackageFiles[];
  readonly findings: LeakFinding[];
}

/** An entry of the package folder: a package to read, something the export writes there, or a finding. */
type FolderEntry = { readonly is: 'package' } | { readonly is: 'allowed' } | { readonly is: 'finding'; readonly finding: LeakFinding };

function folderEntry(name: string, stat: Stats): FolderEntry {
  if (name === BLIND_REVIEW_FILES.sealedMap) {
    return { is: 'finding', finding: { package: PACKAGE_FOLDER, file: name, kind: 'sealed_map_exposed', detail: `the sealed group map is in the package folder, where reviewers look: move it to the study folder (mode 0600) and re-export` } };
  }
  if (ALLOWED_FILES.has(name) && stat.isFile()) return { is: 'allowed' };
  if (name === BLIND_REVIEW_FILES.reviewDir && stat.isDirectory()) return { is: 'allowed' };
  if (!stat.isDirectory() || stat.isSymbolicLink()) {
    return { is: 'finding', finding: { package: PACKAGE_FOLDER, file: name, kind: 'unexpected_entry', detail: `${name} is neither a package nor a file the export writes (${[...ALLOWED_FILES].join(', ')}); remove it before handing the folder to reviewers` } };
  }
  return { is: 'package' };
}

/** The text of every file of one package folder; an entry that is not a file, or a file too large, is a finding and not read. */
function packageFilesOf(dir: string, name: string, findings: LeakFinding[]): Map<string, string> {
  const files = new Map<string, string>();
  for (const file of readdirSync(dir).sort()) {
    const f = path.join(dir, file);
    const s = lstatSync(f);
    if (!s.isFile()) {
      findings.push({ package: name, file, kind: 'extra_file', detail: `${file} is a ${s.isDirectory() ? 'folder' : 'link or special file'}; a package holds only ${PACKAGE_FILE_NAMES.join(', ')}` });
      continue;
    }
    if (s.size > MAX_PACKAGE_FILE_BYTES) {
      findings.push({ package: name, file, kind: 'too_large', detail: `${s.size} bytes, over the ${MAX_PACKAGE_FILE_BYTES} a package file may have: not read, so not checked` });
      continue;
    }
    files.set(file, readFileSync(f, 'utf8'));
  }
  return files;
}

/** Reads every package folder under `dir`; what else is there is allowed (commitment, key, review/) or a finding. */
export function readPackages(dir: string): PackagesRead {
  const root = path.resolve(dir);
  if (!existsSync(root) || !lstatSync(root).isDirectory()) throw new LeakCheckInputError(`${root} is not a folder: give the package folder the export wrote`);
  const packages: PackageFiles[] = [];
  const findings: LeakFinding[] = [];
  for (const name of readdirSync(root).sort()) {
    const full = path.join(root, name);
    const entry = folderEntry(name, lstatSync(full));
    if (entry.is === 'allowed') continue;
    if (entry.is === 'finding') {
      findings.push(entry.finding);
      continue;
    }
    if (!BlindId.safeParse(name).success) {
      findings.push({ package: PACKAGE_FOLDER, file: name, kind: 'package_name', detail: `the folder ${name} is not named by a blind id (R- and six hex digits): a package must be named by its blind id only` });
    }
    if (packages.length >= MAX_PACKAGES) {
      findings.push({ package: PACKAGE_FOLDER, file: name, kind: 'too_large', detail: `more than ${MAX_PACKAGES} package folders: ${name} and the rest were not read` });
      break;
    }
    packages.push({ name, files: packageFilesOf(full, name, findings) });
  }
  return { packages, findings };
}
