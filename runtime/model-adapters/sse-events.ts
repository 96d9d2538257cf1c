// The framing of a Server-Sent Events body (https://html.spec.whatwg.org/multipage/server-sent-events.html):
// lines, `data:` payloads joined until a blank line, `event:` names, `:` comments — shared by the
// adapters that stream (chat-stream.ts for OpenAI's chat chunks, gemini-stream.ts for Gemini's
// GenerateContentResponse chunks). What an event means is the caller's (`onEvent`); this reads
// the bytes, bounded by `maxBytes`, and never throws: every way the body ends comes back.
//
// Two leniencies, both for servers seen in the wild: a line `error: …` (llama.cpp) is an error
// event's data, and a complete JSON payload followed by another `data:` line without the blank
// line between them is dispatched before the next starts, rather than joined into something
// unparseable.

/** How a body ended, beside the ends an event itself decides (`E`). */
export type SseEnd<E> =
  /** The body ended (the caller judges whether what arrived is complete). */
  | { readonly kind: 'eof' }
  | { readonly kind: 'over_limit'; readonly detail: string }
  /** Reading failed: the connection broke, or the caller's signal aborted it. */
  | { readonly kind: 'broken'; readonly error: unknown }
  /** Not UTF-8. */
  | { readonly kind: 'malformed'; readonly detail: string }
  | E;

/** What the reader counts as it goes (mutated, so a caller that gives up still holds it). */
export interface SseProgress {
  bytes: number;
}

/** `onEvent(data, isErrorEvent)` for each dispatched event; a non-null return ends the reading. */
export async function readSseEvents<E>(body: ReadableStream<Uint8Array>, maxBytes: number, progress: SseProgress, onEvent: (data: string, isErrorEvent: boolean) => E | null): Promise<SseEnd<E>> {
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
    const payload = data.join('\n');
    const isError = errorLine || eventName === 'error';
    data = [];
    eventName = '';
    errorLine = false;
    return onEvent(payload, isError);
  };

  const line = (raw: string): E | null => {
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text === '') return dispatch();
    if (text.startsWith(':')) return null;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data' || field === 'error') {
      if (data.length > 0 && isCompletePayload(data.join('\n'))) {
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

  const finish = async (end: SseEnd<E>): Promise<SseEnd<E>> => {
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

/** A payload that stands on its own: JSON, or OpenAI's `[DONE]`. */
function isCompletePayload(text: string): boolean {
  if (text.trim() === '[DONE]') return true;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
