// The leak check of the blind-review packages (DESIGN §10, spec §8.5): run inside every export
// before anything is moved into place, and on its own by `npm run export -- --check-only`. A
// reviewer must not be able to tell a package's group, nor tie it to its instance, from anything
// in it. Five checks, each finding named by a kind a person can act on:
//   (a) every package has exactly PACKAGE_FILE_NAMES, nothing else;
//   (b) the JSON key paths of each file are the same in every package (containers compared where
//       present in several packages; a timeline entry's detail is compared per kind, since which
//       kinds occur is behaviour);
//   (c) no text holds a group label, a capability word or flag name, an instance folder name, a
//       UUID, an event cited by its seq (a seq counts events, so it says how much happened in the
//       run), a string only some groups' packages can contain by construction (the plan-decision
//       event names and reason codes), another package's blind id, or any forbidden string of the
//       study (experiment id, subject ids, seeds, group blind ids, configuration and chain
//       hashes, host paths);
//   (d) every file parses with its schema (package-format.ts; each timeline detail with its
//       kind's schema from timeline-detail.ts) and every ref resolves to a timeline entry;
//   (e) what must be the same in every package is: the review instructions (byte for byte in
//       every package), and the expected checkpoints (issue 32), which are recomputed for
//       every instance of the study and must be one text per replicate (computed from the plan
//       alone, never from a group's settings) and every package's must be one of them.
//
// This file runs the checks in order over the packages and holds (a); each other check is a file
// of its own: (b) leak-shape-check.ts, (c) leak-text-check.ts with the study's forbidden strings
// from leak-context.ts, (d) leak-parse-check.ts, (e) leak-same-everywhere.ts. The packages are read
// by leak-package-reading.ts; the findings and their bound are leak-finding.ts.
import { EXPECTED_FILES, type PackageFiles } from './leak-check-input.js';
import { searchable, unsearchedLabels, type LeakContext } from './leak-context.js';
import { FileFindings, type LeakFinding } from './leak-finding.js';
import { readPackages, type PackagesRead } from './leak-package-reading.js';
import { parseChecks } from './leak-parse-check.js';
import { expectedChecks, sameEverywhereCheck } from './leak-same-everywhere.js';
import { shapeChecks, type PackageShapes } from './leak-shape-check.js';
import { textChecks } from './leak-text-check.js';
import { BlindId, PACKAGE_FILE_NAMES } from './package-format.js';

// The command line (cli/export.ts) reaches the check through this file.
export { readLeakContext } from './leak-context.js';
export { describeFinding } from './leak-finding.js';

export interface LeakCheck {
  readonly ok: boolean;
  readonly packages: number;
  readonly filesChecked: number;
  readonly findings: readonly LeakFinding[];
  /** Forbidden strings too short to search (their labels, never their values). */
  readonly unsearched: readonly string[];
  /** What was not checked and why (no finding, but a reader must know). */
  readonly notes: readonly string[];
}

/** (a) for one package: exactly the package files, nothing else. */
function fileSetCheck(pkg: PackageFiles, findings: LeakFinding[]): void {
  for (const expected of PACKAGE_FILE_NAMES) if (!pkg.files.has(expected)) findings.push({ package: pkg.name, file: expected, kind: 'missing_file', detail: `${expected} is missing: every package has exactly ${PACKAGE_FILE_NAMES.join(', ')}` });
  for (const file of pkg.files.keys()) if (!EXPECTED_FILES.has(file)) findings.push({ package: pkg.name, file, kind: 'extra_file', detail: `${file} is not a package file: a file some packages have and others not can reveal the group; remove it` });
}

/**
 * Checks packages: a folder holding package folders (an export's output or its temp folder), or
 * packages already in memory. `context` holds the study's forbidden strings.
 */
export function checkLeaks(source: string | readonly PackageFiles[], context: LeakContext): LeakCheck {
  const collected: PackagesRead = typeof source === 'string' ? readPackages(source) : { packages: [...source], findings: [] };
  const findings = [...collected.findings];
  const searched = context.strings.filter(searchable);
  const names = collected.packages.map((p) => p.name);
  let filesChecked = 0;
  const shapes = new Map<string, PackageShapes>();
  for (const pkg of collected.packages) {
    fileSetCheck(pkg, findings);
    // (c) on every file, expected or not
    const others = names.filter((n) => n !== pkg.name && BlindId.safeParse(n).success);
    for (const [file, text] of pkg.files) {
      filesChecked += 1;
      const f = new FileFindings(findings, pkg.name, file);
      textChecks(text, f, context, searched, others);
      f.close();
    }
    // (d), collecting (b)'s shapes
    shapes.set(pkg.name, parseChecks(pkg, findings));
  }
  shapeChecks(shapes, findings);
  // (e)
  sameEverywhereCheck(collected.packages, findings);
  const notes = expectedChecks(collected.packages, context, findings);
  return { ok: findings.length === 0, packages: collected.packages.length, filesChecked, findings, unsearched: unsearchedLabels(context), notes };
}
