// A stand-in for runNewInstance in study tests: instead of running an instance, copies a prepared
// real run folder into the instance's folder. The study then scores real, signed runs, in seconds.
import { cpSync } from 'node:fs';
import type { Group, InstanceResult, NewInstanceOptions } from '../../controller/instance-runner.js';

export interface CopyCall {
  readonly group: Group;
  readonly replicate: number;
}

/** `from` names the run to copy; every call is pushed to `calls`; `afterCopy` may forge the copy. */
export function copyingRunner(calls: CopyCall[], from: (group: Group, replicate: number) => string, afterCopy?: (dir: string, call: CopyCall) => void) {
  return async (o: NewInstanceOptions): Promise<InstanceResult> => {
    const call = { group: o.group, replicate: o.replicate };
    calls.push(call);
    cpSync(from(o.group, o.replicate), o.runDir, { recursive: true });
    afterCopy?.(o.runDir, call);
    o.log(`wake-0001 at h00:00 (copied)`);
    return {
      status: 'finished',
      runDir: o.runDir,
      experimentId: o.experimentId,
      groupBlindId: o.groupBlindId,
      isolation: { mode: 'same-uid', reason: 'copied in a test' },
      isolationSummary: 'copied',
      wakesTotal: 0,
      wakesRun: 0,
      head: { seq: 1, event_hash: `sha256:${'0'.repeat(64)}` },
      finalHead: null,
      stopReason: null,
      notes: [],
    };
  };
}
