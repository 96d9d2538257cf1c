// The architecture held by a test (issue 17 item 6): every production file lives in a room of
// foundation/rooms.ts and imports only inward, as ROOMS allows; docs/architecture.md's rooms
// table says what ROOMS says; and no production file is over 400 lines without saying at its top
// why it is one file. Each rule is run on the real checkout and on forged trees (written to a temp
// folder and read through the same functions), so a checker that caught nothing would fail here.
// The scanner of imports is held to TypeScript's own pre-processor on every production file.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, test } from 'vitest';
import { floorPlanViolations, formatViolation } from '../../tools/architecture/floor-plan-check.js';
import { importsOf } from '../../tools/architecture/import-graph.js';
import { parseRoomsTable, roomsTableDifferences } from '../../tools/architecture/rooms-table.js';
import { MAX_LINES, MAX_LINES_WITHOUT_REASON, sizeRuleViolations } from '../../tools/architecture/size-rule.js';
import { importCircles } from '../../tools/architecture/import-circles.js';
import { isHouseSource, readWorkingTree } from '../../tools/architecture/source-tree.js';
import { ROOM_NAMES, ROOMS } from '../../foundation/rooms.js';
import { tempDir } from '../support/writer-fixture.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ARCHITECTURE_DOC = path.join(ROOT, 'docs', 'architecture.md');

const folders: string[] = [];
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

/** A forged checkout: a git repository (nothing committed: new files count) holding the given files. */
function forgedTree(files: Readonly<Record<string, string>>): string {
  const root = tempDir('ds-architecture-');
  folders.push(root);
  execFileSync('git', ['init', '-q', root]);
  for (const [relPath, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, relPath)), { recursive: true });
    writeFileSync(path.join(root, relPath), text);
  }
  return root;
}

function violationsOf(files: Readonly<Record<string, string>>): string[] {
  return floorPlanViolations(readWorkingTree(forgedTree(files))).map(formatViolation);
}

const production = readWorkingTree(ROOT);

describe('the floor plan (foundation/rooms.ts)', () => {
  test('the checkout has production files in every room, and none of the tests', () => {
    const rooms = new Set(production.map((f) => f.path.split('/')[0]));
    expect(ROOM_NAMES.filter((r) => !rooms.has(r))).toEqual([]);
    expect(production.filter((f) => f.path.startsWith('test/') || f.path.includes('node_modules/') || f.path === 'vitest.config.ts')).toEqual([]);
    expect(production.length).toBeGreaterThan(150);
  });

  test('every production file is in a room, and each relative import stays in it or goes to a room ROOMS lets it import', () => {
    expect(floorPlanViolations(production).map(formatViolation)).toEqual([]);
  });

  test('the import scanner reads every production file as TypeScript\'s pre-processor does', () => {
    const differences: string[] = [];
    let compared = 0;
    for (const file of production) {
      const lineStarts = [0, ...[...file.text.matchAll(/\n/g)].map((m) => m.index + 1)];
      const lineAt = (pos: number): number => lineStarts.filter((start) => start <= pos).length;
      const ours = importsOf(file.text).filter((e) => e.kind !== 'url').map((e) => `${e.line}:${e.specifier}`).sort();
      const compiler = ts.preProcessFile(file.text, true, false).importedFiles.map((r) => `${lineAt(r.pos)}:${r.fileName}`).sort();
      compared += compiler.length;
      for (const edge of ours.filter((e) => !compiler.includes(e))) differences.push(`${file.path}:${edge} found by the scanner only`);
      for (const edge of compiler.filter((e) => !ours.includes(e))) differences.push(`${file.path}:${edge} found by the compiler only`);
    }
    expect(differences).toEqual([]);
    expect(compared).toBeGreaterThan(1000);
  });

  test('forged: a file of oracle/ importing the controller is caught at its line', () => {
    expect(violationsOf({
      'oracle/score.ts': "// why\nimport { z } from 'zod';\nimport { thing } from '../controller/x.js';\n",
      'controller/x.ts': 'export const thing = 1;\n',
    })).toEqual([`oracle/score.ts:3: oracle/ imports '../controller/x.js' (controller/): oracle may import ${ROOMS.oracle.join(', ')} (foundation/rooms.ts)`]);
  });

  test('forged: a file of cli/ importing test/ support is caught', () => {
    expect(violationsOf({
      'cli/tool.ts': "import {\n  helper,\n} from '../test/support/x.js';\n",
      'test/support/x.ts': "import { nothing } from '../../controller/y.js';\n",
    })).toEqual(["cli/tool.ts:3: cli/ imports '../test/support/x.js' (test/support/x.js), which is in no room (test/): production code imports rooms only"]);
  });

  test('forged: the developer tools (tools/) may import any room and are imported by none', () => {
    expect(violationsOf({
      'tools/bench/b.ts': "import { run } from '../../cli/study.js';\nimport { s } from '../../test/support/x.js';\n",
      'study/runner.ts': "import { aim } from '../tools/bench/b.js';\n",
    })).toEqual(["study/runner.ts:1: study/ imports '../tools/bench/b.js' (tools/bench/b.js), which is in no room (tools/): production code imports rooms only"]);
  });

  test('forged: allowed imports pass — inward, within the room, packages, the checkout root by URL, and imports written in comments or strings', () => {
    expect(violationsOf({
      'oracle/a.ts': [
        "import { e } from '../schema/envelope.js';",
        "import type { P } from '../design/plan.js';",
        "import { b } from './nested/b.js';",
        "import path from 'node:path';",
        "// import { no } from '../controller/x.js';",
        "/* export * from '../experiments/y.js'; */",
        "const text = \"import x from '../controller/z.js'\";",
        "const template = `${text} import('../audit/w.js')`;",
        "const re = /import '..\\/controller\\/q.js'/;",
        '',
      ].join('\n'),
      'oracle/nested/b.ts': "export { e as b } from '../../schema/envelope.js';\n",
      'cli/repo.ts': "export const REPO = new URL('../', import.meta.url);\n",
      'node_modules/pkg/index.ts': "import '../../controller/x.js';\n",
    })).toEqual([]);
  });

  test('forged: every kind of import is read — re-export, side-effect, dynamic, new URL into another room — and a file outside every room is listed', () => {
    expect(violationsOf({
      'schema/a.ts': "export * as w from '../writer/w.js';\n",
      'projector/b.ts': "import '../runtime/side.js';\n",
      'writer/c.ts': "export async function late() {\n  return import('../controller/late.js');\n}\n",
      'blind-review/d.ts': "const DEFAULT = new URL('../experiments/prereg/default.json', import.meta.url);\n",
      'audit/e.ts': "import { x } from '../../elsewhere/x.js';\n",
      'loose/loose.ts': 'export const loose = 1;\n',
    })).toEqual([
      `audit/e.ts:1: audit/ imports '../../elsewhere/x.js', which leaves the checkout`,
      `blind-review/d.ts:1: blind-review/ reaches by new URL(…, import.meta.url) '../experiments/prereg/default.json' (experiments/prereg/default.json), which is in no room (experiments/): production code imports rooms only`,
      `loose/loose.ts:1: a production .ts file outside every room of foundation/rooms.ts (${ROOM_NAMES.join(', ')}): move it into the room it belongs to`,
      `projector/b.ts:1: projector/ imports '../runtime/side.js' (runtime/): projector may import ${ROOMS.projector.join(', ')} (foundation/rooms.ts)`,
      `schema/a.ts:1: schema/ re-exports from '../writer/w.js' (writer/): schema may import ${ROOMS.schema.join(', ')} (foundation/rooms.ts)`,
      `writer/c.ts:2: writer/ imports (dynamically) '../controller/late.js' (controller/): writer may import ${ROOMS.writer.join(', ')} (foundation/rooms.ts)`,
    ]);
  });
});

describe('import circles (tools/architecture/import-circles.ts)', () => {
  test('the house — every room and the tools — has none', () => {
    const house = readWorkingTree(ROOT, isHouseSource);
    expect(house.some((f) => f.path.startsWith('tools/'))).toBe(true);
    expect(importCircles(house)).toEqual([]);
  });

  test('forged: a circle through three files, and a file importing itself, are each found once; a chain is not a circle', () => {
    const tree = forgedTree({
      'study/a.ts': "import { b } from './b.js';\n",
      'study/b.ts': "import { c } from './nested/c.js';\nimport { d } from '../oracle/d.js';\n",
      'study/nested/c.ts': "export { a } from '../a.js';\n",
      'oracle/d.ts': "import { e } from '../schema/e.js';\n",
      'schema/e.ts': 'export const e = 1;\n',
      'tools/self.ts': "import { self } from './self.js';\n",
    });
    expect(importCircles(readWorkingTree(tree, isHouseSource))).toEqual([['study/a.ts', 'study/b.ts', 'study/nested/c.ts'], ['tools/self.ts']]);
  });
});

describe('docs/architecture.md', () => {
  test('its rooms table says what ROOMS says: the same rooms, innermost first, each with the same imports', () => {
    const page = readFileSync(ARCHITECTURE_DOC, 'utf8');
    expect(roomsTableDifferences(page)).toEqual([]);
    expect(parseRoomsTable(page)?.map((r) => r.room)).toEqual(ROOM_NAMES);
  });

  test('every file it names by its path from the root exists', () => {
    const page = readFileSync(ARCHITECTURE_DOC, 'utf8');
    const named = [...page.matchAll(/`((?:[a-z-]+\/)+[a-z0-9.-]+\.(?:ts|md|json))`/g)].map((m) => m[1]!).filter((p) => p.startsWith('docs/') || ROOM_NAMES.some((r) => p.startsWith(`${r}/`)));
    expect(named.length).toBeGreaterThan(30);
    expect([...new Set(named)].filter((p) => !existsSync(path.join(ROOT, p)))).toEqual([]);
  });

  test('the README links it', () => {
    const links = readFileSync(path.join(ROOT, 'README.md'), 'utf8').includes('](docs/architecture.md)');
    expect(links, 'README.md has a link [..](docs/architecture.md)').toBe(true);
  });

  const table = [
    '| Room | Holds | May import |',
    '|---|---|---|',
    ...ROOM_NAMES.map((r) => `| \`${r}/\` | what it holds | ${ROOMS[r].length === 0 ? '—' : ROOMS[r].map((b) => `\`${b}\``).join(', ')} |`),
  ];

  test('forged: the table ROOMS implies passes', () => {
    expect(roomsTableDifferences(`# Rooms\n\n${table.join('\n')}\n\nAfter.\n`)).toEqual([]);
  });

  test('forged: a table with one room missing is caught', () => {
    const withoutAudit = table.filter((line) => !line.startsWith('| `audit/`'));
    expect(roomsTableDifferences(withoutAudit.join('\n'))).toEqual([
      `room audit is missing from the table: add the row | \`audit/\` | … | ${ROOMS.audit.map((b) => `\`${b}\``).join(', ')} |`,
    ]);
  });

  test('forged: a table with an extra import, or a room out of order, is caught', () => {
    const extra = table.map((line) => (line.startsWith('| `oracle/`') ? line.replace(/ \|$/, ', `controller` |') : line));
    expect(roomsTableDifferences(extra.join('\n'))).toEqual([
      `line ${extra.findIndex((l) => l.startsWith('| `oracle/`')) + 1}: oracle lists controller, which ROOMS does not: its "May import" cell should read ${ROOMS.oracle.map((b) => `\`${b}\``).join(', ')}`,
    ]);
    const swapped = [...table];
    [swapped[2], swapped[3]] = [swapped[3]!, swapped[2]!];
    expect(roomsTableDifferences(swapped.join('\n'))).toEqual([`the rows are not in the floor plan's order (innermost first): ${ROOM_NAMES.join(', ')}`]);
    expect(roomsTableDifferences('# No table here\n')).toEqual(['no rooms table: expected a Markdown table with a "Room" and a "May import" column']);
  });
});

describe(`the size rule: over ${MAX_LINES_WITHOUT_REASON} lines, a production file says at its top why it is one file; none is over ${MAX_LINES}`, () => {
  test('every long production file says why it is one file', () => {
    expect(sizeRuleViolations(production)).toEqual([]);
  });

  const body = (lines: number): string => Array.from({ length: lines }, (_, k) => `export const line${k} = ${k};`).join('\n');

  test('forged: a long file without a reason is listed; with one in its leading comment it is not; a reason below the code does not count', () => {
    const files = [
      { path: 'runtime/long.ts', text: `// A long file.\n${body(400)}\n` },
      { path: 'runtime/reasoned.ts', text: `// A long file.\n//\n// Why one file: one grammar, read top to bottom.\n${body(400)}\n` },
      { path: 'runtime/block.ts', text: `/*\n * Why one file: one state machine.\n */\n${body(400)}\n` },
      { path: 'runtime/late-reason.ts', text: `// A long file.\n${body(400)}\n// Why one file: too late.\n` },
      { path: 'runtime/at-limit.ts', text: `// Exactly at the limit.\n${body(MAX_LINES_WITHOUT_REASON - 1)}\n` },
      { path: 'runtime/wall.ts', text: `// Why one file: a reason does not carry a wall.\n${body(MAX_LINES)}\n` },
      { path: 'runtime/at-cap.ts', text: `// Why one file: exactly at the cap.\n${body(MAX_LINES - 1)}\n` },
    ];
    expect(sizeRuleViolations(files)).toEqual([
      `runtime/wall.ts:1: ${MAX_LINES + 1} lines, over the ${MAX_LINES} no production file may have: split it by job`,
      `runtime/late-reason.ts:1: 402 lines (over ${MAX_LINES_WITHOUT_REASON}) and no line with "Why one file:" in its leading comment: split it by job, or say at its top why it is one file`,
      `runtime/long.ts:1: 401 lines (over ${MAX_LINES_WITHOUT_REASON}) and no line with "Why one file:" in its leading comment: split it by job, or say at its top why it is one file`,
    ]);
  });
});
