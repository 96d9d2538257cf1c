// Every oracle input in the run folder (issue 32 item 2): a run keeps scenario.json (the
// scenario's definition — submit_task_id, ask_task_id, facts, reviewer — and its starting files'
// hashes), pinned by the signed manifest's scenario_sha256 (manifest 1.3.0). A run folder copied
// alone to another machine, with no scenario folder there, scores the same as at home. Forged:
// a scenario.json edited after the start (another submission task), one removed, and one whose
// starting hashes were changed together with its hash — each refused, named.
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MANIFEST_VERSION } from '../../design/manifest.js';
import { PROMPT_LAYOUT } from '../../runtime/prompt.js';
import { RETRIEVAL_RULE_VERSION } from '../../runtime/retrieval-window.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { checkSignedManifest } from '../../design/manifest.js';
import { PreRegistration, readPreregJson } from '../../design/prereg.js';
import { RunScenario, scenarioOfRecord, scenarioHash } from '../../design/scenario.js';
import { evaluateInstance } from '../../oracle/instance-evaluation.js';
import { loadRunRecord } from '../../oracle/run-record.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { hashCanonical, hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { finishedRun, type FinishedRun } from '../support/finished-run.js';
import { tempDir } from '../support/writer-fixture.js';

let run: FinishedRun;
let options: { scenariosDir: string; expectedPreregSha256: ReturnType<typeof hashCanonical> };

beforeAll(async () => {
  run = await finishedRun('B', 'scenario-in-folder');
  options = { scenariosDir: SCENARIOS_DIR, expectedPreregSha256: hashCanonical(PreRegistration.parse(readPreregJson(run.setup.preregFile))) };
}, 120_000);

afterAll(() => run?.cleanup());

/** The run folder alone, somewhere else (its controller.pub inside it), with `edit` applied to the copy. */
function copied(edit: (dir: string) => void = () => undefined): string {
  const dir = path.join(tempDir('ds-scenario-copy-'), 'run');
  cpSync(run.runDir, dir, { recursive: true });
  edit(dir);
  return dir;
}

const emptyScenarios = (): string => tempDir('ds-no-scenarios-');

describe('the scenario in the run folder', () => {
  test('scenario.json is canonical JSON, pinned by the signed manifest, and hashes to the plan\'s scenario_hash', () => {
    const bytes = readFileSync(path.join(run.runDir, RUN_FILES.scenario), 'utf8');
    const record = RunScenario.parse(JSON.parse(bytes));
    expect(canonicalJson(record)).toBe(bytes);
    const checked = checkSignedManifest(JSON.parse(readFileSync(path.join(run.runDir, RUN_FILES.manifest), 'utf8')), run.setup.key.keys.publicKey);
    if (!checked.ok) throw new Error(checked.reason);
    expect(checked.manifest.manifest_version).toBe(MANIFEST_VERSION);
    // 1.4.0 (issue 34): the prompt's layout and retrieval rule are in the signed manifest.
    expect(checked.manifest.prompt).toEqual({ layout: PROMPT_LAYOUT, retrieval_rule: RETRIEVAL_RULE_VERSION });
    expect(checked.manifest.scenario_sha256).toBe(hashText(bytes));
    expect(scenarioHash(record.definition, record.files)).toBe(checked.manifest.scenario_hash);
    expect(record.definition.submit_task_id).toMatch(/\S/);
  });

  test('a run folder copied alone, with no scenario folder where it is scored, scores the same as at home', () => {
    const home = evaluateInstance(run.runDir, options);
    const away = evaluateInstance(copied(), { ...options, scenariosDir: emptyScenarios() });
    expect(away.score).toEqual(home.score);
    expect(away.hardFailures).toEqual(home.hardFailures);
    expect(away.notes).toEqual(home.notes);
  });

  test('forged: a scenario.json edited after the start (another submission task) is refused, naming the manifest\'s hash', () => {
    const dir = copied((d) => {
      const file = path.join(d, RUN_FILES.scenario);
      const record = RunScenario.parse(JSON.parse(readFileSync(file, 'utf8')));
      const other = record.definition.subject_initialized.tasks.find((t) => t.task_id !== record.definition.submit_task_id)!.task_id;
      writeFileSync(file, canonicalJson({ ...record, definition: { ...record.definition, submit_task_id: other } }));
    });
    expect(() => loadRunRecord(dir, emptyScenarios())).toThrow(/not the signed manifest's scenario_sha256 .*changed after the start/);
  });

  test('forged: a scenario.json removed is refused (the manifest pins one), not read from elsewhere', () => {
    const dir = copied((d) => rmSync(path.join(d, RUN_FILES.scenario)));
    expect(() => loadRunRecord(dir, SCENARIOS_DIR)).toThrow(/is missing, but the signed manifest pins one/);
  });

  test('forged: a record whose starting hashes were changed no longer hashes to the scenario it names (what a manifest without scenario_sha256 leaves to the record\'s own checks)', () => {
    const record = RunScenario.parse(JSON.parse(readFileSync(path.join(run.runDir, RUN_FILES.scenario), 'utf8')));
    expect(scenarioOfRecord(record).scenario_hash).toBe(record.scenario_hash);
    // A starting file's bytes changed, its hash with them: the file checks, the scenario's hash no longer does.
    const files = record.files.map((f, i) => (i === 0 ? { ...f, sha256: hashText('another starting file'), bytes_base64: Buffer.from('another starting file').toString('base64') } : f));
    expect(() => scenarioOfRecord({ ...record, files })).toThrow(/the scenario record hashes to sha256:[0-9a-f]{64}, not the sha256:[0-9a-f]{64} it names: it was changed|fact .* (cites|does not occur)/);
    // A file's bytes changed without its hash: that file is named.
    const bytesOnly = record.files.map((f, i) => (i === 0 ? { ...f, bytes_base64: Buffer.from('changed').toString('base64') } : f));
    expect(() => scenarioOfRecord({ ...record, files: bytesOnly })).toThrow(new RegExp(`the scenario record's ${record.files[0]!.path} hashes to .* not the .* it names`));
  });
});
