// The body of a POST /v1/messages in each Anthropic dialect (issue 36 item 1, docs/model-protocol.md
// "anthropic"): the system prompt as the top-level `system`, the user prompt as the one user
// message, `max_tokens` (the API requires it), temperature and top_p when set (a seed has no
// field: the configuration refuses one), and the answer schema:
// - anthropic_json: `output_config: {format: {type: "json_schema", schema}}` — JSON outputs; the
//   answer is the text block;
// - anthropic_tool: one tool whose `input_schema` is the schema, `strict: true`, forced with
//   `tool_choice: {type: "tool", name}` — the answer is the tool_use block's input.
// The count_tokens body is the same request without what that endpoint does not take.
import { assertNever } from '../../foundation/assert-never.js';
import type { AnthropicDialect } from '../../schema/model-call-policy.js';
import type { ModelParams } from '../model-adapter.js';

/** The one tool of the anthropic_tool dialect; a constant, so the request is the same for every group. */
export const ANSWER_TOOL = { name: 'ds_model_output', description: 'Give your answer: call this tool once, with the answer as its input.' } as const;

export interface MessagesRequest {
  readonly modelId: string;
  readonly system: string;
  readonly user: string;
  readonly answerSchema: Readonly<Record<string, unknown>>;
  readonly dialect: AnthropicDialect;
}

/** The fields that ask for the constraint in `dialect`. */
export function anthropicConstraintFields(dialect: AnthropicDialect, schema: Readonly<Record<string, unknown>>): Record<string, unknown> {
  switch (dialect) {
    case 'anthropic_json':
      return { output_config: { format: { type: 'json_schema', schema } } };
    case 'anthropic_tool':
      return { tools: [{ name: ANSWER_TOOL.name, description: ANSWER_TOOL.description, input_schema: schema, strict: true }], tool_choice: { type: 'tool', name: ANSWER_TOOL.name } };
    default: {
      assertNever(dialect, 'anthropic dialect');
    }
  }
}

/** The body of POST /v1/messages/count_tokens: the prompt as a call would send it (system, message, the tool or format). */
export function countTokensBody(r: MessagesRequest): Record<string, unknown> {
  return { model: r.modelId, system: r.system, messages: [{ role: 'user', content: r.user }], ...anthropicConstraintFields(r.dialect, r.answerSchema) };
}

/** The body of POST /v1/messages. */
export function messagesBody(r: MessagesRequest, params: ModelParams, maxTokens: number, stream: boolean): Record<string, unknown> {
  return {
    ...countTokensBody(r),
    max_tokens: maxTokens,
    ...(params.temperature === null ? {} : { temperature: params.temperature }),
    ...(params.top_p === null ? {} : { top_p: params.top_p }),
    ...(stream ? { stream: true } : {}),
  };
}
