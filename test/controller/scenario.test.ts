// The scenario folder loads, its SubjectInitialized payload passes the catalogue schema, and
// its hash pins every workspace byte (forged: one source file changed, one file added).
import { appendFileSync, cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadScenario, ScenarioError, subjectInitializedPayload, type Scenario } from '../../design/scenario.js';
import { SubjectInitialized } from '../../schema/events/system-events.js';
import { tempDir } from '../support/writer-fixture.js';

const SCENARIO_DIR = path.resolve('experiments/scenario/research-workspace-72h');
let root: string;
let scenario: Scenario;

beforeAll(() => {
  root = tempDir('ds-scenario-');
  scenario = loadScenario(SCENARIO_DIR);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

let copies = 0;
function copyScenario(): string {
  copies += 1;
  const dir = path.join(root, `copy-${copies}`);
  cpSync(SCENARIO_DIR, dir, { recursive: true });
  return dir;
}

describe('scenario research-workspace-72h', () => {
  test('loads with sources, notes, the report/ marker and ~6 tasks', () => {
    const paths = scenario.files.map((f) => f.path);
    expect(paths.filter((p) => p.startsWith('sources/')).length).toBeGreaterThanOrEqual(3);
    expect(paths.filter((p) => p.startsWith('notes/')).length).toBeGreaterThanOrEqual(1);
    expect(paths).toContain('report/.gitkeep');
    expect(scenario.definition.subject_initialized.tasks).toHaveLength(6);
    expect(scenario.scenario_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  test('the SubjectInitialized payload validates against the catalogue, deadline = start + 72 h', () => {
    const payload = subjectInitializedPayload(scenario.definition, '2026-07-20T00:00:00.000Z');
    expect(SubjectInitialized.payload.safeParse(payload).success).toBe(true);
    expect(payload.goal.deadline_at).toBe('2026-07-23T00:00:00.000Z');
    expect(payload.journal_first_page.text).toContain('hour 72');
  });

  test('the refutable figure really occurs in its source', () => {
    const fact = scenario.definition.facts.find((f) => f.corrected_figure !== null)!;
    expect(scenario.files.find((f) => f.path === fact.source_path)?.content).toContain(fact.figure);
  });

  test('forged: one changed byte of a source file changes the hash', () => {
    const dir = copyScenario();
    expect(loadScenario(dir).scenario_hash).toBe(scenario.scenario_hash);
    appendFileSync(path.join(dir, 'workspace/sources/bike-lane-counts.md'), ' ');
    expect(loadScenario(dir).scenario_hash).not.toBe(scenario.scenario_hash);
  });

  test('forged: an added workspace file changes the hash', () => {
    const dir = copyScenario();
    writeFileSync(path.join(dir, 'workspace/notes/extra.md'), 'planted\n');
    expect(loadScenario(dir).scenario_hash).not.toBe(scenario.scenario_hash);
  });

  test('a fact whose figure is not in its source is refused', () => {
    const dir = copyScenario();
    const file = path.join(dir, 'workspace/sources/commute-survey-2025.md');
    writeFileSync(file, '# emptied\n');
    expect(() => loadScenario(dir)).toThrow(/does not occur/);
  });

  test('an oversized workspace file is refused', () => {
    const dir = copyScenario();
    writeFileSync(path.join(dir, 'workspace/notes/huge.md'), 'x'.repeat(64 * 1024 + 1));
    expect(() => loadScenario(dir)).toThrow(ScenarioError);
  });

  test('a task depending on an unknown task is refused', () => {
    const dir = copyScenario();
    const jsonPath = path.join(dir, 'scenario.json');
    const json = JSON.parse(readFileSync(jsonPath, 'utf8')) as { subject_initialized: { tasks: Array<{ depends_on: string[] }> } };
    json.subject_initialized.tasks[0]!.depends_on = ['task-nowhere'];
    writeFileSync(jsonPath, JSON.stringify(json));
    expect(() => loadScenario(dir)).toThrow(/not an earlier task/);
  });
});

