// Keeping the KV cache of what a call's prompt shares with the previous call's (issue 34 item 2),
// for the local adapter. A prompt laid out for reuse (runtime/prompt.ts) starts every wake with
// the same system message and the same oldest events, so most of it was evaluated one call
// before; evaluating only the rest is the difference between seconds and minutes on a CPU.
//
// Why this cannot carry memory from one wake to the next — the argument group A's promise rests on:
// 1. What is kept is a prefix of THIS call's prompt, token for token (checked below after the
//    erase, as an invariant): text the call is sent anyway. Nothing else survives — not the
//    previous answer, not the part of the previous prompt that differs.
// 2. In a causal transformer the keys and values at position i are a function of tokens 0..i
//    only. The kept entries are therefore what evaluating this prompt's prefix afresh computes;
//    the model at the end of the prompt has seen exactly this prompt.
// 3. The last prompt token is always evaluated anew (at most prompt.length − 1 kept), so the
//    first answer token is sampled from logits of this call, and the sampler is seeded per call.
// What may differ is floating point: the prefix was evaluated in other batch splits than a fresh
// evaluation would use, so logits can differ in the last bits and, rarely, a sampled token. That
// is a numeric difference, the same for every group, not information; whether it happens for a
// model is measured (docs/local-model.md "KV reuse"), and reuse is a setting of the model
// configuration (the same file for every group of a study), stated in every call's fingerprint.
import type { EngineSequence, EngineToken } from './load-engine.js';

/**
 * Aligns `sequence` to `prompt`: keeps the tokens it holds that begin `prompt` (at most
 * prompt.length − 1), erases everything after them, and returns how many it kept.
 */
export async function keepCommonPrefix(sequence: EngineSequence, prompt: readonly EngineToken[]): Promise<number> {
  const held = sequence.contextTokens;
  const limit = Math.min(held.length, prompt.length - 1);
  let shared = 0;
  while (shared < limit && held[shared] === prompt[shared]) shared += 1;
  if (shared < sequence.nextTokenIndex) await sequence.eraseContextTokenRanges([{ start: shared, end: sequence.nextTokenIndex }]);
  const kept = sequence.contextTokens;
  if (kept.length !== shared || kept.some((token, i) => token !== prompt[i])) {
    throw new Error(`bug: after keeping ${shared} shared tokens the sequence holds ${kept.length} tokens that are not all the prompt's`);
  }
  return shared;
}
