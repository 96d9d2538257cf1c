// A block's lockstep (controller/lockstep-block.ts) and the check of its record
// (oracle/block-turns.ts), issue 31 item 1. Three members run simulated wakes with seeded random
// delays on real timers; the test keeps its own clock readings of every grant, release and wake end,
// independent of the block's record, and holds them to the rules: within a wake the turns go in the
// order drawn from the seed, no more at once than the slots; no turn of wake k + 1 before every
// member ended wake k; a member gone or ahead is passed over, never waited for. The record the
// block writes passes the oracle's check; forged records (a swapped order, an overlap, a turn
// before the barrier, a false passed_over, a scheduler without lockstep) are caught.
import { describe, expect, test } from 'vitest';
import { blockTurnOrder, START_TURN_INDEX } from '../../design/block-turn-order.js';
import { seededRandom } from '../../design/seeded-random.js';
import { LockstepBlock, type BlockSeat, type TurnRecord } from '../../controller/lockstep-block.js';
import { BlockTurnLine, checkBlockTurns } from '../../oracle/block-turns.js';
import { replicateSeed } from '../../study-contract/study-replicates.js';
import { GROUPS, type Group } from '../../design/groups.js';

const STUDY_SEED = 'lockstep-test';
const REPLICATE = 2;
const SEED = replicateSeed(STUDY_SEED, REPLICATE);
const SESSION = '2026-12-05T00:00:00.000Z';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Mark {
  readonly member: Group;
  readonly index: number;
  readonly what: 'granted' | 'released' | 'ended';
  readonly atMs: number;
}

interface Simulation {
  readonly records: TurnRecord[];
  readonly marks: Mark[];
  readonly block: LockstepBlock;
}

interface MemberPlan {
  /** First wake index it runs (a resumed member starts further on); default 0. */
  readonly from?: number;
  /** It leaves before this wake index (stopped); default never. */
  readonly leaveAt?: number;
}

async function simulate(slots: number, wakes: number, plans: Partial<Record<Group, MemberPlan>> = {}, seed = 'delays'): Promise<Simulation> {
  const records: TurnRecord[] = [];
  const marks: Mark[] = [];
  const block = new LockstepBlock({ members: GROUPS, orderOf: (k) => blockTurnOrder(SEED, k, GROUPS), slots, onTurn: (r) => records.push(r) });
  const random = seededRandom(seed);
  const mark = (member: Group, index: number, what: Mark['what']): void => {
    marks.push({ member, index, what, atMs: performance.now() });
  };
  const member = async (g: Group, seat: BlockSeat): Promise<void> => {
    const plan = plans[g] ?? {};
    const signal = new AbortController().signal;
    try {
      const start = await seat.takeTurn(START_TURN_INDEX, 'start', signal);
      mark(g, START_TURN_INDEX, 'granted');
      await sleep(random.intBetween(0, 3));
      start!.release();
      mark(g, START_TURN_INDEX, 'released');
      for (let k = plan.from ?? 0; k < wakes; k += 1) {
        if (plan.leaveAt !== undefined && k >= plan.leaveAt) return;
        // The controller's steps before the runtime's part (inject, deliver, WakeStarted).
        await sleep(random.intBetween(0, 2));
        const turn = await seat.takeTurn(k, `wake-${k + 1}`, signal);
        mark(g, k, 'granted');
        await sleep(random.intBetween(1, 4));
        mark(g, k, 'released');
        turn!.release();
        await sleep(random.intBetween(0, 2));
        mark(g, k, 'ended');
        seat.wakeEnded(k);
      }
    } finally {
      seat.leave();
    }
  };
  await Promise.all(GROUPS.map((g) => member(g, block.seat(g))));
  return { records, marks, block };
}

function linesOf(records: readonly TurnRecord[], session = SESSION): BlockTurnLine[] {
  return records.map(({ member, ...rest }) => ({ replicate: REPLICATE, session, group: member as Group, ...rest, order: rest.order as Group[], passed_over: rest.passed_over as Group[] }));
}

const at = (marks: readonly Mark[], member: Group, index: number, what: Mark['what']): number | undefined => marks.find((m) => m.member === member && m.index === index && m.what === what)?.atMs;

/** The test's own view of the rules, from its own clock readings. */
function rulesBroken(marks: readonly Mark[], slots: number): string[] {
  const out: string[] = [];
  const indices = [...new Set(marks.map((m) => m.index))].sort((a, b) => a - b);
  for (const k of indices) {
    const granted = marks.filter((m) => m.index === k && m.what === 'granted').sort((a, b) => a.atMs - b.atMs);
    const drawn = blockTurnOrder(SEED, k, GROUPS).filter((g) => granted.some((m) => m.member === g));
    // With one slot each grant waits for a release, so the order is visible from outside; with more,
    // grants made in one tick reach their waiters in the order they began to wait (the record's check holds those).
    if (slots === 1 && granted.map((m) => m.member).join() !== drawn.join()) out.push(`wake ${k}: granted ${granted.map((m) => m.member).join()} against the drawn ${drawn.join()}`);
    for (const g of granted) {
      const busy = granted.filter((o) => o.atMs <= g.atMs && (at(marks, o.member, k, 'released') ?? Infinity) > g.atMs).length;
      if (busy > slots) out.push(`wake ${k}: ${g.member} granted while ${busy - 1} turn(s) held`);
    }
    if (k <= 0) continue;
    for (const g of granted) {
      const lastEnded = Math.max(...marks.filter((m) => m.index === k - 1 && m.what === 'ended').map((m) => m.atMs));
      if (g.atMs < lastEnded) out.push(`wake ${k}: ${g.member} granted before wake ${k - 1} ended everywhere`);
    }
  }
  return out;
}

describe('a block in lockstep', () => {
  test('one slot: turns one after another in the drawn order, wake by wake; its record passes the check', async () => {
    const { records, marks } = await simulate(1, 8);
    expect(rulesBroken(marks, 1)).toEqual([]);
    expect(records).toHaveLength(GROUPS.length * 9);
    const check = checkBlockTurns(STUDY_SEED, REPLICATE, linesOf(records));
    expect(check.problems).toEqual([]);
    expect(check.ok).toBe(true);
    // Who went first is the draw's, and the record counts it per group.
    const firsts = GROUPS.map((g) => [...Array(9).keys()].filter((i) => blockTurnOrder(SEED, i - 1, GROUPS)[0] === g).length);
    expect(GROUPS.map((g) => check.first[g])).toEqual(firsts);
    expect(records.filter((r) => r.position > 1).every((r) => r.waited_ms >= 0)).toBe(true);
  });

  test('three slots: the members of a wake run at once, and the barrier still holds', async () => {
    const { records, marks } = await simulate(3, 8);
    expect(rulesBroken(marks, 3)).toEqual([]);
    // At least one wake had two turns held together (with one slot none may: the test above).
    const overlapped = [...Array(8).keys()].some((k) => {
      const g = marks.filter((m) => m.index === k && m.what === 'granted');
      return g.some((a) => g.some((b) => a !== b && b.atMs >= a.atMs && b.atMs < (at(marks, a.member, k, 'released') ?? 0)));
    });
    expect(overlapped).toBe(true);
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, linesOf(records)).problems).toEqual([]);
  });

  test('a member that stops is passed over from then on; the others go on in order', async () => {
    const { records, marks } = await simulate(1, 8, { B: { leaveAt: 3 } });
    expect(rulesBroken(marks, 1)).toEqual([]);
    expect(records.filter((r) => r.member === 'B').map((r) => r.wake_index)).toEqual([START_TURN_INDEX, 0, 1, 2]);
    const later = records.filter((r) => r.wake_index >= 3 && r.member !== 'B');
    expect(later).toHaveLength(2 * 5);
    for (const r of later) expect(r.passed_over).toEqual(r.order.slice(0, r.order.indexOf(r.member)).includes('B') ? ['B'] : []);
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, linesOf(records)).problems).toEqual([]);
  });

  test('a member resumed further on waits at the barrier until the others caught up', async () => {
    const { records, marks } = await simulate(1, 8, { C: { from: 5 } });
    expect(rulesBroken(marks, 1)).toEqual([]);
    const cFirst = at(marks, 'C', 5, 'granted')!;
    for (const g of ['A', 'B'] as const) expect(cFirst).toBeGreaterThanOrEqual(at(marks, g, 4, 'ended')!);
    // Before wake 5, C was ahead: passed over where the draw put it first.
    const early = records.filter((r) => r.wake_index >= 0 && r.wake_index < 5);
    for (const r of early) expect(r.passed_over.includes('C')).toBe(r.order.indexOf('C') < r.order.indexOf(r.member));
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, linesOf(records)).problems).toEqual([]);
  });

  test('a stop while waiting: no turn (null), and the member that leaves holds nobody back', async () => {
    const records: TurnRecord[] = [];
    const block = new LockstepBlock({ members: GROUPS, orderOf: (k) => blockTurnOrder(SEED, k, GROUPS), slots: 1, onTurn: (r) => records.push(r) });
    const [first, second, third] = blockTurnOrder(SEED, 0, GROUPS) as [Group, Group, Group];
    const stop = new AbortController();
    for (const g of GROUPS) block.seat(g).wakeEnded(START_TURN_INDEX);
    const held = await block.seat(first).takeTurn(0, 'wake-1', new AbortController().signal);
    const waiting = block.seat(second).takeTurn(0, 'wake-1', stop.signal);
    stop.abort('operator');
    expect(await waiting).toBeNull();
    block.seat(second).leave();
    held!.release();
    const thirdTurn = await block.seat(third).takeTurn(0, 'wake-1', new AbortController().signal);
    thirdTurn!.release();
    expect(records.map((r) => `${r.member}:${r.passed_over.join('')}`)).toEqual([`${first}:`, `${third}:${second}`]);
  });

  test('misuse is a bug said as such: a second ask while holding, a turn backwards, a member not of the block', async () => {
    const block = new LockstepBlock({ members: GROUPS, orderOf: (k) => blockTurnOrder(SEED, k, GROUPS), slots: 3, onTurn: () => undefined });
    const seat = block.seat('A');
    const turn = await seat.takeTurn(START_TURN_INDEX, 'start', new AbortController().signal);
    await expect(seat.takeTurn(0, 'wake-1', new AbortController().signal)).rejects.toThrow(/while it holds one/);
    turn!.release();
    await expect(seat.takeTurn(START_TURN_INDEX, 'start', new AbortController().signal)).rejects.toThrow(/turns only go forward/);
    expect(() => block.seat('D')).toThrow(/not a member/);
    expect(() => new LockstepBlock({ members: GROUPS, orderOf: () => GROUPS, slots: 0, onTurn: () => undefined })).toThrow(/slots/);
  });
});

describe("the check of a block's record (forged cases)", () => {
  let honest: BlockTurnLine[];
  const fresh = async (): Promise<BlockTurnLine[]> => {
    honest ??= linesOf((await simulate(1, 6)).records);
    return honest.map((l) => ({ ...l, order: [...l.order], passed_over: [...l.passed_over] }));
  };

  test('a recorded order that is not the drawn one', async () => {
    const lines = await fresh();
    const l = lines.find((x) => x.wake_index === 2)!;
    l.order = [...l.order].reverse();
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, lines).problems.join('\n')).toMatch(/recorded order .* is not the order drawn from the seed/);
  });

  test('a member recorded where the order does not put it', async () => {
    const lines = await fresh();
    const l = lines.find((x) => x.wake_index === 1 && x.position === 1)!;
    l.position = 2;
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, lines).problems.join('\n')).toMatch(/recorded at position 2/);
  });

  /** Wake index 3's second turn claims to have started when the first did (by `clock`), and to last as long. */
  const forgeOverlap = (lines: BlockTurnLine[], clock: 'asked_session_ms' | 'asked_at'): void => {
    const wake = lines.filter((x) => x.wake_index === 3).sort((a, b) => a.position - b.position);
    if (clock === 'asked_at') wake[1]!.asked_at = wake[0]!.asked_at;
    else wake[1]!.asked_session_ms = wake[0]!.asked_session_ms;
    wake[1]!.waited_ms = wake[0]!.waited_ms;
    wake[1]!.held_ms = Math.max(wake[1]!.held_ms, wake[0]!.held_ms, 20);
    wake[0]!.held_ms = Math.max(wake[0]!.held_ms, 20);
  };

  test('two turns held at once with one slot', async () => {
    const lines = await fresh();
    forgeOverlap(lines, 'asked_session_ms');
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, lines).problems.join('\n')).toMatch(/over the block's 1 slot/);
  });

  test("a turn of the next wake before the block's turns of this wake ended", async () => {
    const lines = await fresh();
    const next = lines.find((x) => x.wake_index === 4 && x.position === 1)!;
    const before = lines.filter((x) => x.wake_index === 3);
    next.asked_session_ms = Math.min(...before.map((x) => x.asked_session_ms!));
    next.waited_ms = 0;
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, lines).problems.join('\n')).toMatch(/before the block's turns at wake index 3 had ended/);
  });

  test('a member said passed over that took its turn', async () => {
    const lines = await fresh();
    const l = lines.find((x) => x.wake_index === 2 && x.position === 3)!;
    l.passed_over = [l.order[0]!];
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, lines).problems.join('\n')).toMatch(/says it passed over/);
  });

  test('a scheduler without lockstep (every member at its own pace, in canonical order) is caught', async () => {
    // Each member runs its wakes back to back, A then B then C: what the study did before blocks.
    const lines: BlockTurnLine[] = [];
    let t = Date.parse(SESSION);
    for (const g of GROUPS) {
      for (let k = 0; k < 6; k += 1) {
        lines.push({ replicate: REPLICATE, session: SESSION, group: g, wake_index: k, wake_id: `wake-${k + 1}`, order: [...GROUPS], position: GROUPS.indexOf(g) + 1, passed_over: [], slots: 1, asked_at: new Date(t).toISOString(), asked_session_ms: t - Date.parse(SESSION), waited_ms: 0, held_ms: 10 });
        t += 20;
      }
    }
    const check = checkBlockTurns(STUDY_SEED, REPLICATE, lines);
    expect(check.ok).toBe(false);
    expect(check.problems.join('\n')).toMatch(/before the block's turns at wake index/);
  });

  test('a wall clock slewed against the monotonic one changes nothing: the checks read the session clock, not asked_at', async () => {
    const lines = await fresh();
    // Time sync slews the wall clock: 40 ms per turn recorded, more than the checks' slack, running backwards.
    lines.forEach((l, i) => {
      l.asked_at = new Date(Date.parse(l.asked_at) - 40 * i).toISOString();
    });
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, lines).problems).toEqual([]);
  });

  test('a record written before the session clock (no asked_session_ms) reads and is checked by its wall clock, as then; a forged overlap there is still caught', async () => {
    const lines = await fresh();
    // Wall times that agree with the session clock, then the session clock dropped.
    const origin = Date.parse(SESSION);
    const old = lines.map(({ asked_session_ms, ...rest }) => ({ ...rest, asked_at: new Date(origin + asked_session_ms!).toISOString() }));
    expect(old.every((l) => BlockTurnLine.safeParse(l).success)).toBe(true);
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, old).problems).toEqual([]);
    forgeOverlap(old, 'asked_at');
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, old).problems.join('\n')).toMatch(/over the block's 1 slot/);
  });

  test('turns of separate sessions (a stop, then a resume) are held to the rules within each session only', async () => {
    const lines = await fresh();
    // B's last wakes were taken an hour later, in a resumed session of its own.
    const later = lines.filter((x) => x.group === 'B' && x.wake_index >= 4);
    for (const l of later) {
      l.session = '2026-12-05T01:00:00.000Z';
      l.asked_at = new Date(Date.parse(l.asked_at) + 3_600_000).toISOString();
    }
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, lines).problems).toEqual([]);
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, lines).sessions).toBe(2);
  });

  test('a block stopped and resumed starts its runtimes again: a start turn in each session passes; a wake taken in two sessions, or twice in one, is caught', async () => {
    const RESUMED = '2026-12-05T01:00:00.000Z';
    const laterBy = (l: BlockTurnLine, ms: number): BlockTurnLine => ({ ...l, session: RESUMED, asked_at: new Date(Date.parse(l.asked_at) + ms).toISOString() });
    const lines = await fresh();
    // Stopped after wake index 3; the resumed session starts every runtime again (START), then wakes 4 and 5.
    const resumed = [...lines.filter((x) => x.wake_index === START_TURN_INDEX), ...lines.filter((x) => x.wake_index >= 4)].map((l) => laterBy(l, 3_600_000));
    const honestResume = [...lines.filter((x) => x.wake_index <= 3), ...resumed];
    const check = checkBlockTurns(STUDY_SEED, REPLICATE, honestResume);
    expect(check.problems).toEqual([]);
    expect(check.sessions).toBe(2);
    // A wake run again in the resumed session (wake index 3 of A, as if a wake were run twice).
    const again = lines.find((x) => x.wake_index === 3 && x.group === 'A')!;
    const twice = [...honestResume, laterBy(again, 3_600_000)];
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, twice).problems.join('\n')).toMatch(/wake index 3: A took a turn in 2 sessions .* a wake run twice/);
    // Two start turns of one member within one session.
    const start = lines.find((x) => x.wake_index === START_TURN_INDEX && x.group === 'B')!;
    expect(checkBlockTurns(STUDY_SEED, REPLICATE, [...lines, { ...start }]).problems.join('\n')).toMatch(/wake index -1: .*B.*B.* — a member took two turns at one wake/);
  });
});
