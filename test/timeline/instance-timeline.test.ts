// The 72-hour picture built from hand-made events: every lane drawn from the events it names and
// no others, a wake's mark telling how it ended, hostile model text escaped in the SVG, and
// nothing left out unsaid (an unreadable payload, an unscored run, marks past the bound, a
// delivery the plan does not hold).
import { describe, expect, test } from 'vitest';
import type { ExperimentPlan } from '../../design/experiment-plan.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { buildInstanceTimeline, MAX_TIMELINE_MARKS } from '../../timeline/instance-timeline.js';
import { timelineLegendSvg } from '../../timeline/timeline-legend.js';
import { timelineSvg } from '../../timeline/timeline-svg.js';

const START = '2026-03-02T08:00:00.000Z';
const at = (hours: number): string => new Date(Date.parse(START) + hours * 3_600_000).toISOString();
const budget = { model_calls: 4, tokens: 24000, tool_calls: 8 };
const plan = {
  schedule: {
    start_at: START,
    long_absence: { start_at: at(30), end_at: at(40), start_minute: 1800, end_minute: 2400 },
    wakes: [1, 2, 3, 4].map((k) => ({ wake_id: `wake-000${k}`, wake_at: at(k), at_minute: k * 60, budget })),
  },
  interventions: [{ intervention_id: 'iv-goal', kind: 'goal_change' }],
} as unknown as ExperimentPlan;

const VERSIONS: Record<string, string> = { ModelCallFailed: '1.4.0', ExecutionIntentRecorded: '1.1.0', ToolSucceeded: '1.1.0', Resumed: '1.1.0' };
let nextSeq = 1;
function event(type: string, hours: number, payload: Record<string, unknown>): EventEnvelope {
  const seq = nextSeq++;
  return { seq, event_type: type, schema_version: VERSIONS[type.split('.')[1]!] ?? '1.0.0', occurred_at: at(hours), payload } as unknown as EventEnvelope;
}
const HOSTILE = '</title><script>alert(1)</script><a href="javascript:alert(2)">x</a>';
const rules = [{ rule: 'tool_allowed', passed: false, detail: 'no' }];
const claim = (claim_type: string, statement: string, hours: number): EventEnvelope => event('MemoryEvent.ClaimRecorded', hours, { claim_id: `c-${nextSeq}`, claim_type, statement, evidence_event_ids: [], confidence: null, alternatives: [] });

function sampleEvents(): EventEnvelope[] {
  nextSeq = 1;
  return [
    event('ExperimentEvent.WakeStarted', 1, { wake_id: 'wake-0001', visible_to_seq: 1, budget }),
    event('ActionEvent.PermissionDecided', 1, { proposal_id: 'p1', decision: 'deny', rules, repeat_of_denied: false }),
    event('ActionEvent.PermissionDecided', 1, { proposal_id: 'p2', decision: 'allow', rules: [{ rule: 'tool_allowed', passed: true, detail: 'ok' }], repeat_of_denied: false }),
    claim('FACT', HOSTILE, 1),
    claim('PLAN', 'a plan is not a FACT', 1),
    event('ExperimentEvent.CheckpointRecorded', 1, { wake_id: 'wake-0001', current_goal_id: null, goal_status: null, attention_target: null, waiting_condition: null, next_action: null, observed_event_seq: 1, evidence_event_ids: [] }),
    event('ExperimentEvent.WakeEnded', 1, { wake_id: 'wake-0001', outcome: 'completed' }),
    event('ExperimentEvent.InterventionDelivered', 2, { intervention_id: 'iv-goal', wake_id: 'wake-0002', event_ids: ['00000000-0000-8000-8000-000000000001'] }),
    event('ExperimentEvent.InterventionDelivered', 2, { intervention_id: 'iv-nobody-planned', wake_id: 'wake-0002', event_ids: ['00000000-0000-8000-8000-000000000002'] }),
    event('ExperimentEvent.WakeStarted', 2, { wake_id: 'wake-0002', visible_to_seq: 2, budget }),
    event('ModelOutputEvent.ModelCallFailed', 2, { wake_id: 'wake-0002', adapter: 'openai', model_id: 'm', params: { temperature: null, top_p: null, seed: null, max_tokens: null }, system_fingerprint: null, latency_ms: 5, protocol: 'ds-model-output/2', finish_reason: null, response_model: null, prompt_tokens_counted: null, prompt_count_source: null, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null, cost_nano_usd: null, context: null, failure: 'timeout', detail: HOSTILE, raw_output: null, usage: null, usage_source: null }),
    event('SystemEvent.ProcessRestarted', 2, { process: 'runtime', reason: 'planned crash', previous_exit: { code: null, signal: 'SIGKILL' } }),
    event('ExperimentEvent.WakeEnded', 2, { wake_id: 'wake-0002', outcome: 'crashed' }),
    event('SystemEvent.EmergencyStopped', 2.5, { operator: 'op', reason: 'stop' }),
    event('SystemEvent.Resumed', 2.6, { operator: 'op', reason: 'go on', cost_cap_raised_to_usd: null }),
    event('ExperimentEvent.WakeStarted', 3, { wake_id: 'wake-0003', visible_to_seq: 3, budget }),
  ];
}

const count = (marks: readonly { lane: string; kind: string }[], lane: string, kind?: string): number => marks.filter((m) => m.lane === lane && (kind === undefined || m.kind === kind)).length;

describe('the 72-hour picture of an instance', () => {
  test('draws each lane from its own events: wakes by how they ended, interventions by kind, and only denials and FACTs', () => {
    const timeline = buildInstanceTimeline({ events: sampleEvents(), plan, accuracy: { per_wake: [{ wake_id: 'wake-0001', at_minute: 60, value: 80 }, { wake_id: 'wake-0003', at_minute: 180, value: 0 }] } });
    const m = timeline.marks;
    expect([count(m, 'wakes', 'completed'), count(m, 'wakes', 'crashed'), count(m, 'wakes', 'open')]).toEqual([1, 1, 1]);
    expect([count(m, 'interventions', 'goal_change'), count(m, 'interventions', 'unplanned')]).toEqual([1, 1]);
    expect([count(m, 'crashes', 'runtime'), count(m, 'stops', 'stopped'), count(m, 'stops', 'resumed'), count(m, 'model_failures', 'timeout')]).toEqual([1, 1, 1, 1]);
    expect([count(m, 'denials'), count(m, 'facts')]).toEqual([1, 1]);
    // Accuracy: wake 1 on its checkpoint, wake 3 (no checkpoint) on its WakeStarted, each with its value.
    const accuracy = m.filter((x) => x.lane === 'accuracy');
    expect(accuracy.map((x) => [x.seq, x.points, x.hours])).toEqual([[6, 80, 1], [16, 0, 3]]);
    expect(m.find((x) => x.lane === 'crashes')!.hours).toBe(2);
    // wake-0004 never started: a faint planned wake, not a mark.
    expect(timeline.planned_wakes).toEqual([{ wake_id: 'wake-0004', hours: 4 }]);
    expect(timeline.long_absence).toEqual({ start_hours: 30, end_hours: 40 });
    expect(timeline.problems).toEqual([]);
  });

  test('hostile model text is escaped in the SVG: no element, no attribute comes out of it', () => {
    const timeline = buildInstanceTimeline({ events: sampleEvents(), plan, accuracy: { unavailable: HOSTILE } });
    const svg = timelineSvg(timeline, { id: 'x"><script>', title: HOSTILE, hrefOf: (seq) => `/event/${seq}`, compact: false, data: { group: HOSTILE } });
    expect(svg).not.toContain('<script');
    expect(svg).not.toContain('href="javascript');
    expect(svg).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(svg.match(/<title>/g)!.length).toBe(svg.match(/<\/title>/g)!.length);
    // Every mark is a link to its own event.
    for (const mark of timeline.marks) expect(svg).toContain(`<a href="/event/${mark.seq}"><g class="mark" data-lane="${mark.lane}"`);
    expect(timelineLegendSvg('k', [timeline])).toContain('delivery of an intervention the plan does not hold');
  });

  test('what it cannot draw is said: an unreadable payload, an unscored run, a missing plan', () => {
    const events = sampleEvents();
    const broken = { ...events[0]!, payload: { wake_id: 'wake-0001' } } as EventEnvelope;
    const timeline = buildInstanceTimeline({ events: [broken, ...events.slice(1)], plan: null, accuracy: { unavailable: 'the instance is stopped, not scored' } });
    expect(count(timeline.marks, 'wakes')).toBe(2);
    expect(timeline.problems[0]).toMatch(/^seq 1 \(ExperimentEvent\.WakeStarted\) is not drawn: the payload of ExperimentEvent\.WakeStarted 1\.0\.0 fails its schema/);
    expect(timeline.problems).toContain("no plan: hour 0 is the first event's time, and intervention kinds and scheduled wakes are unknown");
    expect(timeline.problems).toContain('checkpoint accuracy not drawn: the instance is stopped, not scored');
    const ahead = buildInstanceTimeline({ events, plan, accuracy: { per_wake: [{ wake_id: 'wake-0004', at_minute: 240, value: 0 }] } });
    expect(ahead.problems).toEqual(['1 scored wake(s) have no WakeStarted here, so no event to draw their accuracy on: wake-0004 (0) (points in brackets)']);
    expect(timelineSvg(timeline, { id: 't', title: 't', hrefOf: null, compact: true })).toContain('⚠ checkpoint accuracy not drawn: the instance is stopped, not scored');
  });

  test(`draws at most ${MAX_TIMELINE_MARKS} marks and counts the rest`, () => {
    nextSeq = 1;
    const many = Array.from({ length: MAX_TIMELINE_MARKS + 5 }, (_, i) => claim('FACT', `f${i}`, 1 + (i % 60)));
    const timeline = buildInstanceTimeline({ events: many, plan, accuracy: { per_wake: [] } });
    expect(timeline.marks.length).toBe(MAX_TIMELINE_MARKS);
    expect(timeline.problems).toEqual([`5 mark(s) not drawn: the picture draws at most ${MAX_TIMELINE_MARKS}`]);
  });
});
