// Check (e) of the leak check (leak-check.ts): what is the same in every package by construction
// must be the same. The review instructions, byte for byte in every package; and the expected
// checkpoints (issue 32), recomputed from every readable instance of the study (leak-context.ts):
// one text per replicate (computed from the plan alone, never from a group's settings), and every
// package's file one of them.
import type { PackageFiles } from './leak-check-input.js';
import type { LeakContext } from './leak-context.js';
import type { LeakFinding } from './leak-finding.js';
import { PACKAGE_FILES } from './package-format.js';

/** A finding about the study's instances together, not one package (never named by group). */
const STUDY_LABEL = '(study)';

/** (e) The instructions: one text in every package; the packages whose text is not the most common one are named (all, when there is no majority). */
export function sameEverywhereCheck(packages: readonly PackageFiles[], findings: LeakFinding[]): void {
  const file = PACKAGE_FILES.instructions;
  const having = packages.filter((p) => p.files.has(file));
  const counts = new Map<string, number>();
  for (const p of having) counts.set(p.files.get(file)!, (counts.get(p.files.get(file)!) ?? 0) + 1);
  if (counts.size <= 1) return;
  const top = Math.max(...counts.values());
  const majority = [...counts.entries()].filter(([, n]) => n === top);
  const common = majority.length === 1 ? majority[0]![0] : null;
  for (const p of having) {
    if (p.files.get(file) === common) continue;
    findings.push({ package: p.name, file, kind: 'instructions_differ', detail: `${file} is not the same as in ${common === null ? 'the other packages (no text is shared by most of them)' : `${top} other package(s)`}: the instructions are the same for every package by construction, so a different text can carry something of this package's origin` });
  }
}

/**
 * (e) The expected checkpoints: recomputed for every readable instance; one text per replicate
 * (else the oracle depends on something besides the plan, and the file would tell the settings
 * apart), and every package's file is one of them (else it was not computed from a plan). Returns
 * notes on what could not be compared.
 */
export function expectedChecks(packages: readonly PackageFiles[], context: LeakContext, findings: LeakFinding[]): string[] {
  const notes = context.expectedProblems.map((p) => `expected checkpoints not recomputed for ${p}`);
  const byReplicate = new Map<number, Set<string>>();
  for (const e of context.expected) byReplicate.set(e.replicate, (byReplicate.get(e.replicate) ?? new Set()).add(e.text));
  for (const [replicate, texts] of [...byReplicate.entries()].sort((a, b) => a[0] - b[0])) {
    if (texts.size > 1) findings.push({ package: STUDY_LABEL, file: PACKAGE_FILES.expected, kind: 'oracle_differs_in_replicate', detail: `the instances of replicate ${replicate} give ${texts.size} different expected checkpoints, though the oracle reads the plan, the scenario and the pre-registration only (the same for every instance of a replicate): the file would tell them apart; find out why before exporting` });
  }
  if (context.expected.length === 0) {
    notes.push(`${PACKAGE_FILES.expected} not compared with the oracle: no instance of the study could be read`);
    return notes;
  }
  const known = new Set(context.expected.map((e) => e.text));
  for (const p of packages) {
    const text = p.files.get(PACKAGE_FILES.expected);
    if (text !== undefined && !known.has(text)) findings.push({ package: p.name, file: PACKAGE_FILES.expected, kind: 'oracle_not_from_plan', detail: `${PACKAGE_FILES.expected} is not the oracle's expectation of any instance of the study (recomputed from each run's plan): it was edited or made otherwise, and may carry something of this package's origin` });
  }
  return notes;
}
