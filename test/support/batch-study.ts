// The batch-study modes of `npm run study` (issue 18) as a scheduler's task runs them: a real
// node process per call, with an environment of its own — a temporary XDG_CONFIG_HOME (so no
// default key of the machine is touched), none of the scheduler variables of the shell the tests
// run in, and the ones a case gives (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, …). Also: key
// folders, a small pre-registration locked by a given key (n = 1, expandable to 2; 12-hour wakes,
// so an instance takes seconds), a plan written by --plan-only, and the same plan as a build
// before blocks wrote it (study_version 1.2.0, signed by its planner: one instance per task).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadOrCreateControllerKey, type ControllerKey } from '../../controller/key-store.js';
import { lockPrereg } from '../../design/prereg.js';
import { signStudyFile } from '../../study/batch/batch-plan-writer.js';
import { BATCH_FILES } from '../../study-contract/batch-plan.js';
import { BATCH_STUDY_VERSIONS_BY_INSTANCE, STUDY_FILES } from '../../study-contract/study-folder.js';
import { REPO } from './controller-run.js';

/** Variables a scheduler (or a shell) sets that a task reads: removed unless a case sets them. */
const TASK_VARIABLES = ['SLURM_ARRAY_TASK_ID', 'SLURM_ARRAY_JOB_ID', 'SLURM_JOB_ID', 'JOB_COMPLETION_INDEX', 'DS_TASK_ID', 'DS_SCRATCH', 'DS_FAULT_INJECTION'];

/** A CLI call's wall time bound: a task of one instance takes ~10 s on a loaded 2-core machine. */
export const CALL_TIMEOUT_MS = 120_000;

export interface StudyCall {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function taskEnv(xdgConfigHome: string, extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: xdgConfigHome };
  for (const name of TASK_VARIABLES) delete env[name];
  return { ...env, ...extra };
}

/** `node --import tsx cli/study.ts ARGS` with `env`; its exit code and output, whatever the code. */
export function study(args: readonly string[], env: NodeJS.ProcessEnv): Promise<StudyCall> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', path.join(REPO, 'cli', 'study.ts'), ...args], { cwd: REPO, env, timeout: CALL_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

export interface SpawnedStudy {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<number | null>;
}

/** The same, left running (to be signalled by its pid: its title is ds-controller, not its command line). */
export function spawnStudy(args: readonly string[], env: NodeJS.ProcessEnv): SpawnedStudy {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'cli', 'study.ts'), ...args], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** The one JSON object a --json call prints on stdout (a result, or `{ok: false, error}`). */
export function jsonOf(call: StudyCall): Record<string, unknown> {
  const lines = call.stdout.split('\n').filter((l) => l.trim() !== '');
  if (lines.length !== 1) throw new Error(`expected one JSON line on stdout, got ${lines.length}:\n${call.stdout.slice(0, 2000)}\nstderr:\n${call.stderr.slice(-2000)}`);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

/** The typed code a refused --json call ends with. */
export function errorCodeOf(call: StudyCall): string {
  const json = jsonOf(call) as { ok?: boolean; error?: { code?: string } };
  if (json.ok !== false || typeof json.error?.code !== 'string') throw new Error(`not a failure object: ${call.stdout.slice(0, 2000)}`);
  return json.error.code;
}

/** The message a refused --json call ends with. */
export function errorMessageOf(call: StudyCall): string {
  return (jsonOf(call) as { error: { message: string } }).error.message;
}

export function makeKey(keyDir: string): ControllerKey {
  return loadOrCreateControllerKey(keyDir);
}

/**
 * The bundled pre-registration with n = 1 per group (expandable to 2), a passing-count row for
 * n = 1 and 2, and 12-hour wakes (6 wakes: seconds an instance), written to `file` and locked by
 * `key`. The same content under another name locked by another key hashes the same (the lock is
 * beside the file): one pre-registration, one locked copy per key.
 */
export function writeLockedPrereg(file: string, key: ControllerKey): string {
  const prereg = JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')) as Record<string, Record<string, unknown>>;
  prereg['expansion_rule']!['initial_n_per_group'] = 1;
  prereg['expansion_rule']!['expanded_n_per_group'] = 2;
  prereg['thresholds']!['c_instances_passing'] = [
    { n: 1, at_least: 1 },
    { n: 2, at_least: 2 },
  ];
  prereg['wake_schedule']!['base_period_sim_minutes'] = 720;
  writeFileSync(file, JSON.stringify(prereg, null, 2));
  return lockCopy(file, file, key);
}

/** Copies `from` (without its lock) to `to` and locks it with `key`. */
export function lockCopy(from: string, to: string, key: ControllerKey): string {
  if (from !== to) copyFileSync(from, to);
  const locked = lockPrereg(to, key.keys, '2026-01-01T00:00:00.000Z');
  if (!locked.ok) throw new Error(`test setup: locking ${to} failed: ${locked.message}`);
  return to;
}

export interface PlanArgs {
  readonly out: string;
  readonly keyDir: string;
  readonly prereg: string;
  readonly studyId: string;
  readonly seed?: string;
  readonly n?: number;
  readonly allowKeys?: readonly string[];
  /** --exploratory's reason: an n the pre-registration does not say (issue 35: refused without it). */
  readonly exploratory?: string;
}

export function planArgs(p: PlanArgs): string[] {
  return ['--plan-only', '--out', p.out, '--n', String(p.n ?? 1), '--seed', p.seed ?? 'batch', '--study-id', p.studyId, '--key-dir', p.keyDir, '--prereg', p.prereg, '--same-uid', 'test: cluster jobs run as the job uid', ...(p.allowKeys ?? []).flatMap((k) => ['--allow-key', k]), ...(p.exploratory === undefined ? [] : ['--exploratory', p.exploratory]), '--json'];
}

/** --plan-only, which must succeed (a fixture): its JSON. */
export async function planStudy(p: PlanArgs, env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const r = await study(planArgs(p), env);
  if (r.code !== 0) throw new Error(`test setup: --plan-only exited ${r.code}: ${r.stderr.slice(-3000)}`);
  return jsonOf(r);
}

/** Resolves when `pattern` appears in `output()`; rejects after `timeoutMs`. */
export async function untilOutput(output: () => string, pattern: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(output())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${pattern}; output so far:\n${output().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Turns a plan --plan-only wrote into the plan a build before blocks wrote for the same command
 * (study_version 1.2.0: the same fields, one instance per task), signed again by its planner, as
 * that build signed it. Returns the study folder.
 */
export function asPlanBeforeBlocks(studyDir: string, planner: ControllerKey): string {
  const file = path.join(studyDir, STUDY_FILES.plan);
  const plan = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  writeFileSync(file, `${JSON.stringify({ ...plan, study_version: BATCH_STUDY_VERSIONS_BY_INSTANCE[0] }, null, 2)}\n`);
  rmSync(path.join(studyDir, BATCH_FILES.signature));
  signStudyFile(studyDir, STUDY_FILES.plan, BATCH_FILES.signature, plan['study_id'] as string, planner);
  return studyDir;
}

/** The command inside the first backticks of `message` that starts with `npm run study -- `, as the arguments of study() (single-quoted words unquoted). */
export function adviceArgs(message: string): string[] {
  const m = /`npm run study -- ([^`]+)`/.exec(message);
  if (!m) throw new Error(`no \`npm run study -- …\` advice in: ${message}`);
  const words: string[] = [];
  for (const w of m[1]!.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)) words.push(w[1] !== undefined ? w[1].replaceAll(`'\\''`, "'") : w[2]!);
  return words;
}
