// Rule 8, usable data (issue 15 item 8; docs/oracle.md "Usable data"): the judgement of one
// instance's model calls over forged event lists (each failure kind, no call at all, a share
// exactly at the pre-registered minimum, a failure this build does not know), the verdict forced
// to insufficient evidence by one group without usable data where the scores say supported, and
// the pre-registration's model_calls block: required to lock or start, optional to read old runs.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkPreregLock, LockablePreRegistration, lockFileOf, lockPrereg, MODEL_CALLS_MISSING_MESSAGE, modelCallRulesOf, PREREG_LOCK_PAYLOAD_TYPE, PreRegistration } from '../../design/prereg.js';
import { ByFailure, CHECKPOINT_RECORDED, judgeUsableData, FAILURE_KINDS, type ModelCallEventLike, type SubstantiveRule } from '../../schema/usable-data.js';
import { decideVerdict, type VerdictInput } from '../../oracle/verdict.js';
import { signDsse } from '../../schema/dsse.js';
import { generateKeyPair } from '../../schema/ed25519-keys.js';
import { MODEL_CALL_FAILURES } from '../../schema/events/model-output-events.js';
import { hashCanonical } from '../../schema/hash.js';
import { tempDir as newTempDir } from '../support/writer-fixture.js';

const made: string[] = [];
function tempDir(prefix: string): string {
  const dir = newTempDir(prefix);
  made.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

const DEFAULT_FILE = path.resolve('experiments/prereg/default.json');
const defaultContent = (): Record<string, unknown> => JSON.parse(readFileSync(DEFAULT_FILE, 'utf8')) as Record<string, unknown>;
const PREREG = LockablePreRegistration.parse(defaultContent());
const MIN = PREREG.model_calls.usable_data.min_accepted_share;

const answered = (): ModelCallEventLike => ({ event_type: 'ModelOutputEvent.ModelAnswered', payload: { raw_output: '{}' } });
const failed = (failure: unknown): ModelCallEventLike => ({ event_type: 'ModelOutputEvent.ModelCallFailed', payload: { failure, detail: 'forged' } });
const times = <T>(n: number, make: () => T): T[] => Array.from({ length: n }, make);
/** Events a run holds besides its calls: ignored by the judgement. */
const NOISE: ModelCallEventLike[] = [
  { event_type: 'ExperimentEvent.WakeStarted', payload: { failure: 'timeout' } },
  { event_type: 'ModelOutputEvent.ModelCallAttemptFailed', payload: { kind: 'connection_refused', failure: 'transport' } },
  { event_type: 'ActionEvent.ToolFailed', payload: { failure: 'schema_violation' } },
];

describe('judgeUsableData: k accepted of n calls made, the rest by kind', () => {
  it('the default pre-registration fixes 0.8', () => {
    expect(MIN).toBe(0.8);
  });

  // Every failure the schema knows, and where it is counted (budget_exhausted: not a call).
  const KIND: Record<(typeof MODEL_CALL_FAILURES)[number], string | null> = {
    schema_violation: 'schema',
    truncated_prompt: 'truncated',
    length: 'length',
    timeout: 'timeout',
    transport: 'transport',
    stream_broken: 'stream_broken',
    http_error: 'other',
    refusal: 'other',
    budget_exhausted: null,
    cost_cap: null,
  };
  it.each(MODEL_CALL_FAILURES.map((f) => [f, KIND[f]] as const))('%s is counted as %s', (failure, kind) => {
    const u = judgeUsableData([...times(9, answered), failed(failure), ...NOISE], MIN);
    if (kind === null) {
      expect(u).toMatchObject({ accepted: 9, calls: 9, share: 1, not_made: 1, usable: true });
      expect(Object.values(u.by_failure).every((n) => n === 0)).toBe(true);
      expect(u.reason).toContain(failure === 'cost_cap' ? '1 call(s) held back by the cost cap (cost_cap, not counted as calls)' : '1 wake(s) granted no call (budget_exhausted, not counted as calls)');
      return;
    }
    expect(u).toMatchObject({ accepted: 9, calls: 10, share: 0.9, not_made: 0, unrecognised_failures: 0, usable: true });
    expect(u.by_failure).toEqual({ ...Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])), [kind]: 1 });
    expect(u.reason).toBe(`9 of 10 model calls gave accepted answers (90 %), at least the pre-registered 80 %; failed: 1 ${kind}`);
  });

  it('below the minimum: not usable, every kind counted and named', () => {
    const events = [...times(2, answered), ...times(5, () => failed('schema_violation')), failed('length'), failed('length'), failed('timeout'), failed('stream_broken'), failed('transport'), failed('http_error'), failed('refusal'), failed('truncated_prompt'), failed('budget_exhausted')];
    const u = judgeUsableData(events, MIN);
    expect(u).toMatchObject({ accepted: 2, calls: 15, not_made: 1, usable: false });
    expect(u.by_failure).toEqual({ schema: 5, truncated: 1, length: 2, timeout: 1, transport: 1, stream_broken: 1, other: 2 });
    expect(u.share).toBeCloseTo(2 / 15, 12);
    expect(u.reason).toBe('2 of 15 model calls gave accepted answers (13.33 %), below the pre-registered 80 %; failed: 5 schema, 1 truncated, 2 length, 1 timeout, 1 transport, 1 stream_broken, 2 other; 1 wake(s) granted no call (budget_exhausted, not counted as calls)');
  });

  it('one name per number (issue 31 item 7): stream_broken is a kind of its own; a by_failure written before it (no key) reads it as 0', () => {
    expect(FAILURE_KINDS).toContain('stream_broken');
    const u = judgeUsableData([...times(6, answered), failed('transport'), failed('transport'), failed('transport'), failed('stream_broken')], MIN);
    expect(u.reason).toContain('failed: 3 transport, 1 stream_broken');
    // A stored tally from before: the key is absent, and reads as 0 — the rest as it was.
    const before = { schema: 0, truncated: 0, length: 0, timeout: 0, transport: 4, other: 0 };
    expect(ByFailure.parse(before)).toEqual({ ...before, stream_broken: 0 });
    // An unknown key is still refused.
    expect(ByFailure.safeParse({ ...before, stream_broken: 0, dropped: 1 }).success).toBe(false);
  });

  it('no call made: not usable, "no model call was made", whatever the minimum', () => {
    for (const events of [[], NOISE, times(31, () => failed('budget_exhausted'))]) {
      for (const min of [0, MIN, 1]) {
        const u = judgeUsableData(events, min);
        expect(u).toMatchObject({ accepted: 0, calls: 0, share: null, usable: false });
        expect(u.reason).toMatch(/^no model call was made/);
      }
    }
    expect(judgeUsableData(times(3, () => failed('budget_exhausted')), MIN).reason).toBe('no model call was made; 3 wake(s) granted no call (budget_exhausted, not counted as calls)');
  });

  it('exactly at the minimum is usable; one accepted answer fewer is not', () => {
    // 4/5 = 0.8, 19/20 = 0.95, 3/4 = 0.75 are exact in the comparison (one correctly rounded division each).
    const at = (k: number, n: number, min: number) => judgeUsableData([...times(k, answered), ...times(n - k, () => failed('schema_violation'))], min);
    expect(at(4, 5, 0.8)).toMatchObject({ share: 0.8, usable: true });
    expect(at(4, 5, 0.8).reason).toBe('4 of 5 model calls gave accepted answers (80 %), at least the pre-registered 80 %; failed: 1 schema');
    expect(at(3, 5, 0.8).usable).toBe(false);
    expect(at(19, 20, 0.95).usable).toBe(true);
    expect(at(18, 20, 0.95).usable).toBe(false);
    expect(at(3, 4, 0.75).usable).toBe(true);
    expect(at(31, 31, 1).usable).toBe(true);
    expect(at(30, 31, 1)).toMatchObject({ usable: false, reason: '30 of 31 model calls gave accepted answers (96.77 %), below the pre-registered 100 %; failed: 1 schema' });
    // A minimum of 0 still needs a call.
    expect(at(0, 3, 0)).toMatchObject({ share: 0, usable: true });
  });

  it('a failure this build does not know counts as a failed call under "other", and is named', () => {
    const u = judgeUsableData([...times(8, answered), failed('quota_exceeded'), failed('quota_exceeded'), failed(42), failed(undefined)], MIN);
    expect(u).toMatchObject({ accepted: 8, calls: 12, unrecognised_failures: 4, usable: false });
    expect(u.by_failure.other).toBe(4);
    expect(u.reason).toContain('4 failure(s) of a kind this build does not know, counted as other: 2× "quota_exceeded", 1× (number), 1× (no failure field)');
  });

  it('without a pre-registered minimum no instance is usable, and the reason says why', () => {
    const u = judgeUsableData(times(31, answered), null);
    expect(u).toMatchObject({ accepted: 31, calls: 31, share: 1, min_accepted_share: null, usable: false });
    expect(u.reason).toContain('the pre-registration fixes no minimum share (model_calls.usable_data.min_accepted_share is missing');
    expect(judgeUsableData(times(2, answered), null, 'prereg.json cannot be read').reason).toContain('but prereg.json cannot be read, so the instance cannot count as data');
  });
});

describe('usable means substantive (issue 32 item 6): the pre-registered checkpoint fields', () => {
  const RULE: SubstantiveRule = { checkpoint_fields: ['current_goal_id', 'goal_status'] };
  const EMPTY = { current_goal_id: null, goal_status: null, attention_target: null, waiting_condition: null, next_action: null };
  const callIn = (wake: string): ModelCallEventLike => ({ event_type: 'ModelOutputEvent.ModelAnswered', payload: { wake_id: wake, raw_output: '{}' } });
  const checkpoint = (wake: string, fields: Record<string, string | null>): ModelCallEventLike => ({ event_type: CHECKPOINT_RECORDED, payload: { wake_id: wake, ...EMPTY, ...fields, observed_event_seq: 1, evidence_event_ids: [] } });
  const wakes = (n: number, fields: (i: number) => Record<string, string | null>): ModelCallEventLike[] =>
    Array.from({ length: n }, (_, i) => [callIn(`wake-${i}`), checkpoint(`wake-${i}`, fields(i))]).flat();

  it('the emptiest valid answer at every wake: every call accepted, none substantive, not usable, and the reason says why', () => {
    const u = judgeUsableData(wakes(21, () => ({})), MIN, undefined, RULE);
    expect(u).toMatchObject({ accepted: 21, calls: 21, share: 1, substantive_rule: RULE.checkpoint_fields, call_wakes: 21, checkpoints: 21, substantive: 0, empty_checkpoints: 21, substantive_share: 0, usable: false });
    expect(u.reason).toBe('21 of 21 model calls gave accepted answers (100 %), at least the pre-registered 80 %; failed: none; substantive: 0 of 21 wake(s) with a model call ended in a checkpoint carrying current_goal_id and goal_status (0 %), below the pre-registered 80 %; 21 of 21 checkpoint(s) empty (every field null)');
  });

  it('exactly at the minimum share of substantive wakes is usable; one fewer is not; a field outside the rule does not make one substantive', () => {
    const full = { current_goal_id: 'g1', goal_status: 'working' };
    const atMin = judgeUsableData(wakes(10, (i) => (i < 8 ? full : { attention_target: 'the spec' })), MIN, undefined, RULE);
    expect(atMin).toMatchObject({ substantive: 8, call_wakes: 10, substantive_share: 0.8, empty_checkpoints: 0, usable: true });
    const below = judgeUsableData(wakes(10, (i): Record<string, string | null> => (i < 7 ? full : i === 7 ? { current_goal_id: 'g1' } : {})), MIN, undefined, RULE);
    expect(below).toMatchObject({ substantive: 7, substantive_share: 0.7, empty_checkpoints: 2, usable: false });
  });

  it('a wake whose call gave no checkpoint (a crash drill, a failed call) counts as a wake with a call that was not substantive', () => {
    const events = [...wakes(4, () => ({ current_goal_id: 'g', goal_status: 's' })), callIn('wake-crashed'), failed('timeout')];
    const u = judgeUsableData(events, MIN, undefined, RULE);
    // The failed call carries no wake id: a wake of its own.
    expect(u).toMatchObject({ calls: 6, accepted: 5, call_wakes: 6, checkpoints: 4, substantive: 4, usable: false });
  });

  it('without a rule (a pre-registration recorded before it): accepted answers count as they are, the counts are null and the reason reads as before', () => {
    const u = judgeUsableData(wakes(5, () => ({})), MIN);
    expect(u).toMatchObject({ usable: true, substantive_rule: null, call_wakes: null, checkpoints: null, substantive: null, empty_checkpoints: null, substantive_share: null });
    expect(u.reason).toBe('5 of 5 model calls gave accepted answers (100 %), at least the pre-registered 80 %; failed: none');
  });

  it('the rule is pre-registered in the file: an unknown checkpoint field or an empty list is refused, naming the field', () => {
    const content = defaultContent() as { model_calls: { usable_data: { substantive: { checkpoint_fields: string[] } } } };
    content.model_calls.usable_data.substantive.checkpoint_fields = ['mood'];
    expect(LockablePreRegistration.safeParse(content).error?.issues[0]?.path.join('.')).toBe('model_calls.usable_data.substantive.checkpoint_fields.0');
    content.model_calls.usable_data.substantive.checkpoint_fields = [];
    expect(LockablePreRegistration.safeParse(content).error?.issues[0]?.path.join('.')).toBe('model_calls.usable_data.substantive.checkpoint_fields');
  });
});

describe('rule 8 in the verdict', () => {
  const supportedScores = { A: { scores: [50, 60, 55], hardFailures: 0 }, B: { scores: [70, 75, 72], hardFailures: 0 }, C: { scores: [90, 85, 95], hardFailures: 0 } };
  const input = (usable: VerdictInput['usableData']['usable'], minAcceptedShare: number | null = MIN): VerdictInput => ({ thresholds: PREREG.thresholds, n: 3, groups: supportedScores, usableData: { minAcceptedShare, usable }, voidReasons: [], dryRun: false });
  const all = [true, true, true];

  it('with every instance usable, these scores are supported (the control)', () => {
    const r = decideVerdict(input({ A: all, B: all, C: all }));
    expect(r.verdict).toBe('supported');
    expect(r.usableDataShortfalls).toEqual([]);
  });

  it('one group without usable data → insufficient evidence naming it and its count, though every threshold is met', () => {
    const r = decideVerdict(input({ A: all, B: [false, false, false], C: all }));
    expect(r.thresholds.every((t) => t.met === true)).toBe(true);
    expect(r.verdict).toBe('insufficient evidence');
    expect(r.usableDataShortfalls).toEqual(['group B: 0 of 3 instances have usable data']);
    expect(r.statement).toBe('insufficient evidence — too few instances with usable data (group B: 0 of 3 instances have usable data; an instance counts as data only when at least 80 % of its model calls gave accepted answers, and the verdict needs all n = 3 of each group).');
  });

  it('stricter than "any usable instance": one unusable instance of n in one group is enough, and every short group is named', () => {
    const r = decideVerdict(input({ A: [true, false, true], B: all, C: [true, true, false] }));
    expect(r.verdict).toBe('insufficient evidence');
    expect(r.usableDataShortfalls).toEqual(['group A: 2 of 3 instances have usable data', 'group C: 2 of 3 instances have usable data']);
    expect(r.statement).toContain('group A: 2 of 3 instances have usable data; group C: 2 of 3 instances have usable data');
    // A failing threshold does not turn it into "rejected" either.
    const worse = decideVerdict({ ...input({ A: all, B: all, C: [false, true, true] }), groups: { ...supportedScores, C: { scores: [10, 20, 30], hardFailures: 0 } } });
    expect(worse.verdict).toBe('insufficient evidence');
  });

  it('no pre-registered minimum: insufficient evidence, saying so', () => {
    const r = decideVerdict(input({ A: [false, false, false], B: [false, false, false], C: [false, false, false] }, null));
    expect(r.verdict).toBe('insufficient evidence');
    expect(r.statement).toContain('no minimum share of accepted model answers is pre-registered, so no instance counts as data');
  });

  it('a void batch stays void first; the shortfalls are still returned', () => {
    const r = decideVerdict({ ...input({ A: all, B: [false, true, true], C: all }), voidReasons: ['same_schedule: differs'] });
    expect(r.statement).toContain('the batch is void (same_schedule: differs)');
    expect(r.usableDataShortfalls).toEqual(['group B: 2 of 3 instances have usable data']);
  });
});

describe('model_calls in the pre-registration', () => {
  const withoutModelCalls = (): Record<string, unknown> => {
    const { model_calls: _dropped, ...rest } = defaultContent();
    return rest;
  };

  it('default.json has it, with the retry policy and pause rule the adapters and the controller read', () => {
    expect(modelCallRulesOf(PREREG)).toEqual({
      usable_data: { min_accepted_share: 0.8, substantive: { checkpoint_fields: ['current_goal_id', 'goal_status'] } },
      transport_retry: { max_attempts: 3, backoff_ms: [1000, 4000] },
      pause_after_consecutive_transport_failures: 3,
      // Issue 31: the kinds the server's conditions cause are compared within a block; what the subject writes is not.
      load_confound_tolerance: { timeout: 2, transport: 2, stream_broken: 2, truncated: 2, length: null, schema: null },
    });
    expect(PREREG.prereg_version).toBe('1.2.0');
  });

  it('a pre-registration recorded before it still reads (old runs verify and replay), with no rules and an unchanged hash', () => {
    const old = withoutModelCalls();
    const parsed = PreRegistration.parse(old);
    expect(modelCallRulesOf(parsed)).toBeNull();
    // No default is filled in: the parsed value hashes as the file does (the manifest signs that hash).
    expect(hashCanonical(parsed)).toBe(hashCanonical(old));
  });

  it('but cannot be locked, and a run or study refuses it even under a valid lock, saying what to add', () => {
    const dir = tempDir('ds-prereg-mc-');
    const keys = generateKeyPair();
    const file = path.join(dir, 'old.json');
    writeFileSync(file, JSON.stringify(withoutModelCalls(), null, 2));
    const locked = lockPrereg(file, keys, '2026-07-20T00:00:00.000Z');
    expect(locked).toMatchObject({ ok: false, problem: 'invalid-schema', issues: [`model_calls: ${MODEL_CALLS_MISSING_MESSAGE}`] });
    expect(MODEL_CALLS_MISSING_MESSAGE).toMatch(/usable_data\.min_accepted_share.*transport_retry.*pause_after_consecutive_transport_failures.*new prereg_version/);
    // A lock signed before the rule existed (forged here with the same signing code a lock uses).
    const body = { prereg_sha256: hashCanonical(withoutModelCalls()), file: 'old.json', locked_at: '2026-01-01T00:00:00.000Z' };
    writeFileSync(lockFileOf(file), JSON.stringify(signDsse(PREREG_LOCK_PAYLOAD_TYPE, body, keys.secretKey, keys.publicKey)));
    const check = checkPreregLock(file, keys.publicKey);
    expect(check.ok).toBe(false);
    expect(check.failures.map((f) => f.problem)).toEqual(['invalid-schema']);
    expect(check.issues).toEqual([`model_calls: ${MODEL_CALLS_MISSING_MESSAGE}`]);
    expect(check.locked_sha256).toBe(body.prereg_sha256);
  });

  const invalid: Array<[what: string, edit: (mc: Record<string, any>) => void, issue: RegExp]> = [
    ['a share above 1', (mc) => void (mc.usable_data.min_accepted_share = 1.2), /^model_calls\.usable_data\.min_accepted_share: /],
    ['a negative share', (mc) => void (mc.usable_data.min_accepted_share = -0.1), /^model_calls\.usable_data\.min_accepted_share: /],
    ['0 attempts', (mc) => void Object.assign(mc.transport_retry, { max_attempts: 0, backoff_ms: [] }), /^model_calls\.transport_retry\.max_attempts: /],
    ['11 attempts', (mc) => void Object.assign(mc.transport_retry, { max_attempts: 11, backoff_ms: Array(10).fill(1000) }), /^model_calls\.transport_retry\.(max_attempts|backoff_ms): /],
    ['a fractional attempt count', (mc) => void (mc.transport_retry.max_attempts = 2.5), /^model_calls\.transport_retry\.max_attempts: /],
    ['fewer waits than retries', (mc) => void (mc.transport_retry.backoff_ms = [1000]), /^model_calls\.transport_retry\.backoff_ms: backoff_ms lists one wait between each two attempts/],
    ['more waits than retries', (mc) => void (mc.transport_retry.backoff_ms = [1000, 4000, 9000]), /^model_calls\.transport_retry\.backoff_ms: backoff_ms lists one wait between each two attempts/],
    ['a negative wait', (mc) => void (mc.transport_retry.backoff_ms = [-1, 4000]), /^model_calls\.transport_retry\.backoff_ms\.0: /],
    ['a wait over a minute', (mc) => void (mc.transport_retry.backoff_ms = [1000, 60_001]), /^model_calls\.transport_retry\.backoff_ms\.1: /],
    ['a pause after 0 failures', (mc) => void (mc.pause_after_consecutive_transport_failures = 0), /^model_calls\.pause_after_consecutive_transport_failures: /],
    ['a pause after 101 failures', (mc) => void (mc.pause_after_consecutive_transport_failures = 101), /^model_calls\.pause_after_consecutive_transport_failures: /],
    ['an unknown key', (mc) => void (mc.retry_everything = true), /^model_calls: Unrecognized key: "retry_everything"$/],
    ['a missing rule', (mc) => void delete mc.transport_retry, /^model_calls\.transport_retry: /],
  ];
  it.each(invalid)('refuses %s, naming the field', (_what, edit, issue) => {
    const content = defaultContent() as { model_calls: Record<string, any> };
    edit(content.model_calls);
    const parsed = PreRegistration.safeParse(content);
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).some((line) => issue.test(line)), JSON.stringify(parsed.error!.issues)).toBe(true);
    expect(LockablePreRegistration.safeParse(content).success).toBe(false);
  });

  it('one attempt and no wait is a valid policy (no retry)', () => {
    const content = defaultContent() as { model_calls: Record<string, any> };
    content.model_calls.transport_retry = { max_attempts: 1, backoff_ms: [] };
    expect(LockablePreRegistration.parse(content).model_calls.transport_retry).toEqual({ max_attempts: 1, backoff_ms: [] });
    const dir = tempDir('ds-prereg-mc-');
    mkdirSync(path.join(dir, 'one'));
    const file = path.join(dir, 'one', 'prereg.json');
    writeFileSync(file, JSON.stringify(content));
    const keys = generateKeyPair();
    expect(lockPrereg(file, keys, '2026-07-20T00:00:00.000Z')).toMatchObject({ ok: true });
    expect(checkPreregLock(file, keys.publicKey)).toMatchObject({ ok: true, failures: [] });
  });
});
