// The Kubernetes job files (cluster/k8s/) parse and say what docs/cluster.md says: an Indexed
// Job whose pod index is the block (--block task, the CPUs of three instances), exit 2 never
// retried, exit 3 retried, node-local scratch,
// the study on a PVC, the key copied from a Secret into a 0700 folder, not root; the expand and
// merge Jobs. Each check is shown catching a forged copy. They were NOT run on a cluster:
// Kubernetes is not here, so this is all that is checked of them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { REPO } from '../support/controller-run.js';
import { indexedJobProblems, mergeJobsProblems, parseYamlDocuments, type Doc } from './k8s-manifest-check.js';

const K8S = path.join(REPO, 'cluster', 'k8s');
let indexed: Doc[] = [];
let merges: Doc[] = [];
let missing: string | null = null;

beforeAll(async () => {
  const a = await parseYamlDocuments(readFileSync(path.join(K8S, 'study-indexed-job.yaml'), 'utf8'));
  const b = await parseYamlDocuments(readFileSync(path.join(K8S, 'study-merge-job.yaml'), 'utf8'));
  if ('missing' in a) missing = a.missing;
  else indexed = a.docs;
  if ('missing' in b) missing = b.missing;
  else merges = b.docs;
});

/** A deep copy of the one Indexed Job document, changed by `edit`. */
function forgedIndexed(edit: (job: Record<string, any>) => void): Doc[] {
  const job = structuredClone(indexed[0]!) as Record<string, any>;
  edit(job);
  return [job];
}

describe('cluster/k8s job files (parsed and checked only: not run on a cluster)', () => {
  test('a YAML parser is here', () => {
    expect(missing, missing ?? '').toBeNull();
  });

  test('study-indexed-job.yaml says everything the docs promise', () => {
    expect(indexed.length).toBe(1);
    expect(indexedJobProblems(indexed)).toEqual([]);
    const spec = indexed[0]!['spec'] as Record<string, any>;
    // 0440, read as octal by the YAML parser: 288.
    expect(spec['template']['spec']['volumes'].find((v: Doc) => v['name'] === 'keys-secret')['secret']['defaultMode']).toBe(0o440);
    // One pod per block: --block task, three instances' CPUs; 3000m is three CPUs too.
    expect(spec['template']['spec']['containers'][0]['command'].slice(4, 6)).toEqual(['--block', 'task']);
    expect(indexedJobProblems(forgedIndexed((j) => (j['spec']['template']['spec']['containers'][0]['resources']['requests']['cpu'] = '3000m')))).toEqual([]);
  });

  test('study-merge-job.yaml: the expand Job and the merge Job', () => {
    expect(merges.map((d) => (d['metadata'] as Doc)['name'])).toEqual(['ds-study-expand', 'ds-study-merge']);
    expect(mergeJobsProblems(merges)).toEqual([]);
  });

  test.each<[string, (job: Record<string, any>) => void, RegExp]>([
    ['exit 2 retried (its FailIndex rule gone)', (j) => (j['spec']['podFailurePolicy']['rules'] = j['spec']['podFailurePolicy']['rules'].filter((r: Doc) => !(r['onExitCodes'] as { values?: number[] } | undefined)?.values?.includes(2))), /exit 2 .*without a retry \(FailIndex\), is no rule/],
    ['exit 3 failing the index (a rule before the Count one)', (j) => j['spec']['podFailurePolicy']['rules'].unshift({ action: 'FailIndex', onExitCodes: { containerName: 'study', operator: 'In', values: [3] } }), /exit 3 .* must be retried/],
    ['not Indexed', (j) => (j['spec']['completionMode'] = 'NonIndexed'), /completionMode must be Indexed/],
    ['restartPolicy OnFailure', (j) => (j['spec']['template']['spec']['restartPolicy'] = 'OnFailure'), /restartPolicy must be Never/],
    ['run as root', (j) => (j['spec']['template']['spec']['securityContext']['runAsUser'] = 0), /non-root uid/],
    ['the Secret readable by others', (j) => (j['spec']['template']['spec']['volumes'].find((v: Doc) => v['name'] === 'keys-secret')['secret']['defaultMode'] = 0o644), /defaultMode 0440/],
    ['scratch in memory', (j) => (j['spec']['template']['spec']['volumes'].find((v: Doc) => v['name'] === 'scratch')['emptyDir'] = { medium: 'Memory' }), /--scratch must be a disk-backed emptyDir/],
    ['the study folder not on a PVC', (j) => (j['spec']['template']['spec']['volumes'].find((v: Doc) => v['name'] === 'study')['persistentVolumeClaim'] = undefined), /PersistentVolumeClaim/],
    ['a fixed index', (j) => (j['spec']['template']['spec']['containers'][0]['command'][5] = '0'), /--block task/],
    ['one instance per pod (--instance task)', (j) => (j['spec']['template']['spec']['containers'][0]['command'][4] = '--instance'), /must not run --instance or --shard: one instance per pod would not keep a block together/],
    ['the CPUs of one instance for a block', (j) => (j['spec']['template']['spec']['containers'][0]['resources']['requests']['cpu'] = '1'), /must request at least 3 CPUs/],
    ['CPUs in millicores below three', (j) => (j['spec']['template']['spec']['containers'][0]['resources']['requests']['cpu'] = '2500m'), /must request at least 3 CPUs .*2500m/],
    ['no task identity', (j) => (j['spec']['template']['spec']['containers'][0]['env'] = j['spec']['template']['spec']['containers'][0]['env'].filter((e: Doc) => e['name'] !== 'DS_TASK_ID')), /DS_TASK_ID/],
    ['the key folder left open', (j) => (j['spec']['template']['spec']['initContainers'][0]['command'][2] = String(j['spec']['template']['spec']['initContainers'][0]['command'][2]).replace('mkdir -m 0700', 'mkdir -m 0755')), /mode 0700/],
    ['no grace to record the stop', (j) => (j['spec']['template']['spec']['terminationGracePeriodSeconds'] = 30), /terminationGracePeriodSeconds/],
  ])('forged: %s is caught', (_what, edit, expected) => {
    const problems = indexedJobProblems(forgedIndexed(edit));
    expect(problems.join('\n')).toMatch(expected);
  });

  test.each<[string, (docs: Record<string, any>[]) => void, RegExp]>([
    ['the merge Job retried', (d) => (d[1]!['spec']['backoffLimit'] = 3), /merge: backoffLimit must be 0/],
    ['the merge without --recompute', (d) => (d[1]!['spec']['template']['spec']['containers'][0]['command'][2] = 'node --import tsx cli/study.ts --merge "$DS_STUDY" --key-dir /keys-volume/controller'), /merge: the command does not run --recompute/],
    ['no expand Job', (d) => d.splice(0, 1), /no Job labelled ds\/step: expand/],
    ['the expand Job as root', (d) => (d[0]!['spec']['template']['spec']['securityContext'] = { runAsUser: 0 }), /expand: the pod must run as a non-root uid/],
  ])('forged: %s is caught', (_what, edit, expected) => {
    const docs = structuredClone(merges) as Record<string, any>[];
    edit(docs);
    expect(mergeJobsProblems(docs).join('\n')).toMatch(expected);
  });
});
