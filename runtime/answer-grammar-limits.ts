// The answer grammar's bounds and its refusal, and the characters a JSON string may hold: what
// the grammar builder (answer-grammar.ts) and its pattern reader (grammar-pattern.ts) share.
import { InternalError } from '../foundation/typed-error.js';

export const ANSWER_GRAMMAR_LIMITS = {
  /** Nesting of schema nodes; the answer schemas are ~8 deep. */
  maxDepth: 32,
  /** Distinct rules in one grammar. */
  maxRules: 2_000,
  /** Values of one enum (a wake's shown seqs are one enum). */
  maxEnumValues: 4_096,
  /**
   * The largest bounded repetition (maxLength, maxItems, a pattern's {m,n}). llama.cpp expands
   * x{m,n} into about n rules, so a huge bound costs memory in every grammar; the /2
   * protocol's largest is 2,000 (file content), /1's 32,768.
   */
  maxRepetition: 65_536,
  /**
   * llama.cpp refuses x{m,n} when n times the size of x reaches 2,000 ("number of rules that
   * are going to be repeated multiplied by the new repetition exceeds sane defaults"), so a
   * repetition from this count up is written as blocks of `repetitionBlock` (exact lengths).
   */
  repetitionSplit: 1_000,
  repetitionBlock: 100,
  /** Decimals a bounded `number` may have (a confidence needs two or three). */
  fractionDigits: 4,
  /** The grammar text itself. */
  maxGrammarChars: 1_000_000,
} as const;

/** A schema the grammar cannot enforce exactly: the message names the node and the keyword. */
export class AnswerGrammarError extends InternalError {
  override readonly name = 'AnswerGrammarError';
}

/** The characters a JSON string in the answer may hold, as inclusive code-point ranges (see the head comment). */
export const STRING_CHARS: readonly (readonly [number, number])[] = [
  [0x20, 0x21], // space and ! (0x22 is ")
  [0x23, 0x5b], // # … [ (0x5c is \)
  [0x5d, 0x7e], // ] … ~ (0x7f is DEL)
  [0xa0, 0xd7ff], // after the C1 controls, up to the surrogates
  [0xe000, 0xfffd], // after the surrogates, up to the last BMP character
];
