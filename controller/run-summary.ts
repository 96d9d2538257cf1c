// What an instance did, counted from its store after the run (issue 5 item 9's summary).
// Read-only: it opens events.db read-only once the writer has stopped.
import path from 'node:path';
import { z } from 'zod';
import { RUN_FILES } from '../schema/run-files.js';
import { openStoreReadOnly } from '../writer/store-reader.js';

export const RunSummary = z.strictObject({
  events: z.number().int(),
  wakes_started: z.number().int(),
  wakes_ended: z.number().int(),
  model_calls: z.number().int(),
  model_failures: z.number().int(),
  proposals: z.number().int(),
  executions: z.number().int(),
  denials: z.number().int(),
  tool_failures: z.number().int(),
  claims: z.number().int(),
  refused_appends: z.number().int(),
  plan_revisions: z.strictObject({ proposed: z.number().int(), accepted: z.number().int(), rejected: z.number().int() }),
  checkpoints: z.number().int(),
  process_restarts: z.number().int(),
  unknown_outcomes: z.number().int(),
});
export type RunSummary = z.infer<typeof RunSummary>;

export function summarizeRun(runDir: string): RunSummary {
  const db = openStoreReadOnly(path.join(runDir, RUN_FILES.store));
  try {
    const rows = db.prepare('select event_type, count(*) as n from events group by event_type').all() as { event_type: string; n: number }[];
    const count = (type: string): number => rows.find((r) => r.event_type === type)?.n ?? 0;
    const decisions = db.prepare("select json_extract(envelope, '$.payload.decision') as d, count(*) as n from events where event_type = 'ActionEvent.PermissionDecided' group by d").all() as { d: string; n: number }[];
    const executions = count('ActionEvent.ToolSucceeded') + count('MemoryEvent.TaskBoardChanged') + count('MemoryEvent.JournalEntryWritten');
    return RunSummary.parse({
      events: rows.reduce((sum, r) => sum + r.n, 0),
      wakes_started: count('ExperimentEvent.WakeStarted'),
      wakes_ended: count('ExperimentEvent.WakeEnded'),
      model_calls: count('ModelOutputEvent.ModelAnswered') + count('ModelOutputEvent.ModelCallFailed'),
      model_failures: count('ModelOutputEvent.ModelCallFailed'),
      proposals: count('ActionEvent.ActionProposed'),
      executions,
      denials: decisions.find((d) => d.d === 'deny')?.n ?? 0,
      tool_failures: count('ActionEvent.ToolFailed'),
      claims: count('MemoryEvent.ClaimRecorded'),
      refused_appends: count('SystemEvent.AppendRejected'),
      plan_revisions: { proposed: count('PlanEvent.PlanRevisionProposed'), accepted: count('PlanEvent.PlanRevisionAccepted'), rejected: count('PlanEvent.PlanRevisionRejected') },
      checkpoints: count('ExperimentEvent.CheckpointRecorded'),
      process_restarts: count('SystemEvent.ProcessRestarted'),
      unknown_outcomes: count('ActionEvent.ToolOutcomeUnknown'),
    });
  } finally {
    db.close();
  }
}
