// Model text in a reviewer's page (issue 32): escaped for HTML, and every control character shown
// as what it is instead of written raw. A model's answer may hold NUL, ESC sequences, DEL or C1
// controls (a proposed path "notes\u0000.md"); written raw they make the page read as binary to
// tools and invisible or misleading to the reader. Each becomes a visible \uXXXX in a marked span:
// C0 (U+0000–U+001F) except the line feed, which is a line break the page shows as one; DEL
// (U+007F); C1 (U+0080–U+009F); and a lone surrogate half, which no UTF-8 file can hold (it would
// be written as U+FFFD, silently). Everything else is escapeHtml's.
import { escapeHtml } from '../foundation/html-escape.js';

/** The characters shown escaped: C0 but LF, DEL, C1, and an unpaired surrogate half. */
export const SHOWN_ESCAPED = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `\u0000` for NUL: the escape a reader can look up, four hex digits. */
export function escapeOf(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** Safe in element content and in quoted attribute values; controls become visible spans (element content) — use htmlAttribute in attributes. */
export function htmlText(text: string): string {
  return escapeHtml(text).replace(SHOWN_ESCAPED, (c) => `<span class="ctl" title="control character">${escapeOf(c)}</span>`);
}

/** For attribute values: controls as their escape, without markup. */
export function htmlAttribute(text: string): string {
  return escapeHtml(text).replace(SHOWN_ESCAPED, escapeOf);
}
