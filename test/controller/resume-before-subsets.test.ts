// A resume of an instance started before issue 36 (its manifest has no sent_schema_sha256: it sent
// its answer schema whole) goes on only where this build sends the very same schema; otherwise its
// calls would change constraint halfway, so the resume is refused, saying why
// (controller/instance-start.ts resolvedForResume).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { resolveModel, type ModelChoice } from '../../design/model-choice.js';
import type { InstanceManifest } from '../../design/manifest.js';
import type { ModelCallRules } from '../../design/prereg.js';
import { resolvedForResume } from '../../controller/instance-start.js';
import { InstanceError } from '../../controller/instance-error.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { tempDir } from '../support/writer-fixture.js';

const RETRY = { max_attempts: 2, backoff_ms: [10] };
const RULES = { usable_data: { min_accepted_share: 0.5 }, transport_retry: RETRY, pause_after_consecutive_transport_failures: 3 } as ModelCallRules;

function choiceIn(dialect: 'json_schema' | 'vllm'): ModelChoice {
  return { adapter: 'openai', base_url: 'http://127.0.0.1:9/v1', model_id: 'm', api_key_env: null, params: { temperature: 0, top_p: null, seed: 1, max_tokens: null }, dialect, stream: true, context_size: null, timeout_ms: 60_000, config_file: null, config_sha256: null };
}

/** A run folder holding `choice` as model.json, and the manifest an older build signed for it: the schema sent whole, no subset recorded. */
function startedBefore36(choice: ModelChoice): { runDir: string; manifest: InstanceManifest } {
  const runDir = path.join(tempDir('ds-resume-36-'), 'run');
  mkdirSync(runDir);
  writeFileSync(path.join(runDir, RUN_FILES.model), JSON.stringify(choice));
  // What this build would record under strip, with the two fields an older manifest does not have.
  const info = resolveModel(choice, RETRY, 'strip').info;
  const model = { ...info, structured_output: { ...info.structured_output!, sent_schema_sha256: null, subset: null } };
  return { runDir, manifest: { model } as unknown as InstanceManifest };
}

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InstanceError);
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

describe('resuming an instance started before the subset check', () => {
  test('where this build sends the same schema (vllm: nothing outside its subset), it goes on', () => {
    const { runDir, manifest } = startedBefore36(choiceIn('vllm'));
    let cleaned = 0;
    const model = resolvedForResume(runDir, RULES, manifest, () => void (cleaned += 1));
    expect(model.info.structured_output).toMatchObject({ dialect: 'vllm', subset: { removed: [] } });
    expect(cleaned).toBe(0);
  });

  test('forged: where this build would refuse the schema (json_schema under refuse), the resume is refused, saying why, and cleans up', () => {
    const { runDir, manifest } = startedBefore36(choiceIn('json_schema'));
    let cleaned = 0;
    const message = refusal(() => resolvedForResume(runDir, RULES, manifest, () => void (cleaned += 1)));
    expect(message).toMatch(/started before answer schemas were held to their dialect's subset .* sent its schema whole; this build would refuse that schema in dialect json_schema .*finish it with the build that started it/);
    expect(cleaned).toBe(1);
  });

  test('forged: where this build would leave keywords out (json_schema under strip), the resume is refused too', () => {
    const { runDir, manifest } = startedBefore36(choiceIn('json_schema'));
    const message = refusal(() => resolvedForResume(runDir, { ...RULES, schema_subset: 'strip' }, manifest, () => undefined));
    expect(message).toMatch(/this build would leave keywords out of it in dialect json_schema, so its calls cannot go on under the same constraint/);
  });

  test('forged: a started-under-this-build manifest whose model drifted is refused as drift', () => {
    const { runDir, manifest } = startedBefore36(choiceIn('vllm'));
    const current = resolveModel(choiceIn('vllm'), RETRY, 'refuse').info;
    const drifted = { model: { ...current, model_id: 'another-model' } } as unknown as InstanceManifest;
    expect(refusal(() => resolvedForResume(runDir, RULES, drifted, () => undefined))).toMatch(/no longer resolves to the signed manifest's model .*configuration drift after start/);
    expect(resolvedForResume(runDir, RULES, { model: current } as unknown as InstanceManifest, () => undefined).info).toEqual(current);
    expect(manifest.model.structured_output?.sent_schema_sha256).toBeNull();
  });
});
