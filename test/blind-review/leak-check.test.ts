// The leak check (blind-review/leak-check.ts): a clean export of a real study has no finding, and
// every forged leak, planted into one package of an otherwise clean export, is caught with the
// kind a person can act on, in the package it was planted in (DESIGN §11: every checker has a
// forged case). Also the command line's --check-only exit codes.
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { BLIND_REVIEW_FILES } from '../../blind-review/blind-map.js';
import { exportStudy } from '../../blind-review/exporter.js';
import { checkLeaks } from '../../blind-review/leak-check.js';
import { leakContextOf, readLeakContext, type LeakContext } from '../../blind-review/leak-context.js';
import type { LeakKind } from '../../blind-review/leak-finding.js';
import { readStudyPlan } from '../../study-contract/study-folder.js';
import { PACKAGE_FILE_NAMES, PACKAGE_FILES, type TimelineEntry } from '../../blind-review/package-format.js';
import { loadRunRecord } from '../../oracle/run-record.js';
import { BLIND_SEED, BLIND_STUDY_ID, copyStudy, makeBlindStudy } from '../support/blind-study.js';
import { runCli } from '../support/cli.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

let studyDir: string;
let clean: string;
let ids: string[];
let context: LeakContext;
let manifestSha256: string;
let eventHash: string;

beforeAll(async () => {
  const study = await makeBlindStudy();
  studyDir = copyStudy(study.studyDir);
  clean = path.join(tempDir('ds-leak-clean-'), 'packages');
  const result = exportStudy(studyDir, clean, { scenariosDir: SCENARIOS_DIR, keys: study.setup.key.keys });
  expect(result.leakCheck.ok).toBe(true);
  ids = result.packages.map((p) => p.blind_id);
  context = readLeakContext(studyDir, SCENARIOS_DIR);
  const record = loadRunRecord(path.join(studyDir, 'instances', 'B-r1'), SCENARIOS_DIR);
  manifestSha256 = String(record.events[0]!.payload['manifest_sha256']);
  eventHash = record.events[5]!.event_hash;
}, 120_000);

function editJson<T>(file: string, edit: (value: T) => void): void {
  const value = JSON.parse(readFileSync(file, 'utf8')) as T;
  edit(value);
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** Edits the first timeline entry of `kind` (any entry when kind is null). */
function editEntry(pkg: string, kind: TimelineEntry['kind'] | null, edit: (entry: TimelineEntry) => void): void {
  const file = path.join(pkg, PACKAGE_FILES.timeline);
  const entries = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as TimelineEntry);
  const target = entries.find((e) => kind === null || e.kind === kind);
  if (!target) throw new Error(`test setup: no ${kind} entry`);
  edit(target);
  writeFileSync(file, entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
}

interface Forgery {
  readonly name: string;
  readonly kind: LeakKind;
  /** Where the finding must be: the forged package unless said otherwise. */
  readonly where?: 'package-folder';
  readonly plant: (pkg: string, out: string) => void;
}

const FORGERIES: readonly Forgery[] = [
  { name: 'a group letter label in a claim', kind: 'group_label', plant: (pkg) => editJson<Array<{ statement: string }>>(path.join(pkg, PACKAGE_FILES.claims), (c) => void (c[0]!.statement += ' (as group B would)')) },
  { name: 'a group label written "Group: C"', kind: 'group_label', plant: (pkg) => editJson<Array<{ statement: string }>>(path.join(pkg, PACKAGE_FILES.claims), (c) => void (c[0]!.statement += ' (Group: C)')) },
  { name: 'a group label written "group-A"', kind: 'group_label', plant: (pkg) => editJson<Array<{ statement: string }>>(path.join(pkg, PACKAGE_FILES.claims), (c) => void (c[0]!.statement += ' [group-A]')) },
  { name: 'a capability flag name in a summary', kind: 'capability_flag', plant: (pkg) => editEntry(pkg, null, (e) => void (e.summary += ' persistent_state=true')) },
  { name: '"capability_disabled" in a journal entry', kind: 'group_only_vocabulary', plant: (pkg) => editEntry(pkg, 'journal_entry', (e) => void ((e.detail as { text: string }).text += ' (capability_disabled)')) },
  { name: 'the experiment id in an intervention', kind: 'experiment_id', plant: (pkg) => editJson<Array<{ description: string }>>(path.join(pkg, PACKAGE_FILES.interventions), (i) => void (i[0]!.description += ` (${BLIND_STUDY_ID})`)) },
  { name: 'a replicate seed in a checkpoint', kind: 'seed', plant: (pkg) => editJson<Array<{ next_action: string | null }>>(path.join(pkg, PACKAGE_FILES.checkpoints), (c) => void (c[0]!.next_action = `seeded with ${BLIND_SEED}-r1`)) },
  { name: 'a configuration hash (the manifest sha256) in a rationale', kind: 'config_hash', plant: (pkg) => editJson<Array<{ rationale: string }>>(path.join(pkg, PACKAGE_FILES.actions), (a) => void (a[0]!.rationale += ` ${manifestSha256}`)) },
  { name: 'an event hash of the chain in a summary', kind: 'chain_hash', plant: (pkg) => editEntry(pkg, null, (e) => void (e.summary += ` ${eventHash}`)) },
  { name: 'the absolute study folder path in a summary', kind: 'host_path', plant: (pkg) => editEntry(pkg, 'model_answered', (e) => void (e.summary += ` ${studyDir}/instances`)) },
  { name: 'a UUID in a claim', kind: 'uuid', plant: (pkg) => editJson<Array<{ statement: string }>>(path.join(pkg, PACKAGE_FILES.claims), (c) => void (c[0]!.statement += ' 0f9c2d1e-7a3b-4c5d-9e8f-0a1b2c3d4e5f')) },
  // Seqs count events (how much happened in the run, which differs by group): every one must be a ref.
  { name: 'an event cited by its seq ("event #137") in a journal entry', kind: 'event_seq', plant: (pkg) => editEntry(pkg, 'journal_entry', (e) => void ((e.detail as { text: string }).text += ' (see event #137)')) },
  { name: 'an event cited as "seq 137" in a claim', kind: 'event_seq', plant: (pkg) => editJson<Array<{ statement: string }>>(path.join(pkg, PACKAGE_FILES.claims), (c) => void (c[0]!.statement += ' (seq 137)')) },
  { name: "a raw answer's evidence_seqs list of numbers (JSON in JSON: the quote escaped)", kind: 'event_seq', plant: (pkg) => editEntry(pkg, 'model_answered', (e) => void ((e.detail as { raw_output: string }).raw_output += ' {"evidence_seqs":[137,141]}')) },
  { name: 'a quoted seq after a ref and an [id] in an evidence_seqs list', kind: 'event_seq', plant: (pkg) => editEntry(pkg, 'model_answered', (e) => void ((e.detail as { raw_output: string }).raw_output += ' {"evidence_seqs": ["E0001", "[id]", "137"]}')) },
  { name: 'an evidence_seqs list of numbers in the scorecard page (the quote as &quot;)', kind: 'event_seq', plant: (pkg) => writeFileSync(path.join(pkg, PACKAGE_FILES.scorecard), `${readFileSync(path.join(pkg, PACKAGE_FILES.scorecard), 'utf8')}<pre>{&quot;evidence_seqs&quot;: [137]}</pre>\n`) },
  {
    name: 'a model-call failure kind only the apparatus decides (truncated_prompt: prompts of groups that keep state are longer)',
    kind: 'schema',
    plant: (pkg) =>
      editEntry(pkg, 'model_answered', (e) => {
        e.kind = 'model_call_failed';
        e.detail = { failure: 'truncated_prompt', detail: '(withheld)', raw_output: null };
      }),
  },
  { name: 'an instance folder name in a journal entry', kind: 'instance_name', plant: (pkg) => editEntry(pkg, 'journal_entry', (e) => void ((e.detail as { text: string }).text += ' see C-r1')) },
  { name: "a manifest's group blind id in a checkpoint", kind: 'group_blind_id', plant: (pkg) => editJson<Array<{ goal_status: string | null }>>(path.join(pkg, PACKAGE_FILES.checkpoints), (c) => void (c[0]!.goal_status = 'active (inst-srcbx)')) },
  { name: '"PlanRevisionAccepted" in one package', kind: 'group_only_vocabulary', plant: (pkg) => editEntry(pkg, 'model_answered', (e) => void ((e.detail as { raw_output: string }).raw_output += ' PlanRevisionAccepted')) },
  { name: 'an extra file in one package', kind: 'extra_file', plant: (pkg) => writeFileSync(path.join(pkg, 'notes.txt'), 'reviewer hint\n') },
  { name: 'a missing file in one package', kind: 'missing_file', plant: (pkg) => rmSync(path.join(pkg, PACKAGE_FILES.recovery)) },
  { name: 'a JSON key present in one package only', kind: 'key_paths', plant: (pkg) => editJson<Record<string, unknown>>(path.join(pkg, PACKAGE_FILES.manifest), (m) => void (m['hint'] = 'x')) },
  { name: 'a detail key present in one package only', kind: 'key_paths', plant: (pkg) => editEntry(pkg, 'wake_started', (e) => void ((e.detail as Record<string, unknown>)['state'] = 'persistent')) },
  { name: 'a ref that names no timeline entry', kind: 'dangling_ref', plant: (pkg) => editJson<Array<{ proposal: string }>>(path.join(pkg, PACKAGE_FILES.actions), (a) => void (a[0]!.proposal = 'E9999')) },
  { name: "another package's blind id", kind: 'foreign_blind_id', plant: (pkg) => editEntry(pkg, null, (e) => void (e.summary += ` ${ids.find((id) => id !== path.basename(pkg))}`)) },
  // The written instructions and the expected checkpoints are the same for every package of a replicate by construction (issue 32).
  { name: 'review instructions naming a group', kind: 'group_label', plant: (pkg) => writeFileSync(path.join(pkg, PACKAGE_FILES.instructions), `${readFileSync(path.join(pkg, PACKAGE_FILES.instructions), 'utf8')}\nThis run is group B.\n`) },
  { name: 'review instructions that differ in one package only (a harmless-looking sentence)', kind: 'instructions_differ', plant: (pkg) => writeFileSync(path.join(pkg, PACKAGE_FILES.instructions), `${readFileSync(path.join(pkg, PACKAGE_FILES.instructions), 'utf8')}\nTake your time with this one.\n`) },
  { name: 'an expected checkpoint edited in one package', kind: 'oracle_not_from_plan', plant: (pkg) => editJson<{ checkpoints: Array<{ attention_target: string | null }> }>(path.join(pkg, PACKAGE_FILES.expected), (e) => void (e.checkpoints[0]!.attention_target = 'a-task-of-its-own')) },
  { name: 'the sealed map in the package folder', kind: 'sealed_map_exposed', where: 'package-folder', plant: (_pkg, out) => cpSync(path.join(studyDir, BLIND_REVIEW_FILES.sealedMap), path.join(out, BLIND_REVIEW_FILES.sealedMap)) },
];

/** A copy of the clean export with one forgery planted into its second package. */
function forgedCopy(forgery: Forgery): { out: string; pkg: string } {
  const out = path.join(tempDir('ds-leak-forged-'), 'packages');
  cpSync(clean, out, { recursive: true });
  const pkg = path.join(out, ids[1]!);
  forgery.plant(pkg, out);
  return { out, pkg };
}

describe('checkLeaks', () => {
  test('a clean export of a real study: zero findings, every package and file checked', () => {
    const check = checkLeaks(clean, context);
    expect(check.findings).toEqual([]);
    expect(check.ok).toBe(true);
    expect(check.packages).toBe(3);
    expect(check.filesChecked).toBe(3 * PACKAGE_FILE_NAMES.length);
    expect(check.notes).toEqual([]);
    expect(readdirSync(clean).filter((n) => /^R-/.test(n)).sort()).toEqual([...ids].sort());
  });

  test.each(FORGERIES.map((f) => [f.name, f] as const))('forged: %s → caught as its kind, in the forged package', (_name, forgery) => {
    const { out, pkg } = forgedCopy(forgery);
    const check = checkLeaks(out, context);
    expect(check.ok).toBe(false);
    const where = forgery.where === 'package-folder' ? '(package folder)' : path.basename(pkg);
    expect(check.findings.filter((f) => f.kind === forgery.kind).map((f) => f.package)).toContain(where);
    // Nothing else is reported: the other packages stay clean.
    for (const f of check.findings) expect(f.package, JSON.stringify(f)).toBe(where);
  });

  test('forged: an oracle that depends on more than the plan (one instance of the replicate expects otherwise) is caught for the study, naming no group', () => {
    const plan = readStudyPlan(studyDir);
    const instances = ['A-r1', 'B-r1', 'C-r1'].map((name) => {
      const dir = path.join(studyDir, 'instances', name);
      return { name, dir, record: loadRunRecord(dir, SCENARIOS_DIR) };
    });
    // C-r1's record as if its plan had delivered the goal change one wake later.
    const c = instances[2]!.record;
    const wakes = c.plan.schedule.wakes.map((w) => w.wake_id);
    const interventions = c.plan.interventions.map((iv) => (iv.kind === 'goal_change' ? { ...iv, deliver_wake_id: wakes[wakes.indexOf(iv.deliver_wake_id) + 1]! } : iv));
    instances[2] = { ...instances[2]!, record: { ...c, plan: { ...c.plan, interventions } } };
    const check = checkLeaks(clean, leakContextOf(studyDir, plan, instances));
    const found = check.findings.filter((f) => f.kind === 'oracle_differs_in_replicate');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ package: '(study)', file: PACKAGE_FILES.expected });
    expect(found[0]!.detail).toMatch(/replicate 1 give 2 different expected checkpoints/);
    expect(found[0]!.detail).not.toMatch(/\b[ABC]-r1\b|group [ABC]/);
    expect(check.ok).toBe(false);
  });

  test('with no readable instance the expected checkpoints are not compared, and the check says so', () => {
    const plan = readStudyPlan(studyDir);
    const instances = ['A-r1', 'B-r1', 'C-r1'].map((name) => ({ name, dir: path.join(studyDir, 'instances', name), record: null }));
    const check = checkLeaks(clean, leakContextOf(studyDir, plan, instances));
    expect(check.findings).toEqual([]);
    expect(check.notes).toEqual([`${PACKAGE_FILES.expected} not compared with the oracle: no instance of the study could be read`]);
  });

  test('findings are bounded per kind and file, the excess counted', () => {
    const out = path.join(tempDir('ds-leak-many-'), 'packages');
    cpSync(clean, out, { recursive: true });
    editJson<Array<{ statement: string }>>(path.join(out, ids[0]!, PACKAGE_FILES.claims), (c) => {
      for (const claim of c) claim.statement += ' 0f9c2d1e-7a3b-4c5d-9e8f-0a1b2c3d4e5f';
    });
    const findings = checkLeaks(out, context).findings;
    expect(findings.filter((f) => f.kind === 'uuid')).toHaveLength(10);
    expect(findings.find((f) => f.kind === 'more_findings')?.detail).toMatch(/^\d+ more finding\(s\) of kind uuid in this file$/);
  });

  test('npm run export -- --check-only: 0 clean, 1 leaks (each listed), 2 misuse', async () => {
    const ok = await runCli('export', ['--check-only', clean, '--study', studyDir]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/: CLEAN\n/);
    const { out } = forgedCopy(FORGERIES[0]!);
    const leaky = await runCli('export', ['--check-only', out, '--study', studyDir, '--json']);
    expect(leaky.code).toBe(1);
    const printed = JSON.parse(leaky.stdout) as { ok: boolean; findings: Array<{ kind: string }> };
    expect(printed.ok).toBe(false);
    expect(printed.findings.map((f) => f.kind)).toContain('group_label');
    const misuse = await runCli('export', ['--check-only', clean]);
    expect(misuse.code).toBe(2);
    expect(misuse.stderr).toMatch(/--check-only needs --study STUDY_DIR/);
  }, 30_000);
});
