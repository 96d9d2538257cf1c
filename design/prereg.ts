// Why one file: the pre-registration's schema, its hash and its lock are one contract — what is locked is exactly what the schema reads, and the reader checks the lock and parses from the same bytes (readLockedPrereg); apart, a change to one could pass unseen by the other.
//
// The pre-registration (DESIGN §8, spec §6.2, §8.2, §8.4) and its lock. The file fixes,
// before any run, everything a result could be tuned by; `lock` signs the hash of its
// content, and every run refuses a pre-registration that is unlocked or changed since.
//
// Hash: sha256(JCS(the file parsed as JSON)) — re-indenting the file keeps the hash, any
// change of a value, key or order of an array changes it.
// Lock: FILE.lock.dsse.json next to FILE, a DSSE envelope (payloadType PREREG_LOCK_PAYLOAD_TYPE)
// of {prereg_sha256, file: basename(FILE), locked_at}. A lock is never replaced. `file`
// records what was locked; a renamed copy with its renamed lock still checks, because the
// hash, not the name, identifies the pre-registration.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { SubstantiveRule } from '../schema/usable-data.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { DsseEnvelope, signDsse, verifyDsse } from '../schema/dsse.js';
import { keyIdOf, type Ed25519KeyPair } from '../schema/ed25519-keys.js';
import { hashCanonical, HashString } from '../schema/hash.js';
import { DEFAULT_SCHEMA_SUBSET_POLICY, SchemaSubsetPolicy, TransportRetryPolicy } from '../schema/model-call-policy.js';
import { CostCapUsd } from '../schema/model-prices.js';
import { FAILURE_KINDS, type FailureKind } from '../schema/usable-data.js';
import { RetrievalPolicy } from '../schema/retrieval-policy.js';
import { RUN_FILES } from '../schema/run-files.js';
import { DEFAULT_WRITER_REQUEST_TIMEOUT_MS, WriterRequestTimeoutMs } from '../writer/protocol.js';
import { DEFAULT_WAKE_ANSWER_TIMEOUT_MS, WakeAnswerTimeoutMs } from '../runtime/protocol.js';

export const PREREG_LOCK_PAYLOAD_TYPE = 'application/vnd.digital-subject.prereg-lock+json';
export const PREREG_LOCK_SUFFIX = `.lock${RUN_FILES.dsseSuffix}`;
const SIMULATED_HOURS = 72;
const MINUTES_PER_HOUR = 60;
const WEIGHT_TOTAL = 100;

const SemVer = z.string().regex(/^\d+\.\d+\.\d+$/, 'expected MAJOR.MINOR.PATCH');
const Slug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'expected lowercase letters, digits and dashes');
const Weight = z.number().int().min(0).max(WEIGHT_TOTAL);
const Score = z.number().min(0).max(WEIGHT_TOTAL);
const Text = z.string().min(1).max(2000);

function sumsTo100(weights: readonly number[]): boolean {
  return weights.reduce((sum, w) => sum + w, 0) === WEIGHT_TOTAL;
}

const Dimension = z.strictObject({ weight: Weight, measured_as: Text });

/** The five dimensions of SCENARIO.md's Continuity Score table; weights sum to 100. */
export const ScoringDimensions = z
  .strictObject({
    state_recovery: Dimension,
    re_planning: Dimension,
    experience_influence: Dimension,
    evidence_integrity: Dimension,
    recovery: Dimension,
  })
  .refine((d) => sumsTo100(Object.values(d).map((x) => x.weight)), { message: `dimension weights must sum to ${WEIGHT_TOTAL}` });

/** Weights of the ContinuityCheckpoint fields inside the state-recovery dimension; sum to 100. */
export const CheckpointFieldWeights = z
  .strictObject({ current_goal_id: Weight, goal_status: Weight, attention_target: Weight, waiting_condition: Weight, next_action: Weight })
  .refine((w) => sumsTo100(Object.values(w)), { message: `checkpoint field weights must sum to ${WEIGHT_TOTAL}` });

/** Spec §8.4, plus "C has no hard failure" of §8.2 (thresholds.c_hard_failures_max). */
export const HARD_FAILURE_IDS = ['unauthorized_tool_execution', 'duplicate_side_effect', 'fact_contradicts_store', 'replay_cannot_restore_state', 'configuration_changed_after_start'] as const;
export const HardFailureId = z.enum(HARD_FAILURE_IDS);

const HardFailures = z
  .array(z.strictObject({ id: HardFailureId, description: Text }))
  .max(HARD_FAILURE_IDS.length)
  .refine((list) => HARD_FAILURE_IDS.every((id) => list.filter((f) => f.id === id).length === 1), { message: `hard_failures must list each of ${HARD_FAILURE_IDS.join(', ')} exactly once` });

const WakeSchedule = z
  .strictObject({
    base_period_sim_minutes: z.number().int().min(1).max(SIMULATED_HOURS * MINUTES_PER_HOUR),
    /** Each wake is moved by a seeded uniform offset in [-jitter, +jitter]. */
    jitter_sim_minutes: z.number().int().min(0),
    long_absence_sim_minutes: z.number().int().min(1).max(SIMULATED_HOURS * MINUTES_PER_HOUR),
    /** The seeded start of the one long absence falls in this window of simulated hours. */
    long_absence_start_sim_hours: z.strictObject({ earliest: z.number().int().min(0), latest: z.number().int().min(0) }),
  })
  .refine((w) => w.jitter_sim_minutes * 2 < w.base_period_sim_minutes, { message: 'jitter must be under half the base period, or wakes could swap order', path: ['jitter_sim_minutes'] })
  .refine((w) => w.long_absence_start_sim_hours.earliest <= w.long_absence_start_sim_hours.latest, { message: 'earliest must not be after latest', path: ['long_absence_start_sim_hours'] })
  .refine((w) => w.long_absence_start_sim_hours.latest * MINUTES_PER_HOUR + w.long_absence_sim_minutes <= SIMULATED_HOURS * MINUTES_PER_HOUR, {
    message: `the long absence must end by hour ${SIMULATED_HOURS}`,
    path: ['long_absence_start_sim_hours', 'latest'],
  });

const Thresholds = z.strictObject({
  /** §8.2 thresholds are exploratory effect thresholds, never significance tests. */
  exploratory: z.literal(true),
  instance_pass_score: Score,
  c_median_min_score: Score,
  c_minus_b_min_points: Score,
  c_minus_a_min_points: Score,
  /** With n C instances, at least `at_least` of them reach instance_pass_score. */
  c_instances_passing: z.array(z.strictObject({ n: z.number().int().min(1), at_least: z.number().int().min(1) })).min(1).max(8).refine((rows) => rows.every((r) => r.at_least <= r.n), { message: 'at_least cannot exceed n' }),
  c_hard_failures_max: z.literal(0),
});

const ExpansionRule = z
  .strictObject({
    initial_n_per_group: z.number().int().min(1),
    expanded_n_per_group: z.number().int().min(1),
    /** Expand when any group's Continuity Score range (max − min) exceeds this. */
    max_group_range_points: Score,
    /** …or when any dimension's within-group standard deviation exceeds this. */
    max_dimension_within_group_sd_points: Score,
    /** 'sample': the standard deviation with n − 1 in the denominator (dimension values on 0–100). */
    sd_kind: z.literal('sample'),
    /** §6.2: never add instances to some groups only. */
    applies_to: z.literal('all-groups'),
    /** §8.2: after expansion, the verdict rests on the n = expanded data only. */
    verdict_after_expansion_uses: z.literal('expanded-data-only'),
  })
  .refine((r) => r.expanded_n_per_group > r.initial_n_per_group, { message: 'expanded_n_per_group must exceed initial_n_per_group' });

/**
 * The oracle's pre-registered parameters (docs/oracle.md states its rules). The oracle computes
 * the expected ContinuityCheckpoint of every scored wake from these, the scenario and the
 * intervention plan only.
 */
export const OracleRules = z.strictObject({
  oracle_rules_version: SemVer,
  /** Which wakes are scored: all scheduled wakes but those a planned crash cuts short (no checkpoint is taken there). */
  scored_wakes: z.literal('every_wake_except_planned_crash_wakes'),
  /** Tasks waiting on neither the reviewer's reply nor the deadline are expected done by the end of this wake (1-based). */
  independent_tasks_done_by_wake: z.number().int().min(1).max(64),
  /** The report is expected submitted at the first wake at most this long before the deadline in force. */
  submit_window_minutes: z.number().int().min(0).max(SIMULATED_HOURS * MINUTES_PER_HOUR),
});
export type OracleRules = z.infer<typeof OracleRules>;

export const MAX_PAUSE_AFTER_TRANSPORT_FAILURES = 100;

/** The failure kinds the load-confound check compares: every kind of usable data but `other` (refusals and HTTP errors that are no server's load). */
export const LOAD_CONFOUND_KINDS = FAILURE_KINDS.filter((k): k is Exclude<FailureKind, 'other'> => k !== 'other');
export type LoadConfoundKind = (typeof LOAD_CONFOUND_KINDS)[number];
/** Per kind, the most failed calls by which two groups of a block may differ (a 72-hour instance makes ~31 calls); null: not compared. */
const ToleratedCalls = z.number().int().min(0).max(10_000).nullable();
export const LoadConfoundTolerance = z.strictObject(Object.fromEntries(LOAD_CONFOUND_KINDS.map((k) => [k, ToleratedCalls])) as Record<LoadConfoundKind, typeof ToleratedCalls>);
export type LoadConfoundTolerance = z.infer<typeof LoadConfoundTolerance>;

/** Said when a pre-registration from before issue 15 is locked or started: what to add, and how. */
export const MODEL_CALLS_MISSING_MESSAGE =
  'missing: a pre-registration must fix, before any run, the share of accepted model answers an instance needs to count as data (usable_data.min_accepted_share), the transport retry policy (transport_retry: max_attempts, backoff_ms) and the number of consecutive transport failures that pause an instance (pause_after_consecutive_transport_failures); copy the model_calls block of experiments/prereg/default.json, save the file under a new name with a new prereg_version, and lock that';

/**
 * What the runtime does with model calls and when a run counts as data (issue 15 items 4, 5 and 8;
 * DESIGN §12), identical for every group. No defaults: a rule a result depends on is written in
 * the file, never filled in by the code (and a default would change the parsed value, hence the
 * hash `preregSha256` signs into the manifest).
 */
export const ModelCallRules = z.strictObject(
  {
    /**
     * An instance counts as data only when accepted answers / model calls made ≥ min_accepted_share,
     * and, where `substantive` is fixed, the wakes with a model call whose checkpoint carries its
     * fields non-null / those wakes ≥ the same share (schema/usable-data.ts). Absent `substantive`
     * (a pre-registration recorded before issue 32): accepted answers count as they are.
     */
    usable_data: z.strictObject({ min_accepted_share: z.number().min(0).max(1), substantive: SubstantiveRule.optional() }),
    /**
     * Transport failures where no answer reached the runtime (connection refused or reset, HTTP
     * 408, 409, 429, 5xx: runtime/model-adapters/transport-retry.ts RETRYABLE_STATUSES) are retried: at most max_attempts attempts per call, waiting backoff_ms[k]
     * before attempt k + 2 (schema/model-call-policy.ts, the one definition the runtime reads).
     */
    transport_retry: TransportRetryPolicy,
    /**
     * This many model calls in a row that got no answer from the server — `transport` (every
     * attempt without one) or `stream_broken` (the answer's stream broke off; counted since issue
     * 31 item 7, the key keeps its name) — pause the instance (recorded, resumable) instead of
     * burning the schedule (controller/wake-sequence.ts pauseRule).
     */
    pause_after_consecutive_transport_failures: z.number().int().min(1).max(MAX_PAUSE_AFTER_TRANSPORT_FAILURES),
    /**
     * The load-confound check (issue 31 item 2, oracle/load-confound.ts): within a block (one
     * replicate's A, B and C, run side by side against one server), how many more failed calls of
     * a kind one group may have than another before the block counts as confounded by the
     * server's load (and its instances as without usable data). null for a kind: not compared
     * (said in the report). Absent (pre-registrations from before issue 31): no block is checked,
     * and the report says so.
     */
    load_confound_tolerance: LoadConfoundTolerance.optional(),
    /** Answer-schema keywords outside the dialect's subset: refuse the start, or strip them (issue 36, schema/model-call-policy.ts SchemaSubsetPolicy); absent: refuse. */
    schema_subset: SchemaSubsetPolicy.optional(),
    /**
     * The most one instance may spend on model calls, in US dollars (issue 36 item 4), the same for
     * every group: before each call the runtime adds the most the call could cost (its prompt and
     * answer cap at the model's prices, runtime/call-cost.ts worstCallCostNanoUsd) to what the
     * instance has spent, and a call that could take it over is not made (ModelCallFailed
     * `cost_cap`); the controller then stops the instance, recorded and resumable
     * (design/cost-cap.ts). Needs prices in the model configuration. Absent: no cap.
     */
    cost_cap_usd_per_instance: CostCapUsd.optional(),
  },
  { error: (issue) => (issue.input === undefined ? MODEL_CALLS_MISSING_MESSAGE : undefined) },
);
export type ModelCallRules = z.infer<typeof ModelCallRules>;

/**
 * A pre-registration as recorded: what every reader of a run folder parses (verify, replay,
 * scoring, resume). `model_calls` is optional here only so that runs recorded before issue 15
 * still verify and replay; a file without it cannot be locked and no new run or study starts on
 * it (LockablePreRegistration, checked by lockPrereg and checkPreregLock).
 */
export const PreRegistration = z.strictObject({
  prereg_version: SemVer,
  notes: Text,
  scenario: z.strictObject({ id: Slug, description: Text, hours: z.literal(SIMULATED_HOURS) }),
  wake_schedule: WakeSchedule,
  budgets_per_wake: z.strictObject({ model_calls: z.number().int().min(1), tokens: z.number().int().min(1), tool_calls: z.number().int().min(0) }),
  retrieval_policy: RetrievalPolicy,
  scoring: z.strictObject({ scoring_spec_version: SemVer, dimensions: ScoringDimensions, checkpoint_field_weights: CheckpointFieldWeights, oracle: OracleRules }),
  thresholds: Thresholds,
  expansion_rule: ExpansionRule,
  hard_failures: HardFailures,
  chain_head_signing_period_wakes: z.number().int().min(1).max(1000),
  model_calls: ModelCallRules.optional(),
  /**
   * How long the controller and the runtime wait for the writer's answer to one request before
   * its outcome is unknown (the instance stops and a resume reconciles it). Absent: 30 s
   * (writer/protocol.ts DEFAULT_WRITER_REQUEST_TIMEOUT_MS), the value of every run before issue
   * 20; the fault harness pre-registers a shorter one so a lost message costs seconds, not 30.
   */
  writer_request_timeout_ms: WriterRequestTimeoutMs.optional(),
  /**
   * How long the controller waits for the runtime's answer to one wake beyond its model-call
   * budget before the wake fails (the instance stops; a resume goes on). Absent: 120 s
   * (runtime/protocol.ts DEFAULT_WAKE_ANSWER_TIMEOUT_MS), every run's before issue 20; the fault
   * harness pre-registers a shorter one so a stalled runtime costs seconds.
   */
  wake_answer_timeout_ms: WakeAnswerTimeoutMs.optional(),
});
export type PreRegistration = z.infer<typeof PreRegistration>;

/** What `lock` accepts and every new run or study requires: the current form, model_calls included. */
export const LockablePreRegistration = PreRegistration.extend({ model_calls: ModelCallRules });
export type LockablePreRegistration = z.infer<typeof LockablePreRegistration>;

/** The writer request timeout an instance of this pre-registration uses. */
export function writerRequestTimeoutMsOf(prereg: PreRegistration): number {
  return prereg.writer_request_timeout_ms ?? DEFAULT_WRITER_REQUEST_TIMEOUT_MS;
}

/** How long an instance of this pre-registration waits for a wake's answer beyond its model-call budget. */
export function wakeAnswerTimeoutMsOf(prereg: PreRegistration): number {
  return prereg.wake_answer_timeout_ms ?? DEFAULT_WAKE_ANSWER_TIMEOUT_MS;
}

/**
 * The model-call rules of a recorded pre-registration; null for one recorded before they existed
 * (such a run has no pre-registered usable-data share: it never counts as data).
 */
export function modelCallRulesOf(prereg: PreRegistration): ModelCallRules | null {
  return prereg.model_calls ?? null;
}

export const PreregLock = z.strictObject({ prereg_sha256: HashString, file: z.string().min(1).max(255), locked_at: z.iso.datetime() });
export type PreregLock = z.infer<typeof PreregLock>;

/** A pre-registration file that cannot be read as JSON at all: the command's input is wrong. */
export class PreregInputError extends TypedErrorOf('prereg_input', EXIT_CODES.misused) {
  override readonly name = 'PreregInputError';
}

export function lockFileOf(file: string): string {
  return `${file}${PREREG_LOCK_SUFFIX}`;
}

/** Reads FILE as JSON; PreregInputError when it is missing or not JSON. */
export function readPreregJson(file: string): unknown {
  if (!existsSync(file)) throw new PreregInputError(`${file} does not exist; give the path of a pre-registration JSON file (e.g. experiments/prereg/default.json)`);
  const text = readFileSync(file, 'utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new PreregInputError(`${file} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** One line per zod issue, with its path: what a person fixes. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`);
}

export type LockOutcome =
  /** already_locked: a lock by this key already covered exactly this content; nothing was written. */
  | { readonly ok: true; readonly lock_file: string; readonly lock: PreregLock; readonly keyid: string; readonly already_locked: boolean }
  | { readonly ok: false; readonly problem: 'invalid-schema' | 'already-locked'; readonly message: string; readonly issues: readonly string[] };

/** Signs the lock of a valid pre-registration into FILE.lock.dsse.json; never replaces a lock. */
export function lockPrereg(file: string, keys: Ed25519KeyPair, lockedAt: string): LockOutcome {
  const content = readPreregJson(file);
  const parsed = LockablePreRegistration.safeParse(content);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error);
    return { ok: false, problem: 'invalid-schema', message: `${file} fails the pre-registration schema (${issues.length} issue(s)); fix it before locking`, issues };
  }
  const lockFile = lockFileOf(file);
  if (existsSync(lockFile)) {
    // Locking twice is a no-op, not a replacement: the existing lock must be this key's and cover this content.
    const existing = readLock(lockFile, keys.publicKey, keyIdOf(keys.publicKey));
    if (!('problem' in existing) && existing.prereg_sha256 === hashCanonical(content)) return { ok: true, lock_file: lockFile, lock: existing, keyid: keyIdOf(keys.publicKey), already_locked: true };
    return { ok: false, problem: 'already-locked', message: `${lockFile} exists and does not cover this content with this key: a lock is never replaced; to change the pre-registration, save it under a new name (and a new prereg_version) and lock that`, issues: [] };
  }
  const lock = PreregLock.parse({ prereg_sha256: hashCanonical(content), file: path.basename(file), locked_at: lockedAt });
  const envelope = signDsse(PREREG_LOCK_PAYLOAD_TYPE, lock, keys.secretKey, keys.publicKey);
  // `wx`: a lock written by a concurrent `lock` between the check above and here is not replaced either.
  try {
    writeFileSync(lockFile, `${JSON.stringify(envelope, null, 2)}\n`, { flag: 'wx', mode: 0o644 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return { ok: false, problem: 'already-locked', message: `${lockFile} appeared while locking: a lock is never replaced`, issues: [] };
    throw error;
  }
  return { ok: true, lock_file: lockFile, lock, keyid: keyIdOf(keys.publicKey), already_locked: false };
}

export type PreregProblem = 'invalid-schema' | 'unlocked' | 'malformed-lock' | 'wrong-key' | 'bad-signature' | 'changed-after-lock';

export interface PreregFailure {
  readonly problem: PreregProblem;
  readonly message: string;
}

export interface PreregCheck {
  /** True only when the file passes the schema and a lock by the trusted key covers its current content. */
  readonly ok: boolean;
  readonly file: string;
  readonly lock_file: string;
  /** Hash of the content as it is now. */
  readonly prereg_sha256: HashString;
  /** Hash the lock signed, when a lock verified against the trusted key. */
  readonly locked_sha256: HashString | null;
  readonly locked_at: string | null;
  readonly keyid: string;
  readonly failures: readonly PreregFailure[];
  /** Schema issues, one line each ("path: message"); empty when the schema holds. */
  readonly issues: readonly string[];
}

/**
 * What every run calls before starting: is FILE a valid pre-registration, locked by the
 * key `publicKey`, and unchanged since? Each refusal names which of these failed.
 * Throws PreregInputError only when FILE is missing or not JSON.
 */
export function checkPreregLock(file: string, publicKey: Uint8Array): PreregCheck {
  return checkedContent(file, readPreregJson(file), publicKey);
}

/** A locked pre-registration read once: the check, and when it passed, the content it hashed, parsed. */
export type LockedPrereg = { readonly ok: true; readonly check: PreregCheck; readonly prereg: PreRegistration } | { readonly ok: false; readonly check: PreregCheck };

/**
 * What a run starts from: FILE checked as checkPreregLock does and parsed from the same reading,
 * so what runs is exactly what the lock covers (never read again after the check). Throws
 * PreregInputError only when FILE is missing or not JSON.
 */
export function readLockedPrereg(file: string, publicKey: Uint8Array): LockedPrereg {
  const content = readPreregJson(file);
  const check = checkedContent(file, content, publicKey);
  return check.ok ? { ok: true, check, prereg: PreRegistration.parse(content) } : { ok: false, check };
}

function checkedContent(file: string, content: unknown, publicKey: Uint8Array): PreregCheck {
  const actual = hashCanonical(content);
  const lockFile = lockFileOf(file);
  const keyid = keyIdOf(publicKey);
  const failures: PreregFailure[] = [];
  // The current form: a file recorded before model_calls existed still verifies in its old runs, but starts nothing new.
  const parsed = LockablePreRegistration.safeParse(content);
  const issues = parsed.success ? [] : describeIssues(parsed.error);
  if (!parsed.success) failures.push({ problem: 'invalid-schema', message: `${file} fails the pre-registration schema: ${issues.join('; ')}` });
  const lock = readLock(lockFile, publicKey, keyid);
  if ('problem' in lock) {
    failures.push(lock);
  } else if (lock.prereg_sha256 !== actual) {
    failures.push({ problem: 'changed-after-lock', message: `${file} changed after it was locked: the lock signed ${lock.prereg_sha256} at ${lock.locked_at}, the content now hashes to ${actual}; a locked pre-registration is never edited: restore it, or save the change under a new name and lock that` });
  }
  const verified = 'problem' in lock ? null : lock;
  return { ok: failures.length === 0, file, lock_file: lockFile, prereg_sha256: actual, locked_sha256: verified?.prereg_sha256 ?? null, locked_at: verified?.locked_at ?? null, keyid, failures, issues };
}

function readLock(lockFile: string, publicKey: Uint8Array, keyid: string): PreregLock | PreregFailure {
  if (!existsSync(lockFile)) return { problem: 'unlocked', message: `the pre-registration is not locked: ${lockFile} does not exist; run \`npm run prereg -- lock ${lockFile.slice(0, -PREREG_LOCK_SUFFIX.length)}\` before any run` };
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(lockFile, 'utf8'));
  } catch {
    return { problem: 'malformed-lock', message: `${lockFile} is not JSON` };
  }
  const envelope = DsseEnvelope.safeParse(json);
  if (!envelope.success) return { problem: 'malformed-lock', message: `${lockFile} is not a DSSE envelope: ${describeIssues(envelope.error).join('; ')}` };
  // Told apart from a broken signature: a lock by another key is a custody question (which --key-dir?), not a forgery.
  if (!envelope.data.signatures.some((s) => s.keyid === keyid)) {
    const present = envelope.data.signatures.map((s) => `${s.keyid.slice(0, 16)}…`).join(', ');
    return { problem: 'wrong-key', message: `${lockFile} is signed by another key (keyid ${present}), not by the controller key ${keyid.slice(0, 16)}…; use the --key-dir of the key that locked it, or lock a new copy` };
  }
  const verified = verifyDsse(json, PREREG_LOCK_PAYLOAD_TYPE, publicKey);
  if (!verified.ok) return { problem: 'bad-signature', message: `${lockFile} does not verify: ${verified.reason}; the lock was altered after signing` };
  const body = PreregLock.safeParse(verified.body);
  if (!body.success) return { problem: 'malformed-lock', message: `${lockFile} carries a signed body that is not a pre-registration lock: ${describeIssues(body.error).join('; ')}` };
  return body.data;
}
