// Cutting a text to a length a page or a package can carry, and saying so in the text itself, so a
// reader never mistakes a cut text for a whole one. Used where model and world text is shown: the
// blind review's package and scorecard, the audit desk's pages.

/** What a cut text ends with: how many characters were left out. */
function cutMarker(rest: number): string {
  return `… [cut: ${rest} more characters]`;
}

/** Cuts `text` to `max` characters, saying how much was cut; never splits a surrogate pair. */
export function bounded(text: string, max: number, onCut?: () => void): string {
  if (text.length <= max) return text;
  let keep = Math.max(0, max - cutMarker(text.length).length);
  const code = text.charCodeAt(keep);
  if (keep > 0 && code >= 0xdc00 && code <= 0xdfff) keep -= 1;
  onCut?.();
  return `${text.slice(0, keep)}${cutMarker(text.length - keep)}`;
}
