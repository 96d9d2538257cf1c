// What a terminal shows after a byte stream, for the few controls the study's screen writes
// (cli/study-screen.ts): newline, carriage return, erase line (ESC [2K) and cursor up (ESC [nA).
// Any other escape sequence is kept as text, so a test sees it. Lines scrolled off are kept: the
// result is the whole scrollback, last line last.
const CONTROL = /\r\n|\n|\r|\x1b\[2K|\x1b\[(\d*)A/g;

export function terminalLines(raw: string): string[] {
  const lines: string[] = [''];
  let row = 0;
  let col = 0;
  const put = (text: string): void => {
    const line = lines[row]!;
    lines[row] = line.slice(0, col).padEnd(col, ' ') + text + line.slice(col + text.length);
    col += text.length;
  };
  let at = 0;
  for (const m of raw.matchAll(CONTROL)) {
    put(raw.slice(at, m.index));
    at = m.index + m[0].length;
    if (m[0] === '\n' || m[0] === '\r\n') {
      row += 1;
      col = 0;
      if (row === lines.length) lines.push('');
    } else if (m[0] === '\r') col = 0;
    else if (m[0] === '\x1b[2K') lines[row] = '';
    else row = Math.max(0, row - Number(m[1] || '1'));
  }
  put(raw.slice(at));
  while (lines.length > 0 && lines[lines.length - 1]!.trim() === '') lines.pop();
  return lines;
}
