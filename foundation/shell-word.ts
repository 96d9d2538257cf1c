// A word of a command line as a POSIX shell reads it back: what a refusal's advice prints must be
// a command a person can paste (a drill's resume line, a study's plan-again command).

/** Unquoted when it is plain, else in single quotes (a quote inside closed, escaped, reopened). */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Words joined into one line a shell splits back into the same words. */
export function shellCommandLine(words: readonly string[]): string {
  return words.map(shellWord).join(' ');
}
