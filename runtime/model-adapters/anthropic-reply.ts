// An Anthropic message as the anthropic adapter reads it (issue 36 item 1): the non-streamed
// Message's schema, what one attempt's reply can be, and the mapping of what the API says into
// the house's call record — stop_reason into finish_reason (the original kept as
// provider_finish_reason), usage with its cache reads and writes, and the prompt reuse.
import { z } from 'zod';
import { assertNever } from '../../foundation/assert-never.js';
import type { PromptReuse } from '../../schema/events/model-output-events.js';
import type { AnthropicDialect } from '../../schema/model-call-policy.js';
import type { TokenUsage } from '../model-adapter.js';
import { ANSWER_TOOL } from './anthropic-request.js';
import type { AnthropicStreamState } from './anthropic-stream.js';

/** The part of a non-streamed Message this adapter reads; the API adds fields, which are ignored. */
export const AnthropicMessage = z.object({
  type: z.literal('message'),
  model: z.string().nullish(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional(), name: z.string().optional(), input: z.unknown().optional() })),
  stop_reason: z.string().nullish(),
  usage: z.unknown().optional(),
});

const Count = z.number().int().min(0);
/** The usage the Messages API reports: input_tokens (not read from or written to the cache), output_tokens, and the cache's two. */
const AnthropicUsage = z.object({ input_tokens: Count, output_tokens: Count, cache_read_input_tokens: Count.nullish(), cache_creation_input_tokens: Count.nullish() });

/** What the content of a finished message holds, whichever way it arrived. */
export interface MessageContent {
  readonly text: string;
  readonly sawText: boolean;
  /** The tool_use block's input as JSON text (as streamed, or serialised from a whole message); null: no tool_use block. */
  readonly toolJson: string | null;
  readonly toolName: string | null;
}

/** What one attempt that reached an answer (or a timeout) brought back. */
export type AnthropicReply =
  | { readonly kind: 'message'; readonly content: MessageContent; readonly stop_reason: string | null; readonly usage: unknown; readonly model: string | null }
  /** Aborted at timeoutMs; `state` holds what had streamed in (null before any or when not streaming). */
  | { readonly kind: 'timeout'; readonly detail: string; readonly state: AnthropicStreamState | null }
  /** A 2xx whose stream or body stopped halfway, or whose stream the API ended with an error event. */
  | { readonly kind: 'stream_broken'; readonly detail: string; readonly state: AnthropicStreamState | null }
  /** Any other status, or a 2xx that is not a message. */
  | { readonly kind: 'http_error'; readonly detail: string; readonly state: AnthropicStreamState | null; readonly answered2xx: boolean };

export function contentOfStream(state: AnthropicStreamState): MessageContent {
  return { text: state.text, sawText: state.sawText, toolJson: state.sawTool ? state.toolJson : null, toolName: state.toolName };
}

export function contentOfMessage(message: z.infer<typeof AnthropicMessage>): MessageContent {
  const texts = message.content.filter((b) => b.type === 'text').map((b) => b.text ?? '');
  const tool = message.content.find((b) => b.type === 'tool_use');
  return { text: texts.join(''), sawText: texts.length > 0, toolJson: tool === undefined ? null : JSON.stringify(tool.input ?? {}), toolName: tool?.name ?? null };
}

/** The answer in `dialect`: the text (anthropic_json) or the answer tool's input (anthropic_tool); a reason when there is none. */
export function answerOf(dialect: AnthropicDialect, content: MessageContent): { readonly answer: string } | { readonly missing: string } {
  switch (dialect) {
    case 'anthropic_json':
      return content.sawText ? { answer: content.text } : { missing: `the message has no text block${content.toolJson === null ? '' : ' (it called a tool instead)'}` };
    case 'anthropic_tool':
      if (content.toolJson === null) return { missing: `the message has no tool_use block although tool_choice forced the tool ${ANSWER_TOOL.name}` };
      if (content.toolName !== null && content.toolName !== ANSWER_TOOL.name) return { missing: `the message called the tool ${JSON.stringify(content.toolName)}, not ${ANSWER_TOOL.name}` };
      return { answer: content.toolJson };
    default: {
      assertNever(dialect, 'anthropic dialect');
    }
  }
}

/**
 * stop_reason as the record's finish_reason: end_turn, stop_sequence and tool_use (the forced
 * tool was called) end an answer as `stop`; max_tokens is `length`. `refusal` is no answer (the
 * adapter records a refusal failure). Any other word — pause_turn, model_context_window_exceeded,
 * one added later — is kept as it is, so the record says what the API said rather than a guess.
 */
export function finishReasonOf(stopReason: string | null): string | null {
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
    case 'tool_use':
      return 'stop';
    case 'max_tokens':
      return 'length';
    default:
      return stopReason;
  }
}

export interface AnthropicUsageFacts {
  readonly usage: TokenUsage;
  readonly cache_read_tokens: number;
  readonly cache_write_tokens: number;
  readonly prompt_reuse: PromptReuse;
}

/**
 * The API's usage as the record's: the prompt is every input token — those read afresh
 * (input_tokens), those read from the cache and those written to it — each billed at its own
 * price; the cache's reads are the prompt's reuse. null: no well-formed usage was reported.
 */
export function usageFactsOf(usage: unknown): AnthropicUsageFacts | null {
  const u = AnthropicUsage.safeParse(usage);
  if (!u.success) return null;
  const read = u.data.cache_read_input_tokens ?? 0;
  const written = u.data.cache_creation_input_tokens ?? 0;
  return {
    usage: { prompt_tokens: u.data.input_tokens + read + written, completion_tokens: u.data.output_tokens },
    cache_read_tokens: read,
    cache_write_tokens: written,
    prompt_reuse: { reused_tokens: read, evaluated_tokens: u.data.input_tokens + written, source: 'server_usage' },
  };
}
