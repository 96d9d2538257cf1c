// A study's report.json made comparable with the same study's report from another run of it
// (one machine against a Slurm array): what may differ is taken out, written out here field by
// field, and everything else must be equal.
//   - generated_at, and per instance wall_ms and status_detail: the fields --recompute ignores
//     too (study/study-recompute.ts), times and free text of the run, not results;
//   - the study folder's absolute path, wherever a string holds it: the folders differ;
//   - per instance `events`: an instance that was stopped and resumed holds the records of that
//     (SystemEvent.EmergencyStopped, the chain head signed at the stop, SystemEvent.Resumed)
//     on top of the same history; the count here is of every other event.
//   - the token total of a group whose instance was stopped and resumed, in the fairness check
//     `usage_by_behaviour (not voiding)`: those three records shift every later seq number by 3,
//     and the subject's prompts and answers cite seq numbers ("evidence_seqs":[228] for [225]),
//     so an estimated prompt can be a token longer (measured: 5885 for 5884 once). The tokens
//     are replaced by <tokens> here; usageByGroup() gives them to the test, which bounds the
//     difference; the tool calls stay and must be equal.
//   - per block (report 2.1.0) what the record says of its sessions: a block stopped and resumed
//     ran in two sessions, its runtimes started twice (three more start turns), its waits timed
//     on other clocks; `recorded`, `sessions`, `detail`, `mean_wait_ms` (with `mean_wait_ms_unrounded`, report 2.2.0) and the report's note of a
//     block run in more than one session are taken out here, blockSessions() gives them to the
//     test, which holds them to what a stop and a resume add. Whether the turns are as drawn
//     (`ok`), who went first at each wake (`first`), and the block's load check stay.
// Nothing else is touched: verdict, scores, dimensions, per-wake rows, calls stay as they are.
import { eventIs } from '../../schema/typed-event.js';
import { storedEvents, type StoredEvent } from '../support/stored-events.js';
import path from 'node:path';

export interface StopResumeRecords {
  readonly stops: number;
  readonly resumes: number;
  /** The stop's own signed chain head: the head event right after an EmergencyStopped. */
  readonly stopHeads: number;
}

export function stopResumeRecords(events: readonly StoredEvent[]): StopResumeRecords {
  let stops = 0;
  let resumes = 0;
  let stopHeads = 0;
  events.forEach((e, i) => {
    if (eventIs(e, 'SystemEvent.EmergencyStopped')) {
      stops += 1;
      const next = events[i + 1];
      if (next !== undefined && eventIs(next, 'SystemEvent.ChainHeadSigned')) stopHeads += 1;
    }
    if (eventIs(e, 'SystemEvent.Resumed')) resumes += 1;
  });
  return { stops, resumes, stopHeads };
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function replacePaths(value: Json, studyDir: string): Json {
  if (typeof value === 'string') return value.split(studyDir).join('<STUDY>');
  if (Array.isArray(value)) return value.map((v) => replacePaths(v, studyDir));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replacePaths(v, studyDir)]));
  return value;
}

const USAGE_CHECK = 'usage_by_behaviour (not voiding)';
const USAGE_PART = /\b([ABC]) (\d+) tokens, (\d+) tool calls/g;

interface FairnessCheck {
  check: string;
  ok: boolean;
  detail: string;
}

/** The tokens and tool calls per group as the fairness check states them. */
export function usageByGroup(report: Record<string, unknown>): Record<string, { tokens: number; toolCalls: number }> {
  const check = (report['fairness'] as { checks: FairnessCheck[] }).checks.find((c) => c.check === USAGE_CHECK);
  if (check === undefined) throw new Error(`the report has no fairness check ${USAGE_CHECK}`);
  return Object.fromEntries([...check.detail.matchAll(USAGE_PART)].map((m) => [m[1]!, { tokens: Number(m[2]), toolCalls: Number(m[3]) }]));
}

export interface ReportAt {
  /** report.json, parsed. */
  readonly report: Record<string, unknown>;
  /** The study folder it is in (its run folders are read for the stop records). */
  readonly studyDir: string;
}

/** The groups with an instance that was stopped and resumed. */
function stoppedGroupsOf(at: ReportAt): Set<string> {
  const groups = new Set<string>();
  for (const instance of at.report['instances'] as Record<string, Json>[]) {
    if (stopResumeRecords(storedEvents(path.join(at.studyDir, String(instance['dir'])))).stops > 0) groups.add(String(instance['group']));
  }
  return groups;
}

interface BlockTurns {
  recorded: number;
  sessions: number;
  ok: boolean;
  detail: string;
  first: Record<string, number>;
  mean_wait_ms: Record<string, number | null>;
}

/** Per block (replicate) the turns its record holds and the sessions it ran in. */
export function blockSessions(report: Record<string, unknown>): Record<number, { recorded: number; sessions: number; ok: boolean }> {
  const blocks = (report['blocks'] ?? []) as { replicate: number; turns: BlockTurns }[];
  return Object.fromEntries(blocks.map((b) => [b.replicate, { recorded: b.turns.recorded, sessions: b.turns.sessions, ok: b.turns.ok }]));
}

/** The note buildBlockReport adds for a block run in more than one session. */
const SESSIONS_NOTE = /^block r\d+ ran in \d+ sessions \(stopped and resumed\)/;

function comparable(at: ReportAt, masked: ReadonlySet<string>): Record<string, Json> {
  const { generated_at: _generatedAt, blocks: rawBlocks, notes: rawNotes, ...rest } = at.report;
  const instances = (at.report['instances'] as Record<string, Json>[]).map((instance) => {
    const { wall_ms: _wallMs, status_detail: _statusDetail, ...kept } = instance;
    const extra = stopResumeRecords(storedEvents(path.join(at.studyDir, String(instance['dir']))));
    return { ...kept, events: Number(instance['events']) - extra.stops - extra.resumes - extra.stopHeads };
  });
  const fairness = structuredClone(at.report['fairness']) as { checks: FairnessCheck[] };
  for (const check of fairness.checks) {
    if (check.check === USAGE_CHECK) check.detail = check.detail.replace(USAGE_PART, (whole, group: string, _tokens: string, calls: string) => (masked.has(group) ? `${group} <tokens> tokens, ${calls} tool calls` : whole));
  }
  const out: Record<string, Json> = { ...(rest as Record<string, Json>), notes: (rawNotes as string[]).filter((n) => !SESSIONS_NOTE.test(n)), fairness: fairness as unknown as Json, instances };
  if (rawBlocks !== undefined) out['blocks'] = (rawBlocks as { turns: BlockTurns }[]).map((b) => ({ ...b, turns: { ok: b.turns.ok, first: b.turns.first } })) as unknown as Json;
  return replacePaths(out, at.studyDir) as Record<string, Json>;
}

/** Both reports with the differences above taken out (tokens masked for a group stopped in either). */
export function comparableReports(a: ReportAt, b: ReportAt): [Record<string, Json>, Record<string, Json>] {
  const masked = new Set([...stoppedGroupsOf(a), ...stoppedGroupsOf(b)]);
  return [comparable(a, masked), comparable(b, masked)];
}
