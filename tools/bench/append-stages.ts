// Where an append's time goes, for the append benchmark (append-bench.ts): the stages of one
// append request run in this process, in the order the client and the writer run them, with the
// writer's own functions (WriterRequest, validateDrafts, a real EventStore with its durable
// commit, WriterResponse/AppendResult), each timed in wall and CPU microseconds. What the
// end-to-end case costs beyond their sum is the socket, the two processes' wake-ups and their
// event loops (append-bench.ts subtracts it from the measured rate).
//
// store.append is split by running its two computing parts again beside it on the same drafts
// (event ids, envelope JCS and hashes; the projection fold and its state's JCS and hash): what
// store.append costs beyond them is SQLite's statements and the durable commit. The splits are
// measured right after the real append, so they run as warm as the append's own code did.
// Why one file: one measurement, its stage list and its fixture; append-bench.ts only reads the result.
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { canonicalJson } from '../../schema/canonical-json.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { hashCanonical, hashText, type HashString } from '../../schema/hash.js';
import { projectionNamed } from '../../projector/registry.js';
import { validateDrafts, type ValidatedDraft } from '../../writer/draft-validation.js';
import { envelopeOfDraft } from '../../writer/envelope-text.js';
import { EventStore } from '../../writer/event-store.js';
import { AppendResult, DEFAULT_SNAPSHOT_EVERY_EVENTS, WriterRequest, WriterResponse, type EventDraft } from '../../writer/protocol.js';

export const APPEND_STAGES = [
  'client_encode_request',
  'writer_json_parse',
  'writer_zod_request',
  'writer_validate_drafts',
  'store_ids_envelope_jcs_hashes',
  'store_projection_fold_jcs_hash',
  'store_sqlite_and_durable_commit',
  'writer_encode_response',
  'client_parse_zod_response',
] as const;
export type AppendStage = (typeof APPEND_STAGES)[number];

export interface StageCost {
  /** Per event: per append for single appends, divided by the batch size for batches. */
  readonly wall_us: number;
  readonly cpu_us: number;
}

export type StageBreakdown = Record<AppendStage, StageCost> & { readonly in_process_total: StageCost };

const WARMUP_REQUESTS = 20;
const PROJECTION = 'event-counts';
/** The stage store's clock: fixed, so the split rebuilds exactly the envelopes the store hashed (checked per request). */
const RECORDED_AT = '2026-07-20T08:00:00.000Z';

/** process.cpuUsage in µs: user + system of this process, so a stage's CPU excludes the time it waited for the CPU. */
function cpuNowUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/**
 * Runs `requests` append requests of `batchSize` drafts each (built by `draftAt`) through the
 * stages in this process against a fresh store in `parentDir`, and returns each stage's mean per event.
 */
export function measureAppendStages(parentDir: string, requests: number, batchSize: number, draftAt: (index: number) => EventDraft): StageBreakdown {
  const dir = mkdtempSync(path.join(parentDir, 'stages-'));
  const projection = projectionNamed(PROJECTION);
  const subjectId = 'subject-bench-stages';
  const store = EventStore.create({
    path: path.join(dir, 'stages.db'),
    identity: { subject_id: subjectId, experiment_id: 'exp-bench-stages', manifest_sha256: hashCanonical({ manifest: 'append-stages' }) },
    projection,
    now: () => RECORDED_AT,
    snapshotEvery: DEFAULT_SNAPSHOT_EVERY_EVENTS,
  });
  const wall = new Map<AppendStage, number>(APPEND_STAGES.map((s) => [s, 0]));
  const cpu = new Map<AppendStage, number>(APPEND_STAGES.map((s) => [s, 0]));
  // The store's state, folded beside it, so the projection split folds what the store folded.
  let state: unknown = projection.initial();
  state = projection.apply(state, JSON.parse(store.readPage(1, 1, undefined).texts[0]!) as EventEnvelope);
  let index = 0;
  try {
    for (let r = 0; r < WARMUP_REQUESTS + requests; r += 1) {
      const timing = r >= WARMUP_REQUESTS;
      let wallMark = performance.now();
      let cpuMark = cpuNowUs();
      const lap = (stage: AppendStage): void => {
        const wallNow = performance.now();
        const cpuNow = cpuNowUs();
        if (timing) {
          wall.set(stage, wall.get(stage)! + (wallNow - wallMark) * 1_000);
          cpu.set(stage, cpu.get(stage)! + (cpuNow - cpuMark));
        }
        wallMark = wallNow;
        cpuMark = cpuNowUs();
      };
      const drafts: EventDraft[] = [];
      for (let i = 0; i < batchSize; i += 1) drafts.push(draftAt(index++));
      const headBefore = store.head();
      wallMark = performance.now();
      cpuMark = cpuNowUs();
      // The client's request line (client.ts request()).
      const line = Buffer.from(`${JSON.stringify({ id: r + 2, method: 'append', params: { events: drafts, expect_head: null } })}\n`);
      lap('client_encode_request');
      // The writer's handling of it (socket-server.ts handleLine() and handle()).
      const raw: unknown = JSON.parse(line.subarray(0, line.length - 1).toString('utf8'));
      lap('writer_json_parse');
      const parsed = WriterRequest.parse(raw);
      if (parsed.method !== 'append') throw new Error('bench request is not an append');
      lap('writer_zod_request');
      const validated = validateDrafts(parsed.params.events, 'experiment');
      lap('writer_validate_drafts');
      const result = store.append(validated, null);
      lap('store_sqlite_and_durable_commit');
      const answer = JSON.stringify({ id: parsed.id, ok: true, result });
      lap('writer_encode_response');
      // The client's reading of the answer (client.ts onResponse() and append()).
      const response = WriterResponse.parse(JSON.parse(answer));
      if (!response.ok) throw new Error('bench append was refused');
      AppendResult.parse(response.result);
      lap('client_parse_zod_response');
      // The two splits of store.append, on the same drafts and head.
      const envelopes = envelopesOf(validated, subjectId, headBefore.seq, headBefore.event_hash);
      lap('store_ids_envelope_jcs_hashes');
      state = envelopes.reduce((s, e) => projection.apply(s, e), state);
      hashText(canonicalJson(state));
      lap('store_projection_fold_jcs_hash');
      const last = envelopes[envelopes.length - 1]!;
      if (last.event_hash !== result.head.event_hash) throw new Error(`stage split computed ${last.event_hash}, the store ${result.head.event_hash}: the split is not the store's work`);
    }
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  // store.append held the splits' work too: what it cost beyond them is SQLite and the commit.
  for (const [costs] of [[wall], [cpu]] as const) {
    const split = costs.get('store_ids_envelope_jcs_hashes')! + costs.get('store_projection_fold_jcs_hash')!;
    costs.set('store_sqlite_and_durable_commit', Math.max(0, costs.get('store_sqlite_and_durable_commit')! - split));
  }
  const events = requests * batchSize;
  const perEvent = (stage: AppendStage): StageCost => ({ wall_us: round1(wall.get(stage)! / events), cpu_us: round1(cpu.get(stage)! / events) });
  const stages = Object.fromEntries(APPEND_STAGES.map((s) => [s, perEvent(s)])) as Record<AppendStage, StageCost>;
  const sum = (key: keyof StageCost): number => round1(APPEND_STAGES.reduce((total, s) => total + stages[s][key], 0));
  return { ...stages, in_process_total: { wall_us: sum('wall_us'), cpu_us: sum('cpu_us') } };
}

/** The envelopes store.append built for these drafts (event-store.ts writeBatch), with the same functions. */
function envelopesOf(drafts: readonly ValidatedDraft[], subjectId: string, headSeq: number, headHash: HashString): EventEnvelope[] {
  const envelopes: EventEnvelope[] = [];
  let previous = headHash;
  let seq = headSeq;
  for (const draft of drafts) {
    seq += 1;
    const { envelope } = envelopeOfDraft(draft, { subjectId, seq, previousHash: previous, recordedAt: RECORDED_AT });
    envelopes.push(envelope);
    previous = envelope.event_hash;
  }
  return envelopes;
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
