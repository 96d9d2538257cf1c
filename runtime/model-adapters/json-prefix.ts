// Whether an answer cut at its token cap was still JSON under construction (a constrained decoder
// writes nothing else) or prose: the preflight of every hosted adapter tells "raise the cap" from
// "the constraint was ignored" by it.

/** Whether `text` is the start of some JSON value that was cut off (a constrained answer stopped at its cap), not prose. */
export function isJsonPrefix(text: string): boolean {
  const t = text.trim();
  if (!t.startsWith('{')) return false;
  // Balanced by appending what would close it: strings and containers only (a constrained decoder writes nothing else).
  let inString = false;
  let escaped = false;
  const open: string[] = [];
  for (const ch of t) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') open.push(ch === '{' ? '}' : ']');
    else if (ch === '}' || ch === ']') {
      if (open.pop() !== ch) return false;
    }
  }
  return open.length > 0 || inString;
}
