// docs/own-study.md walked as a researcher would (issue 35 item 1): every `sh` block of the page,
// as written, one shell, from the code checkout, with HOME a fresh folder outside it — so `$MY`
// (~/my-study), the scenario copy, the pre-registration and its lock, the model configuration,
// the controller key (~/.config/…) and every run and study land outside the checkout. Real npm,
// real ds-controller, ds-writer and ds-runtime processes. Then what they left is checked: the
// dry run and the study verified OK; every run's plan carries the own scenario's hash (not the
// bundled one's: the framing is part of it), its scenario.json the framing, its manifest both
// pins; the study keeps its own copy of the scenario; the checkout is unchanged.
// Forged: a folder that is not the pre-registered scenario, and a pre-registered scenario that is
// nowhere, are refused — at plan time for a study — naming the scenario and --scenario, and
// nothing is written.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { checkSignedManifest } from '../../design/manifest.js';
import { ExperimentPlan } from '../../design/experiment-plan.js';
import { loadScenario, RunScenario } from '../../design/scenario.js';
import { parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { readStudyPlan, STUDY_FILES } from '../../study-contract/study-folder.js';
import { REPO, SCENARIOS_DIR } from '../support/controller-run.js';

const PAGE = path.join(REPO, 'docs', 'own-study.md');
const FRAMING = 'a city planning office';
const SCENARIO_ID = 'my-scenario';

/** The `sh` blocks of a Markdown page, in order, one command per line (a trailing backslash continues it). */
function shellCommandsOf(markdown: string): string[] {
  const commands: string[] = [];
  for (const block of markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    const lines = block[1]!.split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
    for (let i = 0; i < lines.length; i += 1) {
      let line = lines[i]!;
      while (line.endsWith('\\') && i + 1 < lines.length) line = `${line.slice(0, -1)} ${lines[++i]!.trim()}`;
      commands.push(line);
    }
  }
  return commands;
}

interface Walked {
  readonly command: string;
  readonly code: number;
  readonly output: string;
}

/** Runs the commands in one bash from the checkout, each one's exit code and output kept apart. */
function walk(commands: readonly string[], home: string, name = 'walk'): Walked[] {
  const logs = path.join(home, `.${name}`);
  mkdirSync(logs);
  const script = commands.map((c, i) => `{ ${c}\n} >${JSON.stringify(path.join(logs, `${i}.out`))} 2>&1; echo $? >${JSON.stringify(path.join(logs, `${i}.rc`))}`).join('\n');
  const { XDG_CONFIG_HOME: _xdg, ...env } = process.env;
  const ran = spawnSync('bash', ['-c', script], { cwd: REPO, env: { ...env, HOME: home }, encoding: 'utf8', timeout: 150_000 });
  if (ran.error) throw ran.error;
  return commands.map((command, i) => ({
    command,
    code: existsSync(path.join(logs, `${i}.rc`)) ? Number(readFileSync(path.join(logs, `${i}.rc`), 'utf8')) : -1,
    output: existsSync(path.join(logs, `${i}.out`)) ? readFileSync(path.join(logs, `${i}.out`), 'utf8') : '',
  }));
}

/** The tracked and untracked files of the checkout that git sees as changed. */
function checkoutChanges(): string {
  return spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: REPO, encoding: 'utf8' }).stdout;
}

/** What a run folder says of its scenario: the plan's hash, its own record's framing, and whether the signed manifest pins that record. */
function runScenarioFacts(runDir: string): { planHash: string; framing: string | undefined; pinned: boolean; configPinned: string | null } {
  const plan = ExperimentPlan.parse(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.plan), 'utf8')));
  const bytes = readFileSync(path.join(runDir, RUN_FILES.scenario));
  const record = RunScenario.parse(JSON.parse(bytes.toString('utf8')));
  const key = parsePublicKeyHex(readFileSync(path.join(runDir, RUN_FILES.publicKey), 'utf8'));
  const signed = checkSignedManifest(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.manifest), 'utf8')), key);
  if (!signed.ok) throw new Error(`${runDir}: the manifest does not verify: ${signed.reason}`);
  return { planHash: plan.scenario_hash, framing: record.definition.framing, pinned: signed.manifest.scenario_sha256 === hashText(bytes) && record.scenario_hash === plan.scenario_hash, configPinned: signed.manifest.model.config_sha256 };
}

describe('docs/own-study.md, walked from a fresh folder outside the checkout', () => {
  const home = mkdtempSync(path.join(tmpdir(), 'ds-own-study-'));
  // A home folder as a user's is (readable by the runtime's uid, as a run folder must be).
  chmodSync(home, 0o755);
  const my = path.join(home, 'my-study');
  const commands = shellCommandsOf(readFileSync(PAGE, 'utf8'));
  let walked: Walked[] = [];
  let walkMs = 0;
  let before = '';

  beforeAll(() => {
    before = checkoutChanges();
    const started = performance.now();
    walked = walk(commands, home);
    walkMs = performance.now() - started;
  }, 180_000);

  test('the page names each step, and its commands use --scenario, the lock, the model file and the cluster page', () => {
    const page = readFileSync(PAGE, 'utf8');
    for (const heading of ['The scenario folder', 'The pre-registration', 'The model configuration file', 'A dry run', 'The study', 'On a cluster']) expect(page).toMatch(new RegExp(`^## \\d\\. ${heading}$`, 'm'));
    expect(page).toContain('](cluster.md)');
    const joined = commands.join('\n');
    for (const needed of ['npm run prereg -- lock', 'npm run experiment -- ', 'npm run study -- ', '--scenario "$MY/my-scenario"', '--model-config "$MY/model-dry-run.json"', 'npm run verify -- ']) expect(joined).toContain(needed);
    expect(readFileSync(path.join(REPO, 'README.md'), 'utf8')).toContain('](docs/own-study.md)');
  });

  test('every command succeeds as the page says (the study: a report, exit 0 or 4 for a dry run), in under two minutes (43.8 s measured on 2 busy cores)', () => {
    for (const w of walked) {
      const allowed = w.command.startsWith('npm run study -- ') ? [0, 4] : [0];
      expect(allowed, `${w.command}\n${w.output.slice(-3000)}`).toContain(w.code);
    }
    const verifies = walked.filter((w) => w.command.startsWith('npm run verify -- '));
    expect(verifies).toHaveLength(2);
    for (const v of verifies) expect(v.output).toMatch(/^OK: /m);
    // What it cost here (2 busy cores): said, and bounded.
    console.log(`docs/own-study.md walked: ${commands.length} commands in ${(walkMs / 1000).toFixed(1)} s`);
    expect(walkMs).toBeLessThan(120_000);
  });

  test('the runs carry the own scenario: its hash (framing included) in every plan, its framing in every run\'s scenario.json, both pinned by the signed manifest; the model file pinned too', () => {
    const own = loadScenario(path.join(my, 'my-scenario'));
    const bundled = loadScenario(path.join(SCENARIOS_DIR, 'research-workspace-72h'));
    expect(own.definition.scenario_id).toBe(SCENARIO_ID);
    expect(own.definition.framing).toBe(FRAMING);
    expect(own.scenario_hash).not.toBe(bundled.scenario_hash);
    const instancesDir = path.join(my, 'study-dry-run', STUDY_FILES.instances);
    const runs = [path.join(my, 'dry-run-C'), ...readdirSync(instancesDir).map((name) => path.join(instancesDir, name))];
    expect(runs).toHaveLength(4);
    const modelFileHash = hashText(readFileSync(path.join(my, 'model-dry-run.json')));
    for (const run of runs) {
      const facts = runScenarioFacts(run);
      expect(facts, run).toEqual({ planHash: own.scenario_hash, framing: FRAMING, pinned: true, configPinned: modelFileHash });
      expect(readFileSync(path.join(run, RUN_FILES.modelConfig))).toEqual(readFileSync(path.join(my, 'model-dry-run.json')));
    }
  });

  test('the study keeps its own copy of the scenario, the same scenario; the checkout is as it was', () => {
    const copy = loadScenario(path.join(my, 'study-dry-run', STUDY_FILES.scenario));
    expect(copy.scenario_hash).toBe(loadScenario(path.join(my, 'my-scenario')).scenario_hash);
    expect(copy.definition.framing).toBe(FRAMING);
    // Pinned by study.json: an instance started later holds the copy to it.
    expect(readStudyPlan(path.join(my, 'study-dry-run')).scenario_hash).toBe(copy.scenario_hash);
    expect(checkoutChanges()).toBe(before);
  });

  test('forged: the bundled scenario given for the own pre-registration, and an own scenario that is nowhere, are refused naming the scenario and --scenario; nothing is written', () => {
    const refused = walk(
      [
        `export MY=${my}`,
        `npm run experiment -- --group C --scenario experiments/scenario/research-workspace-72h --prereg "$MY/prereg.json" --model-config "$MY/model-dry-run.json" --out "$MY/wrong-scenario" --json`,
        `npm run study -- --prereg "$MY/prereg.json" --model-config "$MY/model-dry-run.json" --out "$MY/no-scenario" --json`,
        `npm run study -- --plan-only --scenario "$MY/prereg.json" --prereg "$MY/prereg.json" --out "$MY/plan-file" --json`,
      ],
      home,
      'forged',
    );
    const [, wrong, nowhere, file] = refused;
    expect(wrong!.code, wrong!.output).toBe(1);
    expect(wrong!.output).toContain('"code":"scenario"');
    expect(wrong!.output).toContain(`is the scenario research-workspace-72h, but the pre-registration names ${SCENARIO_ID}: give --scenario the folder of ${SCENARIO_ID}, or set the pre-registration's scenario.id to research-workspace-72h and lock it again`);
    expect(nowhere!.code, nowhere!.output).toBe(1);
    expect(nowhere!.output).toContain(`the pre-registration names the scenario ${SCENARIO_ID}, and ${path.join(SCENARIOS_DIR, SCENARIO_ID)} holds no scenario.json: give its folder with --scenario DIR`);
    expect(file!.code, file!.output).toBe(2);
    expect(file!.output).toContain('--scenario');
    expect(file!.output).toContain('is a file');
    for (const out of ['wrong-scenario', 'no-scenario', 'plan-file']) expect(existsSync(path.join(my, out)), out).toBe(false);
  }, 60_000);
});
