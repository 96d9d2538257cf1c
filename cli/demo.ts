// npm run demo -- [--out DIR] [--json]
// The event store end to end, until the experiment runner exists: a real ds-writer
// process writes a signed run folder (both roles, a refused request, an idempotent
// retry, a periodic signed head, the seal and the final signed head on it), then the run
// is verified from its files.
// The key is made for this run and kept in memory only; the controller (issue 4) keeps
// its key in a key folder outside every run.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { sealAndSignFinalHead, signAndRecordHead, writeSignedManifest } from '../controller/run-signatures.js';
import { generateKeyPair } from '../schema/ed25519-keys.js';
import type { EventType, PayloadOf } from '../schema/event-catalog.js';
import type { Actor } from '../schema/envelope.js';
import { writePublicKey } from '../schema/public-key-file.js';
import { WriterClient } from '../writer/client.js';
import { draftOf } from '../writer/event-draft.js';
import { DEFAULT_SNAPSHOT_EVERY_EVENTS, WriterError, type EventDraft } from '../writer/protocol.js';
import { newSocketPath, newToken, spawnWriter } from '../writer/spawn.js';
import { verifyDirectory } from '../writer/verify-store.js';
import { parseFlags, UsageError } from './command-line.js';
import { CommandRefusal, runCommand, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';

const USAGE = 'usage: npm run demo -- [--out DIR] [--json]';
const SUBJECT_ID = 'subject-001';
const START = Date.parse('2026-07-20T08:00:00.000Z');

const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

function draft<T extends EventType>(type: T, actor: Actor, hour: number, payload: PayloadOf<T>, idempotencyKey: string | null = null): EventDraft {
  return draftOf(type, payload, { occurred_at: new Date(START + hour * 3_600_000).toISOString(), actor, causation_id: null, correlation_id: 'wake-0001', idempotency_key: idempotencyKey });
}

async function main(): Promise<CommandOutput | null> {
  const args = parseFlags(USAGE, { out: { type: 'string' }, json: { type: 'boolean' } });
  if (args === null) return null;
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args.positionals[0])}: this command takes flags only`);
  const { values } = args;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const runDir = path.resolve(values.out ?? path.join('runs', `demo-${stamp}`));
  if (existsSync(runDir) && !statSync(runDir).isDirectory()) throw new UsageError(`--out ${runDir} is a file; give a new or empty folder`);
  if (existsSync(runDir) && readdirSync(runDir).length > 0) throw new UsageError(`${runDir} is not empty; a run folder is never reused. Pick another --out.`);
  mkdirSync(runDir, { recursive: true });
  const experimentId = `demo-${stamp}`;
  const keys = generateKeyPair();
  writePublicKey(runDir, keys);
  const manifestSha256 = writeSignedManifest(
    runDir,
    { experiment_id: experimentId, subject_id: SUBJECT_ID, purpose: 'event-store demo: not an experiment run', created_at: new Date().toISOString() },
    keys,
  );
  const tokens = { runtime: newToken(), experiment: newToken() };
  const writer = await spawnWriter({
    db_path: path.join(runDir, 'events.db'),
    socket_path: newSocketPath(),
    mode: 'create',
    subject_id: SUBJECT_ID,
    experiment_id: experimentId,
    manifest_sha256: manifestSha256,
    tokens,
    projection: 'event-counts',
    socket_mode: 0o600,
    snapshot_every: DEFAULT_SNAPSHOT_EVERY_EVENTS,
  });
  say(`writer pid ${writer.pid} serving ${runDir}/events.db (StoreOpened at seq ${writer.head.seq})`);
  const experiment = await WriterClient.connect(writer.socketPath, 'experiment', tokens.experiment);
  const runtime = await WriterClient.connect(writer.socketPath, 'runtime', tokens.runtime);
  const signing = { runDir, keys, experimentId, occurredAt: new Date(START + 2 * 3_600_000).toISOString(), now: () => new Date().toISOString() };
  try {
    await experiment.append([
      draft('ExperimentEvent.WakeScheduled', 'experiment', 0, { wake_id: 'wake-0001', wake_at: new Date(START).toISOString(), budget: { model_calls: 1, tokens: 4_000, tool_calls: 4 } }),
      draft('ExperimentEvent.WakeStarted', 'experiment', 0, { wake_id: 'wake-0001', visible_to_seq: 3, budget: { model_calls: 1, tokens: 4_000, tool_calls: 4 } }),
    ]);
    const message = await experiment.append([
      draft('WorldEvent.MessageReceived', 'experiment', 0, { from: 'reviewer', subject: 'dataset', body: 'The missing dataset will arrive tomorrow.', in_reply_to: null }),
    ]);
    const journal = draft('MemoryEvent.JournalEntryWritten', 'runtime', 1, { proposal_id: 'proposal-1', entry_id: 'page-2', text: 'Waiting for the reviewer dataset.' }, 'journal-page-1');
    await runtime.append([
      journal,
      draft('MemoryEvent.ClaimRecorded', 'runtime', 1, {
        claim_id: 'claim-1',
        claim_type: 'FACT',
        statement: 'The reviewer said the dataset arrives tomorrow.',
        evidence_event_ids: [message.events[0]!.event_id],
        confidence: null,
        alternatives: [],
      }),
    ]);
    const retry = await runtime.append([journal]);
    say(`retried append with the same idempotency key: deduplicated=${retry.events[0]!.deduplicated}, seq ${retry.events[0]!.seq} (nothing written)`);
    try {
      await runtime.append([draft('WorldEvent.DistractorOccurred', 'runtime', 1, { channel: 'news', body: 'a runtime may not write world events' })]);
      throw new DemoBroken('the writer accepted a WorldEvent from the runtime role; this must not happen');
    } catch (error) {
      if (!(error instanceof WriterError)) throw error;
      say(`refused as expected: ${error.code}: ${error.message} (recorded as AppendRejected at seq ${error.rejectionSeq})`);
    }
    const periodic = await signAndRecordHead(experiment, 'periodic', signing);
    say(`signed periodic head at seq ${periodic.seq}`);
    await experiment.append([draft('ExperimentEvent.WakeEnded', 'experiment', 2, { wake_id: 'wake-0001', outcome: 'completed' })]);
    const final = await sealAndSignFinalHead(experiment, signing, 'demo finished');
    say(`sealed the store at seq ${final.seq} and signed the final head on the seal`);
    try {
      await runtime.append([draft('MemoryEvent.JournalEntryWritten', 'runtime', 3, { proposal_id: 'proposal-2', entry_id: 'page-3', text: 'Written after the seal.' })]);
      throw new DemoBroken('the writer accepted an append after the seal; this must not happen');
    } catch (error) {
      if (!(error instanceof WriterError) || error.code !== 'sealed') throw error;
      say(`refused after the seal as expected: ${error.code}: ${error.message} (not recorded: nothing may follow the seal)`);
    }
  } finally {
    experiment.close();
    runtime.close();
    const exit = await writer.stop();
    if (exit.code !== 0) say(`writer exited with code ${exit.code} signal ${exit.signal}`);
  }
  const report = verifyDirectory(runDir);
  const shown = path.relative(process.cwd(), runDir) || runDir;
  const text = [
    `run folder: ${runDir}`,
    `verify: ${report.ok ? 'OK' : 'FAILED'} (${report.stores} store, ${report.events} events)`,
    ...report.failures.map((f) => `  ${f.store} seq ${f.seq}: ${f.reason}`),
    `check it yourself: npm run verify -- ${shown}`,
    `restore drill (state from snapshot + events == from events alone): npm run restore -- ${shown}`,
  ];
  return { exitCode: report.ok ? EXIT_CODES.ok : EXIT_CODES.failed, json: { run_dir: runDir, verify: report }, text: text.join('\n') };
}

/** The writer let through what it must refuse: the demo's own check failed (exit 1). */
class DemoBroken extends CommandRefusal {
  constructor(message: string) {
    super('demo_writer_misbehaved', message);
  }
}

runCommand('demo', USAGE, main);
