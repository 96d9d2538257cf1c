// Ed25519 (RFC 8032). Keys and signatures are made with @noble/ed25519 (the package the project
// was specified with), its SHA-512 wired from @noble/hashes so the synchronous API works.
// Signatures are checked with node:crypto (OpenSSL) instead: one path for the job, chosen because
// a merge checks thousands of signed heads and OpenSSL's verify measured ~20x faster than noble's
// here (issue 34 item 4: 0.08 vs 1.4 ms a signature on this 2-core machine). OpenSSL
// follows RFC 8032 strictly (canonical encodings only, cofactorless), noble's default ZIP-215
// accepts some non-canonical encodings no signer of ours makes: the check only got stricter.
// keyid = sha256 hex of the raw 32-byte public key (DESIGN §4).
import { createPublicKey, verify as verifyNative, type KeyObject } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { sha256Hex } from './hash.js';

ed.hashes.sha512 = sha512;

export const PUBLIC_KEY_BYTES = 32;
export const SECRET_KEY_BYTES = 32;
export const SIGNATURE_BYTES = 64;

export class KeyFormatError extends TypedErrorOf('key_format', EXIT_CODES.failed) {
  override readonly name = 'KeyFormatError';
}

export interface Ed25519KeyPair {
  readonly secretKey: Uint8Array;
  readonly publicKey: Uint8Array;
}

export function generateKeyPair(): Ed25519KeyPair {
  const { secretKey, publicKey } = ed.keygen();
  return { secretKey, publicKey };
}

export function publicKeyOf(secretKey: Uint8Array): Uint8Array {
  if (secretKey.length !== SECRET_KEY_BYTES) throw new KeyFormatError(`an Ed25519 secret key has ${SECRET_KEY_BYTES} bytes, got ${secretKey.length}`);
  return ed.getPublicKey(secretKey);
}

export function keyIdOf(publicKey: Uint8Array): string {
  return sha256Hex(publicKey);
}

export function signBytes(message: Uint8Array, secretKey: Uint8Array): Uint8Array {
  return ed.sign(message, secretKey);
}

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the raw 32 bytes follow it. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** Imported keys kept per thread (a merge meets a handful: the plan's allow-list); the oldest goes first. */
const MAX_CACHED_KEYS = 64;
const importedKeys = new Map<string, KeyObject>();

function importedKey(publicKey: Uint8Array): KeyObject {
  const hex = Buffer.from(publicKey).toString('hex');
  let key = importedKeys.get(hex);
  if (key === undefined) {
    key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
    if (importedKeys.size >= MAX_CACHED_KEYS) importedKeys.delete(importedKeys.keys().next().value!);
    importedKeys.set(hex, key);
  }
  return key;
}

export function verifyBytes(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== SIGNATURE_BYTES || publicKey.length !== PUBLIC_KEY_BYTES) return false;
  try {
    return verifyNative(null, message, importedKey(publicKey), signature);
  } catch {
    // A key that does not decode to a point: for a verifier that is simply "invalid".
    return false;
  }
}

/** Parses the hex form of a public key as shipped in `controller.pub`. */
export function parsePublicKeyHex(text: string): Uint8Array {
  const hex = text.trim();
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw new KeyFormatError(`a public key file holds ${PUBLIC_KEY_BYTES * 2} lowercase hex digits; got ${JSON.stringify(hex.slice(0, 80))}`);
  }
  return Buffer.from(hex, 'hex');
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}
