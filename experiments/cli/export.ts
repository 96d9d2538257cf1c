// npm run export -- STUDY_DIR --out PKG_DIR [--key-dir DIR] [--json]
// npm run export -- --check-only PKG_DIR --study STUDY_DIR [--json]
//
// Exports the blind-review packages of a study (DESIGN §10, spec §8.5, §16.3): one package per
// finished instance, named by a random blind id; the sealed group map goes into the study folder
// (0600), the controller-signed commitment to it beside the packages. The leak check runs on the
// packages before anything is published. --check-only runs the leak check alone on a package
// folder, against the study's forbidden strings.
// Prints the blind ids (never the map), the instances refused and why, the commitment and the
// leak check. Exit: 0 exported (or checked) and leak-free, 1 refused (a leak, a second export,
// not a study, no instance to export, a key problem), 2 misuse.
import path from 'node:path';
import { defaultKeyDir, KeyStoreError, loadOrCreateControllerKey } from '../../controller/key-store.js';
import { RunRecordError } from '../../oracle/run-record.js';
import { StudyError } from '../study/study-runner.js';
import { ExportRefusal, exportStudy, type ExportResult } from '../../blind-review/exporter.js';
import { checkLeaks, describeFinding, LeakCheckInputError, readLeakContext, type LeakCheck } from '../../blind-review/leak-check.js';
import { SCENARIOS_DIR } from './run-defaults.js';
import { parseFlags, UsageError } from './command-line.js';

process.title = 'ds-export';

const USAGE = `usage: npm run export -- STUDY_DIR --out PKG_DIR [--key-dir DIR] [--json]
       npm run export -- --check-only PKG_DIR --study STUDY_DIR [--json]
  STUDY_DIR          a study folder of npm run study (its finished instances are exported)
  --out PKG_DIR      the package folder (new or empty); reviewers get this folder, never the study folder
  --key-dir DIR      the controller's key folder, which signs the commitment (default ${defaultKeyDir()})
  --check-only DIR   run the leak check alone on a package folder
  --study DIR        with --check-only: the study the packages were exported from
  --json             print the result as JSON on stdout
exit: 0 exported (or checked) and leak-free · 1 refused (leak, second export, not a study, nothing to export) · 2 misuse`;

const OPTIONS = {
  out: { type: 'string' },
  'key-dir': { type: 'string' },
  'check-only': { type: 'string' },
  study: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
} as const;

function leakLines(check: LeakCheck): string[] {
  return [
    check.ok ? `  leak check: clean (${check.packages} package(s), ${check.filesChecked} file(s))` : `  leak check: ${check.findings.length} finding(s) in ${check.packages} package(s)`,
    ...check.findings.map((f) => `    ${describeFinding(f)}`),
    ...check.unsearched.map((u) => `  note: not searched for, too short to tell from ordinary text: ${u}`),
  ];
}

function summary(r: ExportResult, outDir: string): string {
  return [
    `EXPORTED ${r.packages.length} package(s) to ${outDir}`,
    ...r.packages.map((p) => `  ${p.blind_id}`),
    ...r.refused.map((x) => `  REFUSED ${x.instance}: ${x.reason}`),
    `  commitment: ${r.commitment.hash} (${r.commitment.file}; checked with ${r.commitment.publicKeyFile})`,
    `  sealed map: ${r.mapFile} (mode 0600; never give it to reviewers; unblinding reads it after the review is locked)`,
    ...leakLines(r.leakCheck),
    ...r.notes.map((n) => `  note: ${n}`),
    '',
  ].join('\n');
}

function main(): number {
  const args = parseFlags(USAGE, OPTIONS);
  if (args === null) return 0;
  const { values, positionals } = args;
  const json = values.json ?? false;
  if (values['check-only'] !== undefined) {
    if (positionals.length > 0) throw new UsageError(`--check-only takes the package folder; no STUDY_DIR positional (got ${positionals.join(' ')}): name the study with --study`);
    if (values.out !== undefined || values['key-dir'] !== undefined) throw new UsageError('--out and --key-dir cannot be combined with --check-only: a check writes nothing');
    if (values.study === undefined) throw new UsageError('--check-only needs --study STUDY_DIR: the leak check searches for the study\'s ids, seeds, hashes and paths');
    const pkgDir = path.resolve(values['check-only']);
    const check = checkLeaks(pkgDir, readLeakContext(path.resolve(values.study), SCENARIOS_DIR));
    if (json) process.stdout.write(`${JSON.stringify({ ok: check.ok, packages: check.packages, files_checked: check.filesChecked, findings: check.findings, unsearched: check.unsearched })}\n`);
    else process.stdout.write(`${[`LEAK CHECK of ${pkgDir}: ${check.ok ? 'CLEAN' : 'LEAKS FOUND'}`, ...leakLines(check), ''].join('\n')}`);
    return check.ok ? 0 : 1;
  }
  if (values.study !== undefined) throw new UsageError('--study belongs to --check-only; to export, give STUDY_DIR as the positional argument');
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'give the study folder (STUDY_DIR)' : `give exactly one study folder, got ${positionals.length}: ${positionals.join(' ')}`);
  if (values.out === undefined) throw new UsageError('--out PKG_DIR is required: the packages need a new or empty folder of their own');
  const studyDir = path.resolve(positionals[0]!);
  const outDir = path.resolve(values.out);
  // The study's controller key signs the commitment; a missing key is refused, never minted here.
  const key = loadOrCreateControllerKey(values['key-dir'] ?? defaultKeyDir(), { create: false, runDirs: [studyDir] });
  const result = exportStudy(studyDir, outDir, { scenariosDir: SCENARIOS_DIR, keys: key.keys });
  if (json) {
    process.stdout.write(
      `${JSON.stringify({
        exported: result.packages.map((p) => p.blind_id),
        refused: result.refused,
        commitment: result.commitment,
        map_file: result.mapFile,
        leak_check: { ok: result.leakCheck.ok, packages: result.leakCheck.packages, files_checked: result.leakCheck.filesChecked, findings: result.leakCheck.findings, unsearched: result.leakCheck.unsearched },
        notes: result.notes,
      })}\n`,
    );
  } else process.stdout.write(summary(result, outDir));
  return 0;
}

try {
  process.exitCode = main();
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`export: ${error.message}\n${USAGE}\n`);
    process.exitCode = 2;
  } else if (error instanceof ExportRefusal) {
    const refused = error.details.refused ?? [];
    process.stderr.write(`export: REFUSED (${error.problem}): ${error.message}\n${refused.length > 0 && error.problem !== 'nothing-to-export' ? `${refused.map((r) => `  REFUSED ${r.instance}: ${r.reason}`).join('\n')}\n` : ''}`);
    process.exitCode = 1;
  } else if (error instanceof StudyError || error instanceof KeyStoreError || error instanceof LeakCheckInputError || error instanceof RunRecordError) {
    process.stderr.write(`export: ${error.message}\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`export: failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  }
}
