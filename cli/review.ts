// npm run review -- import PKG_DIR FILE… [--prereg FILE] [--json]
// npm run review -- arbitrate PKG_DIR FILE [--json]
// npm run review -- status PKG_DIR [--json]
// npm run review -- lock PKG_DIR [--key-dir DIR] [--json]
// npm run review -- unblind PKG_DIR --study STUDY_DIR [--json]
//
// The blind review of exported packages (DESIGN §10, spec §8.5): import reviewers' scorecards,
// arbitrate flagged instances, lock the scores and hard-failure decisions (signed), and only then
// reveal the group ↔ blind id map, checked against the commitment signed before review, with the
// review's agreement with the oracle and between reviewers as a table (blind-review/agreement-table.ts).
// Exit 0 done, 1 refused (the reason says what to do), 2 misuse. --json prints one JSON object.
import { parseArgs } from 'node:util';
import { agreementLines } from '../blind-review/agreement-table.js';
import { arbitrate } from '../blind-review/arbitration.js';
import { lockReview } from '../blind-review/review-lock.js';
import { consolidate, describeState, openReviewPackage, readReviewFolder, type ReviewState } from '../blind-review/review-state.js';
import { importScores } from '../blind-review/score-import.js';
import { unblind } from '../blind-review/unblinding.js';
import { defaultKeyDir, loadOrCreateControllerKey } from '../controller/key-store.js';
import { UsageError } from './command-line.js';
import { runCommand, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { DEFAULT_PREREG } from './run-defaults.js';

const USAGE = `usage: npm run review -- import PKG_DIR FILE… [--prereg FILE] [--json]
       npm run review -- arbitrate PKG_DIR FILE [--json]
       npm run review -- status PKG_DIR [--json]
       npm run review -- lock PKG_DIR [--key-dir DIR] [--json]
       npm run review -- unblind PKG_DIR --study STUDY_DIR [--json]
  import     copy reviewers' scorecards (JSON saved by reviewer_scorecard.html) into PKG_DIR/review/scores/
             and print the consolidated state; ≥ 2 reviewers per instance, a total-score gap above 15
             points or any differing hard-failure decision flags the instance for arbitration
  --prereg   the pre-registration the study used, for the dimension weights (first import; default
             ${DEFAULT_PREREG}); later imports use the one recorded in review/review.json
  arbitrate  a third reviewer's scorecard for an instance flagged for arbitration; it decides that instance
  status     print the consolidated state
  lock       sign the consolidated scores and hard-failure decisions into PKG_DIR/review/lock.dsse.json
             (refused while an instance is incomplete or awaits arbitration; never replaced)
  --key-dir  the controller's key folder (default ${defaultKeyDir()}); its key must be PKG_DIR/controller.pub's
  unblind    after the lock: reveal the group ↔ blind id map of STUDY_DIR/blind-map.sealed.json, checked
             against PKG_DIR/commitment.dsse.json, joined with the locked scores; prints how far every scorecard
             agrees with the oracle (per dimension and hard failure) and reviewers with each other (Cohen's
             kappa), each disagreement by name; writes PKG_DIR/review/unblinded.json
exit: 0 done · 1 refused · 2 misuse`;

const COMMANDS = {
  import: { options: { prereg: { type: 'string' } }, positionals: 'PKG_DIR FILE…' },
  arbitrate: { options: {}, positionals: 'PKG_DIR FILE' },
  status: { options: {}, positionals: 'PKG_DIR' },
  lock: { options: { 'key-dir': { type: 'string' } }, positionals: 'PKG_DIR' },
  unblind: { options: { study: { type: 'string' } }, positionals: 'PKG_DIR' },
} as const;
type Command = keyof typeof COMMANDS;

function isCommand(word: string | undefined): word is Command {
  return word !== undefined && Object.hasOwn(COMMANDS, word);
}

interface Call {
  readonly command: Command;
  readonly positionals: readonly string[];
  readonly values: { prereg?: string; 'key-dir'?: string; study?: string; json?: boolean };
}

function parseCall(argv: readonly string[]): Call | { help: true } {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h') return { help: true };
  if (!isCommand(command)) throw new UsageError(`give a subcommand: ${Object.keys(COMMANDS).join(', ')}${command === undefined ? '' : ` (got ${JSON.stringify(command)})`}`);
  const spec = COMMANDS[command];
  let parsed;
  try {
    parsed = parseArgs({ args: [...rest], allowPositionals: true, strict: true, options: { ...spec.options, json: { type: 'boolean' }, help: { type: 'boolean' } } });
  } catch (error) {
    throw new UsageError(`${command}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const values = parsed.values as Call['values'] & { help?: boolean };
  if (values.help) return { help: true };
  const n = parsed.positionals.length;
  const wanted = command === 'import' ? n >= 2 : command === 'arbitrate' ? n === 2 : n === 1;
  if (!wanted) throw new UsageError(`${command} takes ${spec.positionals} (got ${n} argument(s): ${parsed.positionals.map((p) => JSON.stringify(p)).join(' ') || 'none'})`);
  if (command === 'unblind' && values.study === undefined) throw new UsageError('unblind needs --study STUDY_DIR: the study folder that holds blind-map.sealed.json');
  return { command, positionals: parsed.positionals, values };
}

function done(object: Record<string, unknown>, lines: readonly string[]): CommandOutput {
  return { exitCode: EXIT_CODES.ok, json: object, text: lines.join('\n') };
}

function stateLines(pkgDir: string, state: ReviewState): string[] {
  return [`review of ${pkgDir} (${state.blind_ids} instance(s), pre-registration ${state.prereg_sha256 ?? 'not yet recorded'}):`, ...describeState(state)];
}

function run(call: Call): CommandOutput {
  const [pkgDir, ...files] = call.positionals as [string, ...string[]];
  const now = new Date().toISOString();
  switch (call.command) {
    case 'import': {
      const r = importScores(pkgDir, files, { preregFile: call.values.prereg ?? null, defaultPreregFile: DEFAULT_PREREG, now });
      const lines = [
        ...(r.started ? [`started the review: scores are weighed with the pre-registration ${r.settings.prereg_sha256} (${r.settings.prereg_file}), recorded in review/review.json`] : []),
        ...r.files.map((f) => (f.outcome === 'imported' ? `imported ${f.source}: ${f.blind_id} by ${f.reviewer} → review/${f.stored_as}` : `unchanged ${f.source}: this very scorecard of ${f.reviewer} for ${f.blind_id} is already imported (review/${f.stored_as}); nothing written`)),
        ...stateLines(pkgDir, r.state),
      ];
      return done({ ok: true, command: 'import', ...r }, lines);
    }
    case 'arbitrate': {
      const r = arbitrate(pkgDir, files[0]!);
      const lines = [
        r.outcome === 'arbitrated' ? `arbitrated ${r.blind_id} by ${r.arbiter} → review/${r.stored_as} (was: ${r.decided})` : `unchanged: this very arbitration of ${r.blind_id} by ${r.arbiter} is already stored (review/${r.stored_as}); nothing written`,
        ...stateLines(pkgDir, r.state),
      ];
      return done({ ok: true, command: 'arbitrate', ...r }, lines);
    }
    case 'status': {
      const pkg = openReviewPackage(pkgDir);
      const state = consolidate(pkg, readReviewFolder(pkg));
      return done({ ok: true, command: 'status', state }, stateLines(pkgDir, state));
    }
    case 'lock': {
      const key = loadOrCreateControllerKey(call.values['key-dir'], { create: false });
      const r = lockReview(pkgDir, key.keys, now);
      const lines = [
        `locked the review of ${pkgDir}: ${r.lock.instances.length} instance(s), ${r.lock.files.length} file(s) covered, pre-registration ${r.lock.prereg_sha256}; signed by keyid ${r.keyid} into ${r.lock_file}`,
        ...r.lock.instances.map((i) => `  ${i.blind_id}  ${i.score} (${i.decided_by === 'arbitration' ? `decided by arbitration: ${i.arbitration_reason}` : "reviewers' mean"}); hard failures: ${foundOf(i.hard_failures)}`),
      ];
      return done({ ok: true, command: 'lock', ...r }, lines);
    }
    case 'unblind': {
      const r = unblind(pkgDir, call.values.study!, now);
      const u = r.unblinded;
      const lines = [
        `UNBLINDED ${pkgDir}: the map of ${call.values.study} matches the commitment ${u.commitment} signed at ${u.committed_at}; scores as locked at ${u.locked_at}; pre-registration ${u.prereg_sha256} (${u.study_prereg_check}); controller key: ${u.controller_key_check}`,
        ...u.instances.map((i) => `  ${i.blind_id}  group ${i.group}  replicate ${i.replicate}  score ${i.score} (${i.decided_by === 'arbitration' ? 'decided by arbitration' : "reviewers' mean"}); hard failures: ${foundOf(i.hard_failures)}`),
        'per group:',
        ...u.groups.map((g) => `  ${g.group}  n=${g.n}${g.n === 0 ? '' : `  scores ${g.scores.map((s) => s.score).join(', ')}  mean ${g.mean}  median ${g.median}  range ${g.min}–${g.max}  with a hard failure ${g.instances_with_hard_failure}`}`),
        ...agreementLines(u.agreement),
        ...u.notes.map((n) => `note: ${n}`),
        r.outcome === 'written' ? `wrote ${r.file}` : `${r.file} already holds this result; kept as it is`,
      ];
      return done({ ok: true, command: 'unblind', ...r }, lines);
    }
  }
}

function foundOf(decisions: Record<string, boolean>): string {
  const found = Object.entries(decisions).filter(([, v]) => v).map(([k]) => k);
  return found.length === 0 ? 'none found' : `found ${found.join(', ')}`;
}

function main(): CommandOutput | null {
  const call = parseCall(process.argv.slice(2));
  if ('help' in call) {
    process.stdout.write(`${USAGE}\n`);
    return null;
  }
  return run(call);
}

runCommand('review', USAGE, main);
