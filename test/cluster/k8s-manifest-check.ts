// What cluster/k8s/*.yaml must say for a study to run as docs/cluster.md describes, checked on
// the parsed YAML (no Kubernetes here: nothing is applied). Each check returns the problems it
// finds, as sentences; [] is a manifest that says everything below.
// The YAML is parsed by the `yaml` npm package when node_modules has it, else by Python's yaml
// (Debian's python3-yaml; .ci/run installs it when missing).
import { spawnSync } from 'node:child_process';

export type Doc = Record<string, unknown>;

/** Every document of a YAML file, or the reason it cannot be parsed here. */
export async function parseYamlDocuments(text: string): Promise<{ docs: Doc[] } | { missing: string }> {
  const moduleName = 'yaml';
  try {
    const yaml = (await import(moduleName)) as { parseAllDocuments: (t: string) => { toJSON(): unknown; errors: unknown[] }[] };
    const docs = yaml.parseAllDocuments(text);
    const errors = docs.flatMap((d) => d.errors);
    if (errors.length > 0) throw new Error(`YAML errors: ${String(errors[0])}`);
    return { docs: docs.map((d) => d.toJSON() as Doc) };
  } catch (error) {
    if (!(error instanceof Error && /Cannot find (package|module)/.test(error.message))) throw error;
  }
  const py = spawnSync('python3', ['-c', 'import sys, json, yaml; json.dump(list(yaml.safe_load_all(sys.stdin)), sys.stdout)'], { input: text, encoding: 'utf8', timeout: 30_000 });
  if (py.error !== undefined || (py.status !== 0 && /No module named|not found/.test(py.stderr ?? ''))) {
    return { missing: `no YAML parser: neither the yaml npm package nor python3 with yaml (apt-get install -y --no-install-recommends python3-yaml) is here (${py.error?.message ?? py.stderr.trim()})` };
  }
  if (py.status !== 0) throw new Error(`python3 yaml could not parse the file: ${py.stderr.trim()}`);
  return { docs: (JSON.parse(py.stdout) as Doc[]).filter((d) => d !== null) };
}

const at = (value: unknown, ...keys: (string | number)[]): unknown => keys.reduce<unknown>((v, k) => (v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined), value);
const list = (value: unknown): Doc[] => (Array.isArray(value) ? (value as Doc[]) : []);

interface ExitRule {
  action: string;
  containerName: string | undefined;
  operator: string;
  values: number[];
}

function exitRules(job: Doc): ExitRule[] {
  return list(at(job, 'spec', 'podFailurePolicy', 'rules'))
    .filter((r) => at(r, 'onExitCodes') !== undefined)
    .map((r) => ({ action: String(r['action']), containerName: at(r, 'onExitCodes', 'containerName') as string | undefined, operator: String(at(r, 'onExitCodes', 'operator')), values: (at(r, 'onExitCodes', 'values') as number[] | undefined) ?? [] }));
}

/** The first rule that matches exit `code` of `container` (the policy's own order), or null. */
function ruleFor(job: Doc, container: string, code: number): ExitRule | null {
  for (const rule of exitRules(job)) {
    if (rule.containerName !== undefined && rule.containerName !== container) continue;
    const listed = rule.values.includes(code);
    if ((rule.operator === 'In' && listed) || (rule.operator === 'NotIn' && !listed)) return rule;
  }
  return null;
}

/** Problems common to every pod of a study: not root, the key folder copied from a Secret, the study on a PVC. */
function podProblems(name: string, podSpec: unknown, container: Doc, keyDirArg: string | undefined): string[] {
  const problems: string[] = [];
  if (at(podSpec, 'restartPolicy') !== 'Never') problems.push(`${name}: restartPolicy must be Never (podFailurePolicy needs it; every retry is a new pod), is ${String(at(podSpec, 'restartPolicy'))}`);
  const uid = at(podSpec, 'securityContext', 'runAsUser');
  if (at(podSpec, 'securityContext', 'runAsNonRoot') !== true || typeof uid !== 'number' || uid === 0) problems.push(`${name}: the pod must run as a non-root uid (securityContext runAsNonRoot: true, runAsUser not 0): cluster jobs are not root, the plan says --same-uid`);
  const volumes = new Map(list(at(podSpec, 'volumes')).map((v) => [String(v['name']), v]));
  const mountOf = (c: Doc, pathPrefix: string): Doc | undefined => {
    const mount = list(c['volumeMounts']).find((m) => pathPrefix === String(m['mountPath']) || pathPrefix.startsWith(`${String(m['mountPath'])}/`));
    return mount === undefined ? undefined : volumes.get(String(mount['name']));
  };
  const studyValue = list(container['env']).find((e) => e['name'] === 'DS_STUDY')?.['value'];
  if (typeof studyValue !== 'string') problems.push(`${name}: env DS_STUDY (the study folder) is missing`);
  else if (mountOf(container, studyValue)?.['persistentVolumeClaim'] === undefined) problems.push(`${name}: the study folder ${studyValue} must be on a PersistentVolumeClaim shared by every pod`);
  if (keyDirArg === undefined) problems.push(`${name}: --key-dir is not given`);
  else {
    const keyVolume = mountOf(container, keyDirArg);
    if (at(keyVolume, 'emptyDir') === undefined) problems.push(`${name}: the key folder ${keyDirArg} must be an emptyDir the init container fills (a Secret volume's files are root-owned symlinks, which the key store refuses)`);
    const init = list(at(podSpec, 'initContainers')).find((c) => mountOf(c, keyDirArg) === keyVolume && keyVolume !== undefined);
    const script = list(init?.['command']).join(' ');
    if (init === undefined) problems.push(`${name}: no init container fills the key folder ${keyDirArg}`);
    else {
      if (!/mkdir -m 0700 /.test(script)) problems.push(`${name}: the init container must make the key folder with mode 0700`);
      if (!/chmod 0400 \S*controller\.key/.test(script)) problems.push(`${name}: the init container must leave controller.key at mode 0400`);
      const secret = list(init['volumeMounts']).map((m) => volumes.get(String(m['name']))).find((v) => v?.['secret'] !== undefined);
      const mode = at(secret, 'secret', 'defaultMode');
      if (secret === undefined) problems.push(`${name}: the key must come from a Secret volume`);
      else if (typeof mode !== 'number' || (mode & 0o007) !== 0 || (mode & 0o222) !== 0) problems.push(`${name}: the Secret volume must be readable by the pod's group only, no write, nothing for others (defaultMode 0440), is ${typeof mode === 'number' ? `0${mode.toString(8)}` : String(mode)}`);
    }
  }
  return problems;
}

function argAfter(command: readonly unknown[], flag: string): string | undefined {
  const i = command.indexOf(flag);
  return i >= 0 && typeof command[i + 1] === 'string' ? (command[i + 1] as string) : undefined;
}

/** The CPUs a block task asks for: three instances, one an instance (docs/cluster.md). */
export const BLOCK_TASK_CPUS = 3;

/** A Kubernetes CPU quantity ("3", "2500m", 3) in CPUs; NaN when it is none. */
function cpusOf(quantity: unknown): number {
  if (typeof quantity === 'number') return quantity;
  const m = typeof quantity === 'string' ? /^([0-9]+(?:\.[0-9]+)?)(m?)$/.exec(quantity) : null;
  return m ? Number(m[1]) / (m[2] === 'm' ? 1000 : 1) : Number.NaN;
}

/** study-indexed-job.yaml: one Indexed Job, one pod per block (replicate k+1's A, B and C). */
export function indexedJobProblems(docs: readonly Doc[]): string[] {
  if (docs.length !== 1) return [`expected one document, found ${docs.length}`];
  const job = docs[0]!;
  const problems: string[] = [];
  if (job['apiVersion'] !== 'batch/v1' || job['kind'] !== 'Job') problems.push(`not a batch/v1 Job: ${String(job['apiVersion'])} ${String(job['kind'])}`);
  const spec = (job['spec'] ?? {}) as Doc;
  if (spec['completionMode'] !== 'Indexed') problems.push(`completionMode must be Indexed (the pod's index is the block's), is ${String(spec['completionMode'])}`);
  for (const field of ['completions', 'parallelism', 'backoffLimitPerIndex']) {
    const v = spec[field];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) problems.push(`${field} must be a whole number ≥ 1, is ${String(v)}`);
  }
  const podSpec = at(spec, 'template', 'spec');
  const container = list(at(podSpec, 'containers')).find((c) => c['name'] === 'study');
  if (container === undefined) return [...problems, 'no container named study (the podFailurePolicy rules name it)'];
  const command = list(container['command']) as unknown[];
  if (argAfter(command, '--block') !== 'task') problems.push('the container must run --block task (one block per pod, its index from JOB_COMPLETION_INDEX)');
  if (command.includes('--instance') || command.includes('--shard')) problems.push('the container must not run --instance or --shard: one instance per pod would not keep a block together (a plan of this build refuses it)');
  const cpus = cpusOf(at(container, 'resources', 'requests', 'cpu'));
  if (!(cpus >= BLOCK_TASK_CPUS)) problems.push(`a block pod must request at least ${BLOCK_TASK_CPUS} CPUs (three instances, one an instance), requests ${String(at(container, 'resources', 'requests', 'cpu'))}`);
  if (argAfter(command, '--out') !== '$(DS_STUDY)') problems.push('the container must give --out $(DS_STUDY)');
  const scratch = argAfter(command, '--scratch');
  const scratchVolume = list(container['volumeMounts']).find((m) => m['mountPath'] === scratch);
  const volume = list(at(podSpec, 'volumes')).find((v) => v['name'] === scratchVolume?.['name']);
  if (scratch === undefined || at(volume, 'emptyDir') === undefined || at(volume, 'emptyDir', 'medium') === 'Memory') problems.push(`--scratch must be a disk-backed emptyDir mounted at its path (node-local, not shared, not tmpfs), is ${String(scratch)}`);
  if (!list(container['env']).some((e) => e['name'] === 'DS_TASK_ID')) problems.push('env DS_TASK_ID must be set (what a retry of the same block keeps: the claim takeover)');
  const grace = at(podSpec, 'terminationGracePeriodSeconds');
  if (typeof grace !== 'number' || grace < 120) problems.push(`terminationGracePeriodSeconds must give the stop time to be recorded and published (≥ 120 s), is ${String(grace)}`);
  const two = ruleFor(job, 'study', 2);
  if (two?.action !== 'FailIndex') problems.push(`exit 2 (misuse, a plan it cannot run) must fail the index without a retry (FailIndex), is ${two?.action ?? 'no rule (counted, retried)'}`);
  const three = ruleFor(job, 'study', 3);
  if (three !== null && !['Count', 'Ignore'].includes(three.action)) problems.push(`exit 3 (stopped, resumable) must be retried (Count or Ignore), is ${three.action}`);
  const disruption = list(at(spec, 'podFailurePolicy', 'rules')).find((r) => list(r['onPodConditions']).some((c) => c['type'] === 'DisruptionTarget'));
  if (disruption?.['action'] !== 'Ignore') problems.push('a pod evicted or preempted (DisruptionTarget) must be retried without counting (Ignore)');
  return [...problems, ...podProblems('study pod', podSpec, container, argAfter(command, '--key-dir'))];
}

/** study-merge-job.yaml: the expand Job and the merge Job. */
export function mergeJobsProblems(docs: readonly Doc[]): string[] {
  const problems: string[] = [];
  const byStep = new Map(docs.map((d) => [String(at(d, 'metadata', 'labels', 'ds/step')), d]));
  for (const [step, flags] of [
    ['expand', ['--expand']],
    ['merge', ['--merge', '--recompute']],
  ] as const) {
    const job = byStep.get(step);
    if (job === undefined) {
      problems.push(`no Job labelled ds/step: ${step}`);
      continue;
    }
    if (job['kind'] !== 'Job' || at(job, 'spec', 'completionMode') === 'Indexed') problems.push(`${step}: must be a plain Job of one pod`);
    if (at(job, 'spec', 'backoffLimit') !== 0) problems.push(`${step}: backoffLimit must be 0 (its exit codes are answers; a retry gives the same one), is ${String(at(job, 'spec', 'backoffLimit'))}`);
    const podSpec = at(job, 'spec', 'template', 'spec');
    const container = list(at(podSpec, 'containers'))[0];
    if (container === undefined) {
      problems.push(`${step}: no container`);
      continue;
    }
    const command = list(container['command']) as unknown[];
    const text = command.join(' ');
    for (const flag of flags) if (!text.includes(flag)) problems.push(`${step}: the command does not run ${flag}`);
    const keyDir = argAfter(command, '--key-dir') ?? /--key-dir (\S+)/.exec(text)?.[1];
    problems.push(...podProblems(step, podSpec, container, keyDir));
  }
  return problems;
}
