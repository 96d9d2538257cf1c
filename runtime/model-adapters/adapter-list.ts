// The one list of model adapters (issue 33 item 4): each adapter once, keyed by its name — the
// variants of the start message's model configuration (runtime/protocol.ts RuntimeModelConfig),
// held to them both ways by the compiler — with the facts it states where it is defined
// (runtime/model-adapter.ts ModelAdapterDefinition). Whoever must know whether a model is waited
// for, shared, checked before hour 0, served over HTTP or pinned by its build asks here, never
// by comparing the name: a new adapter answers each question by stating its facts, and is
// refused by the compiler until it does. docs/architecture.md ("a model adapter") lists every
// place a new one touches; test/architecture/model-adapters.test.ts holds that row to the code.
//
// The stored formats are not derived from this list, on purpose: the adapter names a manifest
// (design/manifest.ts ModelAdapter) and a recorded model call (schema/events/model-output-events.ts)
// may hold belong to their version, so a new adapter is a new version of each, never a silent
// widening of one already written. The compiler holds this list to both: the recorded calls'
// names below, the manifest's in design/model-choice.ts (AdaptersInManifest).
import type { z } from 'zod';
import type { ModelAnswered, ModelCallFailed } from '../../schema/events/model-output-events.js';
import type { ModelAdapter, ModelAdapterDefinition, ModelAdapterName, ModelConfigs } from '../model-adapter.js';
import type { RuntimeModelConfig } from '../protocol.js';
import { ANTHROPIC_ADAPTER } from './anthropic-adapter.js';
import { GEMINI_ADAPTER } from './gemini-adapter.js';
import { LOCAL_ADAPTER } from './local-adapter.js';
import { OPENAI_ADAPTER } from './openai-adapter.js';
import { REFERENCE_POLICY_ADAPTER } from './reference-policy.js';
import { REPLAY_ADAPTER } from './replay-adapter.js';

type AdapterList = { readonly [N in ModelAdapterName]: ModelAdapterDefinition<N> };
/** Any adapter's definition, for its facts that do not read a configuration. */
export type AnyAdapterDefinition = AdapterList[ModelAdapterName];

export const MODEL_ADAPTERS: AdapterList = {
  reference: REFERENCE_POLICY_ADAPTER,
  openai: OPENAI_ADAPTER,
  anthropic: ANTHROPIC_ADAPTER,
  gemini: GEMINI_ADAPTER,
  replay: REPLAY_ADAPTER,
  local: LOCAL_ADAPTER,
};

/** The adapters' names, in the list's order. */
export const MODEL_ADAPTER_NAMES = Object.keys(MODEL_ADAPTERS) as readonly ModelAdapterName[];

/**
 * Every adapter's calls are recorded under the current ModelOutputEvent.* versions: a name they
 * cannot hold is a compile error here, and a new version of those events first (the old kept).
 */
export type AdaptersRecordable = Holds<ModelAdapterName extends z.output<typeof ModelAnswered.payload>['adapter'] & z.output<typeof ModelCallFailed.payload>['adapter'] ? true : false>;
type Holds<T extends true> = T;

/** The definition of the adapter a configuration names. */
export function adapterOf<N extends ModelAdapterName>(name: N): ModelAdapterDefinition<N> {
  return MODEL_ADAPTERS[name];
}

/**
 * The facts of an adapter named by a record (a manifest's model.adapter, which may also be
 * `none`: no model); null for a name that is no adapter of this list.
 */
export function recordedAdapterOf(name: string): AnyAdapterDefinition | null {
  return (MODEL_ADAPTER_NAMES as readonly string[]).includes(name) ? MODEL_ADAPTERS[name as ModelAdapterName] : null;
}

/** How long one call of the configured model may be waited for (ModelAdapterDefinition callTimeoutMs); null: not waited for. */
export function callTimeoutMsOf(config: RuntimeModelConfig): number | null {
  return timeoutWith(config.adapter, config);
}

/** The model adapter a start message's configuration asks for (issue 5 item 3, issue 15). */
export function modelAdapterFor(config: RuntimeModelConfig): ModelAdapter {
  return createWith(config.adapter, config);
}

// The name and the configuration it keys, apart: the compiler follows one adapter through both.
function timeoutWith<N extends ModelAdapterName>(name: N, config: ModelConfigs[N]): number | null {
  return adapterOf(name).callTimeoutMs(config);
}

function createWith<N extends ModelAdapterName>(name: N, config: ModelConfigs[N]): ModelAdapter {
  return adapterOf(name).create(config);
}
