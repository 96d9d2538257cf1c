// The scenario's framing (issue 35 item 1): the words of the system message that say where the
// subject works ("You are a digital subject working in <framing> over several simulated days…",
// runtime/prompt.ts). A scenario names its own in scenario.json (`framing`, design/scenario.ts);
// one without keeps DEFAULT_FRAMING, the words of every prompt before, so its system message is
// byte-identical. The same text for every group of a study (it comes from the scenario, never from
// the group), and part of the scenario hash when it is not the default.
import { z } from 'zod';

/** The framing of every prompt before issue 35, and of a scenario that names none. */
export const DEFAULT_FRAMING = 'a research workspace';
/** A phrase, not a second prompt: every token of the system message is paid at every wake. */
export const MAX_FRAMING_CHARS = 200;

export const PromptFraming = z
  .string()
  .min(1)
  .max(MAX_FRAMING_CHARS)
  // One line, no edge spaces: the phrase sits inside a sentence of the system message.
  .regex(/^\S(?:[^\n\r\t]*\S)?$/, 'expected one line of text without leading or trailing spaces, tabs or line breaks');
export type PromptFraming = z.infer<typeof PromptFraming>;
