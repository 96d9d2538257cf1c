// What scoring reads of one finished instance: its run folder's plan.json, prereg.json,
// scenario.json (the scenario as the run started with it, pinned by the manifest's
// scenario_sha256; a run started before issue 32 has none, and its scenario is read from the
// scenarios folder by the plan's scenario_hash), the signed manifest (its key beside the run or
// above it) and every event of events.db. Scoring and hard-failure checks take this record and nothing else, so a
// score can always be recomputed from the folder (issue 6: "every number … recomputable").
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ExperimentPlan } from '../design/experiment-plan.js';
import { checkSignedManifest, type InstanceManifest } from '../design/manifest.js';
import { PreRegistration } from '../design/prereg.js';
import { scenarioOfRun } from '../design/run-scenario.js';
import { ScenarioError, type Scenario } from '../design/scenario.js';
import { ContentMemo } from '../foundation/content-memo.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { currentPayloadOf } from '../schema/current-payload.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { EventEnvelope } from '../schema/envelope.js';
import type { EventType, PayloadOf } from '../schema/event-catalog.js';
import { hashCanonical, type HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { keyFileFor } from '../writer/run-files-walk.js';
import { StoreReader } from '../writer/store-reader.js';

/** More events than this in one instance are refused: a 72-hour run holds about 500. */
export const MAX_SCORED_EVENTS = 200_000;
const MAX_JSON_FILE_BYTES = 8 * 1024 * 1024;

/** What the folders of one study share, read once per content hash (foundation/content-memo.ts): its pre-registration (parsed and hashed). */
const MEMO_ENTRIES = 4;
const PREREGS_READ = new ContentMemo<{ readonly prereg: PreRegistration; readonly preregSha256: HashString }>(MEMO_ENTRIES);

export class RunRecordError extends TypedErrorOf('run_record', EXIT_CODES.failed) {
  override readonly name = 'RunRecordError';
}

export interface RunRecord {
  readonly runDir: string;
  readonly plan: ExperimentPlan;
  readonly prereg: PreRegistration;
  readonly preregSha256: HashString;
  readonly scenario: Scenario;
  /** The signed manifest; null when it does not verify (the reason is in manifestProblem). */
  readonly manifest: InstanceManifest | null;
  readonly manifestProblem: string | null;
  /** Every event, in seq order. */
  readonly events: readonly EventEnvelope[];
}

function readJson(runDir: string, file: string): unknown {
  const full = path.join(runDir, file);
  if (!existsSync(full)) throw new RunRecordError(`${full} is missing: ${runDir} is not a finished run folder of npm run experiment`);
  const bytes = statSync(full).size;
  if (bytes > MAX_JSON_FILE_BYTES) throw new RunRecordError(`${full} is ${bytes} bytes, over the ${MAX_JSON_FILE_BYTES}-byte limit`);
  try {
    return JSON.parse(readFileSync(full, 'utf8')) as unknown;
  } catch (error) {
    throw new RunRecordError(`${full} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function parsed<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new RunRecordError(`${what}: ${z.prettifyError(result.error)}`);
  return result.data;
}

/**
 * Reads a run folder for scoring. `scenariosDir` holds scenario folders by id (read only for a run
 * that keeps no scenario.json). `verified`: the store's events as a verify of this folder just read
 * them (writer/verified-events.ts), used instead of reading it again.
 */
export function loadRunRecord(runDir: string, scenariosDir: string, verified: readonly EventEnvelope[] | null = null): RunRecord {
  const plan = parsed(ExperimentPlan, readJson(runDir, RUN_FILES.plan), `${runDir}/${RUN_FILES.plan}`);
  const preregJson = readJson(runDir, RUN_FILES.prereg);
  // One study's folders carry one pre-registration: parsed and hashed once per content.
  const { prereg, preregSha256 } = PREREGS_READ.get(hashCanonical(preregJson), () => {
    const read = parsed(PreRegistration, preregJson, `${runDir}/${RUN_FILES.prereg}`);
    return { prereg: read, preregSha256: hashCanonical(read) };
  });
  let manifest: InstanceManifest | null = null;
  let manifestProblem: string | null = null;
  const store = path.join(runDir, RUN_FILES.store);
  const keyFile = keyFileFor(store, path.dirname(runDir));
  if (keyFile === null) manifestProblem = `no ${RUN_FILES.publicKey} beside the run or above it`;
  else {
    const check = checkSignedManifest(readJson(runDir, RUN_FILES.manifest), parsePublicKeyHex(readFileSync(keyFile, 'utf8')));
    if (check.ok) manifest = check.manifest;
    else manifestProblem = check.reason;
  }
  let scenario: Scenario;
  try {
    scenario = scenarioOfRun({ runDir, scenariosDir, scenarioId: prereg.scenario.id, planHash: plan.scenario_hash, manifest });
  } catch (error) {
    if (error instanceof ScenarioError) throw new RunRecordError(error.message);
    throw error;
  }
  const events = verified === null ? readEvents(store) : boundedEvents(store, verified);
  return { runDir, plan, prereg, preregSha256, scenario, manifest, manifestProblem, events };
}

function boundedEvents(store: string, events: readonly EventEnvelope[]): readonly EventEnvelope[] {
  if (events.length > MAX_SCORED_EVENTS) throw new RunRecordError(`${store} holds ${events.length} events, over the ${MAX_SCORED_EVENTS} a score reads`);
  return events;
}

function readEvents(store: string): EventEnvelope[] {
  const reader = StoreReader.open(store);
  const events: EventEnvelope[] = [];
  try {
    const head = reader.headSeq();
    if (head > MAX_SCORED_EVENTS) throw new RunRecordError(`${store} holds ${head} events, over the ${MAX_SCORED_EVENTS} a score reads`);
    for (const row of reader.iterateEvents(0, head)) {
      let json: unknown;
      try {
        json = JSON.parse(row.envelope);
      } catch {
        throw new RunRecordError(`${store}: the event at seq ${row.seq} is not JSON (run npm run verify)`);
      }
      events.push(parsed(EventEnvelope, json, `${store}: the event at seq ${row.seq}`));
    }
  } finally {
    reader.close();
  }
  return events;
}

/**
 * The payload of `event` if it is of `type`, as the current catalogue reads it: an event of an
 * earlier version (ModelAnswered 1.2.0, say) checked against its own schema and lifted by the
 * built-in upcasters (schema/current-payload.ts), so scoring and fairness count it like any
 * other. Null for another type, or a payload that fails its schema (verify reports those).
 */
export function payloadOf<T extends EventType>(event: EventEnvelope, type: T): PayloadOf<T> | null {
  if (event.event_type !== type) return null;
  const read = currentPayloadOf(event);
  return read.ok ? (read.event.payload as PayloadOf<T>) : null;
}

/** Every event of `type` with its typed payload, in seq order. */
export function eventsOf<T extends EventType>(events: readonly EventEnvelope[], type: T): Array<{ event: EventEnvelope; p: PayloadOf<T> }> {
  const out: Array<{ event: EventEnvelope; p: PayloadOf<T> }> = [];
  for (const event of events) {
    const p = payloadOf(event, type);
    if (p !== null) out.push({ event, p });
  }
  return out;
}
