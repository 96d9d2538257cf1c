// One instance's blind-review package, as content (DESIGN §10, spec §8.5): the package data built
// from the instance's run record and its normalized timeline — checkpoints, interventions under
// their neutral names, claims with their evidence, action chains and how each settled, recovery
// reports — and the files it is written as (PACKAGE_FILE_NAMES). Pure: the exporter (exporter.ts)
// decides which instances, under which blind ids, and writes them.
import type { Intervention, InterventionKind } from '../design/intervention-plan.js';
import { bounded } from '../foundation/bounded-text.js';
import { CHECKPOINT_FIELDS } from '../oracle/checkpoint-match.js';
import { DIMENSIONS } from '../oracle/continuity-score.js';
import { eventsOf, type RunRecord } from '../oracle/run-record.js';
import type { RefText } from './disposition/disposition.js';
import { detailOf, NormalizeError, type NormalizedTimeline } from './event-normalizer.js';
import {
  ActionChains,
  BlindId,
  ClaimsWithEvidence,
  Interventions,
  PACKAGE_FILE_NAMES,
  PACKAGE_FILES,
  PACKAGE_FORMAT_VERSION,
  PackageManifest,
  RecoveryReports,
  StateCheckpoints,
  TimelineEntry,
} from './package-format.js';
import { expectedCheckpointsOf, expectedCheckpointsText } from './package-expected-checkpoints.js';
import { instructionsMarkdown, reviewInstructions } from './review-instructions.js';
import type { ScorecardData } from './scorecard-data.js';
import { formatSimMinute, rewriteTimes } from './sim-time.js';
import { MAX_SHORT_CHARS } from './timeline-detail.js';

/** What the intervention plan's kinds are called in a package (the same list for every instance of a replicate). */
const NEUTRAL_INTERVENTION_KIND: Record<InterventionKind, Interventions[number]['kind']> = {
  goal_change: 'goal_change',
  awaited_reply: 'awaited_reply',
  distractor_burst: 'distractor_burst',
  external_file_change: 'external_file_change',
  denied_request: 'denied_request',
  refutation: 'refutation',
  runtime_crash: 'runtime_restart',
  writer_crash: 'writer_restart',
  long_absence: 'long_absence',
};

/** A neutral description from the plan alone (no intervention id, no absolute time). */
function describeIntervention(iv: Intervention, startMs: number): string {
  const at = (iso: string): string => formatSimMinute(Math.max(0, Math.floor((Date.parse(iso) - startMs) / 60_000)));
  switch (iv.kind) {
    case 'goal_change':
      return `the goal changes (${iv.variant === 'deadline_earlier' ? 'the deadline moves earlier' : 'a section is added'}): ${iv.events[0].payload.reason}`;
    case 'awaited_reply':
      return `the awaited reply arrives in thread ${iv.thread_id} (asked for at ${at(iv.waiting_since_at)}, ${iv.delay_minutes} simulated minutes earlier)`;
    case 'distractor_burst':
      return `${iv.events.length} distracting messages arrive at once, more than the ${iv.window_events} recent events a wake is shown`;
    case 'external_file_change':
      return `${iv.path} is ${iv.change} by someone else`;
    case 'denied_request':
      return `a message asks for a write the permission rules forbid (${iv.variant === 'oversized_write' ? `${iv.tempted_action.bytes} bytes` : 'a path outside the workspace'}: ${iv.tempted_action.path})`;
    case 'refutation':
      return `new information corrects ${iv.refutes.figure} to ${iv.refutes.corrected_figure} (${iv.refutes.source_path})`;
    case 'runtime_crash':
      return "the subject's runtime process is killed during the wake and restarted";
    case 'writer_crash':
      return "the event store's writer process is killed during an append and restarted";
    case 'long_absence':
      return `no wake from ${at(iv.inject_at)} to ${at(iv.end_at)}`;
    default: {
      const unhandled: never = iv;
      throw new NormalizeError(`intervention kind ${(unhandled as { kind: string }).kind} has no description in the exporter`);
    }
  }
}

type Outcome = ActionChains[number]['outcome'];
type Settlement = RecoveryReports[number]['open_intents'][number]['settled_as'];

/** How a settling entry ends an intent (succeeded, failed, unknown, reconciled), or null if it does not. */
function settlementOf(entry: TimelineEntry): Exclude<Settlement, 'open'> | null {
  switch (entry.kind) {
    case 'tool_succeeded':
      return 'succeeded';
    case 'tool_failed':
      return 'failed';
    case 'tool_outcome_unknown':
      return 'unknown';
    case 'tool_reconciled':
      return detailOf(entry, 'tool_reconciled')!.outcome === 'happened' ? 'reconciled_happened' : 'reconciled_did_not_happen';
    case 'operator_resolved':
      return detailOf(entry, 'operator_resolved')!.resolution === 'happened' ? 'reconciled_happened' : 'reconciled_did_not_happen';
    default:
      return null;
  }
}

function intentOfSettlement(entry: TimelineEntry): RefText | null {
  switch (entry.kind) {
    case 'tool_succeeded':
      return detailOf(entry, 'tool_succeeded')!.intent;
    case 'tool_failed':
      return detailOf(entry, 'tool_failed')!.intent;
    case 'tool_outcome_unknown':
      return detailOf(entry, 'tool_outcome_unknown')!.intent;
    case 'tool_reconciled':
      return detailOf(entry, 'tool_reconciled')!.intent;
    case 'operator_resolved':
      return detailOf(entry, 'operator_resolved')!.intent;
    default:
      return null;
  }
}

/** Everything of one package but its scorecard page. */
export function buildPackageData(record: RunRecord, blindId: BlindId, timeline: NormalizedTimeline): ScorecardData {
  const entries = timeline.entries;
  const byRef = new Map(entries.map((e) => [e.ref, e] as const));
  const wakeOf = (e: TimelineEntry): NonNullable<TimelineEntry['wake']> => {
    if (e.wake === null) throw new NormalizeError(`${e.ref} (${e.kind}) belongs to no wake, but a ${e.kind} is always taken in one`);
    return e.wake;
  };

  const checkpoints: StateCheckpoints = entries.flatMap((e) => {
    const d = detailOf(e, 'checkpoint');
    if (d === null) return [];
    return [{ wake: wakeOf(e), t: e.t, ref: e.ref, current_goal_id: d.current_goal_id, goal_status: d.goal_status, attention_target: d.attention_target, waiting_condition: d.waiting_condition, next_action: d.next_action, evidence: d.evidence }];
  });

  const claims: ClaimsWithEvidence = entries.flatMap((e) => {
    const d = detailOf(e, 'claim_recorded');
    if (d === null) return [];
    return [
      {
        ref: e.ref,
        t: e.t,
        wake: e.wake,
        claim_type: d.claim_type,
        statement: d.statement,
        confidence: d.confidence,
        alternatives: d.alternatives,
        evidence: d.evidence.map((r) => {
          const cited = byRef.get(r);
          if (!cited) throw new NormalizeError(`${e.ref} cites ${r}, which is not in the timeline (a normalizer bug)`);
          return { ref: r, kind: cited.kind, summary: cited.summary };
        }),
      },
    ];
  });

  // Action chains: proposal → decision → intent → outcome, by the refs the normalizer resolved.
  const decisionOf = new Map<RefText, TimelineEntry>();
  const intentOf = new Map<RefText, TimelineEntry>();
  const recordedOf = new Map<RefText, TimelineEntry>();
  const settlementsOf = new Map<RefText, TimelineEntry[]>();
  for (const e of entries) {
    const proposal = detailOf(e, 'permission_decided')?.proposal ?? null;
    if (proposal !== null) decisionOf.set(proposal, e);
    const intended = detailOf(e, 'execution_intent')?.proposal ?? null;
    if (intended !== null) intentOf.set(intended, e);
    const recorded = detailOf(e, 'journal_entry')?.proposal ?? detailOf(e, 'task_board_changed')?.proposal ?? null;
    if (recorded !== null) recordedOf.set(recorded, e);
    const intent = intentOfSettlement(e);
    if (intent !== null) settlementsOf.set(intent, [...(settlementsOf.get(intent) ?? []), e]);
  }
  const actions: ActionChains = entries.flatMap((e) => {
    const d = detailOf(e, 'action_proposed');
    if (d === null) return [];
    const decision = decisionOf.get(e.ref) ?? null;
    const decided = decision === null ? null : detailOf(decision, 'permission_decided')!;
    const intent = intentOf.get(e.ref) ?? null;
    const recorded = recordedOf.get(e.ref) ?? null;
    const last = intent === null ? null : (settlementsOf.get(intent.ref)?.at(-1) ?? null);
    let outcome: Outcome = 'none';
    let outcomeRef: RefText | null = null;
    if (last !== null) {
      outcome = settlementOf(last)!;
      outcomeRef = last.ref;
    } else if (recorded !== null) {
      outcome = 'recorded';
      outcomeRef = recorded.ref;
    }
    return [
      {
        proposal: e.ref,
        t: e.t,
        wake: e.wake,
        tool: d.tool,
        op: d.op,
        target: d.target,
        rationale: bounded(d.rationale, MAX_SHORT_CHARS),
        decision: decided?.decision ?? 'none',
        decision_ref: decision?.ref ?? null,
        failed_rules: decided?.rules.filter((r) => !r.passed).map((r) => r.rule) ?? [],
        repeat_of_denied: decided?.repeat_of_denied ?? false,
        intent: intent?.ref ?? null,
        outcome,
        outcome_ref: outcomeRef,
      },
    ];
  });

  // Recovery: each restart, the intents without an outcome when the process died, and how each was settled.
  const recovery: RecoveryReports = [];
  for (const [i, e] of entries.entries()) {
    const d = detailOf(e, 'process_restarted');
    if (d === null) continue;
    const before = entries.slice(0, i);
    const after = entries.slice(i + 1);
    const openIntents = before
      .filter((x) => x.kind === 'execution_intent')
      .filter((x) => !(settlementsOf.get(x.ref) ?? []).some((s) => before.includes(s)))
      .map((x) => {
        const settled = (settlementsOf.get(x.ref) ?? []).filter((s) => after.includes(s)).at(-1) ?? null;
        return { intent: x.ref, settled_as: settled === null ? ('open' as const) : settlementOf(settled)!, settled_ref: settled?.ref ?? null };
      });
    recovery.push({ process: d.process, t: e.t, wake: e.wake, restart_ref: e.ref, open_intents: openIntents, first_checkpoint_after: after.find((x) => x.kind === 'checkpoint')?.ref ?? null });
  }

  // Interventions: the plan's (the same for every group of a replicate), with refs to what each delivered.
  const startMs = timeline.startMs;
  const delivered = new Map<string, RefText[]>();
  for (const { p } of eventsOf(record.events, 'ExperimentEvent.InterventionDelivered')) {
    const refs = p.event_ids.map((id) => timeline.refOfEventId.get(id)).filter((r): r is RefText => r !== undefined);
    if (refs.length !== p.event_ids.length) throw new NormalizeError(`the delivery of ${p.intervention_id} names ${p.event_ids.length - refs.length} event(s) the timeline does not hold`);
    delivered.set(p.intervention_id, [...(delivered.get(p.intervention_id) ?? []), ...refs]);
  }
  const interventions: Interventions = [...record.plan.interventions]
    .sort((a, b) => a.inject_minute - b.inject_minute)
    .map((iv) => {
      const wake = timeline.wakeOfId.get(iv.deliver_wake_id);
      if (wake === undefined) throw new NormalizeError(`intervention ${iv.intervention_id} is delivered at ${iv.deliver_wake_id}, which the schedule does not hold`);
      const refs = delivered.get(iv.intervention_id) ?? [];
      const missing = iv.events.length > 0 && refs.length === 0 ? ' (no delivery is recorded in this run)' : '';
      return { kind: NEUTRAL_INTERVENTION_KIND[iv.kind], t: formatSimMinute(iv.inject_minute), delivered_at: wake, description: bounded(rewriteTimes(`${describeIntervention(iv, startMs)}${missing}`, startMs), MAX_SHORT_CHARS), refs };
    });

  const dims = record.prereg.scoring.dimensions;
  const manifest: PackageManifest = {
    package_format_version: PACKAGE_FORMAT_VERSION,
    blind_id: blindId,
    scenario_id: record.prereg.scenario.id,
    simulated_hours: record.prereg.scenario.hours,
    wakes: record.plan.schedule.wakes.length,
    timeline_entries: entries.length,
    dimensions: DIMENSIONS.map((name) => ({ name, weight: dims[name].weight, measured_as: dims[name].measured_as })),
    checkpoint_fields: [...CHECKPOINT_FIELDS],
    checkpoint_field_weights: { ...record.prereg.scoring.checkpoint_field_weights },
    hard_failures: record.prereg.hard_failures.map((h) => ({ id: h.id, description: h.description })),
    files: [...PACKAGE_FILE_NAMES],
  };

  return {
    manifest: PackageManifest.parse(manifest),
    timeline: entries,
    checkpoints: StateCheckpoints.parse(checkpoints),
    interventions: Interventions.parse(interventions),
    claims: ClaimsWithEvidence.parse(claims),
    actions: ActionChains.parse(actions),
    recovery: RecoveryReports.parse(recovery),
    expected: expectedCheckpointsOf(record),
  };
}

/** The files of a package, by name (exactly PACKAGE_FILE_NAMES); `scorecardHtml` is its rendered page. */
export function packageFiles(data: ScorecardData, scorecardHtml: string): Map<string, string> {
  const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;
  const files = new Map<string, string>([
    [PACKAGE_FILES.manifest, json(data.manifest)],
    [PACKAGE_FILES.timeline, data.timeline.map((e) => `${JSON.stringify(e)}\n`).join('')],
    [PACKAGE_FILES.checkpoints, json(data.checkpoints)],
    [PACKAGE_FILES.interventions, json(data.interventions)],
    [PACKAGE_FILES.claims, json(data.claims)],
    [PACKAGE_FILES.actions, json(data.actions)],
    [PACKAGE_FILES.recovery, json(data.recovery)],
    [PACKAGE_FILES.expected, expectedCheckpointsText(data.expected)],
    [PACKAGE_FILES.instructions, instructionsMarkdown(reviewInstructions(data.manifest, data.expected.oracle_rules_version))],
    [PACKAGE_FILES.scorecard, scorecardHtml],
  ]);
  if (files.size !== PACKAGE_FILE_NAMES.length || PACKAGE_FILE_NAMES.some((f) => !files.has(f))) throw new Error(`packageFiles writes ${[...files.keys()].join(', ')}, not ${PACKAGE_FILE_NAMES.join(', ')}`);
  return files;
}
