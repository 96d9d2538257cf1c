// npm run bench: the store's two throughput questions in one run, one table.
//   append (append-bench.ts): the writer process against raw SQLite doing the same durable work
//   replay (replay-bench.ts): rebuilding state from a store's events against SQLite reading
//                             and JSON.parse-ing the same rows; restore and state-at-seq
//                             from snapshots against replay from seq 1
// It is a measurement, not a test: it exits 0 when an aim is missed and says MISSED.
//
//   npm run bench -- [--events N] [--batch B] [--rounds R] [--replay-events M] [--json]
//     N, B, R: see append-bench.ts. M: events in the replay store (default 1,000,000;
//     building it dominates the run time, so a smaller M is the way to a quick run).
//
// With --json, stdout carries exactly one JSON object: the append report's keys (raw,
// ours, ratios, aims, params) with `replay` beside them, and ratios/aims holding
// append_single, append_batched and replay. Everything else goes to stderr (the writer
// child logs there too; the project's .npmrc silences npm's banner).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { APPEND_USAGE, appendParams, runAppendBench } from './append-bench.js';
import { log, positiveInt, UsageError, type Aim } from './bench-util.js';
import { DEFAULT_REPLAY_EVENTS, MAX_REPLAY_EVENTS, MIN_REPLAY_EVENTS, REPLAY_ROUNDS, replayTableLines, runReplayBench, type ReplayBenchParams } from './replay-bench.js';

const USAGE = `usage: npm run bench -- ${APPEND_USAGE} [--replay-events M] [--json]`;

function parseCommandLine(argv: string[]): { append: ReturnType<typeof appendParams>; replay: ReplayBenchParams; json: boolean } {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        events: { type: 'string' },
        batch: { type: 'string' },
        rounds: { type: 'string' },
        'replay-events': { type: 'string' },
        json: { type: 'boolean', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  return {
    append: appendParams(values),
    replay: { events: positiveInt('replay-events', values['replay-events'], DEFAULT_REPLAY_EVENTS, MAX_REPLAY_EVENTS, MIN_REPLAY_EVENTS) },
    json: values.json === true,
  };
}

async function main(): Promise<number> {
  let params;
  try {
    params = parseCommandLine(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`${error.message}\n${USAGE}\n`);
    return 2;
  }
  const startMs = performance.now();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ds-bench-'));
  // The replay store runs to a gigabyte; an interrupted run should not leave it behind.
  // The handler runs between phases and build batches (a replay is one synchronous call).
  const onSignal = (signal: NodeJS.Signals): void => {
    rmSync(dir, { recursive: true, force: true });
    process.stderr.write(`[bench] ${signal}: removed ${dir}\n`);
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    log(`temp dir ${dir}`);
    const append = await runAppendBench(params.append, dir);
    const { ratio: replayRatio, aim: replayAim, ...replay } = await runReplayBench(params.replay, dir);

    const ratios: Record<string, number> = { ...append.ratios, replay: replay.replay.events_per_second / replay.raw_read_parse.events_per_second };
    const aims: Record<string, Aim> = { ...append.report.aims, replay: replayAim };
    const missed = Object.keys(aims).filter((name) => !aims[name]!.met);
    const report = {
      ...append.report,
      ratios: { ...append.report.ratios, replay: replayRatio },
      aims,
      replay: { ...replay, params: { events: params.replay.events, aggregate: `raw_read_parse and replay: ${REPLAY_ROUNDS} interleaved rounds, pooled; the rest one pass each` } },
    };
    log(`bench took ${((performance.now() - startMs) / 1_000).toFixed(0)} s`);

    if (params.json) {
      process.stdout.write(`${JSON.stringify(report)}\n`);
      for (const name of missed) log(`MISSED aim ${name}: ratio ${ratios[name]!.toFixed(3)} < ${aims[name]!.min_ratio}`);
      return 0;
    }
    const out: string[] = ['', ...append.tableLines, '', ...replayTableLines({ ...replay, ratio: replayRatio, aim: replayAim }), ''];
    for (const [name, a] of Object.entries(aims)) {
      out.push(`  ratio ${name.padEnd(14)} ${ratios[name]!.toFixed(3).padStart(7)}   aim >= ${a.min_ratio.toFixed(2)}   ${a.met ? 'met' : 'MISSED'}`);
    }
    out.push('');
    for (const name of missed) out.push(`MISSED: ${name} reaches ${ratios[name]!.toFixed(3)} of raw; the aim is >= ${aims[name]!.min_ratio}`);
    if (missed.length === 0) out.push('all aims met');
    process.stdout.write(`${out.join('\n')}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exitCode = 1;
  },
);
