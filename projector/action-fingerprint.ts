// The identity of a proposed action, shared by the projector (denied_actions) and the permission gate.
import { canonicalJson } from '../schema/canonical-json.js';
import { hashText } from '../schema/hash.js';

/**
 * sha256(JCS({tool, op, args})) of an ActionProposed: the same action proposed again has the
 * same one. The permission gate computes repeat_of_denied with it exactly as this projector
 * checks it.
 */
export function actionFingerprint(tool: string, op: string, args: unknown): string {
  return hashText(canonicalJson({ tool, op, args }));
}
