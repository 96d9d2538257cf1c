// Does the prompt fit the model's context, and did the server read all of it? (issue 15 item 3)
// A llama.cpp server given a prompt longer than its context silently drops the start of it
// (context shift: the system prompt goes first) and answers HTTP 200; the issue saw a
// 13,160-token prompt read as 4,996. Two checks catch that:
// - before sending: the counted prompt plus the answer's cap must fit the context size (the
//   server's, or the configured one); a prompt that cannot fit is not sent;
// - after the answer: the server's own `usage.prompt_tokens` must not be smaller than the
//   prompt counted by the model's tokenizer. The chat template only adds tokens (role markers,
//   BOS), so a smaller server count means the server read less than it was sent.
// The second check needs a real tokenizer count: an estimate (ceil(chars / 4)) can be above the
// true count for a large vocabulary, and would flag whole prompts as truncated, so with an
// estimate it does not run (the record's prompt_count_source says "estimate").
import type { TokenCountSource } from '../model-adapter.js';

/**
 * Tokens the count of one message, tokenized on its own, may exceed the same text inside the
 * chat template: a tokenizer that adds a leading space at the start of a text (SentencePiece)
 * can split the message's first word differently there. One per message counted.
 */
export const TOKENIZE_SLACK_PER_MESSAGE = 1;

export interface PromptCount {
  readonly tokens: number;
  readonly source: TokenCountSource;
  /** How many messages were counted separately (each can be off by the slack). */
  readonly messages: number;
}

export type FitVerdict = { readonly fits: true } | { readonly fits: false; readonly detail: string };

/** Before sending: counted prompt + the answer's cap against the context size (null: unknown, nothing to check). */
export function checkPromptFits(count: PromptCount, maxTokens: number, context: { readonly size: number; readonly source: string } | null): FitVerdict {
  if (context === null) return { fits: true };
  if (count.tokens + maxTokens <= context.size) return { fits: true };
  const how = count.source === 'estimate' ? 'estimated (ceil(chars / 4); no tokenizer endpoint)' : `counted by the ${count.source}`;
  return {
    fits: false,
    detail: `the prompt (${count.tokens} tokens, ${how}) plus the answer's cap (max_tokens ${maxTokens}) is ${count.tokens + maxTokens} tokens, over the context size ${context.size} (${context.source}); the server would drop part of the prompt, so the chat request was not sent`,
  };
}

export type TruncationVerdict = { readonly truncated: false; readonly checked: boolean } | { readonly truncated: true; readonly checked: true; readonly detail: string };

/** After the answer: did the server count fewer prompt tokens than the tokenizer did? */
export function checkPromptNotTruncated(count: PromptCount, serverPromptTokens: number | null): TruncationVerdict {
  if (count.source !== 'tokenizer' || serverPromptTokens === null) return { truncated: false, checked: false };
  const floor = count.tokens - TOKENIZE_SLACK_PER_MESSAGE * count.messages;
  if (serverPromptTokens >= floor) return { truncated: false, checked: true };
  return {
    truncated: true,
    checked: true,
    detail: `the server counted ${serverPromptTokens} prompt tokens, but the prompt's messages alone are ${count.tokens} tokens by the model's tokenizer (the chat template only adds tokens): the server read ${count.tokens - serverPromptTokens} fewer than it was sent (its context shift drops the start of an over-long prompt); the answer is kept in raw_output and not used`,
  };
}
