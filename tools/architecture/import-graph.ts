// The imports of one TypeScript source, read the way the module loader reads them (issue 17 item
// 6): static `import … from`, side-effect `import '…'`, `export … from`, dynamic `import('…')`,
// and `new URL('…', import.meta.url)` — the last is how a file reaches a data file or a child's
// entry point, so it is as much a dependency as an import. The architecture test
// (test/architecture/rooms.test.ts) and `npm run architecture` (import-picture.ts) both read
// imports through this one scanner, so the picture and the rule can never count differently.
//
// A scanner rather than the TypeScript compiler: the compiler is a devDependency, and this file
// serves `npm run architecture`, which must work on an install without them. It lexes just enough of the language (comments,
// strings, templates with `${…}` inside, regular expressions) that an import written inside a
// comment or a string is not one; the test holds it to the compiler's own pre-processor on every
// production file, so a construct it misreads shows up there.

export type ImportKind = 'import' | 'export-from' | 'dynamic-import' | 'url';

export interface ImportEdge {
  /** The module specifier or URL exactly as written (no resolution). */
  readonly specifier: string;
  readonly kind: ImportKind;
  /** 1-based line of the specifier in the source. */
  readonly line: number;
}

type TokenKind = 'word' | 'string' | 'template' | 'regex' | 'punct';

interface Token {
  readonly kind: TokenKind;
  /** The word or punctuation character; for a string, its value (between the quotes). */
  readonly text: string;
  readonly line: number;
}

/** Words after which a `/` starts a regular expression rather than a division. */
const WORDS_BEFORE_REGEX = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);

/** Letters, digits, `_`, `$` and anything beyond ASCII: the characters of names and numbers. */
function isWordChar(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 57) || code === 95 || code === 36 || code >= 128;
}

function regexMayStartAfter(previous: Token | undefined): boolean {
  if (previous === undefined) return true;
  if (previous.kind === 'word') return WORDS_BEFORE_REGEX.has(previous.text);
  if (previous.kind === 'punct') return previous.text !== ')' && previous.text !== ']' && previous.text !== '}';
  return false;
}

/**
 * The significant tokens of a source: comments and whitespace dropped, each string one token
 * carrying its value, each template piece an opaque token (code inside `${…}` is tokenized).
 * Every turn of the loop consumes at least one character, so it ends within text.length turns.
 */
function tokensOf(text: string): Token[] {
  const tokens: Token[] = [];
  // What each open `{` belongs to: a block of code, or a template's `${`.
  const braces: Array<'code' | 'template'> = [];
  let line = 1;
  let i = 0;
  const countLines = (from: number, to: number): void => {
    for (let k = from; k < to; k++) if (text.charCodeAt(k) === 10) line++;
  };
  /** Scans a template from just after its opening backtick or a closing `}`; stops after the closing backtick or an opening `${`. */
  const scanTemplate = (): void => {
    const startLine = line;
    const start = i;
    while (i < text.length) {
      const c = text[i];
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (c === '`') {
        i++;
        break;
      }
      if (c === '$' && text[i + 1] === '{') {
        i += 2;
        braces.push('template');
        break;
      }
      i++;
    }
    countLines(start, i);
    tokens.push({ kind: 'template', text: '', line: startLine });
  };
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '\n') {
      line++;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v' || c === '\ufeff' || c === '\u00a0') {
      i++;
    } else if (c === '/' && next === '/') {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      countLines(i, stop);
      i = stop;
    } else if (c === '#' && next === '!' && i === 0) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
    } else if (c === '"' || c === "'") {
      const startLine = line;
      let value = '';
      i++;
      while (i < text.length && text[i] !== c && text[i] !== '\n') {
        if (text[i] === '\\') {
          value += text[i + 1] ?? '';
          if (text[i + 1] === '\n') line++;
          i += 2;
        } else {
          value += text[i];
          i++;
        }
      }
      i++;
      tokens.push({ kind: 'string', text: value, line: startLine });
    } else if (c === '`') {
      i++;
      scanTemplate();
    } else if (c === '/' && regexMayStartAfter(tokens.at(-1))) {
      const startLine = line;
      let inClass = false;
      i++;
      while (i < text.length && text[i] !== '\n') {
        const r = text[i];
        if (r === '\\') {
          i += 2;
          continue;
        }
        i++;
        if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
      }
      while (i < text.length && isWordChar(text.charCodeAt(i))) i++;
      tokens.push({ kind: 'regex', text: '', line: startLine });
    } else if (isWordChar(c.charCodeAt(0))) {
      const start = i;
      while (i < text.length && isWordChar(text.charCodeAt(i))) i++;
      tokens.push({ kind: 'word', text: text.slice(start, i), line });
    } else if (c === '{') {
      braces.push('code');
      tokens.push({ kind: 'punct', text: c, line });
      i++;
    } else if (c === '}') {
      i++;
      if (braces.pop() === 'template') scanTemplate();
      else tokens.push({ kind: 'punct', text: c, line });
    } else {
      tokens.push({ kind: 'punct', text: c, line });
      i++;
    }
  }
  return tokens;
}

const isPunct = (token: Token | undefined, text: string): boolean => token?.kind === 'punct' && token.text === text;
const isWord = (token: Token | undefined, text: string): boolean => token?.kind === 'word' && token.text === text;

/** The index just after the `}` matching the `{` at `open` (tokens.length when unmatched). */
function afterMatchingBrace(tokens: readonly Token[], open: number): number {
  let depth = 0;
  for (let k = open; k < tokens.length; k++) {
    if (isPunct(tokens[k], '{')) depth++;
    else if (isPunct(tokens[k], '}') && --depth === 0) return k + 1;
  }
  return tokens.length;
}

/** `from '…'` at index k: the specifier token, or null. */
function fromClauseAt(tokens: readonly Token[], k: number): Token | null {
  const spec = tokens[k + 1];
  return isWord(tokens[k], 'from') && spec?.kind === 'string' ? spec : null;
}

/** The specifier of `import <clause> from '…'` whose clause starts at index k, or null (e.g. `import x = require(…)`). */
function staticImportFrom(tokens: readonly Token[], k: number): Token | null {
  // A clause is words (names, `type`, `as`), `*`, `,` and `{ … }` groups; it ends at `from`.
  while (k < tokens.length) {
    const token = tokens[k]!;
    const found = fromClauseAt(tokens, k);
    if (found !== null) return found;
    if (isPunct(token, '{')) k = afterMatchingBrace(tokens, k);
    else if (token.kind === 'word' || isPunct(token, '*') || isPunct(token, ',')) k++;
    else return null;
  }
  return null;
}

/** The specifier of `export { … } from '…'` / `export * [as x] from '…'` / `export type { … } from '…'` after `export` at index k, or null. */
function reExportFrom(tokens: readonly Token[], k: number): Token | null {
  let j = k + 1;
  if (isWord(tokens[j], 'type') && isPunct(tokens[j + 1], '{')) j++;
  if (isPunct(tokens[j], '{')) return fromClauseAt(tokens, afterMatchingBrace(tokens, j));
  if (!isPunct(tokens[j], '*')) return null;
  j++;
  if (isWord(tokens[j], 'as') && tokens[j + 1]?.kind === 'word') j += 2;
  return fromClauseAt(tokens, j);
}

/** `new URL('…', import.meta.url)` with `new` at index k: the literal's token, or null. */
function importMetaUrlAt(tokens: readonly Token[], k: number): Token | null {
  const spec = tokens[k + 3];
  const shape = isWord(tokens[k + 1], 'URL') && isPunct(tokens[k + 2], '(') && spec?.kind === 'string' && isPunct(tokens[k + 4], ',')
    && isWord(tokens[k + 5], 'import') && isPunct(tokens[k + 6], '.') && isWord(tokens[k + 7], 'meta') && isPunct(tokens[k + 8], '.') && isWord(tokens[k + 9], 'url');
  return shape ? spec : null;
}

/** Every import of a source, in the order written. */
export function importsOf(sourceText: string): ImportEdge[] {
  const tokens = tokensOf(sourceText);
  const edges: ImportEdge[] = [];
  const add = (spec: Token | null, kind: ImportKind): void => {
    if (spec !== null) edges.push({ specifier: spec.text, kind, line: spec.line });
  };
  for (let k = 0; k < tokens.length; k++) {
    const token = tokens[k]!;
    if (token.kind !== 'word' || isPunct(tokens[k - 1], '.')) continue;
    if (token.text === 'import') {
      const next = tokens[k + 1];
      if (isPunct(next, '(')) {
        const spec = tokens[k + 2];
        if (spec?.kind === 'string' && (isPunct(tokens[k + 3], ')') || isPunct(tokens[k + 3], ','))) add(spec, 'dynamic-import');
      } else if (next?.kind === 'string') {
        add(next, 'import');
      } else if (!isPunct(next, '.')) {
        add(staticImportFrom(tokens, k + 1), 'import');
      }
    } else if (token.text === 'export') {
      add(reExportFrom(tokens, k), 'export-from');
    } else if (token.text === 'new') {
      add(importMetaUrlAt(tokens, k), 'url');
    }
  }
  return edges;
}
