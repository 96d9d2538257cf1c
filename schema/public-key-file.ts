// controller.pub (docs/format.md): the controller's public key as a folder carries it beside what
// it signed — a run folder (controller/key-store.ts copies it in, refusing to replace another key)
// and a blind-review package (blind-review/exporter.ts) — so a reader checks the signatures with
// no key folder at hand. One writer of the format for both, in the room of the formats.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { toHex, type Ed25519KeyPair } from './ed25519-keys.js';
import { RUN_FILES } from './run-files.js';

/** Writes `folder`/controller.pub: 64 lowercase hex digits and a newline, readable by all (0644). */
export function writePublicKey(folder: string, keys: Ed25519KeyPair): void {
  writeFileSync(path.join(folder, RUN_FILES.publicKey), `${toHex(keys.publicKey)}\n`, { mode: 0o644 });
}
