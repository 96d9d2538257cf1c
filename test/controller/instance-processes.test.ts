// What the controller makes of the runtime's check at its start, by the adapter's facts
// (issue 33 item 4, controller/instance-processes.ts): the build the check reports is held to the
// signed manifest's pin only for an adapter whose check reports the build it loaded (forged: a
// local model file changed after the start), and a resume's advice asks for a running server only
// for an adapter served over HTTP — for every adapter of the list, and for a manifest's `none`.
import { describe, expect, test } from 'vitest';
import type { InstanceManifest } from '../../design/manifest.js';
import { pinnedBuildMismatch, pinnedModelAdvice } from '../../controller/instance-processes.js';
import { adapterOf, MODEL_ADAPTER_NAMES, recordedAdapterOf } from '../../runtime/model-adapters/adapter-list.js';

const PINNED = `gguf-sha256:${'a'.repeat(64)}`;
const OTHER = `gguf-sha256:${'b'.repeat(64)}`;

function modelInfo(adapter: InstanceManifest['model']['adapter']): InstanceManifest['model'] {
  const waited = recordedAdapterOf(adapter)?.callsModel === true;
  return {
    adapter,
    model_id: 'the-model',
    build: PINNED,
    params: waited ? { temperature: 0, top_p: null, seed: 1, max_tokens: null } : null,
    call_timeout_ms: waited ? 60_000 : null,
    structured_output: null,
    config_sha256: null,
    context_size: null,
    prices: null,
  };
}

describe('the pinned build, by the adapter\'s facts', () => {
  test.each(MODEL_ADAPTER_NAMES)('%s: a build the check reports other than the pinned one is refused exactly when its check reports the build it loaded', (name) => {
    const model = modelInfo(name);
    expect(pinnedBuildMismatch(model, { build: PINNED })).toBeNull();
    const forged = pinnedBuildMismatch(model, { build: OTHER });
    if (adapterOf(name).preflightReportsBuild) expect(forged).toBe(`the runtime loaded a model hashing to ${OTHER}, but the signed manifest pins ${PINNED}: the model file changed after the start; restore it, or start a new run`);
    else expect(forged).toBeNull();
  });

  test('the local model reports its build: a changed file is refused; no model (`none`) pins nothing', () => {
    expect(adapterOf('local').preflightReportsBuild).toBe(true);
    expect(pinnedBuildMismatch(modelInfo('local'), {})).toContain('hashing to undefined, but the signed manifest pins');
    expect(pinnedBuildMismatch(modelInfo('none'), { build: OTHER })).toBeNull();
  });
});

describe('the advice of a refused model in a folder that exists, by the adapter\'s facts', () => {
  test.each(MODEL_ADAPTER_NAMES)('%s: a running server listing the model id is asked for exactly when it is served over HTTP; always a resume as pinned or a new folder', (name) => {
    const advice = pinnedModelAdvice({ runDir: '/runs/r1', manifest: { model: modelInfo(name) } });
    expect(advice).toContain(`The signed manifest of /runs/r1 pins the model (${name} the-model, dialect none)`);
    expect(advice).toContain('then continue with npm run experiment -- --resume /runs/r1');
    expect(advice.includes('(its server running, serving the model id "the-model" — for a llama.cpp server, llama-server --alias the-model — and honouring dialect none)')).toBe(adapterOf(name).answeredByServer);
  });

  test('the openai, anthropic and gemini adapters are served over HTTP today; no model (`none`) asks for no server', () => {
    expect(MODEL_ADAPTER_NAMES.filter((n) => adapterOf(n).answeredByServer)).toEqual(['openai', 'anthropic', 'gemini']);
    expect(pinnedModelAdvice({ runDir: '/runs/r1', manifest: { model: modelInfo('none') } })).not.toContain('llama-server');
  });
});
