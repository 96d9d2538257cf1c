// What the controller signs into a run folder (DESIGN §4): the manifest and chain heads
// (periodic ones also go into the chain as ChainHeadSigned; the final one names the
// SystemEvent.StoreSealed that ends the store). The public key beside them is written by
// schema/public-key-file.ts (a blind-review package carries it too).
// Key custody (a key folder outside every run, mode 0600) is the controller's job and
// not this file's: these functions take the key as a value.
import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { CodedErrorOf } from '../foundation/typed-error.js';
import { CHAIN_HEAD_PAYLOAD_TYPE, ChainHead } from '../schema/chain-head.js';
import { signDsse, type DsseEnvelope } from '../schema/dsse.js';
import type { Ed25519KeyPair } from '../schema/ed25519-keys.js';
import { hashCanonical, type HashString } from '../schema/hash.js';
import { MANIFEST_PAYLOAD_TYPE, RUN_FILES } from '../schema/run-files.js';
import type { FaultSwitch } from '../schema/fault-switch.js';
import type { WriterClient } from '../writer/client.js';
import { draftOf } from '../writer/event-draft.js';

/** Signs the manifest into manifest.dsse.json (never overwriting one) and returns its hash for StoreOpened. */
export function writeSignedManifest(runDir: string, manifest: Record<string, unknown>, keys: Ed25519KeyPair): HashString {
  const file = path.join(runDir, RUN_FILES.manifest);
  if (existsSync(file)) throw new Error(`${file} exists: a signed manifest is never replaced`);
  const envelope = signDsse(MANIFEST_PAYLOAD_TYPE, manifest, keys.secretKey, keys.publicKey);
  writeFileSync(file, `${JSON.stringify(envelope, null, 2)}\n`, { flag: 'wx' });
  return hashCanonical(manifest);
}

export function signChainHead(head: ChainHead, keys: Ed25519KeyPair): DsseEnvelope {
  return signDsse(CHAIN_HEAD_PAYLOAD_TYPE, ChainHead.parse(head), keys.secretKey, keys.publicKey);
}

/** Appends one signed head to heads.jsonl. */
export function appendSignedHead(runDir: string, envelope: DsseEnvelope): void {
  const line = Buffer.from(`${JSON.stringify(envelope)}\n`, 'utf8');
  const fd = openSync(path.join(runDir, RUN_FILES.heads), 'a');
  try {
    const before = fstatSync(fd).size;
    try {
      let written = 0;
      // Bounded: each pass writes at least one byte (writeSync throws rather than return 0 on a full disk).
      for (let pass = 0; written < line.length && pass <= line.length; pass += 1) written += writeSync(fd, line, written, line.length - written);
    } catch (error) {
      // A full disk takes what fits of the line (the slack of the file's last page) and refuses
      // the rest: cut back to the last whole line, or every later head would follow a torn one
      // and verify would refuse the file. Truncating needs no space.
      ftruncateSync(fd, before);
      throw error;
    }
  } finally {
    closeSync(fd);
  }
}

export interface HeadSigning {
  readonly runDir: string;
  readonly keys: Ed25519KeyPair;
  readonly experimentId: string;
  /** The experiment's virtual time, for the ChainHeadSigned event. */
  readonly occurredAt: string;
  /** Wall clock, read when the head is signed. */
  readonly now: () => string;
  /** The fault harness's `controller.head.signing` point, between heads.jsonl and ChainHeadSigned. */
  readonly faults?: FaultSwitch;
}

/** A head was asked of the wrong function: a final head exists only as the seal's. */
export class HeadSigningError extends CodedErrorOf<'final_needs_seal'>('head_signing', EXIT_CODES.failed) {
  override readonly name = 'HeadSigningError';
}

/**
 * Reads the writer's head, signs it as a periodic head, and records it: a line in
 * heads.jsonl and a SystemEvent.ChainHeadSigned in the chain. A final head is refused
 * (nothing is written): it must name the seal, which only sealAndSignFinalHead makes.
 */
export async function signAndRecordHead(client: WriterClient, kind: ChainHead['kind'], signing: HeadSigning): Promise<ChainHead> {
  if (kind !== 'periodic') {
    throw new HeadSigningError('final_needs_seal', 'a final head must name the SystemEvent.StoreSealed that ends the store: use sealAndSignFinalHead, not signAndRecordHead');
  }
  const current = await client.head();
  const head: ChainHead = { experiment_id: signing.experimentId, seq: current.seq, event_hash: current.event_hash, kind, signed_at: signing.now() };
  const envelope = signChainHead(head, signing.keys);
  appendSignedHead(signing.runDir, envelope);
  signing.faults?.hit('controller.head.signing', () => ({ head_seq: head.seq }));
  await client.append([draftOf('SystemEvent.ChainHeadSigned', { head, envelope }, { occurred_at: signing.occurredAt, actor: 'experiment', idempotency_key: `chain-head-${head.seq}` })]);
  return head;
}

/**
 * Ends the run's store: reads the head, asks the writer to seal exactly that head
 * (`head_conflict` if anything was appended in between, `sealed` if it already is), signs
 * the head at the SystemEvent.StoreSealed as the `final` head and appends it to
 * heads.jsonl, whose last line it then is. The client must have role `experiment`.
 */
export async function sealAndSignFinalHead(client: WriterClient, signing: HeadSigning, reason: string): Promise<ChainHead> {
  const seen = await client.head();
  const sealed = await client.seal(seen, reason);
  const head: ChainHead = { experiment_id: signing.experimentId, seq: sealed.seq, event_hash: sealed.event_hash, kind: 'final', signed_at: signing.now() };
  appendSignedHead(signing.runDir, signChainHead(head, signing.keys));
  return head;
}
