// The model adapter a start message asks for (issue 5 item 3, issue 15).
import type { ModelAdapter } from '../model-adapter.js';
import type { RuntimeModelConfig } from '../protocol.js';
import { LocalAdapter } from './local-adapter.js';
import { OpenAiAdapter } from './openai-adapter.js';
import { ReferencePolicy } from './reference-policy.js';
import { ReplayAdapter } from './replay-adapter.js';

export function modelAdapterFor(config: RuntimeModelConfig): ModelAdapter {
  switch (config.adapter) {
    case 'reference':
      return new ReferencePolicy();
    case 'openai': {
      const apiKey = config.api_key_env === null ? null : (process.env[config.api_key_env] ?? null);
      if (config.api_key_env !== null && apiKey === null) throw new Error(`the environment variable ${config.api_key_env} (the API key) is not set`);
      return new OpenAiAdapter({ baseUrl: config.base_url, modelId: config.model_id, apiKey, params: config.params, dialect: config.dialect, retry: config.retry, contextSize: config.context_size, stream: config.stream });
    }
    case 'local':
      // Nothing is loaded here: the engine and the model load in preflight (before the first wake), or at the first call.
      return new LocalAdapter({ modelFile: config.model_file, modelId: config.model_id, params: config.params, threads: config.threads, contextSize: config.context_size });
    case 'replay':
      return new ReplayAdapter(config.source_model_id, config.calls);
    default: {
      const unhandled: never = config;
      throw new Error(`unknown model adapter ${JSON.stringify(unhandled)}`);
    }
  }
}
