// The record of a study's blocks (issue 31 item 1; DESIGN §12 "Blocks under real load"), part of
// the study folder's contract (study-folder.ts):
//   <study>/blocks/r<k>.jsonl   one line per turn a member of replicate k's block took at the model
//                               (controller/lockstep-block.ts TurnRecord, with its group)
// and its check: every turn's order is the one drawn from the replicate's seed
// (design/block-turn-order.ts) and the member sits where the order puts it; no more turns overlap
// than the block's slots; no turn of wake k + 1 began before every member's turn of wake k ended
// (the barrier); a member passed over took no turn at that wake before it; a member takes one turn
// per wake in a session, and only the start again in a later one (a block stopped and resumed, on
// one machine or as a requeued batch task, starts its runtimes again). What the record says
// per group (how often each went first, how long each waited) is reported beside it, so a reader
// sees that no group waited behind another more often than the draw allows.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { blockTurnOrder, START_TURN_INDEX } from '../design/block-turn-order.js';
import { roundByRule, WHOLE_MS_ROUNDING } from './figure-rounding.js';
import { GROUPS, Group } from '../design/groups.js';
import { replicateSeed } from '../study-contract/study-replicates.js';

export const BLOCKS_FOLDER = 'blocks';
/** A block's record is ~100 lines of ~300 bytes (31 wakes and a start, three members, a few restarts); more is not one. */
const MAX_BLOCK_RECORD_BYTES = 4 * 1024 * 1024;
/** A turn's times are three whole-millisecond readings of one monotonic clock (asked, waited, held): the checks allow this much for their rounding. */
const CLOCK_SLACK_MS = 5;
/** At most this many problems are named per block; the rest are counted. */
const MAX_NAMED_PROBLEMS = 6;

export const BlockTurnLine = z.strictObject({
  replicate: z.number().int().min(1),
  /**
   * Which run of the block took the turn (the wall-clock time that run of the study started it):
   * a stopped block resumed later is a new session, whose members ran side by side with each
   * other but not with the turns taken before the stop. The lockstep's rules hold within one.
   */
  session: z.iso.datetime(),
  group: Group,
  wake_index: z.number().int().min(START_TURN_INDEX),
  wake_id: z.string().min(1).max(64),
  order: z.array(Group).length(GROUPS.length),
  position: z.number().int().min(1).max(GROUPS.length),
  passed_over: z.array(Group).max(GROUPS.length - 1),
  slots: z.number().int().min(1),
  asked_at: z.iso.datetime(),
  /**
   * ms since the session's block began on its monotonic clock; waited_ms and held_ms are on the
   * same clock. The checks read these, never asked_at (wall clocks are slewed by time sync).
   * Absent in a record written before it existed: such a line is timed by asked_at, as then.
   */
  asked_session_ms: z.number().int().min(0).optional(),
  waited_ms: z.number().int().min(0),
  held_ms: z.number().int().min(0),
});
export type BlockTurnLine = z.infer<typeof BlockTurnLine>;

export function blockRecordFile(studyDir: string, replicate: number): string {
  return path.join(studyDir, BLOCKS_FOLDER, `r${replicate}.jsonl`);
}

export type BlockRecord = { readonly kind: 'read'; readonly lines: readonly BlockTurnLine[] } | { readonly kind: 'missing' } | { readonly kind: 'unreadable'; readonly detail: string };

/** Reads replicate k's record; a line that is not a turn makes the record unreadable (named by its number). */
export function readBlockRecord(studyDir: string, replicate: number): BlockRecord {
  const file = blockRecordFile(studyDir, replicate);
  if (!existsSync(file)) return { kind: 'missing' };
  const bytes = readFileSync(file);
  if (bytes.length > MAX_BLOCK_RECORD_BYTES) return { kind: 'unreadable', detail: `${file} is ${bytes.length} bytes, over the ${MAX_BLOCK_RECORD_BYTES} a block's record takes` };
  const lines: BlockTurnLine[] = [];
  const texts = bytes.toString('utf8').split('\n');
  for (let i = 0; i < texts.length; i += 1) {
    const text = texts[i]!;
    if (text.trim() === '') continue;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return { kind: 'unreadable', detail: `${file} line ${i + 1} is not JSON` };
    }
    const parsed = BlockTurnLine.safeParse(json);
    if (!parsed.success) return { kind: 'unreadable', detail: `${file} line ${i + 1} is not a turn: ${parsed.error.issues.slice(0, 3).map((x) => `${x.path.join('.') || '(root)'}: ${x.message}`).join('; ')}` };
    lines.push(parsed.data);
  }
  return { kind: 'read', lines };
}

interface Interval {
  readonly line: BlockTurnLine;
  readonly fromMs: number;
  readonly toMs: number;
}

function intervalOf(line: BlockTurnLine): Interval {
  const fromMs = (line.asked_session_ms ?? Date.parse(line.asked_at)) + line.waited_ms;
  return { line, fromMs, toMs: fromMs + line.held_ms };
}

const nameOf = (l: BlockTurnLine): string => `${l.group} at ${l.wake_id}`;

/** Each line's order is the drawn one, and its member sits where the order puts it. */
function orderProblems(seed: string, lines: readonly BlockTurnLine[]): string[] {
  const out: string[] = [];
  for (const l of lines) {
    const drawn = blockTurnOrder(seed, l.wake_index, GROUPS);
    if (l.order.join() !== drawn.join()) out.push(`${nameOf(l)}: recorded order ${l.order.join(',')} is not the order drawn from the seed, ${drawn.join(',')}`);
    else if (drawn[l.position - 1] !== l.group) out.push(`${nameOf(l)}: recorded at position ${l.position}, where the drawn order ${drawn.join(',')} puts ${drawn[l.position - 1]}`);
  }
  return out;
}

/** Within a wake: the turns went in the drawn order, and no more at once than the slots; a member passed over took no turn there. */
function withinWakeProblems(byWake: ReadonlyMap<number, Interval[]>): string[] {
  const out: string[] = [];
  for (const [, turns] of byWake) {
    const sorted = [...turns].sort((a, b) => a.line.position - b.line.position);
    for (let i = 1; i < sorted.length; i += 1) {
      const before = sorted[i - 1]!;
      const after = sorted[i]!;
      if (after.fromMs + CLOCK_SLACK_MS < before.fromMs) out.push(`${nameOf(after.line)} began before ${before.line.group}, whom the drawn order puts first`);
    }
    for (const t of sorted) {
      const overlapping = sorted.filter((o) => o.fromMs < t.toMs - CLOCK_SLACK_MS && t.fromMs < o.toMs - CLOCK_SLACK_MS).length;
      if (overlapping > t.line.slots) out.push(`${nameOf(t.line)} ran beside ${overlapping - 1} other turn(s), over the block's ${t.line.slots} slot(s)`);
      for (const passed of t.line.passed_over) if (sorted.some((o) => o.line.group === passed)) out.push(`${nameOf(t.line)} says it passed over ${passed}, who took a turn at that wake`);
    }
  }
  return out;
}

/** The barrier: a turn at wake k + 1 begins only after every turn at wake k ended. */
function barrierProblems(byWake: ReadonlyMap<number, Interval[]>): string[] {
  const out: string[] = [];
  const indices = [...byWake.keys()].sort((a, b) => a - b);
  for (let i = 1; i < indices.length; i += 1) {
    const previous = byWake.get(indices[i - 1]!)!;
    const lastEnd = Math.max(...previous.map((t) => t.toMs));
    for (const t of byWake.get(indices[i]!)!) if (t.fromMs + CLOCK_SLACK_MS < lastEnd) out.push(`${nameOf(t.line)} began ${lastEnd - t.fromMs} ms before the block's turns at wake index ${indices[i - 1]} had ended`);
  }
  return out;
}

/**
 * Within one session a member takes one turn per wake index. Across sessions only the start
 * repeats: a resumed instance starts its runtime again (its model check a call like any), while a
 * wake is never run twice (one cut by a stop is not run again on resume).
 */
function repeatedTurnProblems(byIndex: ReadonlyMap<string, BlockTurnLine[]>, sessions: ReadonlyMap<string, BlockTurnLine[]>): string[] {
  const out: string[] = [];
  for (const [session, sessionLines] of sessions) {
    for (const [index, turns] of groupBy(sessionLines, (l) => String(l.wake_index))) {
      const groups = turns.map((t) => t.group);
      if (new Set(groups).size !== groups.length) out.push(`wake index ${index}: ${groups.join(',')} in the session of ${session} — a member took two turns at one wake`);
    }
  }
  for (const [index, turns] of byIndex) {
    if (Number(index) === START_TURN_INDEX) continue;
    for (const group of GROUPS) {
      const taken = [...new Set(turns.filter((t) => t.group === group).map((t) => t.session))];
      if (taken.length > 1) out.push(`wake index ${index}: ${group} took a turn in ${taken.length} sessions (${taken.join(', ')}) — a wake run twice`);
    }
  }
  return out;
}

export interface BlockTurnCheck {
  readonly ok: boolean;
  readonly problems: readonly string[];
  /** How many turns each group took first among those who took one at a wake. */
  readonly first: Readonly<Record<Group, number>>;
  /** Mean wait for a turn per group, in whole milliseconds (WHOLE_MS_ROUNDING of meanWaitMsUnrounded; null: took none). */
  readonly meanWaitMs: Readonly<Record<Group, number | null>>;
  /** The mean before rounding: Σ waited_ms in record order / turns. */
  readonly meanWaitMsUnrounded: Readonly<Record<Group, number | null>>;
  readonly turns: number;
  /** Runs of the block the record holds (more than one: it was stopped and resumed; the rules hold within each). */
  readonly sessions: number;
}

/** Holds replicate k's recorded turns to the order drawn from `studySeed` and to the lockstep's rules. */
export function checkBlockTurns(studySeed: string, replicate: number, lines: readonly BlockTurnLine[]): BlockTurnCheck {
  const seed = replicateSeed(studySeed, replicate);
  const problems: string[] = lines.filter((l) => l.replicate !== replicate).map((l) => `${nameOf(l)}: a turn of replicate ${l.replicate} in replicate ${replicate}'s record`);
  const byIndex = groupBy(lines, (l) => String(l.wake_index));
  const sessions = groupBy(lines, (l) => l.session);
  problems.push(...repeatedTurnProblems(byIndex, sessions));
  problems.push(...orderProblems(seed, lines));
  for (const sessionLines of sessions.values()) {
    const byWake = new Map<number, Interval[]>();
    for (const l of sessionLines) byWake.set(l.wake_index, [...(byWake.get(l.wake_index) ?? []), intervalOf(l)]);
    problems.push(...withinWakeProblems(byWake), ...barrierProblems(byWake));
  }
  const first = Object.fromEntries(GROUPS.map((g) => [g, 0])) as Record<Group, number>;
  for (const turns of byIndex.values()) {
    const earliest = [...turns].sort((a, b) => a.position - b.position)[0];
    if (earliest) first[earliest.group] += 1;
  }
  const meanWaitMsUnrounded = Object.fromEntries(
    GROUPS.map((g) => {
      const waits = lines.filter((l) => l.group === g).map((l) => l.waited_ms);
      return [g, waits.length === 0 ? null : waits.reduce((a, b) => a + b, 0) / waits.length];
    }),
  ) as Record<Group, number | null>;
  const meanWaitMs = Object.fromEntries(GROUPS.map((g) => [g, meanWaitMsUnrounded[g] === null ? null : roundByRule(WHOLE_MS_ROUNDING, meanWaitMsUnrounded[g])])) as Record<Group, number | null>;
  return { ok: problems.length === 0, problems, first, meanWaitMs, meanWaitMsUnrounded, turns: lines.length, sessions: sessions.size };
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) out.set(key(item), [...(out.get(key(item)) ?? []), item]);
  return out;
}

/** The problems of a check in one line: the first few named, the rest counted. */
export function describeBlockProblems(problems: readonly string[]): string {
  const shown = problems.slice(0, MAX_NAMED_PROBLEMS).join('; ');
  return problems.length > MAX_NAMED_PROBLEMS ? `${shown}; and ${problems.length - MAX_NAMED_PROBLEMS} more` : shown;
}
