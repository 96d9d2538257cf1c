// npm run repair -- DIR --resolve-intent EVENT_ID --resolution happened|did_not_happen --operator NAME --note TEXT [--json]
//
// The manual repair (issue 9 item 2; DESIGN §7; docs/controller.md "Manual repair"): appends
// one SystemEvent.OperatorResolved to a stopped run through a writer of its own — never an
// edit of events.db — after checking, read-only, that the run verifies and that the intent's
// outcome is open and unknown (controller/operator-resolution.ts). The usual workflow: the
// instance shows an unknown outcome (RECOVERING) → Ctrl-C (a recorded emergency stop) → this
// command (the subject stays STOPPED) → npm run experiment -- --resume DIR (nothing left open:
// DORMANT, the next wakes act normally). The same command again is answered with the recorded
// event and writes nothing.
// Exit: 0 written, or already recorded (the screen says which); 1 refused; 2 misuse.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { MAX_FAILURES_IN_MESSAGE, OperatorResolutionRequest, resolveUnknownOutcome, type OperatorResolutionResult } from '../controller/operator-resolution.js';
import { OperatorResolutionRefusal } from '../controller/operator-resolution-refusal.js';
import type { IntentRef } from '../controller/stopped-store-scan.js';
import { parseFlags, UsageError } from './command-line.js';
import { runCommand, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';

process.title = 'ds-repair';

const USAGE = `usage: npm run repair -- DIR --resolve-intent EVENT_ID --resolution happened|did_not_happen --operator NAME --note TEXT [--json]
  DIR                    the run folder of a stopped instance (holding events.db): stop it with Ctrl-C first
  --resolve-intent ID    event_id of the ActionEvent.ExecutionIntentRecorded whose outcome was recorded unknown
  --resolution R         happened | did_not_happen: what the operator found in the workspace
  --operator NAME        who states it (recorded in the event)
  --note TEXT            how the operator knows: what was checked (recorded in the event)
  --json                 print the result (or the refusal) as one JSON object on stdout
appends SystemEvent.OperatorResolved through a writer of its own; refuses a sealed store, a wake in
progress, a store that does not verify, and an intent whose outcome is not open and unknown
exit: 0 written, or already recorded · 1 refused (nothing appended) · 2 misuse`;

const OPTIONS = {
  'resolve-intent': { type: 'string' },
  resolution: { type: 'string' },
  operator: { type: 'string' },
  note: { type: 'string' },
  json: { type: 'boolean' },
} as const;

function requestFrom(values: Record<string, string | boolean | undefined>, positionals: readonly string[]): OperatorResolutionRequest {
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'give the run folder (DIR)' : `give exactly one run folder, got ${positionals.length}: ${positionals.join(' ')}`);
  const runDir = path.resolve(positionals[0]!);
  if (!existsSync(runDir) || !statSync(runDir).isDirectory()) throw new UsageError(`${runDir} is not a folder: give the run folder of the instance`);
  const missing = (['resolve-intent', 'resolution', 'operator', 'note'] as const).filter((flag) => values[flag] === undefined);
  if (missing.length > 0) throw new UsageError(`missing ${missing.map((f) => `--${f}`).join(', ')}: a repair states which intent, what happened, who says so and how they know`);
  const parsed = OperatorResolutionRequest.safeParse({ runDir, intentEventId: values['resolve-intent'], resolution: values.resolution, operator: values.operator, note: values.note });
  if (!parsed.success) {
    const flagOf: Record<string, string> = { intentEventId: '--resolve-intent', resolution: '--resolution', operator: '--operator', note: '--note' };
    const problems = parsed.error.issues.map((issue) => `${flagOf[String(issue.path[0])] ?? String(issue.path[0])}: ${issue.message}`);
    throw new UsageError(problems.join('; '));
  }
  return parsed.data;
}

function intentLine(intent: IntentRef): string {
  return `${intent.event_id} (seq ${intent.seq}, ${intent.op} ${intent.path})`;
}

/** What the resume will do, when the subject is held in a recorded stop or pause; nothing otherwise. */
function resumeLines(r: OperatorResolutionResult): string[] {
  if (r.held_by === null) return [];
  const held = `  the subject stays ${r.lifecycle_after} (${r.held_by.event_type} at seq ${r.held_by.seq}): the statement does not resume it`;
  const resume = `npm run experiment -- --resume ${r.run_dir}`;
  if (r.lifecycle_on_resume === null) return [held];
  if (r.lifecycle_on_resume === 'RECOVERING') {
    return [held, `  ${resume} will continue RECOVERING (read-only) while ${r.unknown_outcomes_left.length} unknown outcome(s) remain: resolve them too before resuming`];
  }
  return [held, `  ${resume} will continue ${r.lifecycle_on_resume}: no unknown outcome is left open, so its next wakes act normally`];
}

function summary(r: OperatorResolutionResult): string {
  const left = r.unknown_outcomes_left.length === 0 ? 'none' : `${r.unknown_outcomes_left.length}: ${r.unknown_outcomes_left.map(intentLine).join('; ')}`;
  const lines =
    r.outcome === 'written'
      ? [
          `WRITTEN: SystemEvent.OperatorResolved at seq ${r.seq} (event ${r.event_id}), actor user, operator ${r.operator}`,
          `  intent ${intentLine(r.intent)}: ${r.resolution}`,
          `  answers ActionEvent.ToolOutcomeUnknown at seq ${r.unknown_outcome.seq} (event ${r.unknown_outcome.event_id})`,
          `  lifecycle ${r.lifecycle_before} → ${r.lifecycle_after}`,
          `  unknown outcomes left: ${left}`,
          ...resumeLines(r),
          `  occurred_at ${r.occurred_at}: the run's virtual clock, which stands still while the instance is stopped`,
        ]
      : [
          `ALREADY RECORDED: this statement is SystemEvent.OperatorResolved at seq ${r.seq} (event ${r.event_id}); nothing was written`,
          `  intent ${intentLine(r.intent)}: ${r.resolution}, operator ${r.operator}`,
          `  lifecycle now ${r.lifecycle_after}; unknown outcomes left: ${left}`,
          ...resumeLines(r),
        ];
  const covered = r.last_signed_head_seq !== null && r.last_signed_head_seq >= r.seq;
  if (!covered) {
    lines.push(
      `  not yet covered by a signed head (${r.last_signed_head_seq === null ? 'none is signed yet' : `the last covers seq ${r.last_signed_head_seq}`}): the controller, which holds the key, signs the run's heads when the instance is next resumed`,
      `  (npm run experiment -- --resume ${r.run_dir}); until then npm run verify -- ${r.run_dir} finds no signed head over seq ${r.seq} (no final head: a failure, a warning with --open)`,
    );
  }
  for (const note of r.notes) lines.push(`  note: ${note}`);
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<CommandOutput | null> {
  const args = parseFlags(USAGE, OPTIONS);
  if (args === null) return null;
  const request = requestFrom(args.values, args.positionals);
  try {
    const result = await resolveUnknownOutcome(request);
    return { exitCode: EXIT_CODES.ok, json: { ...result }, text: summary(result) };
  } catch (error) {
    // The message names the first MAX_FAILURES_IN_MESSAGE; the rest would be lost on the screen.
    if (error instanceof OperatorResolutionRefusal && error.failures.length > MAX_FAILURES_IN_MESSAGE) {
      process.stderr.write(`${error.failures.map((f) => `  ${f.store}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.reason}`).join('\n')}\n`);
    }
    throw error;
  }
}

runCommand('repair', USAGE, main);
