// What a fault run left behind, read after it: whether its store ends sealed and its final head
// is signed, which fault point fired (and with what context), and how often each point was hit
// (the calibration's counts). Read-only.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { FAULT_FILES, FAULT_POINTS, FaultReached } from '../schema/fault-points.js';
import { StoreSealed } from '../schema/events/system-events.js';
import { RUN_FILES } from '../schema/run-files.js';
import { StoreReader, StoreReadError } from '../writer/store-reader.js';
import type { GroupCalibration, PointHits } from './fault-plan.js';

/** Whether the run's store ends with its seal (the controller signs the final head right after). */
export function sealed(runDir: string): boolean {
  const dbFile = path.join(runDir, RUN_FILES.store);
  if (!existsSync(dbFile)) return false;
  let reader: StoreReader;
  try {
    reader = StoreReader.open(dbFile);
  } catch (error) {
    // A store that cannot be read is not finished: run_finished and verify say so; the harness goes on to its record.
    if (error instanceof StoreReadError) return false;
    throw error;
  }
  try {
    const head = reader.headSeq();
    for (const row of reader.iterateEvents(head - 1, head)) return (JSON.parse(row.envelope) as { event_type: string }).event_type === StoreSealed.type;
    return false;
  } finally {
    reader.close();
  }
}

/** Sealed with its final head signed (the controller may still die after that, in its shutdown). */
export function finishedRun(runDir: string): boolean {
  return sealed(runDir) && hasFinalHead(runDir);
}

/** Whether heads.jsonl ends with a head of kind final (verify checks its signature). */
export function hasFinalHead(runDir: string): boolean {
  const file = path.join(runDir, RUN_FILES.heads);
  if (!existsSync(file)) return false;
  const last = readFileSync(file, 'utf8').trim().split('\n').at(-1);
  if (last === undefined || last === '') return false;
  try {
    const envelope = JSON.parse(last) as { payload?: string };
    const body = JSON.parse(Buffer.from(envelope.payload ?? '', 'base64').toString('utf8')) as { kind?: string };
    return body.kind === 'final';
  } catch {
    // A torn or foreign last line: not finished (verify says what is wrong with it).
    return false;
  }
}

export function readReached(faultDir: string): FaultReached | null {
  const file = path.join(faultDir, FAULT_FILES.reached);
  if (!existsSync(file)) return null;
  return FaultReached.parse(JSON.parse(readFileSync(file, 'utf8')));
}

export function readHits(faultDir: string): PointHits {
  return Object.fromEntries(
    FAULT_POINTS.map((point) => {
      const file = path.join(faultDir, FAULT_FILES.hits(point));
      return [point, existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0];
    }),
  ) as PointHits;
}

const HitContext = z.strictObject({ hit: z.number().int().min(1), context: z.record(z.string(), z.unknown()) });

/** From a counting run's contexts: the hits of the intent points whose operation is not a read (mutating), and those that write or modify a file (writing). */
export function readIntentHits(faultDir: string): Pick<GroupCalibration, 'mutating' | 'writing'> {
  const mutating: GroupCalibration['mutating'] = {};
  const writing: GroupCalibration['writing'] = {};
  for (const point of ['runtime.intent.before_file_op', 'runtime.file_op.before_outcome'] as const) {
    const file = path.join(faultDir, FAULT_FILES.contexts(point));
    if (!existsSync(file)) continue;
    const contexts = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => HitContext.parse(JSON.parse(line)));
    mutating[point] = contexts.filter((h) => typeof h.context.op === 'string' && h.context.op !== 'read').map((h) => h.hit);
    writing[point] = contexts.filter((h) => h.context.op === 'write' || h.context.op === 'modify').map((h) => h.hit);
  }
  return { mutating, writing };
}
