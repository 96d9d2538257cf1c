// Talking to a real Slurm from a test: whether it is here, submitting, reading a job's state
// with `scontrol show job` (the CI cluster has no accounting, so no sacct), signalling a task,
// and the diagnostics printed when a test fails. Every call is bounded in time.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** A Slurm command answers in milliseconds; this only stops a hung controller from eating the test. */
const SLURM_CALL_TIMEOUT_MS = 15_000;

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function runCommand(command: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<CommandResult> {
  return new Promise((resolve) => {
    execFile(command, args, { env: options.env ?? process.env, cwd: options.cwd, timeout: options.timeoutMs ?? SLURM_CALL_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -1;
      resolve({ code, stdout, stderr: error !== null && code === -1 ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

/** Why this machine cannot run the Slurm test, or null when it can (sbatch on PATH, the node up). */
export function slurmMissing(): string | null {
  const which = spawnSync('sh', ['-c', 'command -v sbatch'], { encoding: 'utf8' });
  if (which.status !== 0) return 'sbatch is not on PATH: install Slurm (apt-get install -y --no-install-recommends slurm-wlm munge) and start a one-node cluster with `bash .ci/slurm-up` as root';
  const sinfo = spawnSync('sinfo', ['-h', '-o', '%T'], { encoding: 'utf8', timeout: SLURM_CALL_TIMEOUT_MS });
  const states = (sinfo.stdout ?? '').trim().split('\n').filter((s) => s !== '');
  if (sinfo.status !== 0 || !states.some((s) => /^(idle|mixed|allocated)/.test(s))) {
    return `sbatch is here but no node is up (sinfo: ${JSON.stringify((sinfo.stdout ?? '').trim() || (sinfo.stderr ?? '').trim().slice(0, 300))}): run \`bash .ci/slurm-up\` as root`;
  }
  return null;
}

/** One `scontrol show job -o` line as its Key=Value fields. */
export type JobFields = Readonly<Record<string, string>>;

function parseJobLine(line: string): JobFields {
  const fields: Record<string, string> = {};
  for (const m of line.matchAll(/(?:^|\s)([A-Za-z][A-Za-z0-9:/_]*)=(\S*)/g)) fields[m[1]!] = m[2]!;
  return fields;
}

/** Every record of a job (an array job gives one per task); [] when Slurm no longer knows it. */
export async function showJob(jobId: string): Promise<JobFields[]> {
  const r = await runCommand('scontrol', ['show', 'job', '-o', jobId]);
  if (r.code !== 0) return [];
  return r.stdout.split('\n').filter((l) => l.trim() !== '').map(parseJobLine);
}

/** The record of array task `task` of `arrayJobId`, or null. */
export async function arrayTask(arrayJobId: string, task: number): Promise<JobFields | null> {
  return (await showJob(`${arrayJobId}_${task}`)).find((f) => f['ArrayTaskId'] === String(task)) ?? null;
}

export const FINISHED_STATES = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE', 'PREEMPTED']);

/** `ExitCode=4:0` → 4 (the script's exit status; the part after the colon is the signal). */
export function exitStatusOf(fields: JobFields): number | null {
  const m = /^(\d+):(\d+)$/.exec(fields['ExitCode'] ?? '');
  return m ? Number(m[1]) : null;
}

/** `sbatch --parsable ...` → the job id (the part before any `;cluster`). */
export async function submit(args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  const r = await runCommand('sbatch', ['--parsable', ...args], { env, cwd });
  if (r.code !== 0) throw new Error(`sbatch ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
  return r.stdout.trim().split(';')[0]!;
}

/** Polls `probe` every `everyMs` until it returns a value (not null), for at most `timeoutMs`. */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | null> | T | null, everyMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function readIfThere(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

/** What a person needs when the test fails: every job's record and the tail of every output file. */
export async function diagnostics(jobIds: readonly string[], logDir: string): Promise<string> {
  const parts: string[] = [];
  for (const id of jobIds) {
    const r = await runCommand('scontrol', ['show', 'job', id]);
    parts.push(`--- scontrol show job ${id} (exit ${r.code})\n${r.stdout}${r.stderr}`);
  }
  const q = await runCommand('squeue', ['-a']);
  parts.push(`--- squeue -a\n${q.stdout}${q.stderr}`);
  if (existsSync(logDir)) {
    for (const file of readdirSync(logDir).sort()) {
      const text = readFileSync(path.join(logDir, file), 'utf8');
      parts.push(`--- ${file} (last 60 lines)\n${text.split('\n').slice(-60).join('\n')}`);
    }
  }
  return parts.join('\n');
}
