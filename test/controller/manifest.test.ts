// The instance manifest: schema, stable hash, A/B/C differ only by group fields, signing
// into a run folder, and a forged manifest file caught by the signature check.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildExperimentPlan, type ExperimentPlan } from '../../design/experiment-plan.js';
import {
  buildInstanceManifest,
  CURRENT_PROMPT,
  promptDriftOf,
  checkSignedManifest,
  GROUP_CAPABILITIES,
  GROUP_FIELDS,
  InstanceManifest,
  ManifestError,
  manifestsDifferOnlyByGroup,
  manifestSha256,
  nonGroupDifferences,
  RUNTIME_VERSION,
  type InstanceManifestInput,
} from '../../design/manifest.js';
import { checkPreregLock, PreRegistration } from '../../design/prereg.js';
import { writeSignedManifest } from '../../controller/run-signatures.js';
import { loadScenario } from '../../design/scenario.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { DsseEnvelope, verifyDsse } from '../../schema/dsse.js';
import { generateKeyPair } from '../../schema/ed25519-keys.js';
import { hashCanonical } from '../../schema/hash.js';
import { MANIFEST_PAYLOAD_TYPE, RUN_FILES } from '../../schema/run-files.js';
import { tempDir } from '../support/writer-fixture.js';

const PREREG_FILE = path.resolve('experiments/prereg/default.json');
const SCENARIO_DIR = path.resolve('experiments/scenario/research-workspace-72h');
const START_AT = '2026-07-20T00:00:00.000Z';
const STARTED_AT = '2026-07-20T09:15:00.000Z';
const scratch: string[] = [];

let prereg: PreRegistration;
let plan: ExperimentPlan;

beforeAll(() => {
  prereg = PreRegistration.parse(JSON.parse(readFileSync(PREREG_FILE, 'utf8')));
  plan = buildExperimentPlan({ prereg, scenario: loadScenario(SCENARIO_DIR), seed: '2026072001', startAt: START_AT });
});

afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

function input(group: keyof typeof GROUP_CAPABILITIES, blind: string, overrides: Partial<InstanceManifestInput> = {}): InstanceManifestInput {
  return {
    experimentId: 'exp-20260720-001',
    groupBlindId: blind,
    capabilities: GROUP_CAPABILITIES[group],
    replicate: 1,
    plan,
    prereg,
    retrievalPolicy: prereg.retrieval_policy,
    model: { adapter: 'openai', model_id: 'test-model', build: null, params: { temperature: 0, top_p: 1, seed: 7, max_tokens: 1024 }, call_timeout_ms: 60000 },
    isolation: { mode: 'same-uid', reason: 'not started as root' },
    startedAt: STARTED_AT,
    ...overrides,
  };
}

describe('building', () => {
  test('the built manifest validates and carries the plan, pre-registration and version facts', () => {
    const m = buildInstanceManifest(input('C', 'G-7F3A'));
    expect(InstanceManifest.safeParse(m).success).toBe(true);
    expect(m).toMatchObject({
      experiment_id: 'exp-20260720-001',
      group_blind_id: 'G-7F3A',
      wake_schedule_hash: plan.schedule_hash,
      intervention_plan_hash: plan.intervention_plan_hash,
      scenario_hash: plan.scenario_hash,
      random_seed: '2026072001',
      intervention_script_version: plan.intervention_script_version,
      scoring_spec_version: prereg.scoring.scoring_spec_version,
      retrieval_policy_hash: hashCanonical(prereg.retrieval_policy),
      group_config_hash: hashCanonical({ persistent_state: true, autonomous_replanning: true }),
      model_id: 'test-model',
      started_at: STARTED_AT,
      replicate: 1,
    });
    expect(m.versions.runtime).toBe(m.runtime_version);
  });

  test('prereg_sha256 is the hash the pre-registration lock checks', () => {
    const m = buildInstanceManifest(input('A', 'G-0001'));
    expect(m.prereg_sha256).toBe(checkPreregLock(PREREG_FILE, generateKeyPair().publicKey).prereg_sha256);
  });

  test('RUNTIME_VERSION is package.json "version"', () => {
    expect(RUNTIME_VERSION).toBe((JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version);
  });

  test('same inputs ⇒ byte-identical JCS and hash; started_at is data', () => {
    const a = buildInstanceManifest(input('B', 'G-1234'));
    const b = buildInstanceManifest(input('B', 'G-1234'));
    expect(canonicalJson(b)).toBe(canonicalJson(a));
    expect(manifestSha256(b)).toBe(manifestSha256(a));
    const later = buildInstanceManifest(input('B', 'G-1234', { startedAt: '2026-07-20T09:15:00.001Z' }));
    expect(manifestSha256(later)).not.toBe(manifestSha256(a));
  });

  test('refused: a retrieval policy other than the pre-registered one, a bare group letter as blind id, re-planning without state, a forged config hash', () => {
    expect(() => buildInstanceManifest(input('C', 'G-1', { retrievalPolicy: { ...prereg.retrieval_policy, window_events: prereg.retrieval_policy.window_events + 1 } }))).toThrow(ManifestError);
    expect(() => buildInstanceManifest(input('C', 'C'))).toThrow(/group letter/);
    expect(() => buildInstanceManifest(input('C', 'G-1', { capabilities: { persistent_state: false, autonomous_replanning: true } }))).toThrow(/requires persistent_state/);
    const m = buildInstanceManifest(input('A', 'G-1'));
    const forged = InstanceManifest.safeParse({ ...m, capabilities: GROUP_CAPABILITIES.C });
    expect(forged.success).toBe(false);
    expect(forged.error?.issues.map((i) => i.path.join('.'))).toEqual(['group_config_hash']);
  });
});

describe('fairness: A/B/C of one replicate', () => {
  test('differ only in group_blind_id, capabilities and group_config_hash (experiment_id is shared)', () => {
    const [a, b, c] = [buildInstanceManifest(input('A', 'G-7F3A')), buildInstanceManifest(input('B', 'G-19C2')), buildInstanceManifest(input('C', 'G-E40B'))];
    expect(manifestsDifferOnlyByGroup(a, b)).toEqual(['capabilities.persistent_state', 'group_blind_id', 'group_config_hash']);
    expect(manifestsDifferOnlyByGroup(b, c)).toEqual(['capabilities.autonomous_replanning', 'group_blind_id', 'group_config_hash']);
    expect(manifestsDifferOnlyByGroup(a, c)).toEqual(['capabilities.autonomous_replanning', 'capabilities.persistent_state', 'group_blind_id', 'group_config_hash']);
    for (const [x, y] of [[a, b], [b, c], [a, c]] as const) {
      expect(manifestsDifferOnlyByGroup(x, y).every((p) => (GROUP_FIELDS as readonly string[]).includes(p.split('.')[0]!))).toBe(true);
      expect(nonGroupDifferences(x, y)).toEqual([]);
    }
    expect(manifestsDifferOnlyByGroup(a, a)).toEqual([]);
  });

  test('a group-dependent difference elsewhere is reported; started_at alone is per-instance data', () => {
    const a = buildInstanceManifest(input('A', 'G-7F3A'));
    const c = buildInstanceManifest(input('C', 'G-E40B', { model: { adapter: 'openai', model_id: 'test-model', build: null, params: { temperature: 0.7, top_p: 1, seed: 7, max_tokens: 1024 }, call_timeout_ms: 60000 }, startedAt: '2026-07-20T09:15:02.000Z' }));
    expect(manifestsDifferOnlyByGroup(a, c)).toContain('model.params.temperature');
    expect(manifestsDifferOnlyByGroup(a, c)).toContain('started_at');
    expect(nonGroupDifferences(a, c)).toEqual(['model.params.temperature']);
    const otherSeed = buildExperimentPlan({ prereg, scenario: loadScenario(SCENARIO_DIR), seed: 'other', startAt: START_AT });
    const b = buildInstanceManifest(input('B', 'G-19C2', { plan: otherSeed }));
    expect(nonGroupDifferences(a, b)).toEqual(expect.arrayContaining(['intervention_plan_hash', 'random_seed', 'wake_schedule_hash']));
  });
});

describe('signing into a run folder', () => {
  function signed(): { dir: string; manifest: InstanceManifest; returned: string; keys: ReturnType<typeof generateKeyPair> } {
    const dir = tempDir('ds-manifest-');
    scratch.push(dir);
    const keys = generateKeyPair();
    const manifest = buildInstanceManifest(input('B', 'G-19C2'));
    const returned = writeSignedManifest(dir, manifest, keys);
    return { dir, manifest, returned, keys };
  }

  test('verifyDsse over manifest.dsse.json yields the same body, and the returned hash is sha256(JCS(body))', () => {
    const { dir, manifest, returned, keys } = signed();
    const envelope: unknown = JSON.parse(readFileSync(path.join(dir, RUN_FILES.manifest), 'utf8'));
    const verified = verifyDsse(envelope, MANIFEST_PAYLOAD_TYPE, keys.publicKey);
    expect(verified.ok).toBe(true);
    if (!verified.ok) return;
    expect(verified.body).toEqual(manifest);
    expect(verified.bodyText).toBe(canonicalJson(manifest));
    expect(returned).toBe(manifestSha256(manifest));
    expect(returned).toBe(hashCanonical(verified.body));
    expect(checkSignedManifest(envelope, keys.publicKey)).toEqual({ ok: true, manifest, sha256: returned });
    expect(() => writeSignedManifest(dir, manifest, keys)).toThrow(/never replaced/);
  });

  test('forged: editing a field of the signed manifest file breaks the signature check', () => {
    const { dir, keys } = signed();
    const file = path.join(dir, RUN_FILES.manifest);
    const envelope = DsseEnvelope.parse(JSON.parse(readFileSync(file, 'utf8')));
    const body = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as InstanceManifest;
    const edited = { ...body, capabilities: GROUP_CAPABILITIES.C, group_config_hash: hashCanonical(GROUP_CAPABILITIES.C) };
    writeFileSync(file, JSON.stringify({ ...envelope, payload: Buffer.from(canonicalJson(edited), 'utf8').toString('base64') }));
    const reread: unknown = JSON.parse(readFileSync(file, 'utf8'));
    const verified = verifyDsse(reread, MANIFEST_PAYLOAD_TYPE, keys.publicKey);
    expect(verified).toEqual({ ok: false, reason: 'signature does not verify against the trusted key' });
    expect(checkSignedManifest(reread, keys.publicKey).ok).toBe(false);
    // The edited body is itself a valid manifest: only the signature catches it.
    expect(InstanceManifest.safeParse(edited).success).toBe(true);
  });

  test('a manifest signed by another key does not check against the controller key', () => {
    const { dir } = signed();
    const envelope: unknown = JSON.parse(readFileSync(path.join(dir, RUN_FILES.manifest), 'utf8'));
    const result = checkSignedManifest(envelope, generateKeyPair().publicKey);
    expect(result.ok).toBe(false);
  });
});

describe('the prompt a resume must keep (manifest 1.4.0 prompt)', () => {
  test('the same prompt resumes; another layout or rule, or a manifest from before it (ds-prompt/1), is drift', () => {
    expect(promptDriftOf(CURRENT_PROMPT)).toBeNull();
    expect(promptDriftOf({ ...CURRENT_PROMPT, layout: 'ds-prompt/9' })).toMatch(/started with prompt ds-prompt\/9 .*this build shows ds-prompt\/3/);
    expect(promptDriftOf({ ...CURRENT_PROMPT, retrieval_rule: '1.0.0' })).toMatch(/retrieval rule 1\.0\.0, this build shows/);
    expect(promptDriftOf(null)).toMatch(/started with prompt ds-prompt\/1 and retrieval rule 1\.0\.0/);
    // A build that still showed ds-prompt/1 would resume a manifest without the field.
    expect(promptDriftOf(null, { layout: 'ds-prompt/1', retrieval_rule: '1.0.0' })).toBeNull();
  });
});
