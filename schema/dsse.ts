// DSSE envelopes (DESIGN §4): payload = base64(JCS(body)); each signature is Ed25519
// over PAE(payloadType, payload-bytes) = "DSSEv1" SP len(type) SP type SP len(body) SP body.
import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { keyIdOf, signBytes, verifyBytes } from './ed25519-keys.js';

const Base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'expected standard base64');

export const DsseEnvelope = z.strictObject({
  payloadType: z.string().min(1).max(200),
  payload: Base64,
  signatures: z.array(z.strictObject({ keyid: z.string().regex(/^[0-9a-f]{64}$/), sig: Base64 })).min(1).max(8),
});
export type DsseEnvelope = z.infer<typeof DsseEnvelope>;

export function pae(payloadType: string, body: Uint8Array): Uint8Array {
  const type = Buffer.from(payloadType, 'utf8');
  const head = Buffer.from(`DSSEv1 ${type.length} ${payloadType} ${body.length} `, 'utf8');
  return Buffer.concat([head, body]);
}

export function signDsse(payloadType: string, body: unknown, secretKey: Uint8Array, publicKey: Uint8Array): DsseEnvelope {
  const bytes = Buffer.from(canonicalJson(body), 'utf8');
  const sig = signBytes(pae(payloadType, bytes), secretKey);
  return {
    payloadType,
    payload: bytes.toString('base64'),
    signatures: [{ keyid: keyIdOf(publicKey), sig: Buffer.from(sig).toString('base64') }],
  };
}

export type DsseVerification =
  | { readonly ok: true; readonly body: unknown; readonly bodyText: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Checks an envelope against one trusted public key: right payload type, a signature
 * whose keyid names that key and verifies, and a payload that is canonical JSON.
 */
export function verifyDsse(envelope: unknown, expectedPayloadType: string, publicKey: Uint8Array): DsseVerification {
  const parsed = DsseEnvelope.safeParse(envelope);
  if (!parsed.success) return { ok: false, reason: `not a DSSE envelope: ${z.prettifyError(parsed.error)}` };
  const env = parsed.data;
  if (env.payloadType !== expectedPayloadType) {
    return { ok: false, reason: `payloadType is ${JSON.stringify(env.payloadType)}, expected ${JSON.stringify(expectedPayloadType)}` };
  }
  const keyid = keyIdOf(publicKey);
  const mine = env.signatures.filter((s) => s.keyid === keyid);
  if (mine.length === 0) return { ok: false, reason: `no signature by the trusted key ${keyid.slice(0, 16)}… (keyids present: ${env.signatures.map((s) => s.keyid.slice(0, 16)).join(', ')})` };
  const bytes = Buffer.from(env.payload, 'base64');
  const message = pae(env.payloadType, bytes);
  if (!mine.every((s) => verifyBytes(Buffer.from(s.sig, 'base64'), message, publicKey))) {
    return { ok: false, reason: 'signature does not verify against the trusted key' };
  }
  const bodyText = bytes.toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return { ok: false, reason: 'signed payload is not JSON' };
  }
  if (canonicalJson(body) !== bodyText) return { ok: false, reason: 'signed payload is not in canonical (RFC 8785) form' };
  return { ok: true, body, bodyText };
}
