// `npm run replay` and `npm run restore` as a user runs them: exit codes, the one JSON
// object of --json, and the messages of refusals, on a store written by the real writer.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { editEnvelope, forgeableSealedRun, storeOf, tamper, type ForgeableRun, type RunCopies } from '../support/store-forgery.js';
import { runCli, type CliResult } from '../support/cli.js';
import type { WriterFixture } from '../support/writer-fixture.js';

let run: ForgeableRun | undefined;
let sealed: WriterFixture;
let copies: RunCopies;
let headSeq: number;
let storedHash: string;

beforeAll(async () => {
  run = await forgeableSealedRun();
  ({ sealed, copies, headSeq, storedHash } = run);
});

afterAll(() => {
  run?.cleanup();
});

function cli(script: 'replay' | 'restore', args: string[]): Promise<CliResult> {
  return runCli(script, args);
}

/** --json must print exactly one JSON object, on one line. */
function onlyJson(result: CliResult): Record<string, unknown> {
  const lines = result.stdout.split('\n').filter((l) => l !== '');
  expect(lines, result.stdout).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

describe.concurrent('npm run replay', () => {
  test('exit 0 and {state_hash, events, match} for a store written by the writer, from the folder or the file', async () => {
    const byDir = await cli('replay', [sealed.dir, '--json']);
    expect(byDir.code).toBe(0);
    expect(onlyJson(byDir)).toMatchObject({ state_hash: storedHash, events: headSeq, match: true, to_seq: headSeq, compared_with: 'projection', mode: 'strict' });
    const human = await cli('replay', [sealed.dbPath]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`state_hash ${storedHash}`);
    expect(human.stdout).toMatch(/match: yes/);
  });

  test('--to-seq at a snapshot compares with it; elsewhere match is null and says nothing is stored there', async () => {
    const atSnapshot = onlyJson(await cli('replay', [sealed.dir, '--to-seq', '8', '--json']));
    expect(atSnapshot).toMatchObject({ events: 8, match: true, compared_with: 'snapshot', to_seq: 8 });
    const between = await cli('replay', [sealed.dir, '--to-seq', '7', '--json']);
    expect(between.code).toBe(0);
    const json = onlyJson(between);
    expect(json).toMatchObject({ events: 7, match: null, compared_with: null });
    expect(json.notes).toContainEqual(expect.stringMatching(/nothing stored to compare at seq 7/));
    const human = await cli('replay', [sealed.dir, '--to-seq', '7']);
    expect(human.stdout).toMatch(/match: n\/a \(nothing stored to compare at this seq\)/);
  });

  test('exit 1 when the stored projection differs from the replay', async () => {
    const dir = copies.copy();
    tamper(dir, (db) => db.prepare(`UPDATE projection SET state = replace(state, '"total":${headSeq}', '"total":1')`).run());
    const result = await cli('replay', [dir, '--json']);
    expect(result.code).toBe(1);
    expect(onlyJson(result)).toMatchObject({ state_hash: storedHash, match: false });
  });

  test('exit 2 on misuse: bad --to-seq, both modes, no such folder, a folder without a store', async () => {
    const emptyDir = copies.copy();
    rmSync(storeOf(emptyDir));
    const cases = [
      { args: [sealed.dir, '--to-seq', 'abc'], says: /--to-seq "abc": .*whole number >= 1/ },
      { args: [sealed.dir, '--to-seq', '0'], says: /whole number >= 1/ },
      { args: [sealed.dir, '--to-seq', String(headSeq + 1)], says: new RegExp(`to-seq must be a seq from 1 to ${headSeq}`) },
      { args: [sealed.dir, '--migrate', '--use-recorded'], says: /--migrate and --use-recorded exclude each other/ },
      { args: [path.join(sealed.dir, 'nope')], says: /does not exist/ },
      { args: [emptyDir], says: /holds no events\.db/ },
      { args: [], says: /give exactly one run folder or events\.db/ },
    ];
    const results = await Promise.all(cases.map((c) => cli('replay', c.args)));
    results.forEach((result, i) => {
      const { args, says } = cases[i]!;
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(says);
    });
  });

  test('exit 2 for a version mismatch, listing it; --migrate rebuilds; --use-recorded says this build lacks the version', async () => {
    const dir = copies.copy();
    tamper(dir, (db) => db.prepare("UPDATE projection SET version = '0.9.0'").run());
    const strict = await cli('replay', [dir, '--json']);
    expect(strict.code).toBe(2);
    expect(onlyJson(strict)).toEqual({
      ok: false,
      command: 'replay',
      exit_code: 2,
      error: { code: 'version_mismatch', message: expect.any(String), differences: [{ where: 'projection row', field: 'projector_version', recorded: '0.9.0', expected: '1.0.0' }] },
    });
    expect(strict.stderr).toMatch(/projection row: projector_version recorded 0\.9\.0, expected 1\.0\.0/);
    const migrated = await cli('replay', [dir, '--migrate', '--json']);
    expect(migrated.code).toBe(0);
    expect(onlyJson(migrated)).toMatchObject({ mode: 'migrate', state_hash: storedHash, match: true, accepted_differences: [{ field: 'projector_version', recorded: '0.9.0' }] });
    const recorded = await cli('replay', [dir, '--use-recorded']);
    expect(recorded.code).toBe(2);
    expect(recorded.stderr).toMatch(/this build lacks projector event-counts@0\.9\.0/);
  });

  test('exit 2 for events of an older schema_version; --migrate names the missing upcaster', async () => {
    const dir = copies.copy();
    tamper(dir, (db) => editEnvelope(db, 6, (env) => ({ ...env, schema_version: '0.9.0' })));
    const strict = await cli('replay', [dir]);
    expect(strict.code).toBe(2);
    expect(strict.stderr).toMatch(/events of type WorldEvent\.MessageReceived \(1, first at seq 6\): schema_version recorded 0\.9\.0, expected 1\.0\.0/);
    const migrate = await cli('replay', [dir, '--migrate', '--json']);
    expect(migrate.code).toBe(2);
    expect(onlyJson(migrate)).toMatchObject({ error: { code: 'missing_upcaster', missing_upcasters: [{ key: 'WorldEvent.MessageReceived@0.9.0', first_seq: 6, events: 1 }] } });
  });
});

describe.concurrent('npm run restore', () => {
  test('exit 0 and {state_hash, match, snapshot_used, warnings} for an untouched store', async () => {
    const result = await cli('restore', [sealed.dir, '--json']);
    expect(result.code).toBe(0);
    expect(onlyJson(result)).toMatchObject({ state_hash: storedHash, match: true, snapshot_used: headSeq, warnings: [] });
    const human = await cli('restore', [sealed.dbPath]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/match: yes/);
  });

  test('a tampered snapshot is a warning, not a failure: exit 0 with the same state_hash', async () => {
    const dir = copies.copy();
    tamper(dir, (db) => db.prepare(`UPDATE snapshots SET state = replace(state, '"total":${headSeq}', '"total":2') WHERE seq = ?`).run(headSeq));
    const result = await cli('restore', [dir, '--json']);
    expect(result.code).toBe(0);
    const json = onlyJson(result);
    expect(json).toMatchObject({ state_hash: storedHash, match: true, snapshot_used: 16 });
    expect(json.warnings).toEqual([expect.stringMatching(new RegExp(`snapshot at seq ${headSeq}: its state does not hash to its state_hash`))]);
  });

  test('exit 1 when the stored projection was edited; exit 2 for a store recorded under other versions or no store', async () => {
    const edited = copies.copy();
    tamper(edited, (db) => db.prepare(`UPDATE projection SET state = replace(state, '"total":${headSeq}', '"total":1')`).run());
    const mismatch = await cli('restore', [edited, '--json']);
    expect(mismatch.code).toBe(1);
    expect(onlyJson(mismatch)).toMatchObject({ match: false, state_hash: storedHash });
    const versions = copies.copy();
    tamper(versions, (db) => db.prepare("UPDATE projection SET state_machine_version = '0.0.1'").run());
    const refused = await cli('restore', [storeOf(versions)]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/state_machine_version recorded 0\.0\.1, expected 0\.0\.0/);
    expect((await cli('restore', [path.join(sealed.dir, 'nope')])).code).toBe(2);
  });
});
