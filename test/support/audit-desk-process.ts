// The real `npm run audit -- DIR --port 0` process, left serving for a browser test: started,
// its URL read from the line it prints once it serves, and stopped by its pid after.
import { spawnCli, type SpawnedCli } from './cli.js';
import { waitForOutput } from './controller-run.js';

const SERVING = /serving (http:\/\/127\.0\.0\.1:\d+)\//;

export interface DeskProcess {
  readonly desk: SpawnedCli;
  /** The desk's origin, without a trailing slash. */
  readonly url: string;
}

export async function spawnAuditDesk(dir: string, startTimeoutMs: number): Promise<DeskProcess> {
  const desk = spawnCli('audit', [dir, '--port', '0']);
  await waitForOutput(desk.output, SERVING, startTimeoutMs);
  return { desk, url: SERVING.exec(desk.output())![1]! };
}

/** Stops the desk if it still runs (SIGKILL: it writes nothing, so nothing is lost). */
export async function stopAuditDesk(process: DeskProcess | undefined): Promise<void> {
  if (process && process.desk.child.exitCode === null) {
    process.desk.child.kill('SIGKILL');
    await process.desk.exited;
  }
}
