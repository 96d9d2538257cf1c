// docs/oracle.md as a specification (issue 32 item 1): every list and pattern a scorer applies is
// written in the doc once, and must equal the constant the code applies — item for item, and
// for patterns character for character with the flags. The check functions are forged here: a
// doc with one word more, one character changed, a list missing or an "e.g." where a scorer
// decides must each be caught.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HARD_FAILURE_IDS } from '../../design/prereg.js';
import {
  CHECKPOINT_FIELDS,
  GOAL_STATUS_WORD_SEPARATOR,
  ID_CHARS,
  NEGATION,
  NEGATION_SUFFIXES_UNLESS_YET,
  NEGATION_WORDS,
  NEGATION_WORDS_UNLESS_YET,
  NOTHING_LEFT,
  tokenPattern,
  WAIT_MARK,
} from '../../oracle/checkpoint-match.js';
import { DIMENSIONS, PLAN_DONE_ADVERBS, PLAN_DONE_AUXILIARIES, PLAN_DONE_SUBJECTS, PLAN_DONE_VERBS, PLAN_STATED_AS_DONE } from '../../oracle/continuity-score.js';
import { CONTRADICTING_KINDS } from '../../oracle/fact-check.js';
import { CORRECTION_MARK, CORRECTION_MARKERS, figurePattern } from '../../oracle/refuted-figure.js';
import { REPO } from '../support/controller-run.js';
import { docSection, listMismatch, patternMismatch, undecidedPhrases } from './oracle-doc-reader.js';

const DOC = readFileSync(path.join(REPO, 'docs', 'oracle.md'), 'utf8');
const LISTS_SECTION = 'Every list and pattern';

/** Each list of the doc's last section, with the constant it must equal. */
const LISTS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['ID_CHARS', [ID_CHARS]],
  ['NEGATION_WORDS', NEGATION_WORDS],
  ['NEGATION_WORDS_UNLESS_YET', NEGATION_WORDS_UNLESS_YET],
  ['NEGATION_SUFFIXES_UNLESS_YET', NEGATION_SUFFIXES_UNLESS_YET],
  ['PLAN_DONE_SUBJECTS', PLAN_DONE_SUBJECTS],
  ['PLAN_DONE_AUXILIARIES', PLAN_DONE_AUXILIARIES],
  ['PLAN_DONE_ADVERBS', PLAN_DONE_ADVERBS],
  ['PLAN_DONE_VERBS', PLAN_DONE_VERBS],
  ['CORRECTION_MARKERS', CORRECTION_MARKERS],
  ['CHECKPOINT_FIELDS', CHECKPOINT_FIELDS],
  ['DIMENSIONS', DIMENSIONS],
  ['HARD_FAILURE_IDS', HARD_FAILURE_IDS],
  ['CONTRADICTING_KINDS', CONTRADICTING_KINDS],
];

/** Each pattern of the doc's last section, with the regexes the code builds. */
const PATTERNS: ReadonlyArray<readonly [string, readonly RegExp[]]> = [
  ['NEGATION', [NEGATION]],
  ['PLAN_STATED_AS_DONE', [PLAN_STATED_AS_DONE]],
  ['CORRECTION_MARK', [CORRECTION_MARK]],
  ['TOKEN', [tokenPattern('dataset-d3')]],
  ['WAIT_MARK', [WAIT_MARK]],
  ['NOTHING_LEFT', [NOTHING_LEFT]],
  ['GOAL_STATUS_WORD_SEPARATOR', [GOAL_STATUS_WORD_SEPARATOR]],
  ['FIGURE', [figurePattern('61 %'), figurePattern('46 %'), figurePattern('2,870')]],
];

/** The sections a scorer decides by: no "…" and no "e.g." in them (the others describe commands and reports). */
const SCORING_SECTIONS = [
  'Counting wakes',
  'The oracle (spec §3.3, §9.4)',
  'Matching a recorded checkpoint (M0–M6)',
  'The Continuity Score (spec §8.1)',
  'Numbers',
  'Which statistics use which scores',
  'Expansion (spec §6.2) and the verdict (spec §8.2, §17.3)',
  'Hard failures (spec §8.4)',
  LISTS_SECTION,
  'A worked example',
] as const;

describe('docs/oracle.md holds every list and pattern the oracle applies', () => {
  const section = docSection(DOC, LISTS_SECTION);

  it.each(LISTS)('the list %s equals the constant', (name, expected) => {
    expect(listMismatch(section, name, expected)).toBeNull();
  });

  it.each(PATTERNS)('the pattern %s equals the one the code builds', (name, expected) => {
    expect(patternMismatch(section, name, expected)).toBeNull();
  });

  it('the scoring sections leave nothing open: no "…", no "e.g."', () => {
    for (const heading of SCORING_SECTIONS) expect(undecidedPhrases(docSection(DOC, heading)), heading).toEqual([]);
  });

  it('the text names each list where its rule is stated, so the reader is sent to the exact one', () => {
    const rules = SCORING_SECTIONS.filter((h) => h !== LISTS_SECTION).map((h) => docSection(DOC, h)).join('\n');
    for (const name of ['NEGATION_WORDS', 'CORRECTION_MARKERS', 'PLAN_DONE_AUXILIARIES', 'PLAN_DONE_ADVERBS', 'PLAN_DONE_VERBS', 'ID_CHARS', 'WAIT_MARK', 'NOTHING_LEFT']) expect(rules).toContain(`\`${name}\``);
  });
});

describe('the checks catch a doc that drifted (forged)', () => {
  const section = docSection(DOC, LISTS_SECTION);

  it('a negation list with one word more', () => {
    const forged = section.replace('`no longer`, ', '`no longer`, `hardly`, ');
    expect(forged).not.toBe(section);
    expect(listMismatch(forged, 'NEGATION_WORDS', NEGATION_WORDS)).toMatch(/NEGATION_WORDS.*hardly/);
  });

  it('a correction-marker list with "correct" in it, and one without "published as"', () => {
    const added = section.replace('`corrected`, ', '`correct`, `corrected`, ');
    expect(listMismatch(added, 'CORRECTION_MARKERS', CORRECTION_MARKERS)).not.toBeNull();
    const dropped = section.replace(', `published as`', '');
    expect(dropped).not.toBe(section);
    expect(listMismatch(dropped, 'CORRECTION_MARKERS', CORRECTION_MARKERS)).not.toBeNull();
  });

  it('the same items in another order (the order of DIMENSIONS is the order of a sum)', () => {
    const swapped = section.replace('`state_recovery`, `re_planning`', '`re_planning`, `state_recovery`');
    expect(swapped).not.toBe(section);
    expect(listMismatch(swapped, 'DIMENSIONS', DIMENSIONS)).not.toBeNull();
  });

  it('a list the doc does not hold, or holds twice', () => {
    expect(listMismatch(section, 'NO_SUCH_LIST', ['x'])).toMatch(/not found/);
    const twice = `${section}\n- **Again** (\`PLAN_DONE_VERBS\`, \`oracle/continuity-score.ts\`): \`done\`.\n`;
    expect(listMismatch(twice, 'PLAN_DONE_VERBS', PLAN_DONE_VERBS)).toMatch(/2 times/);
  });

  it('a pattern one character off, a flag dropped, or a pattern missing', () => {
    const oneOff = section.replace('(?:i|we)', '(?:i|we|they)');
    expect(oneOff).not.toBe(section);
    expect(patternMismatch(oneOff, 'PLAN_STATED_AS_DONE', [PLAN_STATED_AS_DONE])).not.toBeNull();
    const noFlag = section.replace('/wait/i', '/wait/');
    expect(noFlag).not.toBe(section);
    expect(patternMismatch(noFlag, 'WAIT_MARK', [WAIT_MARK])).not.toBeNull();
    expect(patternMismatch(section, 'NO_SUCH_PATTERN', [WAIT_MARK])).toMatch(/not found/);
  });

  it('an "e.g." or a "…" where a scorer decides', () => {
    const matching = docSection(DOC, 'Matching a recorded checkpoint (M0–M6)');
    expect(undecidedPhrases(`${matching}\nthe negations (e.g. never)`)).toEqual(['e.g.']);
    expect(undecidedPhrases(`${matching}\n"I have done/completed/…"`)).toEqual(['…']);
  });
});
