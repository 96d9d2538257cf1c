// The signature check runs on node:crypto (OpenSSL), the signing on @noble/ed25519
// (schema/ed25519-keys.ts): one path per job. These hold the native check to RFC 8032's own
// vectors and to noble's strict (RFC 8032, zip215: false) check on every forgery made here, so
// moving the check did not change what verifies.
import * as ed from '@noble/ed25519';
import { describe, expect, test } from 'vitest';
import { generateKeyPair, publicKeyOf, signBytes, verifyBytes } from '../../schema/ed25519-keys.js';

const hex = (h: string): Uint8Array => Buffer.from(h, 'hex');
/** The group order L (RFC 8032 §5.1): a signature's S must be below it. */
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

/** RFC 8032 §7.1, TEST 1 and TEST 2. */
const VECTORS = [
  { secret: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', pub: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', msg: '', sig: 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b' },
  { secret: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb', pub: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c', msg: '72', sig: '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00' },
];

/** S + L in place of S: the same point equation, a non-canonical encoding RFC 8032 refuses. */
function withNonCanonicalS(signature: Uint8Array): Uint8Array {
  const s = BigInt(`0x${Buffer.from(signature.subarray(32)).reverse().toString('hex')}`) + L;
  const bytes = Buffer.from(s.toString(16).padStart(64, '0'), 'hex').reverse();
  return Buffer.concat([signature.subarray(0, 32), bytes]);
}

describe('Ed25519: signed with noble, checked natively', () => {
  test("RFC 8032's vectors: the key, the signature (noble) and the check (node:crypto)", () => {
    for (const v of VECTORS) {
      expect(Buffer.from(publicKeyOf(hex(v.secret))).toString('hex')).toBe(v.pub);
      expect(Buffer.from(signBytes(hex(v.msg), hex(v.secret))).toString('hex')).toBe(v.sig);
      expect(verifyBytes(hex(v.sig), hex(v.msg), hex(v.pub))).toBe(true);
    }
  });

  test('every forgery is refused by the native check exactly as by noble in RFC 8032 mode', () => {
    const keys = generateKeyPair();
    const other = generateKeyPair();
    const message = Buffer.from('{"seq":7,"hash":"sha256:00"}');
    const signature = signBytes(message, keys.secretKey);
    const flipped = Buffer.from(signature);
    flipped[10] = flipped[10]! ^ 0x01;
    const notAPoint = Buffer.alloc(32, 0xff);
    const cases: [string, Uint8Array, Uint8Array, Uint8Array, boolean][] = [
      ['the signature as made', signature, message, keys.publicKey, true],
      ['a flipped signature bit', flipped, message, keys.publicKey, false],
      ['an edited message', signature, Buffer.from('{"seq":8,"hash":"sha256:00"}'), keys.publicKey, false],
      ["another key's signature", signBytes(message, other.secretKey), message, keys.publicKey, false],
      ['S + L (non-canonical S)', withNonCanonicalS(signature), message, keys.publicKey, false],
      ['a public key that is no point', signature, message, notAPoint, false],
      ['a short signature', signature.subarray(0, 63), message, keys.publicKey, false],
      ['a short public key', signature, message, keys.publicKey.subarray(0, 31), false],
    ];
    for (const [name, sig, msg, key, expected] of cases) {
      expect(verifyBytes(sig, msg, key), name).toBe(expected);
      let strict: boolean;
      try {
        strict = ed.verify(sig, msg, key, { zip215: false });
      } catch {
        strict = false;
      }
      expect(strict, `noble (zip215: false): ${name}`).toBe(expected);
    }
  });
});
