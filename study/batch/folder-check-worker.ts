// A worker thread of the batch merge (folder-check-pool.ts): checks the folders it is sent, one
// message each, and answers with the plain result. It holds nothing between messages.
import { parentPort } from 'node:worker_threads';
import { checkInstanceFolder, type FolderCheckInput } from './instance-folder-check.js';

if (parentPort === null) throw new Error('folder-check-worker.ts runs as a worker thread of the batch merge, not on its own');
const port = parentPort;
port.on('message', (message: { readonly id: number; readonly input: FolderCheckInput }) => {
  port.postMessage({ id: message.id, result: checkInstanceFolder(message.input) });
});
