// The unknown-outcome drill (issue 16 item 7): `npm run experiment -- --group G --drill
// unknown-outcome` gives an operator a run with an open unknown tool outcome to meet and repair,
// reproducibly, with one command — the way the fault harness makes one (schema/fault-points.ts,
// workspace_tampered), through the same FaultSwitch, armed by the flag instead of the variable:
//
//   1. a new instance runs with the runtime armed to freeze at its first write, modify or move
//      intent (ExecutionIntentRecorded acknowledged, the file not yet touched); this controller,
//      in the harness's place, kills it there (SIGKILL): the stop is recorded, head signed;
//   2. a third party (the drill) overwrites the file the intent names while nothing runs;
//   3. the instance is resumed: the new runtime's first wake finds the file at neither the hash
//      before nor the one intended and records ActionEvent.ToolOutcomeUnknown; at the end of
//      that wake the instance stops itself (a recorded stop, head signed, exit 3);
//   4. the screen prints the `npm run repair` command to run next, then the `--resume` one.
//
// A drill is never study data: its experiment id is `drill-…` (in the signed manifest), both of
// its stops say "drill unknown-outcome" in the store, and the screen and --json say so. The
// study never runs one (npm run study has no --drill and never reads DS_FAULT_INJECTION).
import { shellCommandLine } from '../foundation/shell-word.js';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resumeInstance, runNewInstance, type InstanceResult, type NewInstanceOptions, type WakeStopOrder } from '../controller/instance-runner.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { FAULT_FILES, FaultReached, type FaultArming } from '../schema/fault-points.js';
import { FaultSwitch, processStartTicks } from '../schema/fault-switch.js';
import { RUN_FILES } from '../schema/run-files.js';
import { eventIs, type EnvelopeOf } from '../schema/typed-event.js';
import { tamperTargetOf } from '../faults/fault-plan.js';
import { todayCompact } from './operator-stop.js';

export const DRILLS = ['unknown-outcome'] as const;
export type DrillName = (typeof DRILLS)[number];

/** Who records the stop the drill orders once the unknown outcome is recorded. */
export const DRILL_OPERATOR = 'controller (drill unknown-outcome)';
/** How often the controller looks for the armed point's reached.json (the harness's pace). */
const POLL_MS = 20;
/** The bytes the drill's "third party" writes over the intent's file. */
const THIRD_PARTY_TEXT = 'written by a third party while the runtime was down (npm run experiment -- --drill unknown-outcome)\n';
/** The intents whose file an unrecorded change leaves unexplained: a read changes nothing, so it reconciles whatever the file holds. */
const MUTATING_OPS = ['write', 'modify', 'move'];

export function isDrillName(text: string): text is DrillName {
  return (DRILLS as readonly string[]).includes(text);
}

/** A drill's experiment id: says what it is wherever the id goes (the signed manifest, the run folder, the subject id). */
export function drillExperimentId(): string {
  return `drill-${todayCompact()}-${randomBytes(3).toString('hex')}`;
}

/** One unknown outcome the drill left open, and the statement that closes it. */
export interface DrillUnknownOutcome {
  readonly intent_event_id: string;
  readonly unknown_outcome_seq: number;
  readonly op: string | null;
  readonly path: string | null;
  /** The command to run next, exactly (shell-quoted). */
  readonly repair_command: string;
}

export interface DrillReport {
  readonly drill: DrillName;
  /** true: the unknown outcome is recorded and the instance stopped for its repair. */
  readonly reached: boolean;
  readonly marked: string;
  /** What happened, in order (screen lines). */
  readonly steps: readonly string[];
  readonly unknown_outcomes: readonly DrillUnknownOutcome[];
  /** The command after the repair(s); null when the drill did not reach its unknown outcome. */
  readonly resume_command: string | null;
  /** Why the drill did not reach its unknown outcome (null when it did). */
  readonly failure: string | null;
}

export interface DrillOptions {
  /** The new instance's options; its faults and signal are the drill's. */
  readonly instance: Omit<NewInstanceOptions, 'faults' | 'signal'>;
  /** The operator's emergency stop (Ctrl-C): ends the drill where it is, recorded as usual. */
  readonly signal: AbortSignal;
  /** Who the printed repair command names as the operator. */
  readonly operatorName: string;
  /** Flags the printed --resume command must repeat (the key folder, the same-uid reason), as given. */
  readonly resumeFlags: readonly string[];
}


/** The runtime frozen at the armed point, killed if the pid still names it (a pid is reused only after that process is gone). */
function killFrozenRuntime(faultDir: string, reached: FaultReached): string {
  let pidLine = '';
  try {
    pidLine = readFileSync(path.join(faultDir, FAULT_FILES.pid('runtime')), 'utf8').trim();
  } catch {
    // No pid file: checked below, and said.
  }
  const [pid, ticks] = pidLine.split(' ');
  if (Number(pid) !== reached.pid || processStartTicks(reached.pid) !== ticks) return `the runtime (pid ${reached.pid}) that froze at the point is no longer running: nothing was killed`;
  process.kill(reached.pid, 'SIGKILL');
  return `SIGKILL to the runtime (pid ${reached.pid}) frozen at execution intent ${String(reached.context['intent_event_id'])} (${String(reached.context['op'])} ${String(reached.context['path'])}), before it touched the file`;
}

/** The third party: overwrites the intent's file (a move's destination), owned like the workspace when run as root. */
function overwriteAsThirdParty(runDir: string, target: string): void {
  const root = path.join(runDir, RUN_FILES.workspace);
  const file = path.join(root, ...target.split('/'));
  const firstNewDir = mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, THIRD_PARTY_TEXT);
  // The runtime may run under its own uid (separate-uids): what the drill creates must stay its to change.
  if (process.getuid?.() === 0) {
    const owner = statSync(root);
    const created: string[] = [file];
    if (firstNewDir !== undefined) for (let dir = path.dirname(file); dir.startsWith(firstNewDir); dir = path.dirname(dir)) created.push(dir);
    for (const p of created) chownSync(p, owner.uid, owner.gid);
  }
}

type UnknownOutcomeEvent = EnvelopeOf<'ActionEvent.ToolOutcomeUnknown'>;

function unknownOutcomesOf(events: readonly EventEnvelope[]): UnknownOutcomeEvent[] {
  return events.filter((e) => eventIs(e, 'ActionEvent.ToolOutcomeUnknown'));
}

/**
 * Runs the drill to its recorded stop after the unknown outcome (or to wherever a Ctrl-C or a
 * failure ends it: said in the report, never silently). Returns the last phase's result.
 */
export async function runUnknownOutcomeDrill(options: DrillOptions): Promise<{ result: InstanceResult; report: DrillReport }> {
  const { instance, signal } = options;
  const runDir = path.resolve(instance.runDir);
  const log = instance.log;
  const steps: string[] = [];
  const step = (line: string): void => {
    steps.push(line);
    log(`drill: ${line}`);
  };
  const marked = `a drill, not study data: experiment ${instance.experimentId}; both of its stops say "drill unknown-outcome" in the store`;
  const report = (result: InstanceResult, rest: Pick<DrillReport, 'reached' | 'unknown_outcomes' | 'resume_command' | 'failure'>): { result: InstanceResult; report: DrillReport } => ({ result, report: { drill: 'unknown-outcome', marked, steps, ...rest } });
  const failed = (result: InstanceResult, failure: string) => report(result, { reached: false, unknown_outcomes: [], resume_command: null, failure });

  // World-writable and sticky like the harness's: the writer and runtime may run under uids of their own.
  const faultDir = mkdtempSync(path.join(tmpdir(), 'ds-drill-'));
  try {
    chmodSync(faultDir, 0o1777);
    const arming: FaultArming = {
      dir: faultDir,
      armed: { point: 'runtime.intent.before_file_op', kind: 'workspace_tampered', hit: 1, only_if: { op: MUTATING_OPS } },
      armed_by: '--drill unknown-outcome',
    };
    const faults = FaultSwitch.arm('controller', arming, log);

    // 1. The new instance, until the runtime is frozen at its first mutating intent and killed there.
    const killed = new AbortController();
    let reached: FaultReached | null = null;
    const watcher = setInterval(() => {
      const file = path.join(faultDir, FAULT_FILES.reached);
      if (reached !== null || !existsSync(file)) return;
      // Written whole and renamed into place by the point: never half a file.
      reached = FaultReached.parse(JSON.parse(readFileSync(file, 'utf8')));
      clearInterval(watcher);
      // The stop first, so that the controller records it as the drill's (a dead runtime alone reads "failed outside any planned crash").
      killed.abort(`drill unknown-outcome: the runtime was killed (SIGKILL) at execution intent ${String(reached.context['intent_event_id'])} (${String(reached.context['op'])} ${String(reached.context['path'])}) before it touched the file, as the drill armed; a third party changes the file next, and the resume records the outcome unknown`);
      step(killFrozenRuntime(faultDir, reached));
    }, POLL_MS);
    let first: InstanceResult;
    try {
      first = await runNewInstance({ ...instance, runDir, faults, signal: AbortSignal.any([signal, killed.signal]) });
    } finally {
      clearInterval(watcher);
    }
    const fired = reached as FaultReached | null;
    for (const note of first.notes) step(`note: ${note}`);
    if (fired === null) {
      return failed(first, first.status === 'finished' ? `the subject made no write, modify or move intent in any wake, so the drill's fault never fired; the run finished as a plain run (still marked a drill by its id). Try another --group or --seed` : `the instance stopped before the drill's fault fired (${first.stopReason ?? 'no reason recorded'}); --resume continues it as a plain run`);
    }
    if (first.status !== 'stopped') return failed(first, `the fault fired but the instance did not stop (bug): ${first.status}`);
    step(`stop recorded and its head signed (the store at seq ${first.head.seq}): ${first.stopReason ?? ''}`);
    if (signal.aborted) return failed(first, `interrupted by the operator after the runtime was killed, before the file was changed: --resume continues it, and the intent reconciles as did_not_happen (no unknown outcome)`);

    // 2. The third party, while nothing runs.
    const target = tamperTargetOf(fired);
    if (target === null) return failed(first, `the fault point named no file (${JSON.stringify(fired.context)}); nothing was changed`);
    overwriteAsThirdParty(runDir, target);
    step(`a third party overwrote workspace/${target} while nothing ran (bytes neither the one before nor the one intended)`);

    // 3. The resume; its first wake reconciles the intent and records the outcome unknown.
    let unknown: UnknownOutcomeEvent[] = [];
    const stopAfterWake = (events: readonly EventEnvelope[]): WakeStopOrder | null => {
      unknown = unknownOutcomesOf(events);
      if (unknown.length === 0) return null;
      const list = unknown.map((e) => `intent ${e.payload.intent_event_id} (ActionEvent.ToolOutcomeUnknown at seq ${e.seq})`).join(', ');
      return { reason: `drill unknown-outcome: the outcome of ${list} is recorded unknown; the instance stopped itself for the operator's repair (npm run repair), as the drill does`, operator: DRILL_OPERATOR };
    };
    const { preregFile: _p, seed: _s, group: _g, startAt: _a, experimentId: _e, replicate: _r, groupBlindId: _b, startedAt: _t, model: _m, ...common } = instance;
    const second = await resumeInstance({ ...common, runDir, signal, faults: FaultSwitch.off, stopAfterWake });
    for (const note of second.notes) step(`note: ${note}`);
    if (unknown.length === 0 || second.status !== 'stopped') {
      return failed(second, second.status === 'finished' ? `the resumed instance recorded no unknown outcome and finished (its wakes were all run?): the drill did not reach its point` : `the resumed instance stopped before an unknown outcome was recorded (${second.stopReason ?? 'no reason recorded'}); --resume continues it`);
    }
    step(`resumed: the outcome was recorded unknown, and the instance stopped itself at the end of that wake (stop recorded, head signed; the store at seq ${second.head.seq})`);

    // 4. What the operator runs next.
    const outcomes = unknown.map((e): DrillUnknownOutcome => {
      const intentId = e.payload.intent_event_id;
      const ours = intentId === fired.context['intent_event_id'];
      const op = ours ? String(fired.context['op']) : null;
      const file = ours ? target : null;
      const note = ours
        ? `drill: the runtime was killed before it touched workspace/${target}; the file holds the drill's third-party text, not the subject's`
        : 'what was checked in the workspace';
      const words = ['npm', 'run', 'repair', '--', runDir, '--resolve-intent', intentId, '--resolution', ours ? 'did_not_happen' : 'happened|did_not_happen', '--operator', options.operatorName, '--note', note];
      return { intent_event_id: intentId, unknown_outcome_seq: e.seq, op, path: file, repair_command: ours ? shellCommandLine(words) : `${shellCommandLine(words.slice(0, 8))} --resolution happened|did_not_happen --operator NAME --note TEXT` };
    });
    return report(second, { reached: true, unknown_outcomes: outcomes, resume_command: shellCommandLine(['npm', 'run', 'experiment', '--', '--resume', runDir, ...options.resumeFlags]), failure: null });
  } finally {
    rmSync(faultDir, { recursive: true, force: true });
  }
}

/** The drill's screen block, after the run's summary. */
export function drillLines(report: DrillReport): string[] {
  const lines = [`DRILL ${report.drill} — ${report.marked}`, ...report.steps.map((s) => `  ${s}`)];
  if (!report.reached) return [...lines, `DRILL FAILED: ${report.failure ?? 'unknown'}`];
  for (const u of report.unknown_outcomes) {
    lines.push(`  unknown outcome: intent ${u.intent_event_id}${u.op === null ? '' : ` (${u.op} ${u.path})`}, ActionEvent.ToolOutcomeUnknown at seq ${u.unknown_outcome_seq}`);
  }
  lines.push('  next: look at the file in the workspace, then state what happened (the drill knows: the subject\'s operation did not happen):');
  for (const u of report.unknown_outcomes) lines.push(`    ${u.repair_command}`);
  lines.push('  then continue the instance (DORMANT: its next wakes act normally, and it seals):', `    ${report.resume_command ?? ''}`);
  return lines;
}
