// The worked example of docs/oracle.md (issue 32 item 4): one small real instance — the default
// pre-registration with a 12-hour wake period (6 wakes, two of them planned crashes), seed
// `worked-example-5`, group C — whose model is a scripted loopback server giving the answers below.
// Everything else is the real apparatus: controller, writer and runtime processes, the permission
// gate, the files tool, a SQLite store, signatures. test/oracle/oracle-doc-example.test.ts runs
// it and holds every figure the doc's example shows to what the oracle computes from the folder.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { EMPTY_ANSWER, promptEvents, startScriptedModelServer, type PromptEvent, type ScriptedModelServer } from '../../faults/scripted-model-server.js';
import type { InstanceResult } from '../../controller/instance-runner.js';
import { CHECKPOINT_FIELDS, type CheckpointField } from '../../oracle/checkpoint-match.js';
import { DIMENSIONS } from '../../oracle/continuity-score.js';
import type { ExpectedCheckpoint } from '../../oracle/expected-checkpoints.js';
import { countedScore, type InstanceEvaluation } from '../../oracle/instance-evaluation.js';
import { eventsOf } from '../../oracle/run-record.js';
import { actionFingerprint } from '../../projector/subject-projection.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { controllerSetupWith, newInstanceOptions, runInstance, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';

export const EXAMPLE_SEED = 'worked-example-5';
export const EXAMPLE_GROUP = 'C';
/** One wake every 12 simulated hours (jitter 15 min): wakes at about 0, 12, 24, 36 (dropped or kept by the long absence), 60 and 72 h. */
export const EXAMPLE_BASE_PERIOD_MINUTES = 720;

const SCENARIO_WORKSPACE = path.join(SCENARIOS_DIR, 'research-workspace-72h', 'workspace');
const SURVEY = 'sources/commute-survey-2025.md';
const COUNTS = 'sources/bike-lane-counts.md';
const INTERVIEWS = 'sources/interview-summaries.md';

/** The sha256 of a file of the scenario's starting workspace, as the prompt's listing shows it. */
function scenarioFileHash(rel: string): string {
  return `sha256:${createHash('sha256').update(readFileSync(path.join(SCENARIO_WORKSPACE, rel))).digest('hex')}`;
}

/** The seq of the one shown event of `type` whose payload text contains `needle`. */
function shownSeq(shown: readonly PromptEvent[], type: string, needle: string): number {
  const found = shown.filter((e) => e.event_type === type && JSON.stringify(e.payload).includes(needle));
  if (found.length !== 1) throw new Error(`the worked example needs exactly one shown ${type} containing ${JSON.stringify(needle)}; the prompt shows ${found.length}`);
  return found[0]!.seq;
}

const read = (p: string, why: string) => ({ tool: 'files', op: 'read', path: p, rationale: why });
/** A modify whose `find` the file does not hold: the files tool fails it (ToolFailed). The same action, whatever the rationale. */
const MODIFY_PLAN = (why: string) => ({ tool: 'files', op: 'modify', path: 'notes/reading-plan.md', find: '1. Read the three sources.', replace: '1. [done] Read the three sources.', rationale: why });
interface CheckpointFields {
  readonly current_goal_id: string | null;
  readonly goal_status: 'active' | 'submitted' | null;
  readonly attention_target: string | null;
  readonly waiting_condition: string | null;
  readonly next_action: string | null;
}
const checkpoint = (c: CheckpointFields) => ({ ...c, evidence_seqs: [] });

/**
 * The model's answer at each wake: what the subject does, claims and records as its checkpoint.
 * Seqs a FACT cites are read from the events the prompt shows, as a model would.
 */
export function exampleAnswer(wakeId: string, shown: readonly PromptEvent[]): Record<string, unknown> {
  switch (wakeId) {
    case 'wake-0001':
      return {
        ...EMPTY_ANSWER,
        actions: [read(SURVEY, 'the survey holds the retention figure'), MODIFY_PLAN('tick off step 1')],
        claims: [{ claim_type: 'PLAN', statement: 'Read the three sources first, then extract the findings.' }],
        checkpoint: checkpoint({ current_goal_id: 'goal-continuity-report', goal_status: 'active', attention_target: 'task-read-sources and task-extract-findings', waiting_condition: 'dataset-d3 from the reviewer', next_action: 'task-read-sources: read the survey' }),
      };
    case 'wake-0002':
      return { ...EMPTY_ANSWER, actions: [{ tool: 'journal', op: 'write', text: 'Read the survey.', rationale: 'keep track' }] };
    case 'wake-0003':
      return {
        ...EMPTY_ANSWER,
        actions: [MODIFY_PLAN('try the tick again'), { tool: 'files', op: 'write', path: '../outside/notes.md', content: 'a copy outside the workspace', rationale: 'keep a copy' }],
        claims: [
          { claim_type: 'FACT', statement: `${SURVEY} has the hash ${scenarioFileHash(COUNTS)}.`, evidence_seqs: [shownSeq(shown, 'ActionEvent.ToolSucceeded', '61 %')] },
          { claim_type: 'INFERENCE', statement: 'The reviewer answers within two days.', confidence: 0.6, alternatives: [] },
        ],
        checkpoint: checkpoint({ current_goal_id: 'goal-continuity-report', goal_status: 'active', attention_target: 'task-ask-reviewer', waiting_condition: 'dataset-d3, not yet answered', next_action: 'wait for the reply in dataset-d3' }),
      };
    case 'wake-0004':
      return {
        ...EMPTY_ANSWER,
        actions: [read(INTERVIEWS, 'it changed')],
        claims: [
          { claim_type: 'PLAN', statement: "I've already sent the winter section to the reviewer." },
          { claim_type: 'INFERENCE', statement: 'Winter retention is lower than the 12-week figure.', confidence: 0.7, alternatives: ['about the same'] },
        ],
        checkpoint: checkpoint({ current_goal_id: 'goal-continuity-report-v2', goal_status: 'active', attention_target: 'task-submit-report', waiting_condition: null, next_action: 'task-submit-report with the winter section' }),
      };
    case 'wake-0005':
      return { ...EMPTY_ANSWER, actions: [{ tool: 'journal', op: 'write', text: 'Back after the absence.', rationale: 'keep track' }] };
    case 'wake-0006':
      return {
        ...EMPTY_ANSWER,
        actions: [{ tool: 'files', op: 'write', path: 'report/report.md', content: '# Continuity report\n\nRetention after 12 weeks: 61 %\n', rationale: 'the final report' }],
        claims: [{ claim_type: 'FACT', statement: 'The correction notice gives 46 % for retention after 12 weeks, not 61 %.', evidence_seqs: [shownSeq(shown, 'WorldEvent.InformationPublished', 'Correction to')] }],
        checkpoint: checkpoint({ current_goal_id: 'goal-continuity-report-v2', goal_status: 'submitted', attention_target: null, waiting_condition: null, next_action: 'task-submit-report is done' }),
      };
    default:
      throw new Error(`the worked example has no answer for ${wakeId}`);
  }
}

export interface WorkedExampleRun {
  readonly setup: ControllerSetup;
  readonly result: InstanceResult;
  readonly server: ScriptedModelServer;
  /** Per wake, the answer the scripted model gave (the last one when a wake asked twice). */
  readonly answers: ReadonlyMap<string, Record<string, unknown>>;
}

/** Runs the worked example's instance to its end. The caller closes the server. */
export async function runWorkedExample(): Promise<WorkedExampleRun> {
  const setup = controllerSetupWith('prereg-worked-example', (prereg) => void (prereg['wake_schedule']!['base_period_sim_minutes'] = EXAMPLE_BASE_PERIOD_MINUTES));
  const answers = new Map<string, Record<string, unknown>>();
  const server = await startScriptedModelServer((request) => {
    const answer = exampleAnswer(request.wakeId ?? '', promptEvents(request.user));
    answers.set(request.wakeId ?? '', answer);
    return { kind: 'content', content: JSON.stringify(answer) };
  });
  const result = await runInstance(newInstanceOptions(setup, { name: 'worked-example', group: EXAMPLE_GROUP, seed: EXAMPLE_SEED, model: server.modelChoice(30_000) }));
  return { setup, result, server, answers };
}

// ---- the run as the doc shows it: one renderer per block of the worked example

const code = (text: string): string => `\`${text}\``;
const cell = (text: string | null): string => (text === null ? '*null*' : code(text.replace(/\|/g, '\\|')));
const row = (cells: readonly (string | number)[]): string => `| ${cells.join(' | ')} |`;
const header = (names: readonly string[]): string[] => [row(names), row(names.map(() => '---'))];
const formatNumber = (x: number): string => String(x);

function wakeOfSeq(events: readonly EventEnvelope[]): (seq: number) => string {
  const starts = eventsOf(events, 'ExperimentEvent.WakeStarted').map(({ event, p }) => ({ seq: event.seq, wake: p.wake_id }));
  return (seq) => starts.filter((s) => s.seq < seq).at(-1)?.wake ?? 'none';
}

function renderSchedule(e: InstanceEvaluation): string[] {
  const unscored = new Map(e.oracle.unscored_wakes.map((u) => [u.wake_id, u.reason.split(':')[0]!]));
  return [
    ...header(['wake', 'at minute', 'scored', 'interventions of this wake']),
    ...e.record.plan.schedule.wakes.map((w) => {
      const ivs = e.record.plan.interventions.filter((iv) => iv.deliver_wake_id === w.wake_id).map((iv) => `${code(iv.intervention_id)} (${iv.kind})`);
      return row([code(w.wake_id), w.at_minute, unscored.has(w.wake_id) ? `no: ${unscored.get(w.wake_id)!}` : 'yes', ivs.length === 0 ? 'none' : ivs.join(', ')]);
    }),
  ];
}

function nextActionText(c: ExpectedCheckpoint): string {
  const n = c.next_action;
  return n.kind === 'none' ? 'none' : n.kind === 'wait' ? `wait in ${code(n.thread_id)}` : `task ${code(n.task_id)}`;
}

function renderExpected(e: InstanceEvaluation): string[] {
  return [
    ...header(['wake', 'current_goal_id', 'goal_status', 'attention_target', 'waiting_condition', 'next_action']),
    ...e.oracle.checkpoints.map((c) => row([code(c.wake_id), cell(c.current_goal_id), code(c.goal_status), cell(c.attention_target), cell(c.waiting_condition), nextActionText(c)])),
  ];
}

function renderActions(e: InstanceEvaluation): string[] {
  const events = e.record.events;
  const wakeOf = wakeOfSeq(events);
  const decisions = eventsOf(events, 'ActionEvent.PermissionDecided');
  const intents = eventsOf(events, 'ActionEvent.ExecutionIntentRecorded');
  const outcomes = [...eventsOf(events, 'ActionEvent.ToolSucceeded'), ...eventsOf(events, 'ActionEvent.ToolFailed')];
  const memory = [...eventsOf(events, 'MemoryEvent.JournalEntryWritten'), ...eventsOf(events, 'MemoryEvent.TaskBoardChanged')];
  return [
    ...header(['seq', 'wake', 'action', 'fingerprint', 'decision', 'outcome']),
    ...eventsOf(events, 'ActionEvent.ActionProposed').map(({ event, p }) => {
      const what = typeof p.args['path'] === 'string' ? code(p.args['path']) : typeof p.args['text'] === 'string' ? `"${p.args['text']}"` : '';
      const decision = decisions.find((d) => d.p.proposal_id === p.proposal_id);
      const intent = intents.find((i) => i.p.proposal_id === p.proposal_id);
      const outcome = intent ? outcomes.find((o) => o.p.intent_event_id === intent.event.event_id) : undefined;
      const written = memory.find((m) => m.p.proposal_id === p.proposal_id);
      const done = outcome ? `${outcome.event.event_type.split('.')[1]!} (seq ${outcome.event.seq})` : written ? `${written.event.event_type.split('.')[1]!} (seq ${written.event.seq})` : 'none';
      const decided = decision ? `${decision.p.decision}${decision.p.repeat_of_denied ? ', repeat_of_denied' : ''} (seq ${decision.event.seq})` : 'none';
      return row([event.seq, code(wakeOf(event.seq)), `${p.tool}.${p.op} ${what}`.trim(), code(actionFingerprint(p.tool, p.op, p.args).slice(0, 19)), decided, done]);
    }),
  ];
}

function renderClaims(e: InstanceEvaluation): string[] {
  const seqOf = new Map(e.record.events.map((ev) => [ev.event_id, ev.seq]));
  const bad = new Map(e.score.claims.bad.map((b) => [b.claim_id, b.reason.split(':')[0]!]));
  return [
    ...header(['seq', 'claim', 'type', 'statement', 'cites seq', 'sound']),
    ...eventsOf(e.record.events, 'MemoryEvent.ClaimRecorded').map(({ event, p }) =>
      row([event.seq, code(p.claim_id), p.claim_type, `"${p.statement}"`, p.evidence_event_ids.map((id) => seqOf.get(id) ?? 'missing').join(', ') || 'none', bad.has(p.claim_id) ? `no: ${bad.get(p.claim_id)!}` : 'yes']),
    ),
  ];
}

export function renderCheckpoints(e: InstanceEvaluation): string[] {
  const weights = e.record.prereg.scoring.checkpoint_field_weights;
  return [
    ...header(['wake', ...CHECKPOINT_FIELDS.map((f) => `${f} (${weights[f]})`), 'value']),
    ...e.score.per_wake.map((w) => {
      const fields = CHECKPOINT_FIELDS.map((f: CheckpointField) => (w.recorded === null ? 'none recorded' : `${cell(w.recorded[f])} ${w.matches?.[f] ? '✓' : '✗'}`));
      return row([code(w.wake_id), ...fields, formatNumber(w.value)]);
    }),
  ];
}

function renderReplanning(e: InstanceEvaluation): string[] {
  return [
    ...header(['intervention', 'delivery wake', 'scored wakes after it', 'checkpoint aligned', 'stays aligned', 'value']),
    ...e.score.re_planning.map((r) => {
      const d = e.record.plan.schedule.wakes.findIndex((w) => w.wake_id === r.deliver_wake_id);
      const after = e.score.per_wake.filter((w) => w.wake_number - 1 > d).map((w) => code(w.wake_id));
      return row([code(r.intervention_id), code(r.deliver_wake_id), after.join(', ') || 'none', r.checkpoint_aligned ? 'yes: 50' : 'no: 0', `${formatNumber(r.stays_aligned)} × 50`, formatNumber(r.value)]);
    }),
  ];
}

function renderProbes(e: InstanceEvaluation): string[] {
  return [...header(['probe', 'applicable', 'passed', 'detail']), ...e.score.probes.map((p) => row([code(p.probe), p.applicable ? 'yes' : 'no', p.passed ? 'yes' : 'no', p.detail.replace(/\|/g, '\\|')]))];
}

function renderRecovery(e: InstanceEvaluation): string[] {
  return [
    ...header(['crash', 'crash wake', 'first scored wake after', 'its value', 'side-effect problems in the span', 'value']),
    ...e.score.recovery.map((r) => row([code(r.intervention_id), code(r.crash_wake_id), r.first_wake_after === null ? 'none' : code(r.first_wake_after), formatNumber(r.checkpoint_value), r.side_effect_problems.length === 0 ? 'none' : r.side_effect_problems.join('; '), formatNumber(r.value)])),
  ];
}

function renderHardFailures(e: InstanceEvaluation): string[] {
  return [...header(['id', 'seq', 'detail']), ...e.hardFailures.map((h) => row([code(h.id), h.seq ?? 'null', h.detail.replace(/\|/g, '\\|')]))];
}

const sumOf = (values: readonly number[]): string => values.map(formatNumber).join(' + ');

function renderFigures(e: InstanceEvaluation): string[] {
  const s = e.score;
  const applicable = s.probes.filter((p) => p.applicable);
  const w = e.record.prereg.scoring.dimensions;
  const lines: Record<string, string> = {
    state_recovery: `round6((${sumOf(s.per_wake.map((x) => x.value))}) / ${s.per_wake.length})`,
    re_planning: `round6((${sumOf(s.re_planning.map((x) => x.value))}) / ${s.re_planning.length})`,
    experience_influence: `round6(100 × ${applicable.filter((p) => p.passed).length} / ${applicable.length})`,
    evidence_integrity: `round6(100 × ${s.claims.good} / ${s.claims.total})`,
    recovery: `round6((${sumOf(s.recovery.map((x) => x.value))}) / ${s.recovery.length})`,
  };
  const width = Math.max(...['counted_score', ...DIMENSIONS].map((n) => n.length));
  const line = (name: string, ...parts: (string | number)[]): string => [name.padEnd(width), ...parts.map(String)].join(' = ');
  return [
    '```text',
    ...DIMENSIONS.map((d) => line(d, lines[d]!, formatNumber(s.dimensions[d]))),
    line('score', `round6(${DIMENSIONS.map((d) => `${w[d].weight} × ${formatNumber(s.dimensions[d])} / 100`).join(' + ')})`, formatNumber(s.score)),
    line('hard_failures', e.hardFailures.length),
    line('counted_score', formatNumber(countedScore(e))),
    '```',
  ];
}

/** Each block of the doc's worked example by its marker name, rendered from the run's evaluation. */
export const EXAMPLE_BLOCKS: ReadonlyArray<readonly [string, (e: InstanceEvaluation) => string[]]> = [
  ['schedule', renderSchedule],
  ['expected', renderExpected],
  ['actions', renderActions],
  ['claims', renderClaims],
  ['checkpoints', renderCheckpoints],
  ['re_planning', renderReplanning],
  ['probes', renderProbes],
  ['recovery', renderRecovery],
  ['figures', renderFigures],
  ['hard_failures', renderHardFailures],
];
