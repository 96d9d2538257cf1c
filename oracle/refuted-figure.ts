// When a text "uses" a refuted figure (docs/oracle.md, rule R1): a line that contains the figure
// as a number of its own ("61 %", "61%", not "161 %" or "61.5 %") and does not itself mark it as
// corrected. "61 % was wrong, the corrected value is 46 %" is not relying on 61 %; a findings
// line "retention after 12 weeks: 61 %" is, and so is "the correct retention is 61 %".
// One list for both decisions that ask whether a line uses the figure: probe E2
// (continuity-score.ts) and rule (b) of evidence_refuted (fact-check.ts). "correct" is not in it.
/** Words and phrases that mark a line's figure as corrected: whole words, case-insensitive (docs/oracle.md, R1; test/oracle/oracle-doc.test.ts holds the two together). */
export const CORRECTION_MARKERS = ['corrected', 'correction', 'incorrect', 'withdrawn', 'refuted', 'wrong', 'erroneous', 'retracted', 'do not use', 'published as'] as const;
export const CORRECTION_MARK = new RegExp(`\\b(?:${CORRECTION_MARKERS.join('|')})\\b`, 'i');

export interface RefutedFigure {
  readonly figure: string;
  readonly corrected_figure: string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The figure as a pattern: any spacing inside it, and no digit (or decimal mark) glued to either end. */
export function figurePattern(figure: string): RegExp {
  const body = figure
    .trim()
    .split(/\s+/)
    .map(escapeRegExp)
    .join('\\s*');
  const before = /^\d/.test(figure.trim()) ? '(?<![\\d.,])' : '';
  const after = /\d$/.test(figure.trim()) ? '(?![\\d]|[.,]\\d)' : '';
  return new RegExp(`${before}${body}${after}`);
}

/** The first line of `text` that uses `r.figure` without marking it corrected, or null. */
export function lineUsingRefutedFigure(text: string, r: RefutedFigure): string | null {
  const figure = figurePattern(r.figure);
  const corrected = figurePattern(r.corrected_figure);
  // Texts come from events (64 KiB payloads) or workspace files the scorer bounds: no cap needed here.
  for (const line of text.split(/\r?\n/)) {
    if (!figure.test(line)) continue;
    if (CORRECTION_MARK.test(line) || corrected.test(line)) continue;
    return line;
  }
  return null;
}
