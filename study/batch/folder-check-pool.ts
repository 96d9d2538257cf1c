// The batch merge's folder checks and scoring spread over the machine's cores (issue 18 item 6,
// issue 34 item 4: 1,000 instances merged in under a minute): worker threads, each sent one
// folder at a time, at most one in flight per worker, so the queue is bounded by the worker count
// and a slow folder holds up only its worker; each folder is sent once and must be answered once.
// Results come back in the order of the inputs, each passed through the caller's `keep` as it
// arrives. With one core (or one folder) the checks run here, on this thread.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { checkInstanceFolder, type FolderCheckInput, type FolderCheckResult } from './instance-folder-check.js';

/** More workers than this would only contend for the disk. */
export const MAX_CHECK_WORKERS = 16;

/**
 * The worker's first lines: the code is TypeScript, run through tsx, whose loader a worker thread
 * does not inherit from `node --import tsx` (Node 20); so the worker registers it, then loads
 * folder-check-worker.ts. Both by absolute URL: the worker's resolution must not depend on the cwd.
 */
function workerBootstrap(): string {
  const tsx = import.meta.resolve('tsx/esm/api');
  const worker = new URL('./folder-check-worker.ts', import.meta.url).href;
  return `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(worker)}); });`;
}

/**
 * Checks (and scores) every folder; `keep` is applied to each result as it arrives, so the caller
 * holds only what it keeps of each (the merge: one pre-registration, not one per folder).
 */
export async function checkFolders(inputs: readonly FolderCheckInput[], keep: (result: FolderCheckResult) => FolderCheckResult = (r) => r, workers = Math.min(MAX_CHECK_WORKERS, availableParallelism())): Promise<FolderCheckResult[]> {
  const count = Math.max(1, Math.min(workers, inputs.length));
  if (count === 1) return inputs.map((input) => keep(checkInstanceFolder(input)));
  const results = new Array<FolderCheckResult>(inputs.length);
  let next = 0;
  const pool = Array.from({ length: count }, () => new Worker(workerBootstrap(), { eval: true }));
  try {
    await Promise.all(
      pool.map(
        (worker) =>
          new Promise<void>((resolve, reject) => {
            const send = (): void => {
              if (next >= inputs.length) return resolve();
              const id = next;
              next += 1;
              worker.postMessage({ id, input: inputs[id] });
            };
            worker.on('message', (message: { readonly id: number; readonly result: FolderCheckResult }) => {
              // Each folder is answered once: a second answer, or one for a folder never sent, is a broken worker.
              if (message.id >= next || results[message.id] !== undefined) return reject(new Error(`a folder-check worker answered folder #${message.id} ${results[message.id] === undefined ? 'before it was sent' : 'twice'}`));
              results[message.id] = keep(message.result);
              send();
            });
            worker.once('error', reject);
            worker.once('exit', (code) => {
              if (next < inputs.length || code !== 0) reject(new Error(`a folder-check worker ended (exit ${code}) before the merge's checks were done`));
            });
            send();
          }),
      ),
    );
  } finally {
    await Promise.all(pool.map((w) => w.terminate()));
  }
  return results;
}
