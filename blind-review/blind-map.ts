// The group ↔ blind-id map and its commitment (DESIGN §10, spec §8.5): the export writes the map
// where reviewers do not look (the study folder, 0600) and publishes, beside the packages, a
// controller-signed commitment to it: sha256(JCS({entries, salt})). The random salt makes the
// commitment say nothing about the map (three groups × n replicates could be guessed otherwise).
// Unblinding later reveals the map and checks it against the commitment signed before review.
import { z } from 'zod';
import { Group } from '../design/groups.js';
import { hashCanonical, HashString } from '../schema/hash.js';
import { BlindId } from './package-format.js';

export const BLIND_MAP_FORMAT_VERSION = '1.0.0';
export const COMMITMENT_PAYLOAD_TYPE = 'application/vnd.digital-subject.blind-commitment+json';

export const BLIND_REVIEW_FILES = {
  /** In the study folder, mode 0600: the sealed map. Never inside the package folder. */
  sealedMap: 'blind-map.sealed.json',
  /** In the package folder, beside the packages: the signed commitment and the key that checks it. */
  commitment: 'commitment.dsse.json',
  publicKey: 'controller.pub',
  /** In the package folder: the review's state (imported score files, arbitration, the lock). */
  reviewDir: 'review',
} as const;

export const BlindMapEntry = z.strictObject({
  blind_id: BlindId,
  group: Group,
  replicate: z.number().int().min(1),
  /** The instance's run folder, relative to the study folder. */
  dir: z.string().min(1),
});
export type BlindMapEntry = z.infer<typeof BlindMapEntry>;

export const BlindMap = z.strictObject({
  blind_map_format_version: z.literal(BLIND_MAP_FORMAT_VERSION),
  /** 32 random bytes, hex: without it the commitment could be brute-forced from the few possible maps. */
  salt: z.string().regex(/^[0-9a-f]{64}$/),
  /** Sorted by blind_id, so the commitment does not depend on the export's shuffle. */
  entries: z.array(BlindMapEntry).min(1).max(99),
});
export type BlindMap = z.infer<typeof BlindMap>;

/** The body the controller signs before review. */
export const BlindCommitment = z.strictObject({
  blind_map_format_version: z.literal(BLIND_MAP_FORMAT_VERSION),
  commitment: HashString,
  /** The packages it covers, sorted. */
  blind_ids: z.array(BlindId).min(1).max(99),
  /**
   * The pre-registration the review must weigh scores with, and sha256 of the study's report.json
   * bytes (its expansion decision): both fixed before review, so neither can move once groups are
   * known (spec §8.5: scores, hard-failure decisions and the expansion decision locked first).
   */
  prereg_sha256: HashString,
  study_report_sha256: HashString,
  /** blind id → packageDigest of its folder: the material each blind id stands for, fixed before review. */
  package_digests: z.record(BlindId, HashString),
  committed_at: z.iso.datetime(),
}).refine((c) => c.blind_ids.every((id) => id in c.package_digests) && Object.keys(c.package_digests).length === c.blind_ids.length, { message: 'package_digests must name exactly the committed blind ids' });
export type BlindCommitment = z.infer<typeof BlindCommitment>;

/** sha256(JCS({entries sorted by blind_id, salt})). */
export function commitmentOf(map: BlindMap): HashString {
  const entries = [...map.entries].sort((a, b) => (a.blind_id < b.blind_id ? -1 : a.blind_id > b.blind_id ? 1 : 0));
  return hashCanonical({ entries, salt: map.salt });
}
