// When a text "uses" a refuted figure (docs/oracle.md, rule R1): a line that contains the figure
// and does not itself mark it as corrected. Saying "61 % was wrong, the correct value is 46 %"
// is not relying on 61 %; a findings line "retention after 12 weeks: 61 %" is.
const CORRECTION_MARK = /\b(correct(?:ed|ion)?|withdrawn|refuted|wrong|erroneous|do not use|retracted)\b/i;

export interface RefutedFigure {
  readonly figure: string;
  readonly corrected_figure: string;
}

/** The first line of `text` that uses `r.figure` without marking it corrected, or null. */
export function lineUsingRefutedFigure(text: string, r: RefutedFigure): string | null {
  if (!text.includes(r.figure)) return null;
  // Texts come from events (64 KiB payloads) or workspace files the scorer bounds: no cap needed here.
  for (const line of text.split(/\r?\n/)) {
    if (!line.includes(r.figure)) continue;
    if (CORRECTION_MARK.test(line) || line.includes(r.corrected_figure)) continue;
    return line;
  }
  return null;
}
