// The pre-registration schema, its lock, and every forged lock that `check` must catch,
// on real files with real signatures; the CLI's exit codes and --json shape.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadOrCreateControllerKey, type ControllerKey } from '../../controller/key-store.js';
import { checkPreregLock, lockFileOf, lockPrereg, PREREG_LOCK_PAYLOAD_TYPE, PreRegistration, PreregInputError, readLockedPrereg, wakeAnswerTimeoutMsOf, writerRequestTimeoutMsOf, type PreregCheck } from '../../design/prereg.js';
import { DEFAULT_WRITER_REQUEST_TIMEOUT_MS } from '../../writer/protocol.js';
import { DEFAULT_WAKE_ANSWER_TIMEOUT_MS } from '../../runtime/protocol.js';
import { signDsse, type DsseEnvelope } from '../../schema/dsse.js';
import { generateKeyPair } from '../../schema/ed25519-keys.js';
import { hashCanonical } from '../../schema/hash.js';
import { tempDir } from '../support/writer-fixture.js';
import { runCli } from '../support/cli.js';

const DEFAULT_FILE = path.resolve('experiments/prereg/default.json');
const LOCKED_AT = '2026-07-20T00:00:00.000Z';
let root: string;
let keyDir: string;
let controller: ControllerKey;

beforeAll(() => {
  root = tempDir('ds-prereg-');
  keyDir = path.join(root, 'keys');
  controller = loadOrCreateControllerKey(keyDir);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

function defaultContent(): Record<string, unknown> {
  return JSON.parse(readFileSync(DEFAULT_FILE, 'utf8')) as Record<string, unknown>;
}

let copies = 0;
/** A copy of default.json in a folder of its own, so that its lock file is its own too. */
function copyDefault(): string {
  copies += 1;
  const dir = path.join(root, `copy-${copies}`);
  mkdirSync(dir);
  const file = path.join(dir, 'prereg.json');
  copyFileSync(DEFAULT_FILE, file);
  return file;
}

function lockedCopy(): string {
  const file = copyDefault();
  expect(lockPrereg(file, controller.keys, LOCKED_AT)).toMatchObject({ ok: true });
  return file;
}

function problems(result: PreregCheck): string[] {
  return result.failures.map((f) => f.problem);
}

function schemaIssues(content: unknown): string[] {
  const parsed = PreRegistration.safeParse(content);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('PreRegistration schema', () => {
  test('accepts experiments/prereg/default.json, whose weights are SCENARIO.md\'s table', () => {
    const parsed = PreRegistration.parse(defaultContent());
    const weights = Object.fromEntries(Object.entries(parsed.scoring.dimensions).map(([k, v]) => [k, v.weight]));
    expect(weights).toEqual({ state_recovery: 40, re_planning: 15, experience_influence: 15, evidence_integrity: 20, recovery: 10 });
    expect(parsed.thresholds).toMatchObject({ c_median_min_score: 80, c_minus_b_min_points: 10, c_minus_a_min_points: 20, c_hard_failures_max: 0 });
    expect(parsed.expansion_rule).toMatchObject({ max_group_range_points: 15, max_dimension_within_group_sd_points: 10, initial_n_per_group: 3, expanded_n_per_group: 5 });
    expect(parsed.notes).toMatch(/exploratory.*not significance tests/);
  });

  test('refuses dimension weights that do not sum to 100', () => {
    const content = defaultContent() as { scoring: { dimensions: { recovery: { weight: number } } } };
    content.scoring.dimensions.recovery.weight = 11;
    expect(schemaIssues(content)).toEqual([expect.stringMatching(/^scoring\.dimensions: dimension weights must sum to 100/)]);
  });

  test('refuses checkpoint field weights that do not sum to 100', () => {
    const content = defaultContent() as { scoring: { checkpoint_field_weights: { next_action: number } } };
    content.scoring.checkpoint_field_weights.next_action = 0;
    expect(schemaIssues(content)).toEqual([expect.stringMatching(/^scoring\.checkpoint_field_weights: .*sum to 100/)]);
  });

  test('refuses a missing field, an unknown one, a hard failure left out and an event type not in the catalogue', () => {
    const content = defaultContent() as Record<string, unknown> & { hard_failures: unknown[]; retrieval_policy: { event_types: string[] } };
    delete content['chain_head_signing_period_wakes'];
    content['extra'] = 1;
    content.hard_failures = content.hard_failures.slice(1);
    content.retrieval_policy.event_types.push('WorldEvent.Nope');
    const issues = schemaIssues(content);
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^chain_head_signing_period_wakes: /),
        expect.stringMatching(/extra/),
        expect.stringMatching(/^hard_failures: .*unauthorized_tool_execution/),
        expect.stringMatching(/^retrieval_policy\.event_types\.\d+: not an event type/),
      ]),
    );
  });
});

describe('lock and check', () => {
  test('a locked, unchanged file checks OK, and re-indenting it keeps the hash', () => {
    const file = copyDefault();
    const outcome = lockPrereg(file, controller.keys, LOCKED_AT);
    expect(outcome).toMatchObject({ ok: true, lock: { prereg_sha256: hashCanonical(defaultContent()), file: 'prereg.json', locked_at: LOCKED_AT }, keyid: controller.keyId });
    const envelope = JSON.parse(readFileSync(lockFileOf(file), 'utf8')) as DsseEnvelope;
    expect(envelope.payloadType).toBe(PREREG_LOCK_PAYLOAD_TYPE);
    expect(checkPreregLock(file, controller.keys.publicKey)).toMatchObject({ ok: true, failures: [], issues: [], locked_sha256: hashCanonical(defaultContent()), locked_at: LOCKED_AT });
    writeFileSync(file, JSON.stringify(defaultContent()));
    expect(checkPreregLock(file, controller.keys.publicKey).ok).toBe(true);
  });

  test('a lock is never replaced: locking unchanged content again is a no-op, anything else is refused', () => {
    const file = lockedCopy();
    const before = readFileSync(lockFileOf(file), 'utf8');
    expect(lockPrereg(file, controller.keys, '2026-07-21T00:00:00.000Z')).toMatchObject({ ok: true, already_locked: true, lock: { prereg_sha256: hashCanonical(defaultContent()) } });
    expect(readFileSync(lockFileOf(file), 'utf8')).toBe(before);
    expect(lockPrereg(file, generateKeyPair(), '2026-07-21T00:00:00.000Z')).toMatchObject({ ok: false, problem: 'already-locked' });
    writeFileSync(file, JSON.stringify({ ...defaultContent(), prereg_version: '1.0.1' }));
    expect(lockPrereg(file, controller.keys, '2026-07-21T00:00:00.000Z')).toMatchObject({ ok: false, problem: 'already-locked' });
    expect(readFileSync(lockFileOf(file), 'utf8')).toBe(before);
  });

  test('the writer request timeout: absent is the default, a value in bounds is the instance\'s own, one out of bounds is not locked', () => {
    expect(writerRequestTimeoutMsOf(PreRegistration.parse(defaultContent()))).toBe(DEFAULT_WRITER_REQUEST_TIMEOUT_MS);
    expect(writerRequestTimeoutMsOf(PreRegistration.parse({ ...defaultContent(), writer_request_timeout_ms: 5_000 }))).toBe(5_000);
    for (const bad of [50, 600_001, 1.5, '5000']) {
      const file = copyDefault();
      writeFileSync(file, JSON.stringify({ ...defaultContent(), writer_request_timeout_ms: bad }));
      expect(lockPrereg(file, controller.keys, LOCKED_AT)).toMatchObject({ ok: false, problem: 'invalid-schema', issues: [expect.stringMatching(/^writer_request_timeout_ms: /)] });
      expect(existsSync(lockFileOf(file))).toBe(false);
    }
  });

  test('the wake answer timeout: absent is the default, a value in bounds is the instance\'s own, one out of bounds is not locked', () => {
    expect(wakeAnswerTimeoutMsOf(PreRegistration.parse(defaultContent()))).toBe(DEFAULT_WAKE_ANSWER_TIMEOUT_MS);
    expect(wakeAnswerTimeoutMsOf(PreRegistration.parse({ ...defaultContent(), wake_answer_timeout_ms: 5_000 }))).toBe(5_000);
    for (const bad of [999, 3_600_001, 1.5, '5000']) {
      const file = copyDefault();
      writeFileSync(file, JSON.stringify({ ...defaultContent(), wake_answer_timeout_ms: bad }));
      expect(lockPrereg(file, controller.keys, LOCKED_AT)).toMatchObject({ ok: false, problem: 'invalid-schema', issues: [expect.stringMatching(/^wake_answer_timeout_ms: /)] });
      expect(existsSync(lockFileOf(file))).toBe(false);
    }
  });

  test('an invalid file is not locked', () => {
    const file = copyDefault();
    const content = defaultContent();
    delete content['scenario'];
    writeFileSync(file, JSON.stringify(content));
    expect(lockPrereg(file, controller.keys, LOCKED_AT)).toMatchObject({ ok: false, problem: 'invalid-schema', issues: [expect.stringMatching(/^scenario: /)] });
    expect(existsSync(lockFileOf(file))).toBe(false);
  });
});

describe('readLockedPrereg: what a run starts from, read once', () => {
  test('a locked file: the check passes and the pre-registration handed over is the content the check hashed', () => {
    const file = lockedCopy();
    const locked = readLockedPrereg(file, controller.keys.publicKey);
    expect(locked.ok).toBe(true);
    if (!locked.ok) return;
    expect(hashCanonical(locked.prereg)).toBe(locked.check.prereg_sha256);
    expect(locked.check).toEqual(checkPreregLock(file, controller.keys.publicKey));
  });

  test('forged: a file edited after its lock hands over no pre-registration, and says why', () => {
    const file = lockedCopy();
    writeFileSync(file, JSON.stringify({ ...defaultContent(), notes: 'edited after the lock' }, null, 2));
    const locked = readLockedPrereg(file, controller.keys.publicKey);
    expect(locked.ok).toBe(false);
    expect('prereg' in locked).toBe(false);
    expect(problems(locked.check)).toEqual(['changed-after-lock']);
  });
});

describe('forged pre-registrations and locks are refused, saying which', () => {
  test('content edited after locking: both hashes named', () => {
    const file = lockedCopy();
    const content = defaultContent() as { thresholds: { c_minus_b_min_points: number } };
    content.thresholds.c_minus_b_min_points = 5;
    writeFileSync(file, JSON.stringify(content, null, 2));
    const result = checkPreregLock(file, controller.keys.publicKey);
    expect(result.ok).toBe(false);
    expect(problems(result)).toEqual(['changed-after-lock']);
    expect(result.failures[0]!.message).toContain(hashCanonical(defaultContent()));
    expect(result.failures[0]!.message).toContain(hashCanonical(content));
  });

  test('a lock whose signature has one byte flipped', () => {
    const file = lockedCopy();
    const envelope = JSON.parse(readFileSync(lockFileOf(file), 'utf8')) as DsseEnvelope;
    const sig = Buffer.from(envelope.signatures[0]!.sig, 'base64');
    sig[10] = sig[10]! ^ 0x01;
    envelope.signatures[0]!.sig = sig.toString('base64');
    writeFileSync(lockFileOf(file), JSON.stringify(envelope));
    const result = checkPreregLock(file, controller.keys.publicKey);
    expect(problems(result)).toEqual(['bad-signature']);
    expect(result.locked_sha256).toBeNull();
  });

  test('a lock whose payload was rewritten to the edited content\'s hash', () => {
    const file = lockedCopy();
    const content = defaultContent() as { chain_head_signing_period_wakes: number };
    content.chain_head_signing_period_wakes = 60;
    writeFileSync(file, JSON.stringify(content));
    const envelope = JSON.parse(readFileSync(lockFileOf(file), 'utf8')) as DsseEnvelope;
    envelope.payload = Buffer.from(JSON.stringify({ file: 'prereg.json', locked_at: LOCKED_AT, prereg_sha256: hashCanonical(content) })).toString('base64');
    writeFileSync(lockFileOf(file), JSON.stringify(envelope));
    expect(problems(checkPreregLock(file, controller.keys.publicKey))).toEqual(['bad-signature']);
  });

  test('a lock signed by another key', () => {
    const file = copyDefault();
    const other = generateKeyPair();
    const envelope = signDsse(PREREG_LOCK_PAYLOAD_TYPE, { prereg_sha256: hashCanonical(defaultContent()), file: 'prereg.json', locked_at: LOCKED_AT }, other.secretKey, other.publicKey);
    writeFileSync(lockFileOf(file), JSON.stringify(envelope));
    const result = checkPreregLock(file, controller.keys.publicKey);
    expect(problems(result)).toEqual(['wrong-key']);
    expect(result.failures[0]!.message).toMatch(/signed by another key.*--key-dir/);
  });

  test('a lock file deleted: unlocked', () => {
    const file = lockedCopy();
    unlinkSync(lockFileOf(file));
    const result = checkPreregLock(file, controller.keys.publicKey);
    expect(problems(result)).toEqual(['unlocked']);
    expect(result.failures[0]!.message).toMatch(/not locked.*npm run prereg -- lock/);
  });

  test('a lock that is not a DSSE envelope', () => {
    const file = lockedCopy();
    writeFileSync(lockFileOf(file), '{"hello": 1}');
    expect(problems(checkPreregLock(file, controller.keys.publicKey))).toEqual(['malformed-lock']);
  });

  test('a file failing the schema lists its issues even when a lock covers it', () => {
    const file = copyDefault();
    const content = defaultContent() as { scoring: { dimensions: { recovery: { weight: number } } } };
    content.scoring.dimensions.recovery.weight = 30;
    writeFileSync(file, JSON.stringify(content));
    // Signed directly: `lock` itself refuses an invalid file.
    writeFileSync(lockFileOf(file), JSON.stringify(signDsse(PREREG_LOCK_PAYLOAD_TYPE, { prereg_sha256: hashCanonical(content), file: 'prereg.json', locked_at: LOCKED_AT }, controller.keys.secretKey, controller.keys.publicKey)));
    const result = checkPreregLock(file, controller.keys.publicKey);
    expect(problems(result)).toEqual(['invalid-schema']);
    expect(result.issues).toEqual([expect.stringMatching(/^scoring\.dimensions: dimension weights must sum to 100/)]);
  });

  test('a missing file or one that is not JSON is an input error', () => {
    expect(() => checkPreregLock(path.join(root, 'nope.json'), controller.keys.publicKey)).toThrow(PreregInputError);
    const file = copyDefault();
    writeFileSync(file, '{ not json');
    expect(() => checkPreregLock(file, controller.keys.publicKey)).toThrow(/is not JSON/);
  });
});

describe('npm run prereg', () => {
  const cli = (args: string[]) => runCli('prereg', args);

  test('lock then check: exit 0, one JSON object each; a second lock of the same content is a no-op (exit 0), of changed content exits 1', async () => {
    const file = copyDefault();
    const cliKeyDir = path.join(root, 'cli-keys');
    const locked = await cli(['lock', file, '--key-dir', cliKeyDir, '--json']);
    expect(locked.code).toBe(0);
    const lockReport = JSON.parse(locked.stdout) as Record<string, unknown>;
    expect(lockReport).toMatchObject({ ok: true, lock_file: lockFileOf(file), lock: { prereg_sha256: hashCanonical(defaultContent()), file: 'prereg.json' }, key_created: true });
    const checked = await cli(['check', file, '--key-dir', cliKeyDir, '--json']);
    expect(checked.code).toBe(0);
    expect(JSON.parse(checked.stdout)).toMatchObject({ ok: true, failures: [], prereg_sha256: hashCanonical(defaultContent()), keyid: lockReport['keyid'] });
    const again = await cli(['lock', file, '--key-dir', cliKeyDir, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ ok: true, already_locked: true, key_created: false });
    writeFileSync(file, JSON.stringify({ ...defaultContent(), prereg_version: '1.0.1' }));
    const changed = await cli(['lock', file, '--key-dir', cliKeyDir, '--json']);
    expect(changed.code).toBe(1);
    expect(JSON.parse(changed.stdout)).toMatchObject({ ok: false, problem: 'already-locked', key_created: false });
  });

  test('check of an edited file: exit 1, the problem named in JSON and in words', async () => {
    const file = lockedCopy();
    writeFileSync(file, JSON.stringify({ ...defaultContent(), prereg_version: '1.0.1' }));
    const json = await cli(['check', file, '--key-dir', keyDir, '--json']);
    expect(json.code).toBe(1);
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
    expect((JSON.parse(json.stdout) as PreregCheck).failures.map((f) => f.problem)).toEqual(['changed-after-lock']);
    const human = await cli(['check', file, '--key-dir', keyDir]);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/REFUSED.*\n {2}changed-after-lock: .*changed after it was locked/);
  });

  test('exit 2 with a usable message for misuse', async () => {
    const missingFile = await cli(['check', path.join(root, 'nope.json'), '--key-dir', keyDir]);
    expect(missingFile.code).toBe(2);
    expect(missingFile.stderr).toMatch(/does not exist/);
    const lockTypoKeyDir = path.join(root, 'typo-keys');
    const lockTypo = await cli(['lock', path.join(root, 'nope.json'), '--key-dir', lockTypoKeyDir]);
    expect(lockTypo.code).toBe(2);
    expect(existsSync(lockTypoKeyDir)).toBe(false);
    const noSubcommand = await cli([DEFAULT_FILE]);
    expect(noSubcommand.code).toBe(2);
    expect(noSubcommand.stderr).toMatch(/give a subcommand, lock or check/);
    // check never makes a key: an empty --key-dir is a wrong folder.
    const emptyKeyDir = path.join(root, 'no-keys-here');
    const noKey = await cli(['check', DEFAULT_FILE, '--key-dir', emptyKeyDir]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/no controller key in/);
    expect(existsSync(emptyKeyDir)).toBe(false);
  });
});
