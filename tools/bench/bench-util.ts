// Helpers shared by the benchmarks that `npm run bench` (bench.ts) runs.
import { performance } from 'node:perf_hooks';

/** Progress and diagnostics go to stderr: with --json, stdout carries one JSON object only. */
export function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

// A bad flag is the commands' one UsageError: bench.ts prints it with the usage and exits 2.
import { UsageError } from '../../cli/command-line.js';
export { UsageError };

export function positiveInt(flag: string, text: string | undefined, fallback: number, max: number, min = 1): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text)) throw new UsageError(`--${flag} expects a positive integer, got ${JSON.stringify(text)}`);
  const value = Number(text);
  if (value < min || value > max) throw new UsageError(`--${flag} must be between ${min} and ${max}, got ${value}`);
  return value;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function roundTo(value: number, digits = 0): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function formatRate(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** Runs `fn` and returns its result with the wall time it took. */
export function timeIt<T>(fn: () => T): { value: T; ms: number } {
  const startMs = performance.now();
  const value = fn();
  return { value, ms: performance.now() - startMs };
}
