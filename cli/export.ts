// npm run export -- STUDY_DIR --out PKG_DIR [--key-dir DIR] [--json]
// npm run export -- --check-only PKG_DIR --study STUDY_DIR [--json]
//
// Exports the blind-review packages of a study (DESIGN §10, spec §8.5, §16.3): one package per
// finished instance, named by a random blind id; the sealed group map goes into the study folder
// (0600), the controller-signed commitment to it beside the packages. The leak check runs on the
// packages before anything is published. --check-only runs the leak check alone on a package
// folder, against the study's forbidden strings.
// Prints the blind ids (never the map), the commitment and the leak check. All or nothing: a study
// with any instance that cannot be exported is refused whole, naming each instance and why, and
// nothing is written (blind-review/exporter.ts). Exit: 0 exported (or checked) and leak-free,
// 1 refused (an instance that cannot be exported, a leak, a second export, not a study, a key
// problem), 2 misuse (flags, --out a file). Ends through runCommand: with --json, one JSON object
// on stdout whatever happens (docs/errors.md).
import path from 'node:path';
import { defaultKeyDir, loadOrCreateControllerKey } from '../controller/key-store.js';
import { ExportRefusal, exportStudy, type ExportResult } from '../blind-review/exporter.js';
import { checkLeaks, describeFinding, readLeakContext, type LeakCheck } from '../blind-review/leak-check.js';
import { SCENARIOS_DIR } from './run-defaults.js';
import { parseFlags, UsageError } from './command-line.js';
import { CommandRefusal, runCommand, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';

process.title = 'ds-export';

const USAGE = `usage: npm run export -- STUDY_DIR --out PKG_DIR [--key-dir DIR] [--json]
       npm run export -- --check-only PKG_DIR --study STUDY_DIR [--json]
  STUDY_DIR          a study folder of npm run study (every instance is exported, or none)
  --out PKG_DIR      the package folder (new or empty); reviewers get this folder, never the study folder
  --key-dir DIR      the controller's key folder, which signs the commitment (default ${defaultKeyDir()})
  --check-only DIR   run the leak check alone on a package folder
  --study DIR        with --check-only: the study the packages were exported from
  --json             print the result as JSON on stdout
exit: 0 exported (or checked) and leak-free · 1 refused (an instance that cannot be exported, leak, second export, not a study) · 2 misuse`;

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
    ...check.notes.map((n) => `  note: ${n}`),
  ];
}

function summary(r: ExportResult, outDir: string): string {
  return [
    `EXPORTED ${r.packages.length} package(s) to ${outDir}`,
    ...r.packages.map((p) => `  ${p.blind_id}`),
    `  commitment: ${r.commitment.hash} (${r.commitment.file}; checked with ${r.commitment.publicKeyFile})`,
    `  sealed map: ${r.mapFile} (mode 0600; never give it to reviewers; unblinding reads it after the review is locked)`,
    ...leakLines(r.leakCheck),
    ...r.notes.map((n) => `  note: ${n}`),
    '',
  ].join('\n');
}

function leakJson(check: LeakCheck): Record<string, unknown> {
  return { ok: check.ok, packages: check.packages, files_checked: check.filesChecked, findings: check.findings, unsearched: check.unsearched, notes: check.notes };
}

/** An export refusal as the command ends with it: its code, its exit (a package folder that is a file is misuse), and what it names. */
function refusalOf(error: ExportRefusal): CommandRefusal {
  const d = error.details;
  return new CommandRefusal(error.code, `REFUSED (${error.problem}): ${error.message}`, error.problem === 'out-not-a-folder' ? EXIT_CODES.misused : EXIT_CODES.failed, {
    ...(d.refused ? { refused: d.refused } : {}),
    ...(d.findings ? { findings: d.findings } : {}),
    ...(d.tempDir ? { temp_dir: d.tempDir } : {}),
  });
}

function main(): CommandOutput | null {
  const args = parseFlags(USAGE, OPTIONS);
  if (args === null) return null;
  const { values, positionals } = args;
  if (values['check-only'] !== undefined) {
    if (positionals.length > 0) throw new UsageError(`--check-only takes the package folder; no STUDY_DIR positional (got ${positionals.join(' ')}): name the study with --study`);
    if (values.out !== undefined || values['key-dir'] !== undefined) throw new UsageError('--out and --key-dir cannot be combined with --check-only: a check writes nothing');
    if (values.study === undefined) throw new UsageError('--check-only needs --study STUDY_DIR: the leak check searches for the study\'s ids, seeds, hashes and paths');
    const pkgDir = path.resolve(values['check-only']);
    const check = checkLeaks(pkgDir, readLeakContext(path.resolve(values.study), SCENARIOS_DIR));
    return { exitCode: check.ok ? EXIT_CODES.ok : EXIT_CODES.failed, json: leakJson(check), text: [`LEAK CHECK of ${pkgDir}: ${check.ok ? 'CLEAN' : 'LEAKS FOUND'}`, ...leakLines(check), ''].join('\n') };
  }
  if (values.study !== undefined) throw new UsageError('--study belongs to --check-only; to export, give STUDY_DIR as the positional argument');
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'give the study folder (STUDY_DIR)' : `give exactly one study folder, got ${positionals.length}: ${positionals.join(' ')}`);
  if (values.out === undefined) throw new UsageError('--out PKG_DIR is required: the packages need a new or empty folder of their own');
  const studyDir = path.resolve(positionals[0]!);
  const outDir = path.resolve(values.out);
  // The study's controller key signs the commitment; a missing key is refused, never minted here.
  const key = loadOrCreateControllerKey(values['key-dir'] ?? defaultKeyDir(), { create: false, runDirs: [studyDir] });
  let result: ExportResult;
  try {
    result = exportStudy(studyDir, outDir, { scenariosDir: SCENARIOS_DIR, keys: key.keys });
  } catch (error) {
    throw error instanceof ExportRefusal ? refusalOf(error) : error;
  }
  return {
    exitCode: EXIT_CODES.ok,
    json: {
      ok: true,
      exported: result.packages.map((p) => p.blind_id),
      commitment: { hash: result.commitment.hash, file: result.commitment.file, public_key_file: result.commitment.publicKeyFile },
      map_file: result.mapFile,
      leak_check: leakJson(result.leakCheck),
      notes: result.notes,
    },
    text: summary(result, outDir),
  };
}

runCommand('export', USAGE, main);
