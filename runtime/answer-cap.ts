// The answer's token cap of one model call (issue 15; issue 31 item 3): what the wake's token
// budget leaves after the prompt (estimated as the wake loop estimates it), at most
// MAX_ANSWER_TOKENS, and at most the model's configured max_tokens. One function for the wake
// loop that sends the call and the preflight that predicts whether it fits.
import { estimateTokens } from './prompt.js';

/** An answer is never asked for more than this many tokens (a whole /2 answer at its bounds fits). */
export const MAX_ANSWER_TOKENS = 4_096;

/** The cap the wake loop asks for (before the adapter applies the configured max_tokens). */
export function requestedAnswerCap(budgetTokens: number, system: string, user: string): number {
  return Math.max(1, Math.min(MAX_ANSWER_TOKENS, budgetTokens - estimateTokens(system) - estimateTokens(user)));
}

/** The cap a call is sent with: the requested one, at most the configured max_tokens (null: none configured). */
export function sentAnswerCap(requested: number, configuredMaxTokens: number | null): number {
  return configuredMaxTokens === null ? requested : Math.min(configuredMaxTokens, requested);
}
