// The fault points' switch inside one process (issue 8; the contract is schema/fault-points.ts).
// It is here, in schema/, because the writer, the runtime and the controller all carry points
// and may share nothing else.
//
// Unarmed (no DS_FAULT_INJECTION, every study run) `hit` returns null and touches nothing. Armed,
// each hit increments the point's counter file in the harness's folder (counted over every
// process of the role, so a restarted writer goes on counting where the killed one stopped);
// at the armed hit the process claims the run's single `fired` file, writes `reached.json`, and
// either freezes itself with SIGSTOP for the harness to act (kills, snapshot and workspace
// faults) or returns the kind for its caller to carry out (socket and model faults).
import { appendFileSync, closeSync, existsSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import {
  FAULT_ENV,
  FAULT_FILES,
  FAULT_POINT_CATALOGUE,
  FaultArming,
  SELF_HANDLED_KINDS,
  type ArmedFault,
  type FaultKind,
  type FaultPoint,
  type FaultReached,
  type FaultRole,
} from './fault-points.js';

/** DS_FAULT_INJECTION is set but unusable: the process refuses to start rather than run unarmed by mistake. */
export class FaultArmingError extends TypedErrorOf('usage_fault_switch', EXIT_CODES.misused) {
  override readonly name = 'FaultArmingError';
}

export type FaultContext = FaultReached['context'];

/** Bound on the digits of a counter file (a run hits a point at most a few thousand times). */
const MAX_COUNTER_CHARS = 16;

/**
 * When the process started (field 22 of /proc/<pid>/stat, in clock ticks since boot), or null
 * when there is no such process: with the pid it names one process, even after the pid is reused.
 */
export function processStartTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces: state is field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[22 - 3] ?? null;
  } catch {
    return null;
  }
}

/**
 * The environment for a writer or runtime: this process's, with DS_FAULT_INJECTION only when its
 * parent hands it on deliberately. A variable left in a shell must not arm the children of a
 * study (whose controller never reads it).
 */
export function childEnvironment(faultInjection: string | null): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[FAULT_ENV];
  if (faultInjection !== null) env[FAULT_ENV] = faultInjection;
  return env;
}

/** "workspace_tampered at hit 3 of P", or "… at the first hit from 1 of P whose op is write, modify or move". */
function describeArmed(armed: ArmedFault): string {
  if (armed.only_if === undefined) return `${armed.kind} at hit ${armed.hit} of ${armed.point}`;
  const where = Object.entries(armed.only_if).map(([key, values]) => `${key} is ${values.join(' or ')}`).join(' and ');
  return `${armed.kind} at the first hit from ${armed.hit} of ${armed.point} whose ${where}`;
}

/** Whether the armed fault fires at this hit: exactly hit `hit`, or with only_if the first matching one from it (the `fired` file makes it the first). */
function firesAt(armed: ArmedFault, count: number, context: FaultContext): boolean {
  if (armed.only_if === undefined) return armed.hit === count;
  return (
    count >= armed.hit &&
    Object.entries(armed.only_if).every(([key, values]) => {
      const value = context[key];
      return value !== undefined && value !== null && values.includes(value);
    })
  );
}

export class FaultSwitch {
  private constructor(
    private readonly role: FaultRole,
    private readonly arming: FaultArming | null,
    private readonly log: (line: string) => void,
  ) {}

  /** The switch of a process that carries no fault points' arming (tests, tools). */
  static readonly off = new FaultSwitch('controller', null, () => undefined);

  /**
   * Reads DS_FAULT_INJECTION. Absent: an unarmed switch. Present: says so on the process's
   * log, records the process's pid for the harness, and arms.
   */
  static fromEnv(role: FaultRole, log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): FaultSwitch {
    const text = env[FAULT_ENV];
    if (text === undefined || text === '') return new FaultSwitch(role, null, log);
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new FaultArmingError(`${FAULT_ENV} is set but is not JSON; unset it (it is only for npm run faults)`);
    }
    const parsed = FaultArming.safeParse(raw);
    if (!parsed.success) throw new FaultArmingError(`${FAULT_ENV} is set but invalid: ${z.prettifyError(parsed.error)}`);
    return FaultSwitch.arm(role, parsed.data, log);
  }

  /**
   * The switch of an arming made in this process rather than read from the variable (the
   * controller of a drill, cli/drill.ts); `armed_by` names who armed it on the line
   * every armed process logs. Its children get it as DS_FAULT_INJECTION (environmentValue).
   */
  static arm(role: FaultRole, arming: FaultArming, log: (line: string) => void): FaultSwitch {
    const by = arming.armed_by ?? `${FAULT_ENV}, npm run faults`;
    if (!existsSync(arming.dir)) throw new FaultArmingError(`${FAULT_ENV} names the folder ${arming.dir}, which does not exist`);
    // With its start time: the harness signals a pid only while it is still this process.
    writeFileSync(path.join(arming.dir, FAULT_FILES.pid(role)), `${process.pid} ${processStartTicks(process.pid) ?? 'unknown'}\n`);
    const armed = arming.armed;
    const mine = armed !== null && FAULT_POINT_CATALOGUE[armed.point].role === role;
    log(`FAULT INJECTION (${by}): ${mine ? `armed: ${describeArmed(armed)}` : 'counting fault-point hits; no fault armed in this process'}`);
    return new FaultSwitch(role, arming, log);
  }

  get armed(): boolean {
    return this.arming !== null;
  }

  /**
   * One pass of the process through `point`. Returns the fault the caller must carry out
   * (socket and model kinds), or null: nothing armed here, or a kill/tamper kind the harness
   * carried out while this process stood frozen (if this process was the victim, it never
   * returns).
   */
  hit(point: FaultPoint, contextOf: () => FaultContext = () => ({})): FaultKind | null {
    const arming = this.arming;
    // The facts of the instant are gathered only when armed: the points sit on hot paths.
    if (arming === null) return null;
    const context = contextOf();
    if (FAULT_POINT_CATALOGUE[point].role !== this.role) throw new Error(`bug: fault point ${point} is the ${FAULT_POINT_CATALOGUE[point].role}'s, hit in the ${this.role}`);
    const count = this.count(arming.dir, point);
    const armed = arming.armed;
    if (armed === null) appendFileSync(path.join(arming.dir, FAULT_FILES.contexts(point)), `${JSON.stringify({ hit: count, context })}\n`);
    if (armed === null || armed.point !== point || !firesAt(armed, count, context)) return null;
    if (!this.claimFiring(arming.dir)) return null;
    const frozen = !SELF_HANDLED_KINDS.includes(armed.kind);
    const reached: FaultReached = { point, kind: armed.kind, hit: count, role: this.role, pid: process.pid, frozen, context };
    // Written whole, then renamed: the harness polls for it and must never read half of it.
    const file = path.join(arming.dir, FAULT_FILES.reached);
    writeFileSync(`${file}.tmp-${process.pid}`, `${JSON.stringify(reached)}\n`);
    renameSync(`${file}.tmp-${process.pid}`, file);
    if (!frozen) {
      this.log(`FAULT INJECTION fires: ${armed.kind} at hit ${count} of ${point}`);
      return armed.kind;
    }
    // stderr is synchronous for files and pipes, so this line is out before the stop.
    this.log(`FAULT INJECTION fires: ${armed.kind} at hit ${count} of ${point}; freezing (SIGSTOP) for the harness`);
    // Delivered before kill(2) returns: the process stops right here, inside whatever
    // transaction or step it is in, until the harness kills it or sends SIGCONT.
    process.kill(process.pid, 'SIGSTOP');
    this.log(`FAULT INJECTION: continued after ${armed.kind} at ${point}`);
    return null;
  }

  /** The variable's text when armed, for the process's own children; null otherwise (they must not inherit one by accident). */
  get environmentValue(): string | null {
    return this.arming === null ? null : JSON.stringify(this.arming);
  }

  /**
   * Appends what a writer client was told was committed (the harness checks none is lost). A
   * log that cannot be written must not make a committed append look failed to its caller: it
   * is said on the log instead, and the harness finds fewer acknowledgements to check.
   */
  recordAcks(events: ReadonlyArray<{ seq: number; event_hash: string }>): void {
    const arming = this.arming;
    if (arming === null || events.length === 0) return;
    const lines = events.map((e) => JSON.stringify({ seq: e.seq, event_hash: e.event_hash, role: this.role })).join('\n');
    try {
      appendFileSync(path.join(arming.dir, FAULT_FILES.acks(this.role, process.pid)), `${lines}\n`);
    } catch (error) {
      this.log(`FAULT INJECTION: could not log ${events.length} acknowledgement(s) (seq ${events[0]!.seq}…): ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /**
   * Per point, this process's counter file, kept open, and the count in it. Read once, at the
   * point's first hit here: the processes of one role follow each other (a restarted or resumed
   * one starts after the one before it is gone; the harness waits for that), so none writes
   * behind another's back. Written at every hit, so a process killed at the next instant leaves
   * the count its successor goes on from.
   */
  private readonly counters = new Map<FaultPoint, { readonly fd: number; hits: number }>();

  private count(dir: string, point: FaultPoint): number {
    let counter = this.counters.get(point);
    if (counter === undefined) {
      const file = path.join(dir, FAULT_FILES.hits(point));
      const exists = existsSync(file);
      const before = exists ? Number(readFileSync(file, 'utf8').slice(0, MAX_COUNTER_CHARS)) : 0;
      if (!Number.isSafeInteger(before) || before < 0) throw new FaultArmingError(`the fault counter ${file} holds no count`);
      counter = { fd: openSync(file, exists ? 'r+' : 'w+'), hits: before };
      this.counters.set(point, counter);
    }
    counter.hits += 1;
    // One pwrite at offset 0 in place of a read and a rewrite per hit (the points sit on hot paths:
    // ~1,500 hits a run). A count never gets shorter, so no digit of an older one is left behind.
    writeSync(counter.fd, String(counter.hits), 0);
    return counter.hits;
  }

  private claimFiring(dir: string): boolean {
    try {
      closeSync(openSync(path.join(dir, FAULT_FILES.fired), 'wx'));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
  }
}
