import { describe, expect, test } from 'vitest';
import { pae, signDsse, verifyDsse } from '../../schema/dsse.js';
import { generateKeyPair, keyIdOf, parsePublicKeyHex, toHex } from '../../schema/ed25519-keys.js';
import { sha256Hex } from '../../schema/hash.js';

const TYPE = 'application/vnd.digital-subject.test+json';

describe('DSSE over Ed25519', () => {
  test('PAE is exactly "DSSEv1 len(type) type len(body) body"', () => {
    expect(Buffer.from(pae('http://example.com/HelloWorld', Buffer.from('hello world'))).toString()).toBe('DSSEv1 29 http://example.com/HelloWorld 11 hello world');
    // Lengths count bytes, not characters.
    expect(Buffer.from(pae('t', Buffer.from('é'))).toString()).toBe('DSSEv1 1 t 2 é');
  });

  test('a signed body verifies, with keyid = sha256 of the raw public key', () => {
    const keys = generateKeyPair();
    const envelope = signDsse(TYPE, { b: 2, a: 1 }, keys.secretKey, keys.publicKey);
    expect(envelope.signatures[0]!.keyid).toBe(sha256Hex(keys.publicKey));
    expect(keyIdOf(keys.publicKey)).toBe(envelope.signatures[0]!.keyid);
    expect(Buffer.from(envelope.payload, 'base64').toString()).toBe('{"a":1,"b":2}');
    const verified = verifyDsse(envelope, TYPE, keys.publicKey);
    expect(verified).toEqual({ ok: true, body: { a: 1, b: 2 }, bodyText: '{"a":1,"b":2}' });
  });

  test('forgeries are refused with a reason', () => {
    const keys = generateKeyPair();
    const other = generateKeyPair();
    const envelope = signDsse(TYPE, { seq: 7 }, keys.secretKey, keys.publicKey);
    const flipped = Buffer.from(envelope.signatures[0]!.sig, 'base64');
    flipped[0] = flipped[0]! ^ 0x80;
    const cases: [string, unknown, string, Uint8Array, RegExp][] = [
      ['flipped signature byte', { ...envelope, signatures: [{ ...envelope.signatures[0]!, sig: flipped.toString('base64') }] }, TYPE, keys.publicKey, /does not verify/],
      ['edited payload', { ...envelope, payload: Buffer.from('{"seq":8}').toString('base64') }, TYPE, keys.publicKey, /does not verify/],
      ['other payload type', envelope, 'application/other', keys.publicKey, /payloadType/],
      ['signed by another key', signDsse(TYPE, { seq: 7 }, other.secretKey, other.publicKey), TYPE, keys.publicKey, /no signature by the trusted key/],
      ['another key claiming our keyid', { ...signDsse(TYPE, { seq: 7 }, other.secretKey, other.publicKey), signatures: [{ keyid: keyIdOf(keys.publicKey), sig: signDsse(TYPE, { seq: 7 }, other.secretKey, other.publicKey).signatures[0]!.sig }] }, TYPE, keys.publicKey, /does not verify/],
      ['not an envelope', { payload: 'x' }, TYPE, keys.publicKey, /not a DSSE envelope/],
    ];
    for (const [name, forged, type, key, reason] of cases) {
      const result = verifyDsse(forged, type, key);
      expect(result.ok, name).toBe(false);
      if (!result.ok) expect(result.reason, name).toMatch(reason);
    }
  });

  test('a correctly signed but non-canonical payload is refused', async () => {
    const keys = generateKeyPair();
    const { signBytes } = await import('../../schema/ed25519-keys.js');
    const body = Buffer.from('{"b":1, "a":2}');
    const sig = signBytes(pae(TYPE, body), keys.secretKey);
    const envelope = { payloadType: TYPE, payload: body.toString('base64'), signatures: [{ keyid: keyIdOf(keys.publicKey), sig: Buffer.from(sig).toString('base64') }] };
    expect(verifyDsse(envelope, TYPE, keys.publicKey)).toEqual({ ok: false, reason: expect.stringMatching(/canonical/) });
  });

  test('public key files are 64 lowercase hex digits', () => {
    const keys = generateKeyPair();
    expect(parsePublicKeyHex(`${toHex(keys.publicKey)}\n`)).toEqual(Buffer.from(keys.publicKey));
    expect(() => parsePublicKeyHex('abc')).toThrow(/64 lowercase hex/);
  });
});
