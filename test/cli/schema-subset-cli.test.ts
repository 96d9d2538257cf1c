// The answer schema held to its dialect's subset before hour 0, through the real command line
// (issue 36 items 2 and 5): `npm run experiment -- --structured-output json_schema` under the
// bundled pre-registration (schema_subset absent: refuse) is refused before anything is written,
// the keywords named, with advice; each piece of advice, followed, is accepted — a copy of the
// pre-registration with schema_subset "strip", locked (the run starts, the schema sent lacks the
// keywords, the manifest lists them and the sent schema's hash, verify OK), or a dialect whose
// subset holds the schema (vllm).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSignedManifest } from '../../design/manifest.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { hashCanonical } from '../../schema/hash.js';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { SUBSTANTIVE_ANSWER, SCRIPTED_MODEL_ID, startScriptedModelServer, type ScriptedModelServer } from '../../faults/scripted-model-server.js';
import { runCli, type CliResult } from '../support/cli.js';
import { controllerSetup, controllerSetupWith, type ControllerSetup } from '../support/controller-run.js';

/** Every file under `root` with its size and bytes, to show a refused command changed nothing. */
function snapshot(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) {
        out.set(`${full}/`, 'dir');
        walk(full);
      } else out.set(full, readFileSync(full).toString('base64'));
    }
  };
  walk(root);
  return out;
}

const SHORT = (p: Record<string, Record<string, unknown>>): void => void (p['wake_schedule']!['base_period_sim_minutes'] = 240);

describe('npm run experiment -- --structured-output json_schema: the subset check before hour 0', () => {
  let server: ScriptedModelServer;
  let bundled: ControllerSetup;
  let strip: ControllerSetup;
  let refuseShort: ControllerSetup;
  let refused: CliResult;
  let before: Map<string, string>;
  let after: Map<string, string>;
  let stripped: CliResult;
  let inVllm: CliResult;
  let callsAfterRefusal = -1;
  let planRefused: CliResult;
  const model = (dialect: string): string[] => ['--model', 'openai', '--base-url', server.baseUrl, '--model-id', SCRIPTED_MODEL_ID, '--api-key-env', 'none', '--no-stream', '--model-timeout-ms', '30000', '--structured-output', dialect];
  const common = (s: ControllerSetup): string[] => ['--group', 'C', '--prereg', s.preregFile, '--key-dir', s.keyDir, '--same-uid', 'test run in one uid', '--json'];

  beforeAll(async () => {
    server = await startScriptedModelServer(() => ({ kind: 'content', content: JSON.stringify(SUBSTANTIVE_ANSWER) }));
    bundled = controllerSetup();
    strip = controllerSetupWith('prereg-strip', (p) => {
      SHORT(p);
      p['model_calls']!['schema_subset'] = 'strip';
    });
    refuseShort = controllerSetupWith('prereg-short', SHORT);
    before = snapshot(bundled.dir);
    [refused, planRefused] = await Promise.all([
      runCli('experiment', [...model('json_schema'), ...common(bundled), '--out', path.join(bundled.dir, 'runs', 'refused')]),
      runCli('study', ['--plan-only', '--seed', 'subset', '--prereg', bundled.preregFile, '--key-dir', bundled.keyDir, '--same-uid', 'test', ...model('json_schema'), '--out', path.join(bundled.dir, 'runs', 'study-plan')]),
    ]);
    after = snapshot(bundled.dir);
    callsAfterRefusal = server.requests.length + server.probes.length;
    [stripped, inVllm] = await Promise.all([
      runCli('experiment', [...model('json_schema'), ...common(strip), '--out', path.join(strip.dir, 'runs', 'stripped')]),
      runCli('experiment', [...model('vllm'), ...common(refuseShort), '--out', path.join(refuseShort.dir, 'runs', 'vllm')]),
    ]);
  }, 300_000);

  afterAll(async () => {
    await server?.close();
  });

  it('under the bundled pre-registration (refuse): exit 1, schema_subset, the keywords and rule named, advice given, the folder byte-identical, no call made', () => {
    expect(refused.code, refused.stderr.slice(-2_000)).toBe(EXIT_CODES.failed);
    const out = JSON.parse(refused.stdout) as { error_code?: string; error?: string; message?: string };
    expect(JSON.stringify(out)).toContain('schema_subset');
    const text = `${refused.stdout}\n${refused.stderr}`;
    expect(text).toContain('minLength — minLength: string lengths are not yet supported in strict mode');
    expect(text).toContain('https://platform.openai.com/docs/guides/structured-outputs#supported-schemas');
    expect(text).toMatch(/ask the model in a dialect whose subset holds the schema \(vllm, json_object, none/);
    expect(text).toContain('pre-register model_calls.schema_subset "strip" in a copy of the pre-registration, locked');
    expect(after).toEqual(before);
    expect(callsAfterRefusal).toBe(0);
  });

  it('a study plan (npm run study -- --plan-only) under the same pre-registration: refused before anything of the study is written', () => {
    expect(planRefused.code, planRefused.stderr.slice(-2_000)).toBe(EXIT_CODES.failed);
    expect(`${planRefused.stdout}\n${planRefused.stderr}`).toContain('outside the json_schema subset');
    expect(after).toEqual(before);
  });

  it('advice followed — a copy with schema_subset "strip", locked: the run ends verified; every schema sent lacks the keywords; the manifest lists them and the sent hash', () => {
    expect(stripped.code, stripped.stderr.slice(-3_000)).toBe(EXIT_CODES.ok);
    const out = JSON.parse(stripped.stdout) as { status: string; run_dir: string; verify: { ok: boolean } };
    expect(out).toMatchObject({ status: 'finished', verify: { ok: true } });
    expect(stripped.stderr).toMatch(/schema subset: \d+ keyword\(s\) outside the json_schema subset .* left out of the schema sent \(pre-registered schema_subset "strip"\): maxLength, minLength, oneOf; the constraint the server applies is weaker than the schema/);
    const checked = checkSignedManifest(JSON.parse(readFileSync(path.join(out.run_dir, RUN_FILES.manifest), 'utf8')), strip.key.keys.publicKey);
    if (!checked.ok) throw new Error(checked.reason);
    const structured = checked.manifest.model.structured_output!;
    expect(structured.dialect).toBe('json_schema');
    expect(structured.subset?.policy).toBe('strip');
    const removed = structured.subset!.removed;
    expect(removed).toContainEqual({ path: '/properties/focus/properties/attention_target/anyOf/0', keyword: 'minLength', sent_as: null });
    expect(removed.some((r) => r.keyword === 'oneOf' && r.sent_as === 'anyOf')).toBe(true);
    expect(structured.sent_schema_sha256).not.toBe(structured.schema_sha256);
    const sentSchemas = [...server.requests, ...server.probes].filter((r) => r.body !== null && JSON.stringify(r.body).includes(`"${SCRIPTED_MODEL_ID}"`)).map((r) => (r.body!['response_format'] as { json_schema?: { schema?: unknown; strict?: unknown } } | undefined)?.json_schema);
    const ofStrip = sentSchemas.filter((s) => s?.strict === true);
    expect(ofStrip.length).toBeGreaterThan(1);
    for (const s of ofStrip) expect(JSON.stringify(s!.schema)).not.toMatch(/"minLength"|"maxLength"|"oneOf"/);
    const lines = readFileSync(path.join(out.run_dir, RUN_FILES.preflight), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const subsetLine = lines.find((l) => String(l['stage']).includes('schema subset'));
    expect(subsetLine).toMatchObject({ dialect: 'json_schema', sent_schema_sha256: structured.sent_schema_sha256, subset: { policy: 'strip' } });
    expect(hashCanonical(structured.subset)).toBe(hashCanonical(subsetLine!['subset']));
  });

  it('advice followed — a dialect whose subset holds the schema (vllm) under refuse: the run ends verified, nothing left out, the sent hash the schema\'s', () => {
    expect(inVllm.code, inVllm.stderr.slice(-3_000)).toBe(EXIT_CODES.ok);
    const out = JSON.parse(inVllm.stdout) as { run_dir: string; verify: { ok: boolean } };
    expect(out.verify.ok).toBe(true);
    const checked = checkSignedManifest(JSON.parse(readFileSync(path.join(out.run_dir, RUN_FILES.manifest), 'utf8')), refuseShort.key.keys.publicKey);
    if (!checked.ok) throw new Error(checked.reason);
    const structured = checked.manifest.model.structured_output!;
    expect(structured).toMatchObject({ dialect: 'vllm', subset: { policy: 'refuse', removed: [] } });
    expect(structured.sent_schema_sha256).toMatch(/^sha256:/);
  });
});
