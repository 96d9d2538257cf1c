// Real writer processes on real SQLite files in a temporary run folder, for tests:
// the folder holds controller.pub and a signed manifest like a controller's would.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sealAndSignFinalHead, signAndRecordHead, writeSignedManifest } from '../../controller/run-signatures.js';
import { generateKeyPair, type Ed25519KeyPair } from '../../schema/ed25519-keys.js';
import type { ChainHead } from '../../schema/chain-head.js';
import type { HashString } from '../../schema/hash.js';
import { writePublicKey } from '../../schema/public-key-file.js';
import { WriterClient } from '../../writer/client.js';
import { DEFAULT_SNAPSHOT_EVERY_EVENTS, type EventDraft } from '../../writer/protocol.js';
import { newToken, spawnWriter, type WriterProcess } from '../../writer/spawn.js';

export interface RunIdentity {
  readonly subject_id: string;
  readonly experiment_id: string;
  readonly manifest_sha256: HashString;
}

export interface WriterFixture {
  readonly dir: string;
  readonly dbPath: string;
  readonly writer: WriterProcess;
  readonly keys: Ed25519KeyPair;
  readonly tokens: { runtime: string; experiment: string };
  readonly identity: RunIdentity;
  /** K of the running writer: it snapshots every K events and when stopped. */
  readonly snapshotEvery: number;
  connect(role: 'runtime' | 'experiment'): Promise<WriterClient>;
  /** A periodic head (also recorded as ChainHeadSigned), or for `final` the seal and the final head on it. */
  signHead(kind: ChainHead['kind']): Promise<ChainHead>;
  /** Stops the writer (closing clients) and starts a new one on the same store. */
  restart(): Promise<WriterFixture>;
  /** Stops the writer and closes clients; the folder stays for inspection. */
  stop(): Promise<void>;
  cleanup(): Promise<void>;
}

export function tempDir(prefix = 'ds-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

interface Prepared {
  readonly dir: string;
  readonly keys: Ed25519KeyPair;
  readonly tokens: { runtime: string; experiment: string };
  readonly identity: RunIdentity;
  readonly snapshotEvery: number;
}

async function launch(prepared: Prepared, mode: 'create' | 'open'): Promise<WriterFixture> {
  const { dir, keys, tokens, identity, snapshotEvery } = prepared;
  const dbPath = path.join(dir, 'events.db');
  const socketPath = path.join(dir, 'writer.sock');
  const writer = await spawnWriter({ db_path: dbPath, socket_path: socketPath, mode, ...identity, tokens, projection: 'event-counts', socket_mode: 0o600, snapshot_every: snapshotEvery });
  const clients: WriterClient[] = [];
  let experimentClient: WriterClient | null = null;
  const stop = async (): Promise<void> => {
    for (const c of clients) c.close();
    await writer.stop();
  };
  const fixture: WriterFixture = {
    dir,
    dbPath,
    writer,
    keys,
    tokens,
    identity,
    snapshotEvery,
    async connect(role) {
      const client = await WriterClient.connect(socketPath, role, tokens[role]);
      clients.push(client);
      return client;
    },
    async signHead(kind) {
      experimentClient ??= await fixture.connect('experiment');
      const now = (): string => new Date().toISOString();
      const signing = { runDir: dir, keys, experimentId: identity.experiment_id, occurredAt: now(), now };
      return kind === 'final' ? sealAndSignFinalHead(experimentClient, signing, 'test run finished') : signAndRecordHead(experimentClient, kind, signing);
    },
    async restart() {
      await stop();
      return launch(prepared, 'open');
    },
    stop,
    async cleanup() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return fixture;
}

/** A new run folder with key, signed manifest and a freshly created store. */
export async function startWriterFixture(dir = tempDir(), snapshotEvery = DEFAULT_SNAPSHOT_EVERY_EVENTS): Promise<WriterFixture> {
  const keys = generateKeyPair();
  writePublicKey(dir, keys);
  const experimentId = 'exp-test-001';
  const manifest_sha256 = writeSignedManifest(dir, { experiment_id: experimentId, subject_id: 'subject-001', purpose: 'test' }, keys);
  const identity = { subject_id: 'subject-001', experiment_id: experimentId, manifest_sha256 };
  return launch({ dir, keys, tokens: { runtime: newToken(), experiment: newToken() }, identity, snapshotEvery }, 'create');
}

/** A new writer on an existing store (e.g. a copy of a sealed run, or after a crash). */
export async function reopenWriterFixture(dir: string, like: Pick<WriterFixture, 'keys' | 'tokens' | 'identity' | 'snapshotEvery'>): Promise<WriterFixture> {
  return launch({ dir, keys: like.keys, tokens: like.tokens, identity: like.identity, snapshotEvery: like.snapshotEvery }, 'open');
}

let counter = 0;
export function messageDraft(overrides: Partial<EventDraft> = {}): EventDraft {
  counter += 1;
  return {
    event_type: 'WorldEvent.MessageReceived',
    schema_version: '1.0.0',
    occurred_at: '2026-07-20T08:00:00.000Z',
    actor: 'experiment',
    causation_id: null,
    correlation_id: 'wake-0001',
    idempotency_key: null,
    payload: { from: 'reviewer', subject: `note ${counter}`, body: 'The dataset will follow.', in_reply_to: null },
    ...overrides,
  };
}

export function journalDraft(text: string, overrides: Partial<EventDraft> = {}): EventDraft {
  return {
    event_type: 'MemoryEvent.JournalEntryWritten',
    schema_version: '1.0.0',
    occurred_at: '2026-07-20T08:00:00.000Z',
    actor: 'runtime',
    causation_id: null,
    correlation_id: 'wake-0001',
    idempotency_key: null,
    payload: { proposal_id: 'proposal-1', entry_id: 'entry-1', text },
    ...overrides,
  };
}

/** A sealed run: events from both roles, a periodic head, more events, the seal and the final head on it; writer stopped. */
export async function writeSealedRun(dir = tempDir(), eventsPerPhase = 5, snapshotEvery = DEFAULT_SNAPSHOT_EVERY_EVENTS): Promise<WriterFixture> {
  const fixture = await startWriterFixture(dir, snapshotEvery);
  const experiment = await fixture.connect('experiment');
  const runtime = await fixture.connect('runtime');
  for (let i = 0; i < eventsPerPhase; i++) {
    await experiment.append([messageDraft()]);
    await runtime.append([journalDraft(`entry ${i}`)]);
  }
  await fixture.signHead('periodic');
  for (let i = 0; i < eventsPerPhase; i++) await runtime.append([journalDraft(`later entry ${i}`)]);
  await fixture.signHead('final');
  await fixture.stop();
  return fixture;
}
