// The Content-Security-Policy source that allows one inline style or script by its SHA-256 (CSP
// level 2 hash sources): the pages the apparatus writes name their own inline parts this way, so
// the browser refuses any other style or script that escaping might have let through.
import { createHash } from 'node:crypto';

/** `'sha256-<base64>'` of the element's text exactly as it stands between its tags. */
export function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}
