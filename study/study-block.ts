// One replicate's block as a study runs it (issue 31 item 1): the lockstep of its A, B and C
// (controller/lockstep-block.ts), their turns in the order drawn from the replicate's seed
// (design/block-turn-order.ts), as many at once as the model's declared slots allow
// (design/model-choice.ts blockSlotsOf), every turn appended to the study's record of the block
// (<study>/blocks/r<k>.jsonl, oracle/block-turns.ts) as it is released. The one-machine study
// (study-runner.ts) and a batch scheduler's block task (study/batch) both make theirs here.
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { LockstepBlock, type TurnRecord } from '../controller/lockstep-block.js';
import { blockTurnOrder } from '../design/block-turn-order.js';
import { blockSlotsOf, type ModelChoice } from '../design/model-choice.js';
import { blockRecordFile, BlockTurnLine } from '../oracle/block-turns.js';
import { replicateSeed } from '../study-contract/study-replicates.js';
import { GROUPS } from '../design/groups.js';
import { adapterOf } from '../runtime/model-adapters/adapter-list.js';

export interface StudyBlockInput {
  readonly studyDir: string;
  /** The study's seed (replicate k's instances share replicateSeed(seed, k)). */
  readonly seed: string;
  readonly replicate: number;
  readonly model: ModelChoice;
}

/** The block of one replicate, its record kept in the study folder; one session per call (a run of the block). */
export function studyBlock(input: StudyBlockInput): LockstepBlock {
  const session = new Date().toISOString();
  const file = blockRecordFile(input.studyDir, input.replicate);
  mkdirSync(path.dirname(file), { recursive: true });
  return new LockstepBlock({
    members: GROUPS,
    orderOf: (wakeIndex) => blockTurnOrder(replicateSeed(input.seed, input.replicate), wakeIndex, GROUPS),
    slots: blockSlotsOf(input.model, GROUPS.length),
    onTurn: (turn) => appendTurn(file, input.replicate, session, turn),
  });
}

/** One turn into the block's record as it is released (appended whole: a line of a few hundred bytes). */
function appendTurn(file: string, replicate: number, session: string, turn: TurnRecord): void {
  const { member, ...rest } = turn;
  const line = BlockTurnLine.parse({ replicate, session, group: member, ...rest });
  appendFileSync(file, `${JSON.stringify(line)}\n`);
}

/** What the screen says of one block: its members side by side, and how many of their model calls go at once. */
export function blockLine(model: ModelChoice): string {
  const slots = blockSlotsOf(model, GROUPS.length);
  const calls = slots >= GROUPS.length ? `their model calls at once (${adapterOf(model.adapter).callsModel ? `${slots} parallel slots declared` : 'no model server to share'})` : `at most ${slots} model call(s) at once, in an order drawn from the replicate's seed`;
  return `each replicate's A, B and C side by side, wakes in lockstep, ${calls}`;
}

/** What the screen says of a study's blocks before they run. */
export function blocksLine(model: ModelChoice, blocksAtOnce: number): string {
  return `blocks: ${blockLine(model)}; ${blocksAtOnce} block(s) at once`;
}
