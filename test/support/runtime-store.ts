// A store written around ds-runtime wakes the way the controller writes one
// (controller/controller-events.ts; the contract in design/run-contract.ts):
// SystemEvent.SubjectInitialized first, then per wake ExperimentEvent.WakeStarted
// {wake_id, visible_to_seq = the seq before it, budget}, the runtime's wake, the
// CheckpointRecorded of what the runtime reported, and ExperimentEvent.WakeEnded. The
// runtime projects every event it reads with the subject projector, so a store without these
// makes it refuse. Also a workspace folder holding source notes for the subject's read task.
// For tests of the ds-runtime process (test/runtime/runtime-process.test.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { EventEnvelope } from '../../schema/envelope.js';
import type { PayloadOf } from '../../schema/event-catalog.js';
import type { WakeDone } from '../../runtime/protocol.js';
import type { RuntimeWakeRequest } from '../../runtime/spawn.js';
import type { WriterClient } from '../../writer/client.js';
import { WRITER_LIMITS, type EventDraft } from '../../writer/protocol.js';
import { draft, type Budget } from './subject-events.js';
import { tempDir } from './writer-fixture.js';

export const RUNTIME_START_AT = '2026-07-20T08:00:00.000Z';
export const RUNTIME_GOAL_ID = 'goal-commute-report';
const WAKE_PERIOD_MS = 2 * 60 * 60 * 1000;

/**
 * The subject's initial task board. Titles follow what the reference policy understands
 * (runtime/model-adapters/reference-policy.ts): "Read … sources/" reads that folder's files
 * (files/read → ExecutionIntentRecorded → ToolSucceeded), a title naming a file path
 * creates that file once the tasks it depends on are done.
 */
export const RUNTIME_TASKS = [
  { task_id: 'task-read-sources', title: 'Read the source notes in sources/', priority: 1, depends_on: [] },
  { task_id: 'task-extract-findings', title: 'Extract findings with figures and sources into notes/findings.md', priority: 2, depends_on: ['task-read-sources'] },
] as const;

/** The workspace's files (workspace-relative path → text). */
export const WORKSPACE_FILES: Readonly<Record<string, string>> = {
  'sources/lane-counts.md': '# Bike lane counts\n\n- Corridor A: 2,870 riders per weekday with the protected lane\n- Corridor B: 1,140 riders per weekday\n',
  'sources/survey.md': '# Commute survey 2025\n\n- 61 % of new cycling commuters still ride after 12 weeks\n',
};

/** A new workspace folder (absolute path) holding WORKSPACE_FILES. */
export function runtimeWorkspace(): string {
  const dir = tempDir('ds-workspace-');
  for (const [relative, text] of Object.entries(WORKSPACE_FILES)) {
    const file = path.join(dir, relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return dir;
}

export function subjectInitializedDraft(): EventDraft {
  return draft(
    'SystemEvent.SubjectInitialized',
    {
      identity: { name: 'Research assistant R-1', description: 'A research assistant keeping a workspace on urban cycling commutes.' },
      identity_schema_version: '1.0.0',
      goal: { goal_id: RUNTIME_GOAL_ID, description: 'Write an evidence-based report on urban cycling commutes; every figure cites its source.', deadline_at: '2026-07-23T08:00:00.000Z' },
      tasks: RUNTIME_TASKS.map((t) => ({ ...t, depends_on: [...t.depends_on] })),
      journal_first_page: { entry_id: 'journal-0001', text: 'My goal: an evidence-based report on urban cycling commutes. Sources are in sources/.' },
    },
    { occurred_at: RUNTIME_START_AT, idempotency_key: 'subject-initialized' },
  );
}

/** A wake the controller has opened: its WakeStarted is in the store. */
export interface OpenWake {
  readonly wakeId: string;
  /** What the controller sends the runtime: visible_to_seq is the seq before WakeStarted. */
  readonly request: RuntimeWakeRequest;
  readonly started: { readonly seq: number; readonly event_id: string };
}

/** The controller's side of the store, over an experiment connection. */
export class ControllerScript {
  private wakes = 0;

  constructor(
    /** Replace it after a writer restart. */
    public client: WriterClient,
    private readonly budget: Budget,
  ) {}

  async initialize(): Promise<number> {
    const result = await this.client.append([subjectInitializedDraft()]);
    return result.events[0]!.seq;
  }

  /** Appends WakeStarted at head + 1 (expect_head makes sure nothing slips in between) with visible_to_seq = head. */
  async startWake(): Promise<OpenWake> {
    this.wakes += 1;
    const wakeId = `wake-${String(this.wakes).padStart(4, '0')}`;
    const wakeAt = new Date(Date.parse(RUNTIME_START_AT) + this.wakes * WAKE_PERIOD_MS).toISOString();
    const head = await this.client.head();
    const result = await this.client.append(
      [draft('ExperimentEvent.WakeStarted', { wake_id: wakeId, visible_to_seq: head.seq, budget: { ...this.budget } }, { occurred_at: wakeAt, idempotency_key: `wake:${wakeId}:started` })],
      head,
    );
    const started = result.events[0]!;
    return { wakeId, request: { wake_id: wakeId, wake_at: wakeAt, visible_to_seq: head.seq, budget: { ...this.budget } }, started: { seq: started.seq, event_id: started.event_id } };
  }

  /** After the runtime's answer: the checkpoint it reported (if any), then WakeEnded. */
  async endWake(wake: OpenWake, done: WakeDone | null, outcome: PayloadOf<'ExperimentEvent.WakeEnded'>['outcome'] = 'completed'): Promise<void> {
    const at = { occurred_at: wake.request.wake_at };
    const drafts: EventDraft[] = [];
    if (done) drafts.push(draft('ExperimentEvent.CheckpointRecorded', { wake_id: wake.wakeId, ...done.checkpoint }, { ...at, idempotency_key: `wake:${wake.wakeId}:checkpoint` }));
    drafts.push(draft('ExperimentEvent.WakeEnded', { wake_id: wake.wakeId, outcome }, { ...at, idempotency_key: `wake:${wake.wakeId}:ended` }));
    await this.client.append(drafts);
  }
}

/** Events fromSeq..toSeq (inclusive), in pages the writer allows. */
export async function readEvents(client: WriterClient, fromSeq: number, toSeq: number): Promise<EventEnvelope[]> {
  const out: EventEnvelope[] = [];
  // Each page advances by at least one event or stops: bounded by the span.
  for (let next = fromSeq; next <= toSeq; ) {
    const page = await client.read({ from_seq: next, limit: Math.min(WRITER_LIMITS.maxReadPage, toSeq - next + 1) });
    if (page.events.length === 0) break;
    out.push(...page.events);
    next += page.events.length;
  }
  return out;
}
