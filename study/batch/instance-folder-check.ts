// One published instance folder held to its plan entry (the batch merge's per-folder check,
// batch-merge.ts): its key on the plan's allow-list, verifyDirectory (chain, signed manifest and
// heads), checkPlansUnder (plan conformance), and its signed manifest naming the entry's study,
// group, replicate, seed and pre-registration. Then, on the same thread and with those results
// (never verified twice), the folder is scored and reduced to its compact record for the report
// (study/instance-report-record.ts), so the merge's main thread never holds an instance's events.
// Plain data in and out, so it runs on a worker thread (folder-check-pool.ts) as well as here.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { checkSignedManifest, GROUP_CAPABILITIES } from '../../design/manifest.js';
import type { PlannedInstance } from '../../study-contract/batch-plan.js';
import type { RunChecks } from '../../oracle/hard-failures.js';
import type { PreRegistration } from '../../design/prereg.js';
import type { HashString } from '../../schema/hash.js';
import { scoreInstanceFolder, type ScoredFolder } from '../instance-report-record.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { parsePublicKeyHex, toHex } from '../../schema/ed25519-keys.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { checkPlansUnder } from '../../verification/plans-under.js';
import type { VerifiedEvents } from '../../writer/verified-events.js';
import { verifyDirectory } from '../../writer/verify-store.js';

export interface FolderCheckInput {
  readonly dir: string;
  readonly entry: PlannedInstance;
  readonly studyId: string;
  readonly preregSha256: string;
  readonly sameUid: boolean;
  readonly allowedKeys: readonly string[];
  readonly scenariosDir: string;
  /** Score a folder that has problems too (the bench, which measures the whole work on copies the plan refuses); the merge scores sound folders only. */
  readonly scoreRefused: boolean;
}

export interface FolderCheckResult {
  readonly dir: string;
  /** Every reason the folder is not the plan's instance (empty: it is). */
  readonly problems: readonly string[];
  /** experiment/instance id from the signed manifest: two folders with one are the same run. */
  readonly identity: string | null;
  /** The folder scored for the report (null: not scored, as it has problems or could not be verified at all). */
  readonly scored: ScoredFolder | null;
  /** Its own pre-registration, as read for the scoring (null: not scored). */
  readonly prereg: PreRegistration | null;
}

/** A folder that cannot even be read is one more problem, never a crash of the merge. */
export function checkInstanceFolder(input: FolderCheckInput): FolderCheckResult {
  try {
    return readAndCheck(input);
  } catch (error) {
    return { dir: input.dir, problems: [`unreadable: ${error instanceof Error ? error.message : String(error)}`], identity: null, scored: null, prereg: null };
  }
}

/**
 * The folder checked, then scored with the checks just made. A store whose event count is not
 * the one verified changed between the two reads (a copy still being written, a folder swapped
 * under the merge): the record would describe a store nobody verified, so it is a problem.
 */
function readAndCheck(input: FolderCheckInput): FolderCheckResult {
  return scoreCheckedFolder(input, checkFolder(input));
}

/** Scores a folder with the checks checkFolder made of it (a sound folder only, unless scoreRefused). */
export function scoreCheckedFolder(input: FolderCheckInput, made: FolderChecks): FolderCheckResult {
  const { problems, identity, checks } = made;
  if (checks === null || (problems.length > 0 && !input.scoreRefused)) return { dir: input.dir, problems, identity, scored: null, prereg: null };
  const kept = made.events.get(path.join(input.dir, RUN_FILES.store)) ?? null;
  const events = kept?.events ?? null;
  const { scored, prereg } = scoreInstanceFolder(input.dir, { scenariosDir: input.scenariosDir, expectedPreregSha256: input.preregSha256 as HashString, checks, rule: 'own', ...(events === null ? {} : { verifiedEvents: events }) });
  const changed = (reason: string): FolderCheckResult => ({ dir: input.dir, problems: [...problems, `it changed while it was merged: ${reason}`], identity, scored: null, prereg: null });
  if (kept !== null && events !== null) {
    // Scored from the very rows verified: what is left to ask is whether the store still holds them.
    const since = kept.changedSince();
    if (since !== null) return changed(since);
  } else {
    const verified = checks.verify.stores === 1 ? checks.verify.events : null;
    if (scored.record !== null && verified !== null && scored.record.events !== verified) return changed(`${verified} event(s) verified, ${scored.record.events} scored`);
  }
  return { dir: input.dir, problems, identity, scored, prereg };
}

export interface FolderChecks {
  readonly problems: readonly string[];
  readonly identity: string | null;
  /** null when the folder could not be verified at all (its key refused). */
  readonly checks: RunChecks | null;
  /** Each store's events as the verify read them, by events.db path (writer/verified-events.ts): the plan check and the scoring use them, nothing reads the store again. */
  readonly events: ReadonlyMap<string, VerifiedEvents>;
}

/** The folder held to its plan entry: key, verifyDirectory, checkPlansUnder, signed manifest (nothing scored). */
export function checkFolder(input: FolderCheckInput): FolderChecks {
  const { dir, entry } = input;
  const refused = (problem: string): FolderChecks => ({ problems: [problem], identity: null, checks: null, events: new Map() });
  const pubFile = path.join(dir, RUN_FILES.publicKey);
  if (!existsSync(pubFile)) return refused(`no ${RUN_FILES.publicKey}: not a whole run folder (half-copied?)`);
  const key = parsePublicKeyHex(readFileSync(pubFile, 'utf8'));
  if (!input.allowedKeys.includes(toHex(key))) return refused(`signed by key ${toHex(key).slice(0, 16)}…, which is not on the plan's allow-list: a folder of somebody else's, however self-consistent`);
  const problems: string[] = [];
  const events = new Map<string, VerifiedEvents>();
  const verify = verifyDirectory(dir, {}, events);
  for (const f of verify.failures) problems.push(`verify: ${f.store}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.reason}`);
  const plans = checkPlansUnder(dir, { scenariosDir: input.scenariosDir, verifiedEvents: events });
  if (!plans.runs.some((r) => r.plan === 'checked')) problems.push(`plan conformance: not checked (${plans.runs.map((r) => `${r.run}: ${r.plan}`).join(', ') || 'no run found'})`);
  for (const f of plans.failures) problems.push(`plan conformance: ${f.file}${f.seq === null ? '' : ` seq ${f.seq}`}: ${f.message}`);
  const checks: RunChecks = { verify, plans };
  const manifestFile = path.join(dir, RUN_FILES.manifest);
  if (!existsSync(manifestFile)) return { problems: [...problems, `no ${RUN_FILES.manifest}`], identity: null, checks, events };
  const signed = checkSignedManifest(JSON.parse(readFileSync(manifestFile, 'utf8')), key);
  if (!signed.ok) return { problems: [...problems, `${RUN_FILES.manifest}: ${signed.reason}`], identity: null, checks, events };
  const m = signed.manifest;
  const expect = (what: string, got: unknown, want: unknown): void => {
    if (canonicalJson(got) !== canonicalJson(want)) problems.push(`its signed manifest has ${what} ${JSON.stringify(got)}, the plan's entry ${JSON.stringify(want)}`);
  };
  if (m.experiment_id !== input.studyId) problems.push(`a folder of another study (${m.experiment_id}), not of ${input.studyId}`);
  expect('replicate', m.replicate, entry.replicate);
  expect('random_seed', m.random_seed, entry.seed);
  expect(`the capabilities of group`, m.capabilities, GROUP_CAPABILITIES[entry.group]);
  expect('prereg_sha256', m.prereg_sha256, input.preregSha256);
  if (input.sameUid) expect('isolation mode', m.isolation.mode, 'same-uid');
  return { problems, identity: `${m.experiment_id}/${m.group_blind_id}`, checks, events };
}
