// A block's lockstep (issue 31 item 1; DESIGN §12 "Blocks under real load"): the instances of one
// replicate (A, B and C) run side by side against the same model server, and
//   - wake k of every member is ended before wake k + 1 of any member takes its turn (the barrier);
//   - within wake k the members take their turns at the model in the order drawn from the
//     replicate's seed (design/block-turn-order.ts), at most `slots` at a time: one after another
//     on a server with one slot, all at once where the model configuration declares a slot each.
// A turn covers the runtime's part of a wake (its model call, and a planned runtime crash's
// restart, whose start check is a model call too); turn START_TURN_INDEX covers each runtime's
// start. Every turn is reported when released (`onTurn`): the study keeps the record, and its
// report holds the recorded order to the drawn one.
//
// A member that never reaches a wake (sealed already, stopped, failed) must `leave`, and from then
// on holds nobody back; a member resumed further on (its first turn at a later wake) is ahead, and
// waits at the barrier until the others catch up. Nothing here writes: the instance's wake
// sequence asks for turns, the study says what becomes of them.
import { START_TURN_INDEX } from '../design/block-turn-order.js';
import { InternalError } from '../foundation/typed-error.js';

/** One turn as it went, for the block's record. */
export interface TurnRecord {
  readonly member: string;
  /** 0-based wake index; START_TURN_INDEX for the runtime's start. */
  readonly wake_index: number;
  /** The wake's id, or `start`. */
  readonly wake_id: string;
  /** The drawn order at this index, every member of the block. */
  readonly order: readonly string[];
  /** 1-based place of this member in `order`. */
  readonly position: number;
  /** Members before this one in `order` that took no turn at this index (gone, or ahead after a resume). */
  readonly passed_over: readonly string[];
  readonly slots: number;
  /** Wall-clock time the turn was asked for (ISO 8601), for people; the checks read the session clock below. */
  readonly asked_at: string;
  /**
   * When the turn was asked for on the block's monotonic clock: ms since the block began. The
   * checks of order, slots and barrier read this, never the wall clock: a wall clock slewed by
   * time sync against the monotonic one drifts tens of ms over a minute-long turn (a CI run saw
   * a turn "begin before" the barrier by more than the checks' slack).
   */
  readonly asked_session_ms: number;
  readonly waited_ms: number;
  readonly held_ms: number;
}

export interface BlockTurn {
  /** Ends the turn (idempotent): the next member in the order may go. */
  release(): void;
}

/** One member's side of the block, as its instance sees it. */
export interface BlockSeat {
  readonly member: string;
  /** Waits for this member's turn at `wakeIndex`; null when `signal` aborted first (no turn was taken). */
  takeTurn(wakeIndex: number, wakeId: string, signal: AbortSignal): Promise<BlockTurn | null>;
  /** This member's wake `wakeIndex` is ended in its store: the others may go on to the next one. */
  wakeEnded(wakeIndex: number): void;
  /** This member takes no more turns (sealed, stopped or failed); idempotent. */
  leave(): void;
}

export interface LockstepBlockOptions {
  /** The block's members in their canonical order (A, B, C). */
  readonly members: readonly string[];
  /** The drawn order at a wake index: every member once. */
  readonly orderOf: (wakeIndex: number) => readonly string[];
  /** How many turns may run at once (the model server's parallel slots), ≥ 1. */
  readonly slots: number;
  readonly onTurn: (record: TurnRecord) => void;
}

/** Before its first turn a member has ended no wake, not even the start. */
const NOTHING_ENDED = START_TURN_INDEX - 1;

interface Asking {
  readonly index: number;
  readonly wakeId: string;
  readonly askedAt: string;
  /** On the block's clock (ms since it began). */
  readonly askedMs: number;
  readonly grant: (turn: BlockTurn) => void;
}

interface MemberState {
  /** The highest wake index this member has ended. */
  ended: number;
  /** The highest wake index this member was granted a turn at. */
  taken: number;
  asking: Asking | null;
  holding: boolean;
  left: boolean;
}

/** A bug in how a block is used (a seat asking twice, a drawn order that is not the block): never a refusal of anybody's input. */
export class BlockLockstepError extends InternalError {
  override readonly name = 'BlockLockstepError';
}

export class LockstepBlock {
  private readonly state = new Map<string, MemberState>();
  private readonly orders = new Map<number, readonly string[]>();
  /** The block's monotonic clock starts here: every recorded time is ms since. */
  private readonly originMs = performance.now();

  constructor(private readonly options: LockstepBlockOptions) {
    if (!Number.isSafeInteger(options.slots) || options.slots < 1) throw new BlockLockstepError(`a block's slots are a whole number ≥ 1, got ${options.slots}`);
    if (new Set(options.members).size !== options.members.length || options.members.length === 0) throw new BlockLockstepError(`a block's members are distinct and at least one: ${options.members.join(', ')}`);
    for (const m of options.members) this.state.set(m, { ended: NOTHING_ENDED, taken: NOTHING_ENDED, asking: null, holding: false, left: false });
  }

  /** The seat of `member`; every member of the block must either take its turns through it or leave. */
  seat(member: string): BlockSeat {
    const s = this.stateOf(member);
    return {
      member,
      takeTurn: (wakeIndex, wakeId, signal) => this.takeTurn(member, s, wakeIndex, wakeId, signal),
      wakeEnded: (wakeIndex) => {
        s.ended = Math.max(s.ended, wakeIndex);
        this.pump();
      },
      leave: () => {
        s.left = true;
        s.holding = false;
        s.asking = null;
        this.pump();
      },
    };
  }

  private stateOf(member: string): MemberState {
    const s = this.state.get(member);
    if (!s) throw new BlockLockstepError(`${member} is not a member of this block (${this.options.members.join(', ')})`);
    return s;
  }

  private orderAt(wakeIndex: number): readonly string[] {
    let order = this.orders.get(wakeIndex);
    if (!order) {
      order = this.options.orderOf(wakeIndex);
      const sorted = [...order].sort();
      if (sorted.join('\u0000') !== [...this.options.members].sort().join('\u0000')) throw new BlockLockstepError(`the drawn order at wake index ${wakeIndex} (${order.join(', ')}) is not the block's members (${this.options.members.join(', ')})`);
      this.orders.set(wakeIndex, order);
    }
    return order;
  }

  private async takeTurn(member: string, s: MemberState, wakeIndex: number, wakeId: string, signal: AbortSignal): Promise<BlockTurn | null> {
    if (s.left) throw new BlockLockstepError(`${member} left the block and asked for a turn at ${wakeId}`);
    if (s.asking !== null || s.holding) throw new BlockLockstepError(`${member} asked for a turn at ${wakeId} while it ${s.holding ? 'holds one' : 'waits for one'}`);
    if (wakeIndex <= s.taken) throw new BlockLockstepError(`${member} asked for a turn at wake index ${wakeIndex} after one at ${s.taken}: turns only go forward`);
    if (signal.aborted) return null;
    // Asking for wake k says every earlier one is behind this member (a resume starts further on).
    s.ended = Math.max(s.ended, wakeIndex - 1);
    return new Promise<BlockTurn | null>((resolve) => {
      const onAbort = (): void => {
        if (s.asking?.index !== wakeIndex) return;
        s.asking = null;
        resolve(null);
        this.pump();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      s.asking = {
        index: wakeIndex,
        wakeId,
        askedAt: new Date().toISOString(),
        askedMs: performance.now() - this.originMs,
        grant: (turn) => {
          signal.removeEventListener('abort', onAbort);
          resolve(turn);
        },
      };
      this.pump();
    });
  }

  /** Grants every turn that may start now (bounded: each pass grants one or stops). */
  private pump(): void {
    for (let pass = 0; pass < this.options.members.length; pass += 1) {
      const next = this.options.members.find((m) => this.mayGo(m));
      if (next === undefined) return;
      this.grant(next, this.state.get(next)!);
    }
  }

  private mayGo(member: string): boolean {
    const s = this.state.get(member)!;
    if (s.asking === null || s.left) return false;
    const k = s.asking.index;
    const active = [...this.state.entries()].filter(([, o]) => !o.left);
    if (active.filter(([, o]) => o.holding).length >= this.options.slots) return false;
    // The barrier: every other member has ended the wake before this one.
    if (active.some(([m, o]) => m !== member && o.ended < k - 1)) return false;
    // The order: every member before this one has had its turn here, or takes none (gone, or ahead).
    const order = this.orderAt(k);
    return order.slice(0, order.indexOf(member)).every((p) => this.clearOf(p, k));
  }

  /** Whether `member` will not (or no longer) take a turn at wake index `k` before the others. */
  private clearOf(member: string, k: number): boolean {
    const p = this.state.get(member)!;
    return p.left || p.taken >= k || p.ended >= k;
  }

  private grant(member: string, s: MemberState): void {
    const asking = s.asking!;
    const k = asking.index;
    const order = this.orderAt(k);
    const passedOver = order.slice(0, order.indexOf(member)).filter((p) => this.state.get(p)!.taken !== k);
    s.asking = null;
    s.holding = true;
    s.taken = k;
    const grantedMs = performance.now() - this.originMs;
    let released = false;
    asking.grant({
      release: () => {
        if (released) return;
        released = true;
        if (s.holding) s.holding = false;
        // The start turn has no WakeEnded: its release ends it.
        if (k === START_TURN_INDEX) s.ended = Math.max(s.ended, k);
        this.options.onTurn({
          member,
          wake_index: k,
          wake_id: asking.wakeId,
          order,
          position: order.indexOf(member) + 1,
          passed_over: passedOver,
          slots: this.options.slots,
          asked_at: asking.askedAt,
          asked_session_ms: Math.round(asking.askedMs),
          waited_ms: Math.round(grantedMs - asking.askedMs),
          held_ms: Math.round(performance.now() - this.originMs - grantedMs),
        });
        this.pump();
      },
    });
  }
}

/** A seat that waits for nobody: an instance run on its own. */
export const NO_BLOCK: BlockSeat = {
  member: 'alone',
  takeTurn: (_wakeIndex, _wakeId, signal) => Promise.resolve(signal.aborted ? null : { release: () => undefined }),
  wakeEnded: () => undefined,
  leave: () => undefined,
};
