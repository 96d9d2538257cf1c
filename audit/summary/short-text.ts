// A free text as the desk's one-line summary quotes it: whitespace folded, cut visibly (…) at a bound.
const SUMMARY_TEXT_CHARS = 160;

export function short(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= SUMMARY_TEXT_CHARS ? line : `${line.slice(0, SUMMARY_TEXT_CHARS)}…`;
}
