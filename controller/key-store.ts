// Custody of the controller's Ed25519 key (DESIGN §2, spec §12.4–§12.5): the key lives
// in a key folder outside every run folder, readable by the controller's uid only, and
// only its public half is ever copied into a run.
//
// Key folder layout (mode 0700, owned by the controller's uid):
//   controller.key  the 32-byte RFC 8032 secret key (the seed) as 64 lowercase hex digits
//                   and a newline; mode 0600. Hex rather than raw so that a truncated or
//                   mangled file is detectable as malformed instead of being a "key".
//   controller.pub  the public key as 64 lowercase hex digits and a newline (the same
//                   format as a run's controller.pub); mode 0644. Derived from the
//                   secret, and checked against it on every load.
//
// Nothing here prints or logs the secret: errors name files and modes, never contents,
// and the returned key pair hides `secretKey` from JSON.stringify and console.log.
import { closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { EXIT_CODES, type ExitCode } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { generateKeyPair, keyIdOf, parsePublicKeyHex, publicKeyOf, SECRET_KEY_BYTES, toHex, type Ed25519KeyPair } from '../schema/ed25519-keys.js';
import { writePublicKey } from '../schema/public-key-file.js';
import { RUN_FILES } from '../schema/run-files.js';
import { publishFile } from '../foundation/publish-file.js';

export const KEY_FILES = { secret: 'controller.key', public: 'controller.pub' } as const;
export const KEY_DIR_MODE = 0o700;
export const SECRET_KEY_FILE_MODE = 0o600;
const PUBLIC_KEY_FILE_MODE = 0o644;
/** Any permission bit for group or others. */
const GROUP_OTHER_BITS = 0o077;
/** "64 hex digits + newline" is 65 bytes; reading a little more is how we see a longer file. */
const SECRET_FILE_READ_LIMIT_BYTES = 128;
/** Path depth bound for walking up to the root looking for a run folder. */
const MAX_ANCESTOR_DEPTH = 256;

export type KeyStoreProblem = 'not-a-folder' | 'too-open' | 'not-owner' | 'not-a-regular-file' | 'malformed' | 'public-key-mismatch' | 'inside-run-folder' | 'missing';

/** A key folder the controller must not use, with what to do about it in the message. */
export class KeyStoreError extends TypedErrorOf('key_store', EXIT_CODES.failed) {
  override readonly name = 'KeyStoreError';
  override get exitCode(): ExitCode {
    return this.problem === 'missing' || this.problem === 'not-a-folder' ? EXIT_CODES.misused : EXIT_CODES.failed;
  }
  override get ownCode(): string {
    return this.problem;
  }
  constructor(
    readonly problem: KeyStoreProblem,
    message: string,
  ) {
    super(message);
  }
}

export interface ControllerKey {
  readonly keys: Ed25519KeyPair;
  readonly keyId: string;
  readonly keyDir: string;
  /** True when this call made the key (first use of the folder). */
  readonly created: boolean;
}

export interface KeyStoreOptions {
  /** Run folders the key folder must not be inside (besides any folder that looks like a run). */
  readonly runDirs?: readonly string[];
  /** False: refuse with problem 'missing' instead of making a key (checkers must not mint keys). */
  readonly create?: boolean;
}

/** `$XDG_CONFIG_HOME/digital-subject-runtime/keys`, else `~/.config/digital-subject-runtime/keys`. */
export function defaultKeyDir(): string {
  const xdg = process.env['XDG_CONFIG_HOME'];
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  const configHome = xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir(), '.config');
  return path.join(configHome, 'digital-subject-runtime', 'keys');
}

/**
 * Loads the controller key from `keyDir`, making it first if the folder holds none.
 * Refuses (KeyStoreError) a folder inside a run folder, a folder or secret file that
 * group/others can access, a malformed secret, or a public key file that does not match.
 */
export function loadOrCreateControllerKey(keyDir: string = defaultKeyDir(), options: KeyStoreOptions = {}): ControllerKey {
  const dir = path.resolve(keyDir);
  refuseInsideRunFolder(dir, options.runDirs ?? []);
  const secretFile = path.join(dir, KEY_FILES.secret);
  // A file where the folder should be: said before any mkdir turns it into EEXIST/ENOTDIR.
  if (existsSync(dir) && !statSync(dir).isDirectory()) throw new KeyStoreError('not-a-folder', `the key folder ${dir} is a file; give --key-dir a folder (default ${defaultKeyDir()}); nothing was changed`);
  if (!existsSync(dir) || !existsSync(secretFile)) {
    if (options.create === false) {
      throw new KeyStoreError('missing', `no controller key in ${dir} (expected ${KEY_FILES.secret}); a key is made on first use by \`npm run prereg -- lock FILE --key-dir ${dir}\`; or pass the --key-dir that holds the controller's key`);
    }
    mkdirSync(dir, { recursive: true, mode: KEY_DIR_MODE });
    checkFolder(dir);
    const made = publishNewSecret(secretFile);
    // Either our key was published, or another process won the race: both load the one file.
    const key = loadExisting(dir);
    return { ...key, created: made !== null && sameKey(key.keys, made) };
  }
  checkFolder(dir);
  return { ...loadExisting(dir), created: false };
}

/** Copies the public key into a run folder as controller.pub; refuses to replace a different one. */
export function copyPublicKeyInto(runDir: string, keys: Ed25519KeyPair): void {
  const file = path.join(runDir, RUN_FILES.publicKey);
  if (existsSync(file)) {
    const present = parsePublicKeyHex(readFileSync(file, 'utf8'));
    if (toHex(present) === toHex(keys.publicKey)) return;
    throw new KeyStoreError('public-key-mismatch', `${file} holds another key (${keyIdOf(present).slice(0, 16)}…) than the controller's (${keyIdOf(keys.publicKey).slice(0, 16)}…): this run was signed by another key; use that key's --key-dir or a new run folder`);
  }
  writePublicKey(runDir, keys);
}

function loadExisting(dir: string): Omit<ControllerKey, 'created'> {
  const secretKey = readSecret(path.join(dir, KEY_FILES.secret));
  const publicKey = publicKeyOf(secretKey);
  checkOrWritePublicFile(path.join(dir, KEY_FILES.public), publicKey);
  return { keys: hideSecret(secretKey, publicKey), keyId: keyIdOf(publicKey), keyDir: dir };
}

function checkFolder(dir: string): void {
  const stat = lstatSync(dir);
  if (!stat.isDirectory()) throw new KeyStoreError('not-a-regular-file', `key folder ${dir} is not a folder (a symlink is refused too: the folder's permissions are what protect the key)`);
  refuseForeignOwner(dir, stat.uid);
  if ((stat.mode & GROUP_OTHER_BITS) !== 0) {
    throw new KeyStoreError('too-open', `key folder ${dir} has mode ${octal(stat.mode)}; group and others must have no access: run \`chmod 700 ${dir}\` (and check that nobody copied the key meanwhile)`);
  }
}

/** Reads the secret through one descriptor opened without following symlinks, so the mode checked is the file read. */
function readSecret(file: string): Uint8Array {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new KeyStoreError('not-a-regular-file', `${file} is a symlink; the secret key must be a regular file in the key folder`);
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new KeyStoreError('not-a-regular-file', `${file} is not a regular file`);
    refuseForeignOwner(file, stat.uid);
    if ((stat.mode & GROUP_OTHER_BITS) !== 0) {
      throw new KeyStoreError('too-open', `secret key file ${file} has mode ${octal(stat.mode)}; it must be readable by its owner only: run \`chmod 600 ${file}\`, and consider the key exposed if others could read it`);
    }
    const buffer = Buffer.alloc(SECRET_FILE_READ_LIMIT_BYTES);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    const text = buffer.subarray(0, length).toString('utf8');
    buffer.fill(0);
    const match = /^([0-9a-f]{64})\n?$/.exec(text);
    if (!match) {
      // Only the length is reported: the content is (a damaged copy of) the secret.
      throw new KeyStoreError('malformed', `secret key file ${file} is malformed: expected ${SECRET_KEY_BYTES * 2} lowercase hex digits and a newline, found ${length} byte(s); restore it from a backup, or move the folder away to make a new key (runs signed by the old key then no longer verify with the new one)`);
    }
    return Buffer.from(match[1]!, 'hex');
  } finally {
    closeSync(fd);
  }
}

function checkOrWritePublicFile(file: string, publicKey: Uint8Array): void {
  if (!existsSync(file)) {
    // A creator that lost the race, or a folder whose .pub was removed: the public key is
    // derived from the secret, so writing it back loses nothing.
    publishFile(file, `${toHex(publicKey)}\n`, PUBLIC_KEY_FILE_MODE);
  }
  let present: Uint8Array;
  try {
    present = parsePublicKeyHex(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new KeyStoreError('malformed', `public key file ${file} is malformed (${error instanceof Error ? error.message : String(error)}); delete it and it is rewritten from the secret key on the next load`);
  }
  if (toHex(present) !== toHex(publicKey)) {
    throw new KeyStoreError('public-key-mismatch', `public key file ${file} (keyid ${keyIdOf(present).slice(0, 16)}…) does not match the secret key in the same folder (keyid ${keyIdOf(publicKey).slice(0, 16)}…): one of the two files was replaced; find out which before signing anything, then delete the wrong .pub`);
  }
}

/** Publishes a new secret key unless one exists; returns the key it published, or null when another process was first. */
function publishNewSecret(file: string): Ed25519KeyPair | null {
  const pair = generateKeyPair();
  const published = publishFile(file, `${toHex(pair.secretKey)}\n`, SECRET_KEY_FILE_MODE);
  return published ? pair : null;
}

function refuseForeignOwner(file: string, uid: number): void {
  // process.getuid is absent on Windows, where POSIX modes do not protect anything anyway.
  const me = process.getuid?.();
  if (me !== undefined && uid !== me) {
    throw new KeyStoreError('not-owner', `${file} is owned by uid ${uid}, not by the controller's uid ${me}; the key must belong to the uid that signs`);
  }
}

/**
 * A key folder inside a run folder would ship the secret with the run. Refuses one inside
 * any given run folder, and one with a run folder (a folder holding events.db or a signed
 * manifest) among its ancestors.
 */
function refuseInsideRunFolder(dir: string, runDirs: readonly string[]): void {
  for (const runDir of runDirs) {
    const run = path.resolve(runDir);
    const relative = path.relative(run, dir);
    const outside = relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative);
    if (!outside) {
      throw new KeyStoreError('inside-run-folder', `key folder ${dir} is inside run folder ${run}; the secret key would travel with the run: choose a --key-dir outside every run folder (default ${defaultKeyDir()})`);
    }
  }
  let current = dir;
  for (let depth = 0; depth < MAX_ANCESTOR_DEPTH; depth += 1) {
    if (existsSync(path.join(current, RUN_FILES.store)) || existsSync(path.join(current, RUN_FILES.manifest))) {
      throw new KeyStoreError('inside-run-folder', `key folder ${dir} is inside ${current}, which holds a run (${RUN_FILES.store} or ${RUN_FILES.manifest}); choose a --key-dir outside every run folder (default ${defaultKeyDir()})`);
    }
    const parent = path.dirname(current);
    if (parent === current) return;
    current = parent;
  }
}

/** The key pair with `secretKey` non-enumerable: usable for signing, absent from JSON and console output. */
function hideSecret(secretKey: Uint8Array, publicKey: Uint8Array): Ed25519KeyPair {
  const pair = { publicKey } as { publicKey: Uint8Array; secretKey: Uint8Array };
  Object.defineProperty(pair, 'secretKey', { value: secretKey, enumerable: false });
  return pair;
}

function sameKey(a: Ed25519KeyPair, b: Ed25519KeyPair): boolean {
  return toHex(a.publicKey) === toHex(b.publicKey);
}

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8)}`;
}
