// Every event type production code names is checked by the compiler against the catalogue's
// union (issue 17 item 4): a misspelt type must fail `tsc`, not a run. The checker
// (test/support/unchecked-event-types.ts) reads the production program through the compiler's
// own type checker; a forged fixture program shows it tells an unchecked literal from a checked one.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { describeUnchecked, uncheckedEventTypeLiterals } from '../support/unchecked-event-types.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Production code: what tsconfig.json includes, less the tests and anything installed. */
function isProduction(relativePath: string): boolean {
  return !relativePath.startsWith('test/') && !relativePath.split('/').includes('node_modules') && relativePath !== 'vitest.config.ts';
}

function productionProgram(): ts.Program {
  const configPath = path.join(ROOT, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT, undefined, configPath);
  const files = parsed.fileNames.filter((f) => isProduction(path.relative(ROOT, f).split(path.sep).join('/')));
  return ts.createProgram({ rootNames: files, options: parsed.options });
}

describe('event-type literals', () => {
  it('every event type named in production code is checked against the catalogue', () => {
    const { seen, unchecked } = uncheckedEventTypeLiterals(productionProgram(), ROOT, isProduction);
    expect(seen).toBeGreaterThan(100);
    expect(unchecked.length, describeUnchecked(unchecked)).toBe(0);
  });

  it('flags a forged program’s unchecked literals and passes its checked ones', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ds-literals-'));
    const lines = [
      `import type { EventType } from './catalogue.js';`,
      `declare function eventIs<T extends EventType>(e: { event_type: string }, t: T): boolean;`,
      `declare const e: { event_type: string };`,
      `declare const typed: { event_type: EventType };`,
      `declare function use(x: unknown): void;`,
      `export const t: string = 'SystemEvent.StoreSealed'; // FLAG`,
      `if (e.event_type === 'WorldEvent.GoalChanged') use(t); // FLAG`,
      `export const set = new Set(['SystemEvent.StoreSealed']); // FLAG`,
      `export const byType: Record<string, number> = { 'WorldEvent.GoalChanged': 1 }; // FLAG`,
      `export const sql = "SELECT 1 FROM events WHERE event_type = 'SystemEvent.StoreSealed'"; // FLAG`,
      `export function identity<T extends string>(x: T): T { return x; }`,
      `identity('SystemEvent.StoreSealed'); // FLAG`,
      `export const ok: EventType = 'SystemEvent.StoreSealed';`,
      `if (typed.event_type === 'WorldEvent.GoalChanged') use(ok);`,
      `if (eventIs(e, 'WorldEvent.GoalChanged')) use(ok);`,
      `export const typedSet = new Set<EventType>(['SystemEvent.StoreSealed']);`,
      `export const counts: Record<EventType, number> = { 'SystemEvent.StoreSealed': 0, 'WorldEvent.GoalChanged': 1 };`,
      `switch (typed.event_type) { case 'SystemEvent.StoreSealed': break; default: break; }`,
      `export const text = 'SystemEvent.StoreSealed is not an SQL text';`,
      `export type Loose = 'WorldEvent.GoalChanged'; // FLAG`,
      `type Of<T extends EventType> = { t: T };`,
      `export type Sealed = Of<'SystemEvent.StoreSealed'>;`,
      `export const bare = ['WorldEvent.GoalChanged'] as const; // FLAG`,
      `export const listed = ['WorldEvent.GoalChanged'] as const satisfies readonly EventType[];`,
      `export const query = \`SELECT seq FROM events WHERE event_type = 'SystemEvent.StoreSealed' AND seq > \${1}\`; // FLAG`,
      `export const bound = 'SELECT seq FROM events WHERE event_type = ?';`,
    ];
    // The fixture's catalogue is a declaration file, as the real one is a module out of scope here.
    writeFileSync(path.join(dir, 'catalogue.d.ts'), `export type EventType = 'SystemEvent.StoreSealed' | 'WorldEvent.GoalChanged';\n`);
    const file = path.join(dir, 'fixture.ts');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const program = ts.createProgram({ rootNames: [file], options: { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, lib: ['lib.es2022.d.ts'], types: [] } });
    // The fixture is valid TypeScript: what is flagged compiles, which is the point.
    expect(ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
    const { seen, unchecked: found } = uncheckedEventTypeLiterals(program, dir, () => true);
    rmSync(dir, { recursive: true, force: true });
    const expected = lines.flatMap((line, i) => (line.endsWith('// FLAG') ? [i + 1] : []));
    expect(found.map((f) => f.line), describeUnchecked(found)).toEqual(expected);
    // Every whole literal was seen, checked or not (the SQL texts hold theirs inside longer text).
    const wholeLiterals = lines.filter((line) => !line.includes('SELECT')).flatMap((line) => line.match(/'(SystemEvent|WorldEvent)\.[A-Za-z]+'/g) ?? []);
    expect(seen).toBe(wholeLiterals.length);
  });
});
