// The model server of a stall_model fault run (issue 20 item 3), as its own OS process so that the
// harness can freeze it (SIGSTOP) while the runtime's call to it is open and continue it later.
// It is the scripted OpenAI-compatible server of the benches (tools/bench/
// scripted-model-server.ts) with one script: every wake is answered with the smallest answer that
// counts toward usable data (nothing done, nothing claimed; a goal and its status in the
// checkpoint, as the default pre-registration's substantive rule asks) — the subject is not what
// this kind tests, the call is, and the run ends with usable data when the calls worked.
//
// Started by faults/model-server.ts: it prints one JSON line {base_url} on stdout once
// it listens, logs each chat request it answers on stderr (the run's controller.log), and exits
// when its standard input closes — the harness ended or died — so it never outlives its run.
import { startScriptedModelServer, SUBSTANTIVE_ANSWER } from './scripted-model-server.js';

const server = await startScriptedModelServer((request) => {
  process.stderr.write(`[model-server] ${new Date().toISOString()} answering request ${request.index} (${request.wakeId ?? 'no wake id'}, received ${new Date(request.receivedAt).toISOString()})\n`);
  return { kind: 'content', content: JSON.stringify(SUBSTANTIVE_ANSWER) };
});
process.stdout.write(`${JSON.stringify({ base_url: server.baseUrl })}\n`);
const stop = (): void => {
  void server.close().finally(() => process.exit(0));
};
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
process.once('SIGTERM', stop);
