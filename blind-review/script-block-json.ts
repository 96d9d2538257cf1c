// JSON that can sit inside an HTML <script type="application/json"> element (the scorecard embeds
// its package data this way): no value can end the element or open a comment in it, and the
// characters JSON leaves raw that tools mishandle are written as \u escapes.

/**
 * JSON for a `<script type="application/json">` block: `<` (and the two line separators some
 * tools mishandle) as \u escapes, so no value can write `</script>` or `<!--` into the page.
 * JSON.parse reads the escapes back to the same strings.
 */
export function jsonForScriptBlock(value: unknown): string {
  // JSON.stringify escapes C0 and lone surrogates itself; DEL and C1 it leaves raw.
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029')
    .replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
