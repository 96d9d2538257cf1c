// Hard failures (spec §8.4) on one real finished instance of the reference policy: the honest
// run has none, and a forgery of each kind — in the record in memory, or in a copy of the run
// folder on disk — is reported with its id (or problem kind) and the seq where it shows.
import Database from 'better-sqlite3';
import { mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InstanceResult } from '../../controller/instance-runner.js';
import type { RefutationIntervention } from '../../design/intervention-plan.js';
import { checkFacts, type FactCheck } from '../../oracle/fact-check.js';
import { detectHardFailures, MAX_LISTED_HARD_FAILURES, type HardFailure } from '../../oracle/hard-failures.js';
import { eventsOf, loadRunRecord, type RunRecord } from '../../oracle/run-record.js';
import { checkSideEffects, MAX_WORKSPACE_DEPTH } from '../../oracle/side-effects.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { schemaVersionOf, type EventType, type PayloadOf } from '../../schema/event-catalog.js';
import { hashText, type HashString } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { finishedRun, type FinishedRun } from '../support/finished-run.js';
import { cloneRecord, duplicateOf, editPayload, forgedEvent, insertAfter } from '../support/record-forgery.js';
import { RunCopies } from '../support/store-forgery.js';
import type { z } from 'zod';

let run: FinishedRun | undefined;
let result: Pick<InstanceResult, 'runDir'>;
let record: RunRecord;
let copies: RunCopies;

beforeAll(async () => {
  // The suite's shared finished C run (finishedRun checks that it finished), a copy of its own.
  run = await finishedRun();
  result = { runDir: run.runDir };
  record = loadRunRecord(result.runDir, SCENARIOS_DIR);
  copies = new RunCopies(result.runDir);
}, 120_000);

afterAll(() => {
  copies?.removeAll();
  run?.cleanup();
});

const clean = { expectedPreregSha256: null, scenariosDir: SCENARIOS_DIR } as const;

function first<T extends EventType>(r: RunRecord, type: T, where: (p: PayloadOf<T>, e: EventEnvelope) => boolean = () => true): { event: EventEnvelope; p: PayloadOf<T> } {
  const found = eventsOf(r.events, type).find(({ event, p }) => where(p, event));
  if (!found) throw new Error(`the reference run holds no ${type} of the kind this test needs`);
  return found;
}

function withId(failures: readonly HardFailure[], id: HardFailure['id']): HardFailure[] {
  return failures.filter((f) => f.id === id);
}

function factAt(checks: readonly FactCheck[], seq: number): FactCheck {
  const check = checks.find((c) => c.seq === seq);
  if (!check) throw new Error(`no FACT check at seq ${seq}`);
  return check;
}

/** A loaded copy of the run folder after `edit` changed it on disk. */
function forgedFolder(edit: (dir: string) => void): RunRecord {
  const dir = copies.copy();
  edit(dir);
  return loadRunRecord(dir, SCENARIOS_DIR);
}

function refutation(r: RunRecord): z.infer<typeof RefutationIntervention> {
  const iv = r.plan.interventions.find((i): i is z.infer<typeof RefutationIntervention> => i.kind === 'refutation');
  if (!iv) throw new Error('the plan has no refutation');
  return iv;
}

describe('the honest reference run', () => {
  it('has no hard failure, every FACT checks and no side effect is duplicated or unexplained', () => {
    expect(detectHardFailures(record, { expectedPreregSha256: record.preregSha256, scenariosDir: SCENARIOS_DIR })).toEqual([]);
    const facts = checkFacts(record);
    expect(facts.length).toBeGreaterThan(0);
    expect(facts.filter((f) => !f.ok)).toEqual([]);
    expect(checkSideEffects(record, path.join(result.runDir, RUN_FILES.workspace))).toEqual({ problems: [], notes: [] });
  });
});

describe('unauthorized_tool_execution', () => {
  it('catches a file intent whose permission decision was a denial', () => {
    const intent = first(record, 'ActionEvent.ExecutionIntentRecorded', (p) => p.op === 'write');
    const decision = record.events.find((e) => e.event_id === intent.p.permission_event_id)!;
    const forged = editPayload(record, decision.seq, (p) => (p['decision'] = 'deny'));
    const found = withId(detectHardFailures(forged, clean), 'unauthorized_tool_execution');
    expect(found).toEqual([expect.objectContaining({ seq: intent.event.seq, detail: expect.stringContaining('was denied') })]);
  });

  it('catches a file intent naming no earlier permission decision', () => {
    const intent = first(record, 'ActionEvent.ExecutionIntentRecorded', (p) => p.op === 'modify');
    const forged = editPayload(record, intent.event.seq, (p) => (p['permission_event_id'] = '00000000-0000-4000-8000-000000000001'));
    const found = withId(detectHardFailures(forged, clean), 'unauthorized_tool_execution');
    expect(found).toEqual([expect.objectContaining({ seq: intent.event.seq, detail: expect.stringContaining('no earlier PermissionDecided') })]);
  });

  it('catches an outcome that names no earlier intent', () => {
    const outcome = first(record, 'ActionEvent.ToolSucceeded', (p) => p.content === null);
    const forged = editPayload(record, outcome.event.seq, (p) => (p['intent_event_id'] = '00000000-0000-4000-8000-000000000002'));
    const found = withId(detectHardFailures(forged, clean), 'unauthorized_tool_execution');
    expect(found).toEqual([expect.objectContaining({ seq: outcome.event.seq, detail: expect.stringContaining('no earlier ExecutionIntentRecorded') })]);
  });

  it('catches a task-board change with no decision on its proposal', () => {
    const change = first(record, 'MemoryEvent.TaskBoardChanged');
    const forged = editPayload(record, change.event.seq, (p) => (p['proposal_id'] = 'never-proposed'));
    const found = withId(detectHardFailures(forged, clean), 'unauthorized_tool_execution');
    expect(found).toEqual([expect.objectContaining({ seq: change.event.seq, detail: expect.stringContaining('no earlier PermissionDecided for proposal never-proposed') })]);
  });

  it('catches a journal entry executing a proposal allowed in an earlier wake (and counts it as a duplicate write)', () => {
    const earlier = first(record, 'MemoryEvent.JournalEntryWritten');
    const later = first(record, 'MemoryEvent.JournalEntryWritten', (_, e) => e.seq > earlier.event.seq);
    const forged = editPayload(record, later.event.seq, (p) => (p['proposal_id'] = earlier.p.proposal_id));
    const failures = detectHardFailures(forged, clean);
    expect(withId(failures, 'unauthorized_tool_execution')).toEqual([expect.objectContaining({ seq: later.event.seq, detail: expect.stringContaining('earlier wake') })]);
    expect(withId(failures, 'duplicate_side_effect')).toEqual([expect.objectContaining({ seq: later.event.seq, detail: expect.stringContaining('duplicate_memory_write') })]);
  });
});

describe('duplicate_side_effect: duplicates in the store', () => {
  it('catches a second execution intent for one proposal', () => {
    const intent = first(record, 'ActionEvent.ExecutionIntentRecorded', (p) => p.op === 'write');
    const { record: forged, seqs } = insertAfter(record, intent.event.seq, [duplicateOf(intent.event)]);
    expect(checkSideEffects(forged, null).problems).toEqual([{ seq: seqs[0], kind: 'duplicate_intent', detail: expect.stringContaining(intent.p.proposal_id) }]);
    expect(withId(detectHardFailures(forged, clean), 'duplicate_side_effect')).toContainEqual(expect.objectContaining({ seq: seqs[0], detail: expect.stringContaining('duplicate_intent') }));
  });

  it('catches an intent said to have happened twice', () => {
    const outcome = first(record, 'ActionEvent.ToolSucceeded', (p) => p.content === null);
    const { record: forged, seqs } = insertAfter(record, outcome.event.seq, [duplicateOf(outcome.event)]);
    expect(checkSideEffects(forged, null).problems).toEqual([{ seq: seqs[0], kind: 'duplicate_outcome', detail: expect.stringContaining(outcome.p.intent_event_id) }]);
    expect(withId(detectHardFailures(forged, clean), 'duplicate_side_effect')).toContainEqual(expect.objectContaining({ seq: seqs[0], detail: expect.stringContaining('duplicate_outcome') }));
  });

  it('catches a reconciliation that repeats a success', () => {
    const outcome = first(record, 'ActionEvent.ToolSucceeded', (p) => p.content === null);
    const reconciled = forgedEvent(record, 'ActionEvent.ToolReconciled', { intent_event_id: outcome.p.intent_event_id, outcome: 'happened', observed_hash: outcome.p.observed_post_hash });
    const { record: forged, seqs } = insertAfter(record, outcome.event.seq, [reconciled]);
    expect(checkSideEffects(forged, null).problems).toEqual([{ seq: seqs[0], kind: 'duplicate_outcome', detail: expect.stringContaining('ToolReconciled') }]);
  });

  it('catches a reconciliation whose verdict contradicts the hash it recorded (a write that happened, called not done)', () => {
    const outcome = first(record, 'ActionEvent.ToolSucceeded', (p) => p.content === null);
    const denied = forgedEvent(record, 'ActionEvent.ToolReconciled', { intent_event_id: outcome.p.intent_event_id, outcome: 'did_not_happen', observed_hash: outcome.p.observed_post_hash });
    const { record: forged, seqs } = insertAfter(record, outcome.event.seq, [denied]);
    expect(checkSideEffects(forged, null).problems).toEqual([{ seq: seqs[0], kind: 'unexplained_file', detail: expect.stringContaining('contradicts the store\'s own observation') }]);
    expect(withId(detectHardFailures(forged, clean), 'duplicate_side_effect')).toContainEqual(expect.objectContaining({ seq: seqs[0], detail: expect.stringContaining(outcome.p.intent_event_id) }));
    // The honest verdicts agree with what they saw: the run itself has no such problem.
    expect(checkSideEffects(record, null).problems).toEqual([]);
  });

  it('catches a task-board change applied twice for one proposal', () => {
    const change = first(record, 'MemoryEvent.TaskBoardChanged');
    const { record: forged, seqs } = insertAfter(record, change.event.seq, [duplicateOf(change.event)]);
    expect(checkSideEffects(forged, null).problems).toEqual([{ seq: seqs[0], kind: 'duplicate_memory_write', detail: expect.stringContaining(change.p.proposal_id) }]);
    expect(withId(detectHardFailures(forged, clean), 'duplicate_side_effect')).toContainEqual(expect.objectContaining({ seq: seqs[0], detail: expect.stringContaining('duplicate_memory_write') }));
  });

  it('says so when no workspace folder is given, instead of comparing nothing silently', () => {
    expect(checkSideEffects(record, null)).toEqual({ problems: [], notes: [expect.stringContaining('not compared')] });
  });
});

describe('the list of hard failures', () => {
  it('is capped, and the entry after the cap counts what was left out', () => {
    const change = first(record, 'MemoryEvent.TaskBoardChanged');
    const { record: forged } = insertAfter(record, change.event.seq, Array.from({ length: 1_100 }, () => duplicateOf(change.event)));
    const found = detectHardFailures(forged, clean);
    expect(found).toHaveLength(MAX_LISTED_HARD_FAILURES + 1);
    // 1,100 duplicates, plus the projector refusing them all (more than checkFacts skips): 1,101 found.
    expect(found.at(-1)).toEqual({ id: 'duplicate_side_effect', seq: null, detail: expect.stringContaining('101 more hard failures not listed (limit 1000): duplicate_side_effect 100, replay_cannot_restore_state 1') });
  });
});

describe('duplicate_side_effect: the workspace on disk', () => {
  const lastWriteOf = (r: RunRecord, file: string): number => {
    const intents = new Map(eventsOf(r.events, 'ActionEvent.ExecutionIntentRecorded').filter(({ p }) => p.path === file && p.op !== 'read').map(({ event }) => [event.event_id, event.seq]));
    const outcomes = eventsOf(r.events, 'ActionEvent.ToolSucceeded').filter(({ p }) => intents.has(p.intent_event_id));
    if (outcomes.length === 0) throw new Error(`the reference run never wrote ${file}`);
    return outcomes.at(-1)!.event.seq;
  };

  it('catches a file changed behind the store, at the seq of the last write the store knows', () => {
    const forged = forgedFolder((dir) => writeFileSync(path.join(dir, RUN_FILES.workspace, 'notes', 'findings.md'), 'edited by hand\n'));
    const seq = lastWriteOf(forged, 'notes/findings.md');
    const problems = checkSideEffects(forged, path.join(forged.runDir, RUN_FILES.workspace)).problems;
    expect(problems).toEqual([{ seq, kind: 'unexplained_file', detail: expect.stringContaining(`notes/findings.md holds ${hashText('edited by hand\n')}`) }]);
    expect(withId(detectHardFailures(forged, clean), 'duplicate_side_effect')).toEqual([expect.objectContaining({ seq, detail: expect.stringContaining('unexplained_file') })]);
  });

  it('catches a file the store never accounts for', () => {
    const forged = forgedFolder((dir) => writeFileSync(path.join(dir, RUN_FILES.workspace, 'report', 'extra.md'), 'nobody wrote this\n'));
    const problems = checkSideEffects(forged, path.join(forged.runDir, RUN_FILES.workspace)).problems;
    expect(problems).toEqual([{ seq: null, kind: 'unexplained_file', detail: expect.stringContaining('report/extra.md') }]);
    expect(withId(detectHardFailures(forged, clean), 'duplicate_side_effect')).toEqual([expect.objectContaining({ seq: null, detail: expect.stringContaining('report/extra.md') })]);
  });

  it('catches a file the store says exists that is gone', () => {
    const forged = forgedFolder((dir) => unlinkSync(path.join(dir, RUN_FILES.workspace, 'report', 'report.md')));
    const seq = lastWriteOf(forged, 'report/report.md');
    const problems = checkSideEffects(forged, path.join(forged.runDir, RUN_FILES.workspace)).problems;
    expect(problems).toEqual([{ seq, kind: 'unexplained_file', detail: expect.stringContaining('report/report.md is missing') }]);
  });

  it('catches a file the world deleted coming back', () => {
    const deleted = first(record, 'WorldEvent.FileChangedExternally', (p) => p.change === 'deleted' || p.post_hash !== null);
    const original = record.scenario.files.find((f) => f.path === deleted.p.path)!;
    const forged = forgedFolder((dir) => writeFileSync(path.join(dir, RUN_FILES.workspace, deleted.p.path), deleted.p.change === 'deleted' ? original.content : 'not the changed text\n'));
    const problems = checkSideEffects(forged, path.join(forged.runDir, RUN_FILES.workspace)).problems;
    expect(problems).toEqual([{ seq: deleted.event.seq, kind: 'unexplained_file', detail: expect.stringContaining(deleted.p.path) }]);
  });

  it('accepts either bytes while an outcome is unknown, and holds the operator to the resolution', () => {
    const workspace = path.join(result.runDir, RUN_FILES.workspace);
    const seq = lastWriteOf(record, 'report/report.md');
    const succeeded = eventsOf(record.events, 'ActionEvent.ToolSucceeded').find(({ event }) => event.seq === seq)!;
    // The last write of the report becomes an unknown outcome: the file on disk holds its intended bytes.
    const unknown = cloneRecord(record);
    const event = unknown.events.find((e) => e.seq === seq)!;
    event.event_type = 'ActionEvent.ToolOutcomeUnknown';
    // At its own type's version: a ToolSucceeded's 1.1.0 is no version of ToolOutcomeUnknown, and reads as nothing.
    event.schema_version = schemaVersionOf('ActionEvent.ToolOutcomeUnknown');
    event.payload = { intent_event_id: succeeded.p.intent_event_id, observed_hash: null, detail: 'forged: killed mid-write' };
    expect(checkSideEffects(unknown, workspace).problems).toEqual([]);
    const resolve = (resolution: 'happened' | 'did_not_happen') =>
      insertAfter(unknown, seq, [forgedEvent(unknown, 'SystemEvent.OperatorResolved', { operator: 'test', intent_event_id: succeeded.p.intent_event_id, resolution, note: 'forged' }, 'user')]);
    expect(checkSideEffects(resolve('happened').record, workspace).problems).toEqual([]);
    const denied = resolve('did_not_happen');
    expect(checkSideEffects(denied.record, workspace).problems).toEqual([{ seq: denied.seqs[0], kind: 'unexplained_file', detail: expect.stringContaining('report/report.md holds') }]);
  });

  it('reports a folder nested past the walk bound instead of skipping it silently', () => {
    const forged = forgedFolder((dir) => mkdirSync(path.join(dir, RUN_FILES.workspace, ...Array.from({ length: MAX_WORKSPACE_DEPTH + 1 }, (_, i) => `d${i}`)), { recursive: true }));
    const problems = checkSideEffects(forged, path.join(forged.runDir, RUN_FILES.workspace)).problems;
    expect(problems).toEqual([{ seq: null, kind: 'workspace_unchecked', detail: expect.stringContaining(`deeper than ${MAX_WORKSPACE_DEPTH}`) }]);
    expect(withId(detectHardFailures(forged, clean), 'duplicate_side_effect')).toEqual([expect.objectContaining({ detail: expect.stringContaining('workspace_unchecked') })]);
  });
});

describe('fact_contradicts_store', () => {
  const fileFact = (r: RunRecord) => first(r, 'MemoryEvent.ClaimRecorded', (p) => p.claim_type === 'FACT' && /sha256:[0-9a-f]{64}/.test(p.statement));

  it('catches evidence that is not in the store', () => {
    const fact = fileFact(record);
    const forged = editPayload(record, fact.event.seq, (p) => (p['evidence_event_ids'] = ['00000000-0000-4000-8000-000000000003']));
    const check = factAt(checkFacts(forged), fact.event.seq);
    expect(check.problems).toContainEqual({ kind: 'evidence_missing', evidence_event_id: '00000000-0000-4000-8000-000000000003', detail: expect.stringContaining('not in the store') });
    expect(check).toMatchObject({ ok: false, contradicts_store: true });
    expect(withId(detectHardFailures(forged, clean), 'fact_contradicts_store')).toEqual([expect.objectContaining({ seq: fact.event.seq, detail: expect.stringContaining('evidence_missing') })]);
  });

  it('catches evidence recorded after the claim', () => {
    const fact = fileFact(record);
    const later = record.events.at(-1)!;
    const forged = editPayload(record, fact.event.seq, (p) => (p['evidence_event_ids'] = [later.event_id]));
    const check = factAt(checkFacts(forged), fact.event.seq);
    expect(check.problems).toContainEqual({ kind: 'evidence_missing', evidence_event_id: later.event_id, detail: expect.stringContaining(`seq ${later.seq}, not before the claim`) });
    expect(check.contradicts_store).toBe(true);
  });

  it('flags ineligible evidence as unsound, without calling it a contradiction', () => {
    const fact = first(record, 'MemoryEvent.ClaimRecorded', (p) => p.claim_type === 'FACT' && !/sha256:/.test(p.statement));
    const proposal = first(record, 'ActionEvent.ActionProposed', (_, e) => e.seq < fact.event.seq);
    const forged = editPayload(record, fact.event.seq, (p) => (p['evidence_event_ids'] = [proposal.event.event_id]));
    const check = factAt(checkFacts(forged), fact.event.seq);
    expect(check).toEqual({ claim_id: check.claim_id, seq: fact.event.seq, ok: false, contradicts_store: false, problems: [{ kind: 'evidence_ineligible', evidence_event_id: proposal.event.event_id, detail: expect.stringContaining('ActionEvent.ActionProposed is not evidence') }] });
    expect(withId(detectHardFailures(forged, clean), 'fact_contradicts_store')).toEqual([]);
  });

  it('catches evidence the projector had marked refuted before the claim', () => {
    const fact = fileFact(record);
    const cited = fact.p.evidence_event_ids[0]!;
    const refuter = forgedEvent(record, 'WorldEvent.InformationPublished', { source: 'forged', body: 'that read was wrong', refutes_event_ids: [cited] }, 'experiment');
    const { record: forged, seqs } = insertAfter(record, fact.event.seq - 1, [refuter]);
    const claimSeq = fact.event.seq + 1;
    const check = factAt(checkFacts(forged), claimSeq);
    expect(check.problems).toEqual([{ kind: 'evidence_refuted', evidence_event_id: cited, detail: expect.stringContaining(`(seq ${seqs[0]})`) }]);
    expect(withId(detectHardFailures(forged, clean), 'fact_contradicts_store')).toEqual([expect.objectContaining({ seq: claimSeq, detail: expect.stringContaining('evidence_refuted') })]);
  });

  describe("by the plan's refutation", () => {
    const setUp = () => {
      const iv = refutation(record);
      const published = first(record, 'WorldEvent.InformationPublished', (p) => p.body.includes(iv.refutes.figure));
      const readIntent = first(record, 'ActionEvent.ExecutionIntentRecorded', (p) => p.op === 'read' && p.path === iv.refutes.source_path);
      const read = first(record, 'ActionEvent.ToolSucceeded', (p) => p.intent_event_id === readIntent.event.event_id);
      expect(read.p.content).toContain(iv.refutes.figure);
      const line = read.p.content!.split('\n').find((l) => l.includes(iv.refutes.figure))!;
      const fact = (statement: string) => forgedEvent(record, 'MemoryEvent.ClaimRecorded', { claim_id: `forged-${statement.length}`, claim_type: 'FACT', statement, evidence_event_ids: [read.event.event_id], confidence: null, alternatives: [] }, 'model');
      return { iv, published, read, line, fact };
    };

    it('catches a FACT made after the correction that still states the refuted figure from the read', () => {
      const { iv, published, read, line, fact } = setUp();
      const { record: forged, seqs } = insertAfter(record, published.event.seq, [fact(`${iv.refutes.source_path} states: ${line}`)]);
      const check = factAt(checkFacts(forged), seqs[0]!);
      expect(check.problems).toEqual([{ kind: 'evidence_refuted', evidence_event_id: read.event.event_id, detail: expect.stringContaining(iv.intervention_id) }]);
      expect(withId(detectHardFailures(forged, clean), 'fact_contradicts_store')).toEqual([expect.objectContaining({ seq: seqs[0] })]);
    });

    it('accepts the same FACT before the correction, and one after it that marks the figure corrected', () => {
      const { iv, published, line, fact } = setUp();
      const before = insertAfter(record, published.event.seq - 1, [fact(`${iv.refutes.source_path} states: ${line}`)]);
      expect(factAt(checkFacts(before.record), before.seqs[0]!).ok).toBe(true);
      const after = insertAfter(record, published.event.seq, [fact(`${iv.refutes.figure} is wrong; the value is ${iv.refutes.corrected_figure}`)]);
      expect(factAt(checkFacts(after.record), after.seqs[0]!).ok).toBe(true);
    });
  });

  it('catches a quoted hash that none of the evidence carries', () => {
    const fact = fileFact(record);
    const quoted = fact.p.statement.match(/sha256:[0-9a-f]{64}/)![0] as HashString;
    const other = hashText('another text');
    const forged = editPayload(record, fact.event.seq, (p) => (p['statement'] = fact.p.statement.replace(quoted, other)));
    const check = factAt(checkFacts(forged), fact.event.seq);
    expect(check.problems).toEqual([{ kind: 'hash_mismatch', evidence_event_id: null, detail: expect.stringContaining(other) }]);
    expect(withId(detectHardFailures(forged, clean), 'fact_contradicts_store')).toEqual([expect.objectContaining({ seq: fact.event.seq, detail: expect.stringContaining('hash_mismatch') })]);
  });
});

describe('replay_cannot_restore_state', () => {
  it('catches a stored projection that replay does not reproduce', () => {
    const forged = forgedFolder((dir) => {
      const db = new Database(path.join(dir, RUN_FILES.store));
      try {
        db.prepare('UPDATE projection SET state_hash = ? WHERE id = 1').run(hashText('not the state'));
      } finally {
        db.close();
      }
    });
    const found = withId(detectHardFailures(forged, clean), 'replay_cannot_restore_state');
    expect(found).toEqual([expect.objectContaining({ seq: forged.events.at(-1)!.seq, detail: expect.stringContaining('does not hash to its state_hash') })]);
  });

  it('catches a record the projector cannot follow when checking FACTs', () => {
    // Journal writes outside any wake: the projector refuses each; past the skip bound the FACTs cannot be judged.
    const stray = Array.from({ length: 70 }, (_, i) => forgedEvent(record, 'MemoryEvent.JournalEntryWritten', { proposal_id: `stray-${i}`, entry_id: `stray-${i}`, text: 'x' }, 'tool'));
    const fact = forgedEvent(record, 'MemoryEvent.ClaimRecorded', { claim_id: 'late-fact', claim_type: 'FACT', statement: 'late', evidence_event_ids: [record.events[1]!.event_id], confidence: null, alternatives: [] }, 'model');
    const lastSeq = record.events.at(-1)!.seq;
    const { record: forged } = insertAfter(record, lastSeq, [...stray, fact]);
    const found = withId(detectHardFailures(forged, clean), 'replay_cannot_restore_state');
    expect(found).toEqual([expect.objectContaining({ seq: lastSeq + 1, detail: expect.stringContaining('cannot follow') })]);
  });
});

describe('configuration_changed_after_start', () => {
  it('catches prereg.json edited after the start (manifest, lock and plan no longer match it)', () => {
    const forged = forgedFolder((dir) => {
      const file = path.join(dir, RUN_FILES.prereg);
      const prereg = JSON.parse(readFileSync(file, 'utf8')) as { thresholds: { c_median_min_score: number } };
      prereg.thresholds.c_median_min_score -= 10;
      writeFileSync(file, JSON.stringify(prereg, null, 2));
    });
    expect(forged.preregSha256).not.toBe(record.preregSha256);
    const found = withId(detectHardFailures(forged, clean), 'configuration_changed_after_start');
    expect(found).toContainEqual({ id: 'configuration_changed_after_start', seq: null, detail: expect.stringContaining(`the signed manifest names ${record.preregSha256}`) });
    expect(found.some((f) => f.detail.startsWith('plan: '))).toBe(true);
  });

  it("catches a run whose pre-registration is not the study's locked one", () => {
    const locked = hashText('the study locked another pre-registration');
    const found = detectHardFailures(record, { expectedPreregSha256: locked, scenariosDir: SCENARIOS_DIR });
    expect(found).toEqual([
      { id: 'configuration_changed_after_start', seq: null, detail: expect.stringContaining(`not the study's locked pre-registration ${locked}`) },
      { id: 'configuration_changed_after_start', seq: null, detail: expect.stringContaining(`the signed manifest names pre-registration ${record.preregSha256}, not the study's locked ${locked}`) },
    ]);
  });

  it('catches a manifest that does not verify', () => {
    const forged: RunRecord = { ...cloneRecord(record), manifest: null, manifestProblem: 'forged: bad signature' };
    expect(withId(detectHardFailures(forged, clean), 'configuration_changed_after_start')).toEqual([{ id: 'configuration_changed_after_start', seq: null, detail: expect.stringContaining('forged: bad signature') }]);
  });

  describe('model calls under another model than the signed manifest pins', () => {
    const config = (r: RunRecord) => withId(detectHardFailures(r, clean), 'configuration_changed_after_start');
    const calls = (r: RunRecord) => [...eventsOf(r.events, 'ModelOutputEvent.ModelAnswered'), ...eventsOf(r.events, 'ModelOutputEvent.ModelCallFailed')];
    const pinned = () => record.manifest!.model;
    const PINS = 'ran under another model than the signed manifest pins';

    it('the honest run: every call names the manifest\'s adapter, model id and protocol', () => {
      expect(calls(record).length).toBeGreaterThan(10);
      expect(pinned().structured_output).not.toBeNull();
      for (const { p } of calls(record)) expect([p.adapter, p.model_id, p.protocol]).toEqual([pinned().adapter, pinned().model_id, pinned().structured_output!.protocol]);
      expect(config(record)).toEqual([]);
    });

    it('catches an answer from another model id or adapter, and a failed call under another protocol, each at its seq', () => {
      const answers = eventsOf(record.events, 'ModelOutputEvent.ModelAnswered');
      const [a, b] = [answers[2]!, answers[5]!];
      let forged = editPayload(record, a.event.seq, (p) => (p['model_id'] = 'another-model'));
      forged = editPayload(forged, b.event.seq, (p) => (p['adapter'] = 'openai'));
      const { wake_id, adapter, model_id, params, latency_ms } = b.p;
      const failed = forgedEvent(forged, 'ModelOutputEvent.ModelCallFailed', { wake_id, adapter, model_id, params, system_fingerprint: null, latency_ms, context: null, failure: 'timeout', detail: 'forged timeout', raw_output: null, usage: null, usage_source: null, protocol: 'ds-model-output/1', finish_reason: null, response_model: null, prompt_tokens_counted: null, prompt_count_source: null, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null, cost_nano_usd: null });
      const inserted = insertAfter(forged, b.event.seq, [failed]);
      expect(config(inserted.record)).toEqual([
        { id: 'configuration_changed_after_start', seq: a.event.seq, detail: `ModelOutputEvent.ModelAnswered at seq ${a.event.seq} ${PINS}: model id "another-model", not ${JSON.stringify(pinned().model_id)}` },
        { id: 'configuration_changed_after_start', seq: b.event.seq, detail: `ModelOutputEvent.ModelAnswered at seq ${b.event.seq} ${PINS}: adapter openai, not ${pinned().adapter}` },
        { id: 'configuration_changed_after_start', seq: inserted.seqs[0], detail: `ModelOutputEvent.ModelCallFailed at seq ${inserted.seqs[0]} ${PINS}: protocol ds-model-output/1, not ${pinned().structured_output!.protocol}` },
      ]);
    });

    it('reads a call recorded at an earlier version lifted: a ModelAnswered 1.2.0 in this /2 run is a /1 call, and caught', () => {
      const copy = cloneRecord(record);
      const { event, p } = eventsOf(copy.events, 'ModelOutputEvent.ModelAnswered')[3]!;
      const { wake_id, adapter, model_id, params, system_fingerprint, latency_ms, context, raw_output, usage } = p;
      event.schema_version = '1.2.0';
      event.payload = { wake_id, adapter, model_id, params, system_fingerprint, latency_ms, context, raw_output, usage, usage_estimated: false };
      expect(config(copy)).toEqual([{ id: 'configuration_changed_after_start', seq: event.seq, detail: `ModelOutputEvent.ModelAnswered at seq ${event.seq} ${PINS}: protocol ds-model-output/1, not ${pinned().structured_output!.protocol}` }]);
      // A manifest from before issue 15 pins no protocol: the lifted /1 call is then on its model.
      const before15: RunRecord = { ...copy, manifest: { ...copy.manifest!, model: { ...copy.manifest!.model, structured_output: null } } };
      expect(config(before15)).toEqual([]);
    });

    it('lists the first ten and counts the rest', () => {
      const copy = cloneRecord(record);
      const all = calls(copy);
      for (const { event } of all) event.payload['model_id'] = 'another-model';
      const found = config(copy);
      expect(found).toHaveLength(11);
      expect(found.slice(0, 10).map((f) => f.seq)).toEqual(all.map(({ event }) => event.seq).sort((x, y) => x - y).slice(0, 10));
      expect(found[10]).toEqual({ id: 'configuration_changed_after_start', seq: null, detail: `${all.length - 10} more model calls under another model than the manifest pins not listed here (run the check itself for all of them)` });
    });
  });

  it('catches a broken signed log (verify fails), naming where', () => {
    const forged = forgedFolder((dir) => rmSync(path.join(dir, RUN_FILES.heads)));
    const found = withId(detectHardFailures(forged, clean), 'configuration_changed_after_start');
    expect(found).toContainEqual({ id: 'configuration_changed_after_start', seq: forged.events.at(-1)!.seq, detail: expect.stringContaining(`no ${RUN_FILES.heads}`) });
  });
});
