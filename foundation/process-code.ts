// The code a child process (ds-writer, ds-runtime) starts from: its TypeScript entry and
// everything it imports, bundled by esbuild into one ES module, once per entry per controller
// process. Why not `node --import tsx` as before: tsx compiles (or looks up in its cache) every
// module of the graph in each new process, ~1.5 s of CPU per start on this 2-core machine
// against ~0.3 s for the bundle (issue 19: an instance starts 2-4 processes, a study hundreds).
// esbuild is the compiler tsx itself uses, with the same tsconfig, so the code is the same.
//
// The bundle is built from the sources under the given code root the first time a controller
// process needs it, or reused from an earlier build only when every file that build read still
// has the bytes it had (the build's input list with each file's SHA-256, kept beside the bundle:
// a fault batch starts thousands of controllers, and a build costs ~0.25 s of CPU and ~1 s of
// wall on a loaded machine). The isolation copy and the fault harness's planted-bug copy run
// their own sources (the code root is part of the key). The file is named by the SHA-256 of its
// bytes in one folder per uid, so a process killed before it could clean up leaves nothing new
// behind (1,000 fault runs, one file per code version). Native packages (better-sqlite3) stay
// outside it, imported by absolute path from the code root's node_modules; dynamic imports of
// computed paths (the local model's engine) are left as they are. `import.meta.url` in each
// source file is replaced by that file's own URL, so paths resolved from it (the local
// engine's folder) mean what they mean under tsx.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InternalError } from './typed-error.js';

/** Packages with native parts (a .node addon, esbuild's own binary): imported from the code root's node_modules, never bundled. */
const NATIVE_PACKAGES = ['better-sqlite3', 'esbuild'] as const;
/**
 * The bundle's own URL, for its banner. Spelled in pieces: this file is itself bundled (the CLI
 * commands and the fault harness import it), and the plugin below rewrites every whole spelling.
 */
const BUNDLE_OWN_URL = ['import', 'meta', 'url'].join('.');
/** A bundle that is not built in this long is a broken code root, not a slow one. */
const BUILD_TIMEOUT_MS = 60_000;

export class ProcessCodeError extends InternalError {
  override readonly name = 'ProcessCodeError';
}

/** What a child process is forked from: the bundle, with no loader flags. */
export interface ProcessCode {
  readonly main: string;
  readonly execArgv: readonly string[];
  /** True when an earlier build was reused (every input unchanged), false when built now. */
  readonly reused: boolean;
}

const built = new Map<string, Promise<ProcessCode>>();

/**
 * The bundle of `entry` (an absolute path to a .ts main under `codeRoot`), built on first use in
 * this process and reused after. The folder it is written to is readable by every uid (a child may
 * run under another, controller/isolation.ts) and writable by this one only.
 */
export function processCodeFor(entry: string, codeRoot: string): Promise<ProcessCode> {
  const key = `${path.resolve(codeRoot)}\0${path.resolve(entry)}`;
  let pending = built.get(key);
  if (pending === undefined) {
    pending = bundle(path.resolve(entry), path.resolve(codeRoot));
    // A failed build is not remembered: the next spawn tries again and says why again.
    pending.catch(() => built.delete(key));
    built.set(key, pending);
  }
  return pending;
}

/** The most input files a build may list (the writer's bundle has a few hundred). */
const MAX_BUILD_INPUTS = 10_000;

/** What a build read: every input file (absolute) with the SHA-256 of its bytes, and the bundle it made. */
interface BuildRecord {
  readonly main: string;
  readonly inputs: ReadonlyArray<readonly [string, string]>;
}

/**
 * Builds `entry`, or reuses the bundle of an earlier build whose every input still hashes the
 * same. Exported for the tests, which must see a build and a reuse within one process.
 */
export async function bundle(entry: string, codeRoot: string): Promise<ProcessCode> {
  const folder = bundleFolder();
  const name = `${path.basename(path.dirname(entry))}-${path.basename(entry, '.ts')}`;
  // One record per (code root, entry, builder): a change to how bundles are made is a new key.
  const key = createHash('sha256').update(`${codeRoot}\0${entry}\0${BUILDER_SOURCE}\0${JSON.stringify(NATIVE_PACKAGES)}\0${createRequire(import.meta.url).resolve('esbuild')}`).digest('hex');
  const recordFile = path.join(folder, `${name}-${key.slice(0, 32)}.inputs.json`);
  const reused = reusableBuild(recordFile);
  if (reused !== null) return { main: reused, execArgv: [], reused: true };
  const startedMs = Date.now();
  const { text, inputs } = await buildInOwnProcessGroup(entry, codeRoot);
  const sha = createHash('sha256').update(text).digest('hex');
  const main = path.join(folder, `${name}-${sha.slice(0, 32)}.mjs`);
  // Written unless the very bytes are there already (a file of that name with other bytes was changed after it was written).
  if (!existsSync(main) || sha256Of(main) !== sha) publish(main, text);
  // Beside what the build read: what shapes how it reads (the tsconfig, the package's type, esbuild's version).
  const esbuildPackage = createRequire(import.meta.url).resolve('esbuild/package.json');
  const files = [...inputs.map((input) => path.resolve(codeRoot, input)), path.join(codeRoot, 'tsconfig.json'), path.join(codeRoot, 'package.json'), esbuildPackage].filter((file) => existsSync(file));
  const hashed = files.map((file) => ({ file, mtimeMs: statSync(file).mtimeMs, sha256: sha256Of(file) }));
  // Kept only when no input changed since the build began (its mtime older than the start): the
  // hashes taken now are then of the bytes the build read. A file edited during the build is not
  // recorded, and the next start builds again.
  if (hashed.length <= MAX_BUILD_INPUTS && hashed.every((h) => h.mtimeMs < startedMs)) {
    const record: BuildRecord = { main, inputs: hashed.map((h) => [h.file, h.sha256] as const) };
    publish(recordFile, JSON.stringify(record));
  }
  return { main, execArgv: [], reused: false };
}

/** The bundle an earlier build recorded in `recordFile`, if it is there and every input it read still has the same bytes; null otherwise. */
function reusableBuild(recordFile: string): string | null {
  let record: BuildRecord;
  try {
    record = JSON.parse(readFileSync(recordFile, 'utf8')) as BuildRecord;
  } catch {
    return null;
  }
  // A torn or foreign record is no record: built again (and the record replaced).
  if (typeof record !== 'object' || record === null || typeof record.main !== 'string' || path.dirname(record.main) !== path.dirname(recordFile) || !Array.isArray(record.inputs) || record.inputs.length === 0 || record.inputs.length > MAX_BUILD_INPUTS) return null;
  if (!existsSync(record.main)) return null;
  // The bundle is named by the SHA-256 of its bytes: one changed since it was written is not the build's.
  const named = /-([0-9a-f]{32})\.mjs$/.exec(record.main)?.[1];
  if (named === undefined || sha256Of(record.main).slice(0, 32) !== named) return null;
  for (const input of record.inputs) {
    if (!Array.isArray(input) || typeof input[0] !== 'string' || typeof input[1] !== 'string') return null;
    let now: string;
    try {
      now = sha256Of(input[0]);
    } catch {
      return null;
    }
    if (now !== input[1]) return null;
  }
  return record.main;
}

function sha256Of(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** Written whole under a name of this process, then renamed: a reader never sees half a file. */
function publish(file: string, content: string | Uint8Array): void {
  const partial = `${file}.${process.pid}.partial`;
  writeFileSync(partial, content, { mode: 0o644 });
  renameSync(partial, file);
}

/** The bundles' folder, this uid's own: a folder someone else could write to would let them choose what the writer runs. */
function bundleFolder(): string {
  const uid = process.getuid?.() ?? null;
  const dir = path.join(tmpdir(), `ds-code-${uid ?? 'user'}`);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || (uid !== null && stat.uid !== uid) || (stat.mode & 0o022) !== 0) {
    throw new ProcessCodeError(`${dir} is not a folder of uid ${String(uid)} that only it can write to (mode ${(stat.mode & 0o777).toString(8)}, owner ${stat.uid}); remove it, and the next start makes it anew`);
  }
  // A child under another uid must read its bundle (mkdir's mode is cut by the umask).
  if ((stat.mode & 0o755) !== 0o755) chmodSync(dir, 0o755);
  return dir;
}

/**
 * esbuild's build, run in a node process of its own process group: esbuild's service is a child of
 * whoever calls it, and a Ctrl-C (SIGINT to the controller's group, `npm run study`) would kill it
 * mid-build, turning an operator's stop during start-up into a failed instance. Plain JavaScript,
 * so that this step needs no loader. The bundle comes back on stdout.
 */
const BUILDER_SOURCE = `
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const [entry, codeRoot, esbuildPath, nativesJson, banner] = process.argv.slice(1);
const { build } = createRequire(esbuildPath)(esbuildPath);
const requireFromRoot = createRequire(path.join(codeRoot, 'package.json'));
const natives = new Set(JSON.parse(nativesJson));
try {
  const result = await build({
    entryPoints: [entry], absWorkingDir: codeRoot, tsconfig: path.join(codeRoot, 'tsconfig.json'),
    bundle: true, platform: 'node', format: 'esm', target: 'node20', banner: { js: banner },
    logLevel: 'silent', write: false, metafile: true,
    plugins: [
      { name: 'native-packages-from-code-root', setup(b) { b.onResolve({ filter: /^[^./]/ }, (a) => (natives.has(a.path) ? { path: pathToFileURL(requireFromRoot.resolve(a.path)).href, external: true } : undefined)); } },
      { name: 'import-meta-url-of-each-source', setup(b) { b.onLoad({ filter: /[.]ts$/ }, (a) => ({ contents: readFileSync(a.path, 'utf8').replace(/\\bimport[.]meta[.]url\\b/g, JSON.stringify(pathToFileURL(a.path).href)), loader: 'ts' })); } },
    ],
  });
  if (result.outputFiles.length !== 1) throw new Error('esbuild gave ' + result.outputFiles.length + ' files, not one');
  // First line: the files the build read (relative to the code root), then the bundle.
  process.stdout.write(JSON.stringify(Object.keys(result.metafile.inputs)) + '\\n');
  process.stdout.write(result.outputFiles[0].contents);
} catch (error) {
  process.stderr.write(String(error && error.message ? error.message : error));
  process.exitCode = 1;
}
`;
/** A bundle is ~1 MB; more than this on the builder's stdout is not a bundle. */
const MAX_BUNDLE_BYTES = 64 * 1024 * 1024;

function buildInOwnProcessGroup(entry: string, codeRoot: string): Promise<{ text: Uint8Array; inputs: string[] }> {
  const esbuildPath = createRequire(import.meta.url).resolve('esbuild');
  // Bundled CommonJS packages call require(): give the module one.
  const banner = `import { createRequire as __dsCreateRequire } from 'node:module'; const require = __dsCreateRequire(${BUNDLE_OWN_URL});`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', BUILDER_SOURCE, entry, codeRoot, esbuildPath, JSON.stringify(NATIVE_PACKAGES), banner], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let refusal: string | null = null;
    const timer = setTimeout(() => {
      refusal = `bundling ${entry} took more than ${BUILD_TIMEOUT_MS} ms`;
      child.kill('SIGKILL');
    }, BUILD_TIMEOUT_MS);
    child.stdout!.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > MAX_BUNDLE_BYTES && refusal === null) {
        refusal = `bundling ${entry} gave more than ${MAX_BUNDLE_BYTES} bytes`;
        child.kill('SIGKILL');
      } else out.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => (err = (err + chunk.toString('utf8')).slice(-8_000)));
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new ProcessCodeError(`bundling ${entry} from ${codeRoot} failed: ${error.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (refusal !== null) reject(new ProcessCodeError(refusal));
      else if (code !== 0) reject(new ProcessCodeError(`bundling ${entry} from ${codeRoot} failed (${signal ?? `exit ${String(code)}`}): ${err.trim()}`));
      else {
        const all = Buffer.concat(out);
        const newline = all.indexOf(0x0a);
        let inputs: unknown = null;
        try {
          inputs = newline < 0 ? null : JSON.parse(all.subarray(0, newline).toString('utf8'));
        } catch {
          inputs = null;
        }
        if (!Array.isArray(inputs) || !inputs.every((i) => typeof i === 'string')) reject(new ProcessCodeError(`bundling ${entry} from ${codeRoot}: the builder did not list the files it read`));
        else resolve({ text: all.subarray(newline + 1), inputs: inputs as string[] });
      }
    });
  });
}
