// "Tool" as a concept held to the code (issue 33 items 3 and 7): the tool table (schema/tools.ts)
// has one file per tool under runtime/tools/, registered in the tool set; the current protocol
// and the internal action shape allow exactly the table's operations; and the "Where to start"
// row of docs/architecture.md for adding a tool names every place a fourth tool touches: each
// place it names exists and mentions the table, each production file that maps over every tool
// is named, and runtime/tools/ holds nothing the page does not name. Each rule runs on the
// checkout and on forged copies of it, so a checker that caught nothing would fail here.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { describe, expect, test } from 'vitest';
import { ModelAction, ModelAnswerV2 } from '../../runtime/model-protocol.js';
import { SUBJECT_TOOLS } from '../../runtime/tools/tool-set.js';
import { TOOL_NAMES, TOOLS } from '../../schema/tools.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DOC = 'docs/architecture.md';
const TOOLS_FOLDER = 'runtime/tools/';
/** How the row names each tool's own file. */
const TOOL_FILE_PLACEHOLDER = `${TOOLS_FOLDER}<tool>.ts`;

/** The checkout's files (tracked and new, not ignored), path → text. */
function checkout(): Map<string, string> {
  const listed = execFileSync('git', ['-C', ROOT, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' }).split('\0').filter((p) => p !== '');
  const files = new Map<string, string>();
  for (const p of listed) {
    if (!/\.(ts|md)$/.test(p) || p.split('/').includes('node_modules')) continue;
    try {
      files.set(p, readFileSync(path.join(ROOT, p), 'utf8'));
    } catch {
      // Deleted in the working tree but still in the index: not part of the checkout.
    }
  }
  return files;
}

function isProduction(p: string): boolean {
  return p.endsWith('.ts') && !p.startsWith('test/') && p !== 'vitest.config.ts';
}

/** A tool's own file: `runtime/tools/task-board.ts` for `task_board`. */
function toolFileOf(tool: string): string {
  return `${TOOLS_FOLDER}${tool.replace(/_/g, '-')}.ts`;
}

/** The row of the page's "Where to start" table for adding a tool (first cell "a tool …"); null when there is none. */
function toolRowOf(page: string): { readonly line: number; readonly text: string } | null {
  const lines = page.split('\n');
  const at = lines.findIndex((l) => /^\|\s*a tool\b/.test(l));
  return at === -1 ? null : { line: at + 1, text: lines[at]! };
}

/** The paths a row names: its backticked spans with a '/' in them (`schema/tools.ts`, `runtime/tools/<tool>.ts`). */
function pathsNamed(text: string): string[] {
  return [...text.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]!).filter((span) => /^[a-z][\w-]*\/[\w./<>-]*[\w>]$/.test(span));
}

/** A mapped type over every tool (`[T in ToolName]`, `[T in OneEventTool]`): a file a new tool must fill in. */
const MAPS_EVERY_TOOL = /\[\s*\w+\s+in\s+(ToolName|OneEventTool)\s*\]/;
/** How a file mentions the table: its path, in an import or a comment. */
const MENTIONS_TABLE = /schema\/tools\.[jt]s/;

/** Every way the page's tool row, the tool table and the files disagree; empty when they agree. */
function toolRowProblems(files: ReadonlyMap<string, string>, tools: readonly string[]): string[] {
  const problems: string[] = [];
  const row = toolRowOf(files.get(DOC) ?? '');
  if (row === null) return [`${DOC} has no "Where to start" row for adding a tool (a row whose first cell is "a tool …")`];
  const where = `${DOC}:${row.line}`;
  const named = pathsNamed(row.text);
  if (!named.includes(TOOL_FILE_PLACEHOLDER)) problems.push(`${where}: the row does not name each tool's own file, \`${TOOL_FILE_PLACEHOLDER}\``);
  const places = named.flatMap((p) => (p === TOOL_FILE_PLACEHOLDER ? tools.map(toolFileOf) : [p]));
  for (const place of places) {
    const text = files.get(place);
    if (text === undefined) problems.push(`${where}: the row names ${place}, which does not exist`);
    else if (isProduction(place) && place !== 'schema/tools.ts' && !MENTIONS_TABLE.test(text)) problems.push(`${where}: ${place} is named as a place a tool touches but does not mention the tool table (schema/tools.ts)`);
  }
  const setText = files.get(`${TOOLS_FOLDER}tool-set.ts`) ?? '';
  for (const tool of tools) {
    const file = toolFileOf(tool);
    if (!files.has(file)) problems.push(`tool ${tool} of the table has no file ${file}`);
    else if (!setText.includes(`from './${path.basename(file, '.ts')}.js'`)) problems.push(`tool ${tool}: ${TOOLS_FOLDER}tool-set.ts does not import ${file}`);
  }
  for (const [file, text] of files) {
    if (isProduction(file) && MAPS_EVERY_TOOL.test(text) && !places.includes(file)) problems.push(`${file} maps over every tool (${MAPS_EVERY_TOOL.exec(text)![0]}) but ${where} does not name it`);
  }
  const page = files.get(DOC) ?? '';
  for (const file of files.keys()) {
    if (file.startsWith(TOOLS_FOLDER) && !places.includes(file) && !page.includes(file.slice('runtime/'.length))) problems.push(`${file} is in ${TOOLS_FOLDER} but is no tool of the table and ${DOC} does not name it`);
  }
  return problems;
}

/** `tool.op` of every operation an action union allows, read from its zod schema. */
function operationsOf(actions: readonly z.ZodType[]): string[] {
  return actions
    .flatMap((action) => {
      const shape = (action as z.ZodObject<{ tool: z.ZodLiteral<string>; op: z.ZodLiteral<string> | z.ZodEnum }>).shape;
      const ops = shape.op instanceof z.ZodLiteral ? [...shape.op.values].map(String) : shape.op.options.map(String);
      return ops.map((op) => `${shape.tool.value}.${op}`);
    })
    .sort();
}

const TABLE_OPERATIONS = Object.entries(TOOLS).flatMap(([tool, row]) => row.ops.map((op) => `${tool}.${op}`)).sort();

describe('the tool table (schema/tools.ts)', () => {
  test('every tool of the table is in the tool set, in the table\'s order, and nothing else is', () => {
    expect(Object.keys(SUBJECT_TOOLS)).toEqual(TOOL_NAMES);
    expect(TOOL_NAMES).toEqual(['files', 'task_board', 'journal']);
  });

  test('the current protocol and the internal action shape allow exactly the table\'s operations', () => {
    expect(TABLE_OPERATIONS).toHaveLength(9);
    expect(operationsOf(ModelAnswerV2.shape.actions.element.options)).toEqual(TABLE_OPERATIONS);
    expect(operationsOf(ModelAction.options)).toEqual(TABLE_OPERATIONS);
  });

  test('forged: a protocol that lost an operation, or gained one the table does not have, reads apart from the table', () => {
    const options = ModelAnswerV2.shape.actions.element.options;
    expect(operationsOf(options.filter((o) => !(o.shape.op instanceof z.ZodLiteral && o.shape.op.value === 'move')))).not.toEqual(TABLE_OPERATIONS);
    const clock = z.strictObject({ tool: z.literal('clock'), op: z.literal('read'), rationale: z.string() });
    expect(operationsOf([...options, clock])).toContain('clock.read');
    expect(operationsOf([...options, clock])).not.toEqual(TABLE_OPERATIONS);
  });
});

describe(`${DOC}: the row for adding a tool`, () => {
  const files = checkout();

  test('names every place a tool touches, each exists and mentions the table; every file that maps over the tools is named', () => {
    expect(toolRowProblems(files, TOOL_NAMES)).toEqual([]);
    const row = toolRowOf(files.get(DOC)!)!;
    // The places of today: fewer than the twelve-odd of issue 33, every one of them named.
    expect(pathsNamed(row.text)).toEqual(expect.arrayContaining(['schema/tools.ts', 'schema/tool-executions.ts', 'runtime/model-protocol.ts', TOOL_FILE_PLACEHOLDER, 'runtime/tools/tool-set.ts', 'runtime/prompt.ts', 'oracle/hard-failures.ts']));
  });

  test('forged: no row, a place that does not exist, a place that does not mention the table', () => {
    const page = files.get(DOC)!;
    const row = toolRowOf(page)!;
    const withoutRow = new Map(files).set(DOC, page.replace(row.text, '| a check | `verification/` |'));
    expect(toolRowProblems(withoutRow, TOOL_NAMES)).toEqual([`${DOC} has no "Where to start" row for adding a tool (a row whose first cell is "a tool …")`]);

    const missing = new Map(files).set(DOC, page.replace(row.text, row.text.replace('`runtime/prompt.ts`', '`runtime/prompt-lines.ts`')));
    expect(toolRowProblems(missing, TOOL_NAMES)).toEqual([`${DOC}:${row.line}: the row names runtime/prompt-lines.ts, which does not exist`]);

    const silent = new Map(files).set('runtime/prompt.ts', files.get('runtime/prompt.ts')!.replace(/schema\/tools\.ts/g, 'the table'));
    expect(toolRowProblems(silent, TOOL_NAMES)).toEqual([`${DOC}:${row.line}: runtime/prompt.ts is named as a place a tool touches but does not mention the tool table (schema/tools.ts)`]);

    const noPlaceholder = new Map(files).set(DOC, page.replace(row.text, row.text.replace(`\`${TOOL_FILE_PLACEHOLDER}\``, '`runtime/tools/files.ts`')));
    expect(toolRowProblems(noPlaceholder, TOOL_NAMES)).toContain(`${DOC}:${row.line}: the row does not name each tool's own file, \`${TOOL_FILE_PLACEHOLDER}\``);
  });

  test('forged: a fourth tool without its file, a file that maps over the tools unnamed, a stray file in runtime/tools/', () => {
    const row = toolRowOf(files.get(DOC)!)!;
    expect(toolRowProblems(files, [...TOOL_NAMES, 'web_search'])).toEqual([`${DOC}:${row.line}: the row names runtime/tools/web-search.ts, which does not exist`, 'tool web_search of the table has no file runtime/tools/web-search.ts']);

    const withFile = new Map(files).set('runtime/tools/web-search.ts', '// schema/tools.ts row `web_search`\nexport {};\n');
    expect(toolRowProblems(withFile, [...TOOL_NAMES, 'web_search'])).toEqual(['tool web_search: runtime/tools/tool-set.ts does not import runtime/tools/web-search.ts']);

    const mapper = new Map(files).set('audit/tool-colours.ts', "import type { ToolName } from '../schema/tools.js';\nexport const COLOURS: { [T in ToolName]: string } = { files: 'red', task_board: 'green', journal: 'blue' };\n");
    expect(toolRowProblems(mapper, TOOL_NAMES)).toEqual([`audit/tool-colours.ts maps over every tool ([T in ToolName]) but ${DOC}:${row.line} does not name it`]);

    const stray = new Map(files).set('runtime/tools/helpers.ts', 'export {};\n');
    expect(toolRowProblems(stray, TOOL_NAMES)).toEqual([`runtime/tools/helpers.ts is in ${TOOLS_FOLDER} but is no tool of the table and ${DOC} does not name it`]);
  });
});
