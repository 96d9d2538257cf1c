// foundation/process-code.ts: a child's entry bundled from its code root's own sources, each
// source keeping its own import.meta.url, the file named by its bytes in a folder only this uid
// can write to — and a forged folder that others could write to refused.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle, ProcessCodeError, processCodeFor } from '../../foundation/process-code.js';

const REPO = path.resolve(import.meta.dirname, '..', '..');
let root: string;
let ownTmp: string;
const savedTmpdir = process.env.TMPDIR;

function writeCodeRoot(dir: string, greeting: string): string {
  mkdirSync(path.join(dir, 'room'), { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }));
  writeFileSync(path.join(dir, 'room', 'where.ts'), 'export const whereUrl: string = import.meta.url;\n');
  writeFileSync(path.join(dir, 'room', 'main.ts'), `import { whereUrl } from './where.js';\nconst greeting: string = ${JSON.stringify(greeting)};\nconsole.log(JSON.stringify({ greeting, whereUrl, mainUrl: import.meta.url }));\n`);
  return path.join(dir, 'room', 'main.ts');
}

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'ds-process-code-'));
  // The bundle folder follows os.tmpdir(): this file's own, so the forged case disturbs no other test.
  ownTmp = path.join(root, 'tmp');
  mkdirSync(ownTmp);
  process.env.TMPDIR = ownTmp;
});
afterAll(() => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  rmSync(root, { recursive: true, force: true });
});

describe('processCodeFor', () => {
  it('runs the code root’s own sources, each with its own import.meta.url, from a file named by its bytes', async () => {
    const entry = writeCodeRoot(path.join(root, 'one'), 'hello');
    const code = await processCodeFor(entry, path.join(root, 'one'));
    expect(code.execArgv).toEqual([]);
    expect(path.dirname(code.main)).toBe(path.join(ownTmp, `ds-code-${process.getuid!()}`));
    const printed = JSON.parse(execFileSync(process.execPath, [code.main], { encoding: 'utf8' })) as Record<string, string>;
    expect(printed).toEqual({ greeting: 'hello', whereUrl: pathToFileURL(path.join(root, 'one', 'room', 'where.ts')).href, mainUrl: pathToFileURL(entry).href });

    // Other sources (the planted-bug copy of the fault harness, say): another bundle, another name.
    const other = writeCodeRoot(path.join(root, 'two'), 'planted');
    const otherCode = await processCodeFor(other, path.join(root, 'two'));
    expect(otherCode.main).not.toBe(code.main);
    expect(JSON.parse(execFileSync(process.execPath, [otherCode.main], { encoding: 'utf8' })).greeting).toBe('planted');
    // Asked again, the same promise: built once per process.
    expect((await processCodeFor(entry, path.join(root, 'one'))).main).toBe(code.main);
    expect(readdirSync(path.dirname(code.main)).filter((f) => f.endsWith('.partial'))).toEqual([]);
  });

  it('reuses an earlier build only while every file it read has the same bytes (forged: an edited source, a forged record, a bundle changed in place)', async () => {
    const dir = path.join(root, 'reuse');
    const entry = writeCodeRoot(dir, 'first');
    // A build keeps its record only for inputs older than its start (a file edited during a build is not trusted).
    await new Promise((resolve) => setTimeout(resolve, 20));
    const built = await bundle(entry, dir);
    expect(built.reused).toBe(false);
    const again = await bundle(entry, dir);
    expect(again).toEqual({ ...built, reused: true });
    // This code root's record (the other tests' code roots have theirs beside it).
    const records = readdirSync(path.dirname(built.main)).filter((f) => f.endsWith('.inputs.json') && readFileSync(path.join(path.dirname(built.main), f), 'utf8').includes(JSON.stringify(entry)));
    expect(records).toHaveLength(1);
    const recordFile = path.join(path.dirname(built.main), records[0]!);
    const record = JSON.parse(readFileSync(recordFile, 'utf8')) as { main: string; inputs: [string, string][] };
    expect(record.inputs.map(([file]) => path.relative(dir, file)).sort()).toEqual(['package.json', path.join('room', 'main.ts'), path.join('room', 'where.ts'), 'tsconfig.json', expect.stringMatching(/esbuild.package\.json$/)].sort());

    // An imported source edited: built anew, and the new bundle runs the new bytes.
    writeFileSync(path.join(dir, 'room', 'where.ts'), 'export const whereUrl: string = "edited";\n');
    const edited = await bundle(entry, dir);
    expect(edited.reused).toBe(false);
    expect(edited.main).not.toBe(built.main);
    expect(JSON.parse(execFileSync(process.execPath, [edited.main], { encoding: 'utf8' })).whereUrl).toBe('edited');

    // Forged records: a hash that does not match its file, and a bundle outside the folder.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await bundle(entry, dir);
    expect((await bundle(entry, dir)).reused).toBe(true);
    const good = JSON.parse(readFileSync(recordFile, 'utf8')) as { main: string; inputs: [string, string][] };
    writeFileSync(recordFile, JSON.stringify({ ...good, inputs: good.inputs.map(([file, sha], i) => [file, i === 0 ? '0'.repeat(64) : sha]) }));
    expect((await bundle(entry, dir)).reused).toBe(false);
    writeFileSync(recordFile, JSON.stringify({ ...good, main: path.join(root, 'elsewhere.mjs') }));
    writeFileSync(path.join(root, 'elsewhere.mjs'), 'console.log("not ours")\n');
    const refused = await bundle(entry, dir);
    expect(refused.reused).toBe(false);
    expect(path.dirname(refused.main)).toBe(path.dirname(recordFile));
    writeFileSync(recordFile, 'not json');
    expect((await bundle(entry, dir)).reused).toBe(false);
    // A bundle whose bytes changed after it was written (its name is the SHA-256 of the bytes it had): built again, and written again.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const clean = await bundle(entry, dir);
    expect((await bundle(entry, dir)).reused).toBe(true);
    writeFileSync(clean.main, 'console.log(JSON.stringify({ whereUrl: "tampered" }))\n');
    const rebuilt = await bundle(entry, dir);
    expect(rebuilt).toEqual({ ...clean, reused: false });
    expect(JSON.parse(execFileSync(process.execPath, [rebuilt.main], { encoding: 'utf8' })).whereUrl).toBe('edited');
  });

  it('bundles the real writer main with better-sqlite3 left outside, by absolute path; the runtime’s has no database at all', async () => {
    const writer = readFileSync((await processCodeFor(path.join(REPO, 'writer', 'main.ts'), REPO)).main, 'utf8');
    const nativeUrl = pathToFileURL(path.join(REPO, 'node_modules', 'better-sqlite3')).href;
    expect(writer).toContain(`from "${nativeUrl}/lib/index.js"`);
    const runtime = readFileSync((await processCodeFor(path.join(REPO, 'runtime', 'main.ts'), REPO)).main, 'utf8');
    expect(runtime).not.toContain('better-sqlite3');
    expect(runtime).toContain(JSON.stringify(pathToFileURL(path.join(REPO, 'runtime', 'model-adapters', 'load-engine.ts')).href));
  });

  it('bundles a command that itself bundles (this module inside a bundle keeps its banner intact)', async () => {
    const code = await processCodeFor(path.join(REPO, 'cli', 'verify.ts'), REPO);
    const out = execFileSync(process.execPath, [code.main, '--help'], { encoding: 'utf8' });
    expect(out).toMatch(/verify/);
  });

  it('refuses (forged) a bundle folder that another uid could write to, naming it', async () => {
    const dir = path.join(ownTmp, `ds-code-${process.getuid!()}`);
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o777);
    const entry = writeCodeRoot(path.join(root, 'three'), 'refused');
    await expect(processCodeFor(entry, path.join(root, 'three'))).rejects.toThrow(ProcessCodeError);
    await expect(processCodeFor(entry, path.join(root, 'three'))).rejects.toThrow(/only it can write to \(mode 777/);
    chmodSync(dir, 0o755);
    expect((await processCodeFor(entry, path.join(root, 'three'))).main.startsWith(dir)).toBe(true);
  });

  it('refuses a code root that does not build, with the compiler’s words', async () => {
    const dir = path.join(root, 'broken');
    const entry = writeCodeRoot(dir, 'x');
    writeFileSync(entry, "import { nothing } from './missing.js';\nconsole.log(nothing);\n");
    await expect(processCodeFor(entry, dir)).rejects.toThrow(/bundling [\s\S]*Could not resolve "\.\/missing\.js"/);
  });
});
