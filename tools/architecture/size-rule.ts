// The size rule (issues 17 and 33): no production file over 600 lines, and one over 400 is either
// split by job or says at its top, on a line containing `Why one file:`, why its jobs belong together —
// a newcomer opening it reads the reason before the code. The reason must sit in the leading
// comment block (the comment lines before the first line of code): one further down is not
// "at its top". The architecture test lists the files that break the rule; `npm run
// architecture` shows which of the long files carry a reason.
import type { SourceFile } from './source-tree.js';

export const MAX_LINES_WITHOUT_REASON = 400;
/** No production file is longer, whatever its reason (issue 33): past this a reason is a wall. */
export const MAX_LINES = 600;

/** The marker a long file's leading comment carries. */
export const WHY_ONE_FILE = 'Why one file:';

/** Lines as an editor numbers them: a final newline ends the last line, it does not start another. */
export function lineCount(text: string): number {
  if (text === '') return 0;
  let lines = 1;
  for (let k = 0; k < text.length; k++) if (text.charCodeAt(k) === 10) lines++;
  return text.endsWith('\n') ? lines - 1 : lines;
}

/** The leading comment block: lines from the top that are blank, `//` comments, a `#!` line, or inside a `/* … *\/` comment. */
export function leadingComment(text: string): string[] {
  const header: string[] = [];
  let inBlock = false;
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (inBlock) {
      header.push(line);
      if (trimmed.includes('*/')) inBlock = false;
    } else if (trimmed === '' || trimmed.startsWith('//') || (header.length === 0 && trimmed.startsWith('#!'))) {
      header.push(line);
    } else if (trimmed.startsWith('/*')) {
      header.push(line);
      inBlock = !trimmed.slice(2).includes('*/');
    } else {
      break;
    }
  }
  return header;
}

export interface LongFile {
  readonly file: string;
  readonly lines: number;
  /** Whether its leading comment says why it is one file. */
  readonly reasoned: boolean;
}

/** The production files over the limit, longest first, each with whether its top says why it is one file. */
export function longFiles(files: readonly SourceFile[]): LongFile[] {
  return files
    .map((f) => ({ file: f.path, lines: lineCount(f.text), text: f.text }))
    .filter((f) => f.lines > MAX_LINES_WITHOUT_REASON)
    .map((f) => ({ file: f.file, lines: f.lines, reasoned: leadingComment(f.text).some((l) => l.includes(WHY_ONE_FILE)) }))
    .sort((a, b) => b.lines - a.lines || (a.file < b.file ? -1 : 1));
}

/** The files that break the rule, as the test prints them: over 400 lines without a reason, or over 600 with one. */
export function sizeRuleViolations(files: readonly SourceFile[]): string[] {
  return longFiles(files).flatMap((f) => {
    if (f.lines > MAX_LINES) return [`${f.file}:1: ${f.lines} lines, over the ${MAX_LINES} no production file may have: split it by job`];
    if (!f.reasoned) return [`${f.file}:1: ${f.lines} lines (over ${MAX_LINES_WITHOUT_REASON}) and no line with "${WHY_ONE_FILE}" in its leading comment: split it by job, or say at its top why it is one file`];
    return [];
  });
}
