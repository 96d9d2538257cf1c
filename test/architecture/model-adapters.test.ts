// Adapters by property (issue 33 item 4): nothing in production code chooses behaviour by
// comparing an adapter's name — it asks the adapter's facts (runtime/model-adapters/adapter-list.ts)
// — and every switch over an adapter name is exhaustive, so that the compiler names it when an
// adapter is added; docs/architecture.md's row "a model adapter" names every place a new adapter
// is written in (issue 33 item 7). Each rule is run on the real checkout and on forged text it must flag.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import { ModelAdapter as ManifestModelAdapter } from '../../design/manifest.js';
import { MODEL_ADAPTER_NAMES } from '../../runtime/model-adapters/adapter-list.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Every name a model adapter goes by in code or in a record: the list's, and the manifest's `none` (no model). */
const ADAPTER_WORDS: readonly string[] = [...new Set([...MODEL_ADAPTER_NAMES, ...ManifestModelAdapter.options])];

interface Source {
  readonly path: string;
  readonly text: string;
}

/** The production .ts files of the checkout (git's tracked and new files; not test/, node_modules/ or the root's tool configuration). */
function productionSources(): Source[] {
  const listed = execFileSync('git', ['-C', ROOT, 'ls-files', '--cached', '--others', '--exclude-standard', '--', '*.ts'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return listed
    .split('\n')
    .filter((p) => p !== '' && !p.startsWith('test/') && !p.includes('node_modules/') && !p.endsWith('.d.ts') && p !== 'vitest.config.ts')
    .filter((p) => { try { readFileSync(path.join(ROOT, p)); return true; } catch { return false; } })
    .map((p) => ({ path: p, text: readFileSync(path.join(ROOT, p), 'utf8') }));
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/**
 * Each comparison (=== !== == !=) of something's `adapter` or `name` with an adapter's name, in
 * either order, as `path:line: the comparison`.
 */
function adapterNameComparisons(source: Source, words: readonly string[] = ADAPTER_WORDS): string[] {
  const literal = `(['"\`])(?:${words.join('|')})\\1`;
  const subject = String.raw`[\w$.?!\])]*\b(?:adapter|name)\b`;
  const operator = String.raw`\s*[!=]==?\s*`;
  const patterns = [new RegExp(`${subject}${operator}${literal}`, 'g'), new RegExp(`${literal}${operator}${subject}`, 'g')];
  const found: { index: number; text: string }[] = [];
  for (const pattern of patterns) for (const m of source.text.matchAll(pattern)) found.push({ index: m.index, text: m[0] });
  return found.sort((a, b) => a.index - b.index).map((f) => `${source.path}:${lineOf(source.text, f.index)}: ${f.text}`);
}

/** Each `switch (….adapter)` whose body has no `never` check (so a new adapter would fall through it unnoticed), as `path:line`. */
function nonExhaustiveAdapterSwitches(source: Source): string[] {
  const found: string[] = [];
  for (const m of source.text.matchAll(/switch \([\w$.?]*\badapter\) \{/g)) {
    const open = m.index + m[0].length - 1;
    let depth = 0;
    let end = -1;
    for (let i = open; i < source.text.length && end === -1; i++) {
      if (source.text[i] === '{') depth++;
      else if (source.text[i] === '}' && --depth === 0) end = i;
    }
    const body = source.text.slice(open, end === -1 ? undefined : end);
    if (!/:\s*never\s*=|assertNever\(/.test(body)) found.push(`${source.path}:${lineOf(source.text, m.index)}`);
  }
  return found;
}

/**
 * The comparisons that stay, each a record's value held to what the code itself started or
 * pinned — data compared, no behaviour chosen for a kind of adapter (like oracle/hard-failures.ts,
 * which compares a call's adapter with the manifest's). Each must still be found: a stale entry fails.
 */
const DATA_COMPARISONS: readonly { readonly file: string; readonly text: string; readonly why: string }[] = [
  { file: 'faults/invariants.ts', text: "model?.adapter !== 'local'", why: 'random_subject_safe: the record must show the local model the harness itself started for a random subject (fault-run.ts modelArgsOf)' },
  { file: 'faults/invariants.ts', text: "e.payload.adapter !== 'local'", why: 'random_subject_safe: every recorded answer came from that local model' },
  { file: 'study/study-report-builder.ts', text: "e.facts.manifest?.model.adapter === 'reference'", why: "the report's dry-run label: the recorded answers are the reference policy's" },
  { file: 'study/study-report-builder.ts', text: "input.plan.model.adapter === 'reference'", why: "the report's dry-run label when no instance was read: the study chose the reference policy" },
];

function allowed(finding: string): boolean {
  return DATA_COMPARISONS.some((d) => finding.startsWith(`${d.file}:`) && finding.endsWith(`: ${d.text}`));
}

const production = productionSources();

describe("no behaviour is chosen by comparing an adapter's name", () => {
  test('the checkout: no comparison of an adapter or name with an adapter\'s name, beyond the data comparisons listed (each still there)', () => {
    expect(production.length).toBeGreaterThan(150);
    const findings = production.flatMap((s) => adapterNameComparisons(s));
    expect(findings.filter((f) => !allowed(f))).toEqual([]);
    expect(DATA_COMPARISONS.filter((d) => !findings.some((f) => f.startsWith(`${d.file}:`) && f.endsWith(`: ${d.text}`)))).toEqual([]);
  });

  test('forged: comparisons by name are caught, in either order, with = or !, through optional chains, and for every adapter of the list', () => {
    const forged = {
      path: 'runtime/forged.ts',
      text: [
        "const graceMs = (config?.model.adapter === 'openai' ? config.model.timeout_ms : 0) + 5_000;",
        "if (this.input.adapter.name !== 'reference' && this.input.adapter.name !== 'replay') note();",
        'if ("local" == m.adapter) pin();',
        "const none = info.adapter != 'none';",
        ...MODEL_ADAPTER_NAMES.map((n) => `if (model.adapter === '${n}') x();`),
      ].join('\n'),
    };
    expect(adapterNameComparisons(forged)).toEqual([
      "runtime/forged.ts:1: config?.model.adapter === 'openai'",
      "runtime/forged.ts:2: this.input.adapter.name !== 'reference'",
      "runtime/forged.ts:2: this.input.adapter.name !== 'replay'",
      'runtime/forged.ts:3: "local" == m.adapter',
      "runtime/forged.ts:4: info.adapter != 'none'",
      ...MODEL_ADAPTER_NAMES.map((n, i) => `runtime/forged.ts:${5 + i}: model.adapter === '${n}'`),
    ]);
  });

  test('forged: what is no comparison by name passes — a literal stated, a schema literal, a switch case, a fact asked, another name compared', () => {
    const forged = {
      path: 'design/forged.ts',
      text: [
        "const runtime = { adapter: 'openai', model_id: 'm' };",
        "const variant = z.strictObject({ adapter: z.literal('local') });",
        "readonly name = 'replay' as const;",
        "switch (choice.adapter) { case 'reference': return 1; default: { const unhandled: never = choice; throw new Error(String(unhandled)); } }",
        'if (adapterOf(choice.adapter).callsModel) share();',
        "if (error.name === 'SqliteError') retry();",
        "if (kind === 'replay') source();",
      ].join('\n'),
    };
    expect(adapterNameComparisons(forged)).toEqual([]);
    expect(nonExhaustiveAdapterSwitches(forged)).toEqual([]);
  });

  test('the checkout: every switch over an adapter name is exhaustive (a never check), so the compiler names it for a new adapter', () => {
    const switches = production.filter((s) => /switch \([\w$.?]*\badapter\) \{/.test(s.text));
    expect(switches.length).toBeGreaterThan(3);
    expect(production.flatMap(nonExhaustiveAdapterSwitches)).toEqual([]);
  });

  test('forged: a switch over an adapter name without a never check is caught at its line', () => {
    const forged = {
      path: 'controller/forged.ts',
      text: ['function f(model: ModelChoice): number {', '  switch (model.adapter) {', "    case 'openai':", '      return 1;', '    default:', '      return 0;', '  }', '}'].join('\n'),
    };
    expect(nonExhaustiveAdapterSwitches(forged)).toEqual(['controller/forged.ts:2']);
  });
});

// ---------------------------------------------------------------------------------------
// docs/architecture.md, "Where to start": a model adapter

const ARCHITECTURE_DOC = path.join(ROOT, 'docs', 'architecture.md');
const ADAPTER_ROW = 'a model adapter';

/** Files the row names that hold only some adapters, and why. */
const SOME_ADAPTERS_ONLY: Readonly<Record<string, string>> = {
  'controller/model-config-file.ts': 'only an adapter that may be configured by a file has a variant there (openai, local)',
};

/** The second cell of the "Where to start" row of `change`, or null. */
function whereToStartRow(page: string, change: string): string | null {
  const line = page.split('\n').find((l) => l.startsWith(`| ${change} |`));
  return line === undefined ? null : line.slice(`| ${change} |`.length).replace(/\|\s*$/, '');
}

/** The files and folders a row names by their path from the checkout's root, in backticks. */
function pathsNamed(row: string): string[] {
  return [...new Set([...row.matchAll(/`((?:[a-z-]+\/)+(?:[a-z0-9.-]+\.(?:ts|md))?)`/g)].map((m) => m[1]!))];
}

/** The production files a new adapter is written in: a definition of one, a switch over an adapter name, a schema literal or enum of adapter names. */
function perAdapterPlaces(sources: readonly Source[], names: readonly string[] = MODEL_ADAPTER_NAMES): string[] {
  const literal = `['"](?:${names.join('|')})['"]`;
  const marks = [/ModelAdapterDefinition<['"]/, /switch \([\w$.?]*\badapter\) \{/, new RegExp(`z\\.literal\\(${literal}\\)`), new RegExp(`z\\.enum\\(\\[[^\\]]*${literal}`)];
  return sources.filter((s) => marks.some((m) => m.test(s.text))).map((s) => s.path).sort();
}

/**
 * What the row gets wrong about the code: a place a new adapter is written in that it does not
 * name (nor a folder of it), a path it names that does not exist, a file it names that names
 * neither every adapter of the list nor the list itself (so it is no place of theirs).
 */
function adapterRowProblems(row: string, sources: readonly Source[], read: (p: string) => string | null, names: readonly string[] = MODEL_ADAPTER_NAMES): string[] {
  const named = pathsNamed(row);
  const problems: string[] = [];
  for (const place of perAdapterPlaces(sources, names)) {
    if (!named.some((n) => place === n || (n.endsWith('/') && place.startsWith(n)))) problems.push(`${place} is written in for every adapter, but the row does not name it`);
  }
  for (const p of named) {
    const text = p.endsWith('/') ? (existsSync(path.join(ROOT, p)) ? '' : null) : read(p);
    if (text === null) {
      problems.push(`the row names ${p}, which does not exist`);
      continue;
    }
    if (p.endsWith('/') || p in SOME_ADAPTERS_ONLY || /\b(MODEL_ADAPTERS|ModelAdapterDefinition)\b/.test(text)) continue;
    const missing = names.filter((n) => !new RegExp(`\\b${n}\\b`).test(text));
    if (missing.length > 0) problems.push(`the row names ${p}, which names neither the list (MODEL_ADAPTERS, ModelAdapterDefinition) nor the adapters ${missing.join(', ')}`);
  }
  return problems;
}

function readFromCheckout(p: string): string | null {
  try {
    return readFileSync(path.join(ROOT, p), 'utf8');
  } catch {
    return null;
  }
}

describe('docs/architecture.md: the row for adding a model adapter', () => {
  const row = whereToStartRow(readFileSync(ARCHITECTURE_DOC, 'utf8'), ADAPTER_ROW);

  test('it names every place a new adapter is written in, every file it names exists and holds every adapter or the list', () => {
    expect(row).not.toBeNull();
    expect(perAdapterPlaces(production).length).toBeGreaterThan(8);
    expect(adapterRowProblems(row!, production, readFromCheckout)).toEqual([]);
    for (const file of Object.keys(SOME_ADAPTERS_ONLY)) expect(pathsNamed(row!)).toContain(file);
  });

  test('forged: a row that misses a place, names a file that is gone, or names a file of no adapter is caught; a new place in the code is caught too', () => {
    const withoutFlags = row!.replace('`design/model-choice-flags.ts`', 'the flags');
    expect(adapterRowProblems(withoutFlags, production, readFromCheckout)).toEqual(['design/model-choice-flags.ts is written in for every adapter, but the row does not name it']);
    const gone = `${row!} and \`runtime/model-adapters/adapter-for.ts\``;
    expect(adapterRowProblems(gone, production, readFromCheckout)).toEqual(['the row names runtime/model-adapters/adapter-for.ts, which does not exist']);
    const stranger = `${row!} and \`foundation/html-escape.ts\``;
    expect(adapterRowProblems(stranger, production, readFromCheckout)).toEqual([`the row names foundation/html-escape.ts, which names neither the list (MODEL_ADAPTERS, ModelAdapterDefinition) nor the adapters ${MODEL_ADAPTER_NAMES.join(', ')}`]);
    const newPlace = { path: 'oracle/model-words.ts', text: "export function wordsOf(m: ModelInfo): string {\n  switch (m.adapter) {\n    case 'openai': return 'a server';\n    default: { const unhandled: never = m; return String(unhandled); }\n  }\n}\n" };
    expect(adapterRowProblems(row!, [...production, newPlace], readFromCheckout)).toEqual(['oracle/model-words.ts is written in for every adapter, but the row does not name it']);
  });

  // The row's claim that the compiler names each place in turn, tried: a fifth adapter's start
  // configuration and its choice added (forged, in memory), the whole program type-checked.
  test('forged: a fifth adapter\'s configuration and choice make the compiler name exactly the places the row names (and the wake loop, where a call\'s adapter is recorded under the events\' names)', () => {
    const forged: Readonly<Record<string, readonly [string, string]>> = {
      'runtime/protocol.ts': ["  z.strictObject({ adapter: z.literal('reference') }),\n", "  z.strictObject({ adapter: z.literal('reference') }),\n  z.strictObject({ adapter: z.literal('echo'), base_url: ServerBaseUrl }),\n"],
      'design/model-choice.ts': ["  z.strictObject({ adapter: z.literal('reference'), config_file: ConfigProvenance.config_file.optional(), config_sha256: ConfigProvenance.config_sha256.optional() }),\n", "  z.strictObject({ adapter: z.literal('reference'), config_file: ConfigProvenance.config_file.optional(), config_sha256: ConfigProvenance.config_sha256.optional() }),\n  z.strictObject({ adapter: z.literal('echo'), base_url: z.string() }),\n"],
    };
    const configPath = path.join(ROOT, 'tsconfig.json');
    const config = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
    const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT, undefined, configPath);
    const host = ts.createCompilerHost(parsed.options);
    const read = host.readFile.bind(host);
    host.readFile = (file) => {
      const text = read(file);
      const change = forged[path.relative(ROOT, file).split(path.sep).join('/')];
      if (text === undefined || change === undefined) return text;
      if (!text.includes(change[0])) throw new Error(`the forgery no longer applies to ${file}`);
      return text.replace(change[0], change[1]);
    };
    // The production program and the one test the row names (the others are not places of an adapter).
    const rootNames = parsed.fileNames.filter((f) => { const rel = path.relative(ROOT, f).split(path.sep).join('/'); return !rel.startsWith('test/') || rel === 'test/runtime/adapter-list.test.ts'; });
    const program = ts.createProgram({ rootNames, options: parsed.options, host });
    const named = new Set(ts.getPreEmitDiagnostics(program).flatMap((d) => (d.file === undefined ? [] : [path.relative(ROOT, d.file.fileName).split(path.sep).join('/')])));
    expect([...named].sort()).toEqual(['design/model-choice-flags.ts', 'design/model-choice.ts', 'runtime/model-adapters/adapter-list.ts', 'runtime/wake-loop.ts', 'study/batch/task-unit.ts', 'test/runtime/adapter-list.test.ts']);
    expect([...named].filter((f) => f !== 'runtime/wake-loop.ts' && !pathsNamed(row!).includes(f))).toEqual([]);
  }, 240_000);
});
