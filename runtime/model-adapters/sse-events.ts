// Reading a Server-Sent Events body into its events (the WHATWG framing: `field: value` lines,
// an event dispatched at a blank line), bounded in bytes, for every streaming model adapter:
// the openai adapter's chat chunks (chat-stream.ts) and the anthropic adapter's typed events
// (anthropic-stream.ts) differ in what an event means, not in how a stream is cut into events.
//
// Two leniencies, both seen on real servers: llama.cpp writes `error: {…}` lines (the event is
// passed on with `errorField`), and a server that omits the blank line between events gets a
// pending complete JSON payload dispatched before the next `data:` line starts, rather than
// joined into something unparseable.
//
// This module never throws: every way a stream ends comes back as an end, and the reader decides
// from each event whether to go on.

export interface SseEvent {
  /** The `event:` field ('' when none was given). */
  readonly name: string;
  readonly data: string;
  /** The payload came on an `error:` line (llama.cpp) rather than `data:`. */
  readonly errorField: boolean;
}

export type SseEnd =
  /** The body ended (complete or not: the reader of the events knows). */
  | { readonly kind: 'eof' }
  /** Reading failed: the connection broke, or the caller's signal aborted it. */
  | { readonly kind: 'broken'; readonly error: unknown }
  | { readonly kind: 'over_limit'; readonly detail: string }
  /** Not UTF-8. */
  | { readonly kind: 'malformed'; readonly detail: string };

/**
 * Reads `body` event by event, handing each to `onEvent` until it returns an end of its own (then
 * the stream is cancelled), the body ends, breaks, or passes `maxBytes`. `progress.bytes` counts
 * what arrived, as it arrives.
 */
export async function readSseEvents<E>(body: ReadableStream<Uint8Array>, maxBytes: number, progress: { bytes: number }, onEvent: (event: SseEvent) => E | null): Promise<E | SseEnd> {
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let buffer = '';
  let data: string[] = [];
  let eventName = '';
  let errorLine = false;

  const dispatch = (): E | null => {
    if (data.length === 0) {
      eventName = '';
      return null;
    }
    const event: SseEvent = { name: eventName, data: data.join('\n'), errorField: errorLine };
    data = [];
    eventName = '';
    errorLine = false;
    return onEvent(event);
  };

  /** One line of the stream; returns an end when it ends the stream. */
  const line = (raw: string): E | null => {
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text === '') return dispatch();
    if (text.startsWith(':')) return null;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data' || field === 'error') {
      if (data.length > 0 && isCompleteJson(data.join('\n'))) {
        const end = dispatch();
        if (end !== null) return end;
      }
      data.push(value);
      if (field === 'error') errorLine = true;
    } else if (field === 'event') {
      eventName = value;
    }
    return null;
  };

  const finish = async (end: E | SseEnd): Promise<E | SseEnd> => {
    const kind = (end as { kind?: unknown }).kind;
    if (kind !== 'eof' && kind !== 'broken') await reader.cancel('stream read ended').catch(() => undefined);
    return end;
  };

  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch (error) {
      return finish({ kind: 'broken', error });
    }
    if (chunk.done) {
      try {
        buffer += decoder.decode();
      } catch {
        return finish({ kind: 'malformed', detail: 'the stream is not valid UTF-8' });
      }
      for (const rest of buffer.split('\n')) {
        const end = line(rest);
        if (end !== null) return finish(end);
      }
      const end = dispatch();
      return finish(end ?? { kind: 'eof' });
    }
    progress.bytes += chunk.value.length;
    if (progress.bytes > maxBytes) return finish({ kind: 'over_limit', detail: `the stream exceeded ${maxBytes} bytes; reading stopped there` });
    try {
      buffer += decoder.decode(chunk.value, { stream: true });
    } catch {
      return finish({ kind: 'malformed', detail: 'the stream is not valid UTF-8' });
    }
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      const end = line(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
      if (end !== null) return finish(end);
      newline = buffer.indexOf('\n');
    }
  }
}

function isCompleteJson(text: string): boolean {
  if (text.trim() === '[DONE]') return true;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
