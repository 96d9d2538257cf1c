// How a recorded ContinuityCheckpoint field is compared with the oracle's (docs/oracle.md,
// "Matching"). The fields are short free text a model writes, so equality would score
// wording; these rules score whether the field names the right thing: the right goal id
// exactly, the right status word, the right task or thread as a whole token.
import type { ExpectedCheckpoint } from './expected-checkpoints.js';

export const CHECKPOINT_FIELDS = ['current_goal_id', 'goal_status', 'attention_target', 'waiting_condition', 'next_action'] as const;
export type CheckpointField = (typeof CHECKPOINT_FIELDS)[number];

export interface RecordedCheckpoint {
  readonly current_goal_id: string | null;
  readonly goal_status: string | null;
  readonly attention_target: string | null;
  readonly waiting_condition: string | null;
  readonly next_action: string | null;
}

/** The characters of an id, as a regex character class body: a token is bounded by anything else (M3–M5, docs/oracle.md). */
export const ID_CHARS = 'A-Za-z0-9._:-';
const ID_CHAR = ID_CHARS;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * `id` occurs in `text` as a whole token: not inside a longer id (goal-x does not match
 * goal-x-v2), while a sentence's "." or ":" right after it ("task-x: read …") still ends it.
 */
export function namesToken(text: string | null, id: string): boolean {
  if (text === null) return false;
  return tokenPattern(id).test(text);
}

/** The pattern namesToken tests for `id` (docs/oracle.md shows it for one id). */
export function tokenPattern(id: string): RegExp {
  return new RegExp(`(?:^|[^${ID_CHAR}])${escapeRegExp(id)}(?=$|[^${ID_CHAR}]|[.:](?:$|\\s))`, 'i');
}

/** M5: a next action waiting in the thread contains this (anywhere: "waiting", "awaiting" count). */
export const WAIT_MARK = /wait/i;
/** M5: a next action saying nothing is left to do, when none is expected. */
export const NOTHING_LEFT = /^\s*none\b/i;
/** M2: what separates words of goal_status, after lowercasing; the first word is compared. */
export const GOAL_STATUS_WORD_SEPARATOR = /[^a-z]+/;

function blank(text: string | null): boolean {
  return text === null || text.trim() === '';
}

/** Negations that deny what a field names (M6), whole words, case-insensitive; docs/oracle.md lists them (test/oracle/oracle-doc.test.ts holds the two together). */
export const NEGATION_WORDS = ['no longer', 'never', 'no', 'without', 'stopped', 'cancel', 'canceled', 'cancelled'] as const;
/** Negations that are no denial when the next word is "yet" ("not yet received"): "not" as a word, "n't" at a word's end. */
export const NEGATION_WORDS_UNLESS_YET = ['not'] as const;
export const NEGATION_SUFFIXES_UNLESS_YET = ["n't"] as const;

/**
 * A field that denies what it names ("no longer waiting for dataset-d3") does not name it (M6).
 * "not yet" is no denial: "reply in dataset-d3 not yet received" still names the wait.
 */
export const NEGATION = new RegExp(
  `\\b(?:${NEGATION_WORDS.map(escapeRegExp).join('|')})\\b|${NEGATION_WORDS_UNLESS_YET.map((w) => `\\b${escapeRegExp(w)}\\b(?!\\s+yet\\b)`).join('|')}|${NEGATION_SUFFIXES_UNLESS_YET.map((w) => `${escapeRegExp(w)}\\b(?!\\s+yet\\b)`).join('|')}`,
  'i',
);

/**
 * `text` names `id` (a token, M3–M5), no other known id of the same kind (a list of every task
 * does not name the current one; naming the thread beside a task is fine), and no negation (M6).
 */
function namesOnly(text: string | null, id: string, knownIds: readonly string[], threadIds: readonly string[]): boolean {
  if (!namesToken(text, id) || NEGATION.test(text ?? '')) return false;
  const isThread = threadIds.includes(id);
  return knownIds.every((other) => other === id || threadIds.includes(other) !== isThread || !namesToken(text, other));
}

/**
 * M1–M6 of docs/oracle.md; `knownIds` are the scenario's task ids and the reviewer's thread,
 * `threadIds` which of them are threads (oracle.known_ids, oracle.known_thread_ids).
 */
export function fieldMatches(field: CheckpointField, expected: ExpectedCheckpoint, recorded: RecordedCheckpoint, knownIds: readonly string[] = [], threadIds: readonly string[] = []): boolean {
  switch (field) {
    case 'current_goal_id':
      // M1: exact id.
      return recorded.current_goal_id !== null && recorded.current_goal_id.trim() === expected.current_goal_id;
    case 'goal_status':
      // M2: the first word is the status ("submitted at 10:00", "**active**" count).
      return recorded.goal_status !== null && recorded.goal_status.toLowerCase().split(GOAL_STATUS_WORD_SEPARATOR).find((w) => w.length > 0) === expected.goal_status;
    case 'attention_target':
      // M3: the task named as a token; null exactly when nothing is left.
      return expected.attention_target === null ? blank(recorded.attention_target) : namesOnly(recorded.attention_target, expected.attention_target, knownIds, threadIds);
    case 'waiting_condition':
      // M4: the thread named as a token; null exactly when nothing is awaited.
      return expected.waiting_condition === null ? blank(recorded.waiting_condition) : namesOnly(recorded.waiting_condition, expected.waiting_condition, knownIds, threadIds);
    case 'next_action': {
      // M5: the task named; or "wait" and the thread; or none.
      const next = expected.next_action;
      const text = recorded.next_action;
      if (next.kind === 'none') return blank(text) || NOTHING_LEFT.test(text ?? '');
      if (next.kind === 'wait') return namesOnly(text, next.thread_id, knownIds, threadIds) && WAIT_MARK.test(text ?? '');
      return namesOnly(text, next.task_id, knownIds, threadIds);
    }
  }
}

export interface FieldComparison {
  readonly matches: Record<CheckpointField, boolean>;
  /** Σ weight of matching fields / Σ weights, in [0, 1]. */
  readonly value: number;
}

export function compareCheckpoint(expected: ExpectedCheckpoint, recorded: RecordedCheckpoint, weights: Record<CheckpointField, number>, knownIds: readonly string[] = [], threadIds: readonly string[] = []): FieldComparison {
  const matches = {} as Record<CheckpointField, boolean>;
  // M0: a checkpoint without a goal says nothing (e.g. the model's answer failed): every field
  // fails, so an empty checkpoint never earns the points of the fields that happen to be null.
  const empty = blank(recorded.current_goal_id);
  let got = 0;
  let total = 0;
  for (const field of CHECKPOINT_FIELDS) {
    matches[field] = !empty && fieldMatches(field, expected, recorded, knownIds, threadIds);
    total += weights[field];
    if (matches[field]) got += weights[field];
  }
  if (total <= 0) throw new Error('checkpoint field weights sum to 0: the pre-registration forbids that');
  return { matches, value: got / total };
}
