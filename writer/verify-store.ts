// Verifies run folders from their files alone (DESIGN §4): every events.db under a
// folder, every DSSE file, against the controller's public key. It lists every failure
// it finds with its seq and never stops at the first; it only reads. A finished store
// ends with its one SystemEvent.StoreSealed, and the final signed head names exactly it.
// Every event is at the version of its type that the catalogue StoreOpened names holds
// (schema/catalogue-versions.ts), and the signed manifest names that catalogue too.
// A store whose file is not intact SQLite (damaged, empty, unreadable, locked) is one more
// failure, listed with its store and its code (store_damaged, …: store-file-failure.ts), after
// whatever could be read from it; verification goes on with the other stores and files.
//
// This file is the entry and the report; each job of a verify has its own file: the walk of the
// folder (run-files-walk.ts), the walk of one store's chain (store-chain-check.ts), the checks of
// its signed heads and manifest (signed-files-check.ts), the list they fill (verify-failure-list.ts).
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { RUN_FILES } from '../schema/run-files.js';
import { findRunFiles } from './run-files-walk.js';
import { checkChainHeadEvents, checkSignedFilesBeside, readKey, verifyHeadsFile, verifySignedFile } from './signed-files-check.js';
import { verifyStore, type ChainHeadEvent, type StoreFacts } from './store-chain-check.js';
import { FailureList, type VerifyFailure } from './verify-failure-list.js';
import { foreignOrDamagedSnapshots } from './restore.js';
import { StoreReader } from './store-reader.js';
import { VerifyInputError } from './verify-input-error.js';
import { VerifiedEvents } from './verified-events.js';

// The report's parts and the entry's error, where a caller of verifyDirectory looks for them.
export type { VerifyFailure } from './verify-failure-list.js';
export { VerifyInputError } from './verify-input-error.js';

export interface VerifyReport {
  readonly ok: boolean;
  readonly stores: number;
  readonly events: number;
  readonly failures: VerifyFailure[];
  /** Things that are not failures but must not pass unseen (e.g. an open store). */
  readonly warnings: VerifyFailure[];
}

export interface VerifyOptions {
  /**
   * Accept stores that have no final signed head yet (a run in progress: not sealed
   * either): a warning, not a failure. A sealed store without a final head still fails.
   */
  readonly allowOpen?: boolean;
}

/**
 * `keep`: when given, each store's rows as the walk read and parsed them are put in it by the
 * store's path (verified-events.ts), for checks that follow on the same folder to use instead of
 * reading the store again; a store with a failure is kept spoiled (they read it themselves).
 */
export function verifyDirectory(root: string, options: VerifyOptions = {}, keep: Map<string, VerifiedEvents> | null = null): VerifyReport {
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new VerifyInputError(`${root} is not a folder; give the run or study folder to verify`);
  const allowOpen = options.allowOpen ?? false;
  const failures = new FailureList(root);
  const warnings = new FailureList(root);
  const found = findRunFiles(root);
  if (found.stores.length === 0) failures.add(root, null, `no ${RUN_FILES.store} under ${root}`);
  for (const beyond of found.beyond) failures.add(root, null, beyond);
  let events = 0;
  const storeFacts = new Map<string, StoreFacts>();
  const closers: (() => void)[] = [];
  try {
    for (const file of found.stores) {
      const chainHeadEvents: ChainHeadEvent[] = [];
      const kept = keep === null ? null : new VerifiedEvents(file);
      if (kept !== null) keep?.set(file, kept);
      const result = verifyStore(file, failures, chainHeadEvents, kept);
      if (!result) continue;
      closers.push(result.close);
      events += result.events;
      // A damaged store (already a failure) is not compared with the files beside it.
      if (result.facts === null) continue;
      const facts = result.facts;
      storeFacts.set(path.dirname(file), facts);
      checkSignedFilesBeside(file, facts, failures, warnings, allowOpen);
      // Snapshots are a cache: one that is damaged or another store's is never used, so a warning, not a failure.
      const reader = StoreReader.open(file);
      try {
        for (const problem of foreignOrDamagedSnapshots(reader)) warnings.add(file, null, `${problem} (a cache: a restore skips it and nothing is lost)`);
      } finally {
        reader.close();
      }
      if (chainHeadEvents.length === 0) continue;
      const key = readKey(file, root, failures);
      if (!key) continue;
      checkChainHeadEvents(file, chainHeadEvents, key, facts, failures);
    }

    for (const file of found.signedFiles) {
      const key = readKey(file, root, failures);
      if (!key) continue;
      const facts = storeFacts.get(path.dirname(file)) ?? null;
      if (path.basename(file) === RUN_FILES.heads) verifyHeadsFile(file, key, facts, failures, warnings, allowOpen);
      else verifySignedFile(file, key, facts, failures);
    }
  } finally {
    for (const close of closers) close();
  }
  const listed = failures.finish();
  return { ok: listed.length === 0, stores: found.stores.length, events, failures: listed, warnings: warnings.finish() };
}
