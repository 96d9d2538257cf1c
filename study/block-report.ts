// The report's blocks (report 2.1.0, issue 31 items 1 and 2): per replicate, its block's record
// held to the drawn order (oracle/block-turns.ts) and its groups' failed calls held to the
// pre-registered load-confound tolerance (oracle/load-confound.ts), read from the study folder
// alone, so a study and its --recompute build the same. What follows for the verdict: a record
// that breaks the lockstep's rules voids the batch (a fairness check); a confounded block's
// instances count as instances without usable data.
import { checkBlockTurns, describeBlockProblems, readBlockRecord } from '../oracle/block-turns.js';
import { checkLoadConfound, NO_TOLERANCE_DETAIL, type BlockLoad, type LoadInstance } from '../oracle/load-confound.js';
import { GROUPS, type Group } from '../design/groups.js';
import { type BlockSummary, type FairnessCheck } from '../oracle/study-report.js';
import type { LoadConfoundTolerance } from '../design/prereg.js';
import type { ByFailure } from '../schema/usable-data.js';

export interface BlockReport {
  readonly blocks: BlockSummary[];
  /** The fairness check of the blocks' records (voiding when not ok). */
  readonly turnsCheck: FairnessCheck;
  /** The load-confound check, as a line of the fairness section (not voiding: a confounded block is no data). */
  readonly loadCheck: FairnessCheck;
  /** Replicates whose block is confounded, with why. */
  readonly confounded: ReadonlyMap<number, string>;
  readonly notes: readonly string[];
}

const perGroup = <T>(value: (g: Group) => T): Record<Group, T> => Object.fromEntries(GROUPS.map((g) => [g, value(g)])) as Record<Group, T>;

function turnsOf(studyDir: string, studySeed: string, replicate: number): { summary: BlockSummary['turns']; problem: string | null } {
  const record = readBlockRecord(studyDir, replicate);
  if (record.kind !== 'read') {
    const why = record.kind === 'missing' ? `replicate ${replicate}: no record of its block (blocks/r${replicate}.jsonl is missing)` : `replicate ${replicate}: ${record.detail}`;
    return { summary: { recorded: 0, sessions: 0, ok: false, detail: why, first: perGroup(() => 0), mean_wait_ms: perGroup(() => null), mean_wait_ms_unrounded: perGroup(() => null) }, problem: why };
  }
  const check = checkBlockTurns(studySeed, replicate, record.lines);
  const detail = check.ok
    ? `replicate ${replicate}: ${check.turns} turn(s) in ${check.sessions} session(s), each in the order drawn from the seed; first at a wake: ${GROUPS.map((g) => `${g} ${check.first[g]}`).join(', ')}`
    : `replicate ${replicate}: ${describeBlockProblems(check.problems)}`;
  return { summary: { recorded: check.turns, sessions: check.sessions, ok: check.ok, detail, first: check.first, mean_wait_ms: check.meanWaitMs, mean_wait_ms_unrounded: check.meanWaitMsUnrounded }, problem: check.ok ? null : detail };
}

function loadOf(load: BlockLoad | undefined, byGroup: Record<Group, ByFailure | null>): BlockSummary['load'] {
  if (load === undefined) return { checked: false, confounded: false, by_group: byGroup, over: [], detail: NO_TOLERANCE_DETAIL };
  return { checked: true, confounded: load.confounded, by_group: load.by_group, over: [...load.over], detail: load.detail };
}

/** The blocks of the replicates that have instances, their two checks, and what follows from them. */
export function buildBlockReport(studyDir: string, studySeed: string, instances: readonly LoadInstance[], tolerance: LoadConfoundTolerance | null): BlockReport {
  const replicates = [...new Set(instances.map((i) => i.replicate))].sort((a, b) => a - b);
  const loads = checkLoadConfound(instances, tolerance);
  const blocks: BlockSummary[] = [];
  const problems: string[] = [];
  const notes: string[] = [];
  const confounded = new Map<number, string>();
  for (const replicate of replicates) {
    const { summary, problem } = turnsOf(studyDir, studySeed, replicate);
    if (problem !== null) problems.push(problem);
    if (summary.sessions > 1) notes.push(`block r${replicate} ran in ${summary.sessions} sessions (stopped and resumed): after a stop its members ran side by side only with the members resumed with them`);
    const load = loads?.find((l) => l.replicate === replicate);
    const byGroup = perGroup((g) => instances.find((i) => i.group === g && i.replicate === replicate)?.byFailure ?? null);
    if (load?.confounded) confounded.set(replicate, load.detail);
    blocks.push({ replicate, turns: summary, load: loadOf(load, byGroup) });
  }
  const turnsCheck: FairnessCheck = {
    check: 'block_turns_as_drawn',
    ok: problems.length === 0,
    detail: problems.length === 0 ? `every block's record: its members' turns at the model in the order drawn from the replicate's seed, within the block's slots, wake by wake in lockstep (${replicates.length} block(s))` : problems.join('; '),
  };
  const loadCheck: FairnessCheck = {
    check: 'load_confound (not voiding: a confounded block counts as no usable data)',
    ok: true,
    detail: loads === null ? NO_TOLERANCE_DETAIL : confounded.size === 0 ? `no block's groups differ in failed calls beyond the pre-registered tolerance (${loads.length} block(s))` : [...confounded.values()].join('; '),
  };
  return { blocks, turnsCheck, loadCheck, confounded, notes };
}
