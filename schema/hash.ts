// `sha256:<64 lowercase hex>` hashing (DESIGN §4). node:crypto is used rather than
// @noble/hashes because it is ~4.7x faster here and the writer hashes twice per event;
// its one-shot crypto.hash (Node >= 20.12) skips allocating a Hash object per call.
import { hash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';

export const HASH_PREFIX = 'sha256:';
export const HashString = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'expected sha256:<64 lowercase hex>');
export type HashString = z.infer<typeof HashString>;

/** previous_event_hash of seq 1. */
export const GENESIS_HASH: HashString = `${HASH_PREFIX}${'0'.repeat(64)}`;

export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

/** sha256 of the UTF-8 bytes of `text`, as a hash string. */
export function hashText(text: string | Uint8Array): HashString {
  return `${HASH_PREFIX}${sha256Hex(text)}`;
}

/** sha256(JCS(value)) as a hash string. */
export function hashCanonical(value: unknown): HashString {
  return hashText(canonicalJson(value));
}
