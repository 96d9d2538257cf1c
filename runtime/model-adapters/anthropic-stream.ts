// Reading a streamed Anthropic message (issue 36 item 1): Server-Sent Events of typed events,
// as the Messages API documents them (https://platform.claude.com/docs/en/build-with-claude/streaming):
//   message_start        {message: {model, usage: {input_tokens, cache_read_input_tokens, cache_creation_input_tokens, output_tokens}}}
//   content_block_start  {index, content_block: {type: "text", text} | {type: "tool_use", id, name, input}}
//   content_block_delta  {index, delta: {type: "text_delta", text} | {type: "input_json_delta", partial_json}}
//   content_block_stop   {index}
//   message_delta        {delta: {stop_reason, stop_sequence}, usage: {output_tokens, …}}  (usage figures are cumulative)
//   message_stop         the end
//   ping                 nothing
//   error                {error: {type, message}} — e.g. overloaded_error mid-stream: the stream ends there
// The documentation says new event types may be added and are to be passed over, so an unknown
// type is counted and ignored; so are deltas this adapter does not use (thinking, citations).
// The framing is sse-events.ts's; bounded in bytes and events. Never throws: every way a stream
// ends comes back as an end, with what arrived kept in the state.
import { readSseEvents, type SseEnd } from './sse-events.js';

export interface AnthropicStreamState {
  /** message_start's message.model. */
  model: string | null;
  /** The usage figures as last reported (message_start's, updated by message_delta's). */
  usage: Record<string, unknown>;
  /** message_delta's delta.stop_reason. */
  stop_reason: string | null;
  /** The text blocks' text, concatenated. */
  text: string;
  sawText: boolean;
  /** The tool_use block's input as it streamed (input_json_delta partial_json, concatenated). */
  toolJson: string;
  sawTool: boolean;
  /** The name the tool_use block called. */
  toolName: string | null;
  events: number;
  bytes: number;
}

export type AnthropicStreamEnd =
  | SseEnd
  /** message_stop arrived. */
  | { readonly kind: 'done' }
  /** An `event: error` arrived: the API stopped the message (its error type and message in the detail). */
  | { readonly kind: 'server_error'; readonly detail: string }
  /** An event that is not JSON, or of the wrong shape; or more events than the bound. */
  | { readonly kind: 'bad_event'; readonly detail: string };

const QUOTED_CHARS = 300;

export function emptyAnthropicStreamState(): AnthropicStreamState {
  return { model: null, usage: {}, stop_reason: null, text: '', sawText: false, toolJson: '', sawTool: false, toolName: null, events: 0, bytes: 0 };
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** `{type, message}` of an API error object, as words. */
export function anthropicErrorText(error: unknown): string {
  const e = asRecord(error);
  const type = typeof e?.['type'] === 'string' ? e['type'] : 'error';
  const message = typeof e?.['message'] === 'string' ? e['message'] : JSON.stringify(error)?.slice(0, QUOTED_CHARS) ?? String(error);
  return `${type}: ${message.slice(0, QUOTED_CHARS)}`;
}

function mergeUsage(state: AnthropicStreamState, usage: unknown): void {
  const u = asRecord(usage);
  if (u === null) return;
  for (const [k, v] of Object.entries(u)) if (v !== null && v !== undefined) state.usage[k] = v;
}

function applyContentBlock(state: AnthropicStreamState, block: Record<string, unknown> | null): void {
  if (block === null) return;
  if (block['type'] === 'text') {
    state.sawText = true;
    if (typeof block['text'] === 'string') state.text += block['text'];
  } else if (block['type'] === 'tool_use') {
    state.sawTool = true;
    if (typeof block['name'] === 'string') state.toolName = block['name'];
    // The documented start carries `input: {}` and the input follows as deltas; a server that sends it whole here is read too.
    const input = asRecord(block['input']);
    if (input !== null && Object.keys(input).length > 0) state.toolJson += JSON.stringify(input);
  }
}

function applyDelta(state: AnthropicStreamState, delta: Record<string, unknown> | null): void {
  if (delta === null) return;
  if (delta['type'] === 'text_delta' && typeof delta['text'] === 'string') {
    state.text += delta['text'];
    state.sawText = true;
  } else if (delta['type'] === 'input_json_delta' && typeof delta['partial_json'] === 'string') {
    state.toolJson += delta['partial_json'];
  }
}

/** Applies one event to the state; returns an end when it ends the stream. */
function applyEvent(state: AnthropicStreamState, name: string, data: string, maxEvents: number): AnthropicStreamEnd | null {
  state.events += 1;
  if (state.events > maxEvents) return { kind: 'bad_event', detail: `the stream exceeded ${maxEvents} events; reading stopped there` };
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return name === 'error' ? { kind: 'server_error', detail: `the API sent an error event: ${JSON.stringify(data.slice(0, QUOTED_CHARS))}` } : { kind: 'bad_event', detail: `stream event ${state.events} (${name || 'unnamed'}) is not JSON: ${JSON.stringify(data.slice(0, QUOTED_CHARS))}` };
  }
  const event = asRecord(json);
  if (event === null) return { kind: 'bad_event', detail: `stream event ${state.events} is not a JSON object: ${JSON.stringify(data.slice(0, QUOTED_CHARS))}` };
  // The payload's own type is the event (the `event:` line names it too).
  const type = typeof event['type'] === 'string' ? event['type'] : name;
  switch (type) {
    case 'message_start': {
      const message = asRecord(event['message']);
      if (typeof message?.['model'] === 'string' && message['model'] !== '') state.model = message['model'];
      mergeUsage(state, message?.['usage']);
      for (const block of Array.isArray(message?.['content']) ? message['content'] : []) applyContentBlock(state, asRecord(block));
      return null;
    }
    case 'content_block_start':
      applyContentBlock(state, asRecord(event['content_block']));
      return null;
    case 'content_block_delta':
      applyDelta(state, asRecord(event['delta']));
      return null;
    case 'message_delta': {
      const delta = asRecord(event['delta']);
      if (typeof delta?.['stop_reason'] === 'string') state.stop_reason = delta['stop_reason'];
      mergeUsage(state, event['usage']);
      return null;
    }
    case 'message_stop':
      return { kind: 'done' };
    case 'error':
      return { kind: 'server_error', detail: `the API sent an error event mid-stream (${anthropicErrorText(event['error'])})` };
    default:
      // content_block_stop, ping, and types added later: nothing to take.
      return null;
  }
}

/** Reads the stream into `state` (mutated as events arrive, so a caller that gives up still holds what arrived). */
export async function readAnthropicStream(body: ReadableStream<Uint8Array>, limits: { readonly maxBytes: number; readonly maxEvents: number }, state: AnthropicStreamState): Promise<AnthropicStreamEnd> {
  return readSseEvents<AnthropicStreamEnd>(body, limits.maxBytes, state, (event) => applyEvent(state, event.name, event.data, limits.maxEvents));
}
