// Custody of the controller key on real files: made on first use with the right modes,
// reloaded after, and refused when too open, mismatched, malformed or inside a run.
import { execFile } from 'node:child_process';
import { chmodSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, test } from 'vitest';
import { copyPublicKeyInto, defaultKeyDir, KEY_FILES, KeyStoreError, loadOrCreateControllerKey, type KeyStoreProblem } from '../../controller/key-store.js';
import { signDsse, verifyDsse } from '../../schema/dsse.js';
import { generateKeyPair, keyIdOf, parsePublicKeyHex, toHex } from '../../schema/ed25519-keys.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { tempDir } from '../support/writer-fixture.js';

const run = promisify(execFile);
const scratch: string[] = [];

afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** A key folder path (not yet made) under a fresh temporary folder: never the real config folder. */
function freshKeyDir(): string {
  const root = tempDir('ds-keys-');
  scratch.push(root);
  return path.join(root, 'config', 'keys');
}

function problemOf(action: () => unknown): KeyStoreProblem | 'no error' {
  try {
    action();
  } catch (error) {
    if (error instanceof KeyStoreError) return error.problem;
    throw error;
  }
  return 'no error';
}

describe('first use and reload', () => {
  test('the key is made with folder 0700, secret 0600 (64 hex + newline) and a matching .pub, then reloaded', () => {
    const keyDir = freshKeyDir();
    const first = loadOrCreateControllerKey(keyDir);
    expect(first.created).toBe(true);
    expect(first.keyDir).toBe(path.resolve(keyDir));
    expect(statSync(keyDir).mode & 0o777).toBe(0o700);
    const secretFile = path.join(keyDir, KEY_FILES.secret);
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(secretFile, 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    const pub = parsePublicKeyHex(readFileSync(path.join(keyDir, KEY_FILES.public), 'utf8'));
    expect(toHex(pub)).toBe(toHex(first.keys.publicKey));
    expect(first.keyId).toBe(keyIdOf(pub));

    const second = loadOrCreateControllerKey(keyDir);
    expect(second.created).toBe(false);
    expect(second.keyId).toBe(first.keyId);
    // The reloaded key signs what the first one verifies.
    const envelope = signDsse('application/test', { n: 1 }, second.keys.secretKey, second.keys.publicKey);
    expect(verifyDsse(envelope, 'application/test', first.keys.publicKey).ok).toBe(true);
  });

  test('the secret never shows in JSON or console output of the loaded key', () => {
    const key = loadOrCreateControllerKey(freshKeyDir());
    const secretHex = toHex(key.keys.secretKey);
    expect(key.keys.secretKey).toHaveLength(32);
    expect(JSON.stringify(key)).not.toContain(secretHex);
    expect(JSON.stringify(key)).not.toMatch(/secretKey/);
  });

  test('a key made without an explicit folder goes to $XDG_CONFIG_HOME/digital-subject-runtime/keys', () => {
    const saved = process.env['XDG_CONFIG_HOME'];
    const config = tempDir('ds-xdg-');
    scratch.push(config);
    process.env['XDG_CONFIG_HOME'] = config;
    try {
      expect(defaultKeyDir()).toBe(path.join(config, 'digital-subject-runtime', 'keys'));
      const key = loadOrCreateControllerKey();
      expect(key.keyDir).toBe(path.join(config, 'digital-subject-runtime', 'keys'));
    } finally {
      if (saved === undefined) delete process.env['XDG_CONFIG_HOME'];
      else process.env['XDG_CONFIG_HOME'] = saved;
    }
  });

  test('create: false refuses a folder with no key instead of making one', () => {
    const keyDir = freshKeyDir();
    expect(problemOf(() => loadOrCreateControllerKey(keyDir, { create: false }))).toBe('missing');
    loadOrCreateControllerKey(keyDir);
    expect(loadOrCreateControllerKey(keyDir, { create: false }).created).toBe(false);
  });
});

describe('refusals', () => {
  test('a secret key file readable by others (0644) is refused with the chmod to run', () => {
    const keyDir = freshKeyDir();
    loadOrCreateControllerKey(keyDir);
    const secretFile = path.join(keyDir, KEY_FILES.secret);
    chmodSync(secretFile, 0o644);
    expect(() => loadOrCreateControllerKey(keyDir)).toThrow(/mode 0644.*chmod 600/);
    expect(problemOf(() => loadOrCreateControllerKey(keyDir))).toBe('too-open');
    chmodSync(secretFile, 0o640);
    expect(problemOf(() => loadOrCreateControllerKey(keyDir))).toBe('too-open');
  });

  test('a key folder open to group or others (0755) is refused', () => {
    const keyDir = freshKeyDir();
    loadOrCreateControllerKey(keyDir);
    chmodSync(keyDir, 0o755);
    expect(() => loadOrCreateControllerKey(keyDir)).toThrow(/chmod 700/);
    expect(problemOf(() => loadOrCreateControllerKey(keyDir))).toBe('too-open');
  });

  test('a public key file that does not match the secret is refused, naming both keyids', () => {
    const keyDir = freshKeyDir();
    const key = loadOrCreateControllerKey(keyDir);
    const other = generateKeyPair();
    writeFileSync(path.join(keyDir, KEY_FILES.public), `${toHex(other.publicKey)}\n`);
    expect(() => loadOrCreateControllerKey(keyDir)).toThrow(new RegExp(`${keyIdOf(other.publicKey).slice(0, 16)}.*${key.keyId.slice(0, 16)}`));
    expect(problemOf(() => loadOrCreateControllerKey(keyDir))).toBe('public-key-mismatch');
  });

  test('a malformed secret is refused without echoing its content', () => {
    const keyDir = freshKeyDir();
    loadOrCreateControllerKey(keyDir);
    const secretFile = path.join(keyDir, KEY_FILES.secret);
    const truncated = readFileSync(secretFile, 'utf8').slice(0, 40);
    writeFileSync(secretFile, truncated);
    let message = '';
    try {
      loadOrCreateControllerKey(keyDir);
    } catch (error) {
      expect(error).toBeInstanceOf(KeyStoreError);
      expect((error as KeyStoreError).problem).toBe('malformed');
      message = (error as Error).message;
    }
    expect(message).toMatch(/malformed.*40 byte/);
    expect(message).not.toContain(truncated);
  });

  test('a key folder inside a given run folder, or under a folder holding a run, is refused', () => {
    const runDir = tempDir('ds-run-');
    scratch.push(runDir);
    expect(problemOf(() => loadOrCreateControllerKey(path.join(runDir, 'keys'), { runDirs: [runDir] }))).toBe('inside-run-folder');
    expect(problemOf(() => loadOrCreateControllerKey(runDir, { runDirs: [runDir] }))).toBe('inside-run-folder');
    // A sibling whose name merely starts like the run folder is outside it.
    expect(problemOf(() => loadOrCreateControllerKey(`${runDir}-keys`, { runDirs: [runDir] }))).toBe('no error');
    scratch.push(`${runDir}-keys`);
    // Without being told, a folder that holds events.db is recognised as a run.
    writeFileSync(path.join(runDir, RUN_FILES.store), '');
    expect(() => loadOrCreateControllerKey(path.join(runDir, 'nested', 'keys'))).toThrow(/holds a run.*--key-dir outside/);
  });
});

describe('racing creation', () => {
  test('four processes making the key at once all end with the one key in the folder', async () => {
    const keyDir = freshKeyDir();
    // Each child busy-waits to a shared instant so that their first uses overlap.
    const startAt = Date.now() + 1500;
    const script = `
      import { loadOrCreateControllerKey } from './controller/key-store.ts';
      while (Date.now() < ${startAt}) {}
      const key = loadOrCreateControllerKey(${JSON.stringify(keyDir)});
      process.stdout.write(JSON.stringify({ keyId: key.keyId, created: key.created }));`;
    const children = Array.from({ length: 4 }, () => run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]));
    const results = (await Promise.all(children)).map((r) => JSON.parse(r.stdout) as { keyId: string; created: boolean });
    const onDisk = loadOrCreateControllerKey(keyDir);
    expect(new Set(results.map((r) => r.keyId))).toEqual(new Set([onDisk.keyId]));
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });
});

describe('copyPublicKeyInto', () => {
  test('writes controller.pub as hex, accepts the same key again, refuses another', () => {
    const runDir = tempDir('ds-run-');
    scratch.push(runDir);
    const key = loadOrCreateControllerKey(freshKeyDir());
    copyPublicKeyInto(runDir, key.keys);
    const file = path.join(runDir, RUN_FILES.publicKey);
    expect(readFileSync(file, 'utf8')).toBe(`${toHex(key.keys.publicKey)}\n`);
    expect(readFileSync(file, 'utf8')).not.toContain(toHex(key.keys.secretKey));
    copyPublicKeyInto(runDir, key.keys);
    const other = loadOrCreateControllerKey(freshKeyDir());
    expect(problemOf(() => copyPublicKeyInto(runDir, other.keys))).toBe('public-key-mismatch');
  });
});

