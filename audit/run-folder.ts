// The files of one run folder the audit desk shows beside the store (schema/run-files.ts):
// the signed manifest, the plan, the signed heads. Each is read once, bounded in size, and
// checked against the controller key in the folder; a file missing or failing its check is
// kept as a stated problem, shown on the page, never dropped.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ExperimentPlan } from '../design/experiment-plan.js';
import { checkSignedManifest, type InstanceManifest } from '../design/manifest.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { RUN_FILES } from '../schema/run-files.js';
import { findRunFiles } from '../writer/run-files-walk.js';
import { readSignedHeads, type SignedHeadLine } from '../writer/signed-files-check.js';
import { resolveStorePath } from '../writer/store-reader.js';

const MAX_PLAN_BYTES = 16 * 1024 * 1024;
const MAX_SIGNED_FILE_BYTES = 1024 * 1024;
const MAX_HEADS_BYTES = 16 * 1024 * 1024;
/** Lines of a file's problem shown on a page and on screen. */
const MAX_PROBLEM_LINES = 4;

export class AuditInputError extends TypedErrorOf('audit_input', EXIT_CODES.failed) {
  override readonly name = 'AuditInputError';
}

export type Loaded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

export interface RunFolder {
  readonly runDir: string;
  readonly storePath: string;
  readonly publicKey: Loaded<Uint8Array>;
  readonly manifest: Loaded<{ readonly manifest: InstanceManifest; readonly sha256: string }>;
  readonly plan: Loaded<ExperimentPlan>;
  readonly heads: Loaded<readonly SignedHeadLine[]>;
}

/** Why `file` is not read (missing, or larger than the desk reads), or null when it may be. */
function unreadable(file: string, maxBytes: number): string | null {
  if (!existsSync(file)) return `no ${path.basename(file)} in the run folder`;
  const bytes = statSync(file).size;
  return bytes > maxBytes ? `${path.basename(file)} is ${bytes} bytes, more than the ${maxBytes} the desk reads` : null;
}

function readBounded(file: string, maxBytes: number): Loaded<string> {
  const problem = unreadable(file, maxBytes);
  return problem === null ? { ok: true, value: readFileSync(file, 'utf8') } : { ok: false, problem };
}

function loadKey(runDir: string): Loaded<Uint8Array> {
  const text = readBounded(path.join(runDir, RUN_FILES.publicKey), 1024);
  if (!text.ok) return text;
  try {
    return { ok: true, value: parsePublicKeyHex(text.value.trim()) };
  } catch (error) {
    return { ok: false, problem: `${RUN_FILES.publicKey} is not a public key: ${error instanceof Error ? error.message : String(error)}` };
  }
}

function loadManifest(runDir: string, key: Loaded<Uint8Array>): RunFolder['manifest'] {
  const text = readBounded(path.join(runDir, RUN_FILES.manifest), MAX_SIGNED_FILE_BYTES);
  if (!text.ok) return text;
  if (!key.ok) return { ok: false, problem: `the manifest cannot be checked: ${key.problem}` };
  let envelope: unknown;
  try {
    envelope = JSON.parse(text.value);
  } catch {
    return { ok: false, problem: `${RUN_FILES.manifest} is not JSON` };
  }
  const checked = checkSignedManifest(envelope, key.value);
  // A schema failure lists every field; the first lines say enough on a page and on screen.
  const reason = checked.ok ? '' : checked.reason.split('\n').slice(0, MAX_PROBLEM_LINES).join(' ') + (checked.reason.split('\n').length > MAX_PROBLEM_LINES ? ' … (npm run verify lists it all)' : '');
  return checked.ok ? { ok: true, value: { manifest: checked.manifest, sha256: checked.sha256 } } : { ok: false, problem: `${RUN_FILES.manifest}: ${reason}` };
}

function loadPlan(runDir: string): Loaded<ExperimentPlan> {
  const text = readBounded(path.join(runDir, RUN_FILES.plan), MAX_PLAN_BYTES);
  if (!text.ok) return text;
  let raw: unknown;
  try {
    raw = JSON.parse(text.value);
  } catch {
    return { ok: false, problem: `${RUN_FILES.plan} is not JSON` };
  }
  const parsed = ExperimentPlan.safeParse(raw);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, problem: `${RUN_FILES.plan} is not an ExperimentPlan: ${z.prettifyError(parsed.error)}` };
}

function loadHeads(runDir: string, key: Loaded<Uint8Array>): RunFolder['heads'] {
  const file = path.join(runDir, RUN_FILES.heads);
  const problem = unreadable(file, MAX_HEADS_BYTES);
  if (problem !== null) return { ok: false, problem };
  if (!key.ok) return { ok: false, problem: `the heads cannot be checked: ${key.problem}` };
  return { ok: true, value: readSignedHeads(file, key.value) };
}

/** DIR is one run folder (or its events.db); a folder holding several stores is refused with their paths. */
export function openRunFolder(dirOrFile: string): RunFolder {
  if (existsSync(dirOrFile) && statSync(dirOrFile).isDirectory() && !existsSync(path.join(dirOrFile, RUN_FILES.store))) {
    const stores = findRunFiles(dirOrFile).stores;
    if (stores.length > 1) {
      const listed = stores.slice(0, 10).map((s) => path.dirname(s)).join(', ');
      throw new AuditInputError(`${dirOrFile} holds ${stores.length} runs; the desk shows one: give one of ${listed}${stores.length > 10 ? ', …' : ''}`);
    }
    if (stores.length === 1) return openRunFolder(stores[0] as string);
  }
  const storePath = path.resolve(resolveStorePath(dirOrFile));
  const runDir = path.dirname(storePath);
  const publicKey = loadKey(runDir);
  return { runDir, storePath, publicKey, manifest: loadManifest(runDir, publicKey), plan: loadPlan(runDir), heads: loadHeads(runDir, publicKey) };
}
