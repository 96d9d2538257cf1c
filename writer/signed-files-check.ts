// The checks of a store's signed files (writer/verify-store.ts, DESIGN §4), against the controller's
// public key (controller.pub beside them or above: run-files-walk.ts keyFileFor): every line of
// heads.jsonl, the head each SystemEvent.ChainHeadSigned carries, the manifest and every other
// DSSE file. A head is compared with the store it names (the facts of store-chain-check.ts): its
// experiment, its event hash, and a final head with the seal; the manifest with StoreOpened's
// hash, experiment and event catalogue. A store whose file is not intact has no facts: its files
// are then checked for their signatures only. Reads only; readSignedHeads is the one reading of
// heads.jsonl (verify, the audit desk, the repair, the resume).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { canonicalJson } from '../schema/canonical-json.js';
import { CHAIN_HEAD_PAYLOAD_TYPE, ChainHead } from '../schema/chain-head.js';
import { verifyDsse } from '../schema/dsse.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { hashCanonical } from '../schema/hash.js';
import { MANIFEST_PAYLOAD_TYPE, RUN_FILES } from '../schema/run-files.js';
import { keyFileFor } from './run-files-walk.js';
import { hasWalFrames, walOf } from './wal-ownership.js';
import type { ChainHeadEvent, StoreFacts } from './store-chain-check.js';
import type { FailureList } from './verify-failure-list.js';

const NEVER_SIGNED = 'sealed but the final head was never signed';

/** Checks a signed chain head against the store it names. */
function checkHead(file: string, where: number | null, head: ChainHead, facts: StoreFacts, failures: FailureList): void {
  if (facts.experimentId !== null && head.experiment_id !== facts.experimentId) {
    failures.add(file, head.seq, `signed head names experiment ${head.experiment_id}, the store belongs to ${facts.experimentId}`);
  }
  const stored = facts.hashAt(head.seq);
  if (stored === null) failures.add(file, head.seq, `signed head at seq ${head.seq} but the store ends at seq ${facts.lastSeq} (tail truncated?)${where === null ? '' : ` [line ${where}]`}`);
  else if (stored !== head.event_hash) failures.add(file, head.seq, `signed head hash differs from the stored event at seq ${head.seq} (history rewritten?)`);
}

/** The controller key that governs a file, or null (a failure: its signatures cannot be checked). */
export function readKey(file: string, root: string, failures: FailureList): Uint8Array | null {
  const keyFile = keyFileFor(file, root);
  if (!keyFile) {
    failures.add(file, null, `no ${RUN_FILES.publicKey} beside it or above it: its signatures cannot be checked`);
    return null;
  }
  try {
    return parsePublicKeyHex(readFileSync(keyFile, 'utf8'));
  } catch (error) {
    failures.add(keyFile, null, error instanceof Error ? error.message : String(error));
    return null;
  }
}

/** One line of heads.jsonl: its signed head, or (head null) why it is not one. */
export type SignedHeadLine =
  /** `line` is 1-based, counting non-empty lines. */
  | { readonly line: number; readonly head: ChainHead; readonly problem: null }
  | { readonly line: number; readonly head: null; readonly problem: string };

/** Every non-empty line of a heads.jsonl, each checked against `key`: the one reading of the file (verify, the audit desk, the repair). */
export function readSignedHeads(file: string, key: Uint8Array): SignedHeadLine[] {
  const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
  return lines.map((text, index): SignedHeadLine => {
    const line = index + 1;
    let envelope: unknown;
    try {
      envelope = JSON.parse(text);
    } catch {
      return { line, head: null, problem: `line ${line} is not JSON` };
    }
    const verified = verifyDsse(envelope, CHAIN_HEAD_PAYLOAD_TYPE, key);
    if (!verified.ok) return { line, head: null, problem: `line ${line}: ${verified.reason}` };
    const head = ChainHead.safeParse(verified.body);
    if (!head.success) return { line, head: null, problem: `line ${line}: signed body is not a chain head: ${z.prettifyError(head.error)}` };
    return { line, head: head.data, problem: null };
  });
}

/** Every line of a store's heads.jsonl, and its final head against the seal and the end of the store. */
export function verifyHeadsFile(file: string, key: Uint8Array, facts: StoreFacts | null, failures: FailureList, warnings: FailureList, allowOpen: boolean): void {
  let finalHead: ChainHead | null = null;
  for (const entry of readSignedHeads(file, key)) {
    if (entry.head === null) {
      failures.add(file, null, entry.problem);
      continue;
    }
    const { line, head } = entry;
    if (finalHead) failures.add(file, head.seq, `line ${line}: a head signed after the final head`);
    if (head.kind === 'final') finalHead = head;
    if (facts) checkHead(file, line, head, facts, failures);
  }
  if (!facts) return;
  const final = finalHead as ChainHead | null;
  if (final === null) {
    // A seal is the end of the run: --open (a run in progress) does not excuse it.
    if (facts.sealSeq !== null) return failures.add(file, facts.sealSeq, `${NEVER_SIGNED} (no final head in ${RUN_FILES.heads})`);
    const reason = 'no final signed head: a truncated tail could not be detected';
    if (allowOpen) warnings.add(file, facts.lastSeq, `${reason} (accepted: --open)`);
    else failures.add(file, facts.lastSeq, reason);
    return;
  }
  if (facts.sealSeq === null) {
    failures.add(file, final.seq, `a final head was signed at seq ${final.seq} but the store was never sealed (no SystemEvent.StoreSealed): appends were never refused after it`);
  } else if (final.seq !== facts.sealSeq) {
    // The hash at final.seq is compared with the store by checkHead; here: is it the seal?
    failures.add(file, final.seq, `the final signed head names seq ${final.seq}, not the SystemEvent.StoreSealed at seq ${facts.sealSeq}`);
  }
  if (facts.lastSeq > final.seq) {
    failures.add(file, final.seq + 1, `events after the final signed head (seq ${final.seq}); the store goes on to seq ${facts.lastSeq}`);
  }
}

/** The signed files a store needs beside it: heads.jsonl (unless the run is open and --open accepts that) and the manifest. */
export function checkSignedFilesBeside(file: string, facts: StoreFacts, failures: FailureList, warnings: FailureList, allowOpen: boolean): void {
  const dir = path.dirname(file);
  if (!existsSync(path.join(dir, RUN_FILES.heads))) {
    const reason = `no ${RUN_FILES.heads}: no signed head covers this store`;
    if (facts.sealSeq !== null) failures.add(file, facts.sealSeq, `${NEVER_SIGNED} (${reason})`);
    else if (allowOpen) warnings.add(file, facts.lastSeq, `${reason} (accepted: --open)`);
    else failures.add(file, facts.lastSeq, reason);
  }
  if (!existsSync(path.join(dir, RUN_FILES.manifest))) failures.add(file, 1, `no ${RUN_FILES.manifest}: the manifest hash in StoreOpened cannot be checked`);
}

/** The head each SystemEvent.ChainHeadSigned of a store carries: signed by `key`, the same as the event's, and true of the store. */
export function checkChainHeadEvents(file: string, chainHeadEvents: readonly ChainHeadEvent[], key: Uint8Array, facts: StoreFacts, failures: FailureList): void {
  for (const event of chainHeadEvents) {
    const payload = event.payload as { head: unknown; envelope: unknown };
    const verified = verifyDsse(payload.envelope, CHAIN_HEAD_PAYLOAD_TYPE, key);
    if (!verified.ok) failures.add(file, event.seq, `ChainHeadSigned: ${verified.reason}`);
    else if (canonicalJson(verified.body) !== canonicalJson(payload.head)) failures.add(file, event.seq, 'ChainHeadSigned: the signed body differs from the head in the event');
    else checkHead(file, null, ChainHead.parse(verified.body), facts, failures);
  }
}

/** A DSSE file other than heads.jsonl: its signature, and for the manifest, that it is the one StoreOpened names. */
export function verifySignedFile(file: string, key: Uint8Array, facts: StoreFacts | null, failures: FailureList): void {
  let envelope: unknown;
  try {
    envelope = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    failures.add(file, null, 'not JSON');
    return;
  }
  const isManifest = path.basename(file) === RUN_FILES.manifest;
  const declaredType = typeof envelope === 'object' && envelope !== null ? String((envelope as { payloadType?: unknown }).payloadType) : '';
  const verified = verifyDsse(envelope, isManifest ? MANIFEST_PAYLOAD_TYPE : declaredType, key);
  if (!verified.ok) {
    failures.add(file, null, verified.reason);
    return;
  }
  if (isManifest && facts) {
    if (facts.manifestSha256 !== hashCanonical(verified.body)) {
      // The store is read through a WAL beside it; when the file alone held nothing to compare the WAL with (wal-ownership.ts), either file may be the stray one.
      const store = path.join(path.dirname(file), RUN_FILES.store);
      const wal = hasWalFrames(store) ? ` (or ${path.basename(walOf(store))} beside the store is another store's WAL: the store is read through it)` : '';
      failures.add(file, 1, `the signed manifest hashes to ${hashCanonical(verified.body)}, StoreOpened names ${String(facts.manifestSha256)}${wal}`);
    }
    const manifest = verified.body as { experiment_id?: unknown; event_schema_version?: unknown };
    if (manifest.experiment_id !== undefined && manifest.experiment_id !== facts.experimentId) {
      failures.add(file, 1, `the signed manifest is for experiment ${String(manifest.experiment_id)}, the store for ${String(facts.experimentId)}`);
    }
    // The catalogue every event is held to is StoreOpened's; the signed manifest must name the same one.
    if (manifest.event_schema_version !== undefined && manifest.event_schema_version !== facts.eventCatalogue) {
      failures.add(file, 1, `the signed manifest names event catalogue ${String(manifest.event_schema_version)}, StoreOpened ${String(facts.eventCatalogue)}`);
    }
  }
}
