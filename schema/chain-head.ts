// The signed chain head (DESIGN §4): what a controller attests about a store at a seq.
import { z } from 'zod';
import { HashString } from './hash.js';

export const CHAIN_HEAD_PAYLOAD_TYPE = 'application/vnd.digital-subject.chain-head+json';

export const ChainHead = z.strictObject({
  experiment_id: z.string().min(1).max(128),
  seq: z.number().int().min(1),
  event_hash: HashString,
  kind: z.enum(['periodic', 'final']),
  signed_at: z.iso.datetime(),
});
export type ChainHead = z.infer<typeof ChainHead>;
