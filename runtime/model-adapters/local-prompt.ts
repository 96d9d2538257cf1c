// The prompt as the local model sees it: the system and user messages rendered through the
// model's own chat template (or a plain format when it has none), with its beginning token.
import type { EngineModel, EngineToken, LocalEngine } from './load-engine.js';

/**
 * The prompt as tokens: the model's chat template when its GGUF has one (node-llama-cpp
 * resolves the wrapper; the template's text decides BOS), else plain text after the BOS token
 * where the vocabulary wants one (llama.cpp's own rule, as node-llama-cpp applies it).
 */
export function promptRenderer(engine: LocalEngine, model: EngineModel): { render: (system: string, user: string) => EngineToken[]; promptFormat: string } {
  const template = model.fileInfo.metadata.tokenizer?.chat_template;
  if (typeof template === 'string' && template.length > 0) {
    const wrapper = engine.resolveChatWrapper(model);
    if (wrapper !== null) {
      return {
        promptFormat: `chat-template:${wrapper.wrapperName}`,
        render: (system, user) =>
          wrapper
            .generateContextState({ chatHistory: [{ type: 'system', text: system }, { type: 'user', text: user }, { type: 'model', response: [] }] })
            .contextText.tokenize(model.tokenizer),
      };
    }
  }
  const bos = beginningToken(model);
  return {
    promptFormat: 'plain',
    render: (system, user) => {
      // Not special tokens: the window's text must not be able to write a control token.
      const tokens = model.tokenize(`${system}\n\n${user}\n\n`, false);
      return bos === null ? tokens : [bos, ...tokens];
    },
  };
}

function beginningToken(model: EngineModel): EngineToken | null {
  if (model.vocabularyType === 'rwkv' || model.vocabularyType === 'ugm') return null;
  if (model.vocabularyType === 'wpm') return model.tokens.bos;
  return model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
}
