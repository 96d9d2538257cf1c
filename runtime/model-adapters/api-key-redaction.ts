// What an API key becomes in every text an adapter records (details, raw output, preflight
// lines): a server may echo a header back, and outcomes go into the event store.

export const REDACTED_API_KEY = '[redacted API key]';

/** `text` with every occurrence of `key` replaced (null key: unchanged). */
export function redactKey(text: string, key: string | null): string {
  return key === null ? text : text.split(key).join(REDACTED_API_KEY);
}
