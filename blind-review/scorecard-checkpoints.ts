// The scorecard's checkpoints: per wake, the expected checkpoint (the oracle's, from
// expected_checkpoints.json, or why the wake is not scored) above the checkpoint(s) the subject
// recorded, field by field, with links to the recording entry and its evidence.
import { CHECKPOINT_FIELDS } from '../oracle/checkpoint-match.js';
import { PACKAGE_FILES, type ExpectedCheckpoints, type StateCheckpoints } from './package-format.js';
import type { ScorecardInput } from './scorecard-input.js';
import { refLink, refLinks, type LinkIndex } from './scorecard-links.js';
import { htmlText } from './visible-text.js';

type ExpectedCheckpoint = ExpectedCheckpoints['checkpoints'][number];
type UnscoredWake = ExpectedCheckpoints['unscored_wakes'][number];

/** The oracle's next action in words. */
function expectedNextText(next: ExpectedCheckpoint['next_action']): string {
  return next.kind === 'none' ? 'none' : next.kind === 'wait' ? `wait for ${next.id ?? '?'}` : (next.id ?? '?');
}

const orNone = (value: string | null): string => (value === null ? '<span class="dangling">none</span>' : htmlText(value));

/** The table's rows of one wake: the expected row (or why there is none), then one row per recorded checkpoint (or a row saying none was). */
function wakeRows(index: LinkIndex, wake: string, expected: ExpectedCheckpoint | undefined, unscored: UnscoredWake | undefined, recorded: StateCheckpoints): string[] {
  const rows: string[] = [];
  const span = 1 + Math.max(recorded.length, 1);
  const wakeCell = `<th scope="row" rowspan="${span}">${htmlText(wake)}</th>`;
  if (expected !== undefined) {
    const fields = [expected.current_goal_id, expected.goal_status, expected.attention_target, expected.waiting_condition, expectedNextText(expected.next_action)];
    rows.push(`<tr class="expected">${wakeCell}<td>expected</td><td>${htmlText(expected.t)}</td><td></td>${fields.map((v) => `<td>${orNone(v)}</td>`).join('')}<td>${htmlText(expected.because.join('; '))}</td></tr>`);
  } else {
    const why = unscored === undefined ? 'no expected checkpoint: the oracle does not score this wake' : `not scored: ${unscored.reason}`;
    rows.push(`<tr class="expected">${wakeCell}<td>expected</td><td>${htmlText(unscored?.t ?? '')}</td><td></td><td colspan="${CHECKPOINT_FIELDS.length + 1}">${htmlText(why)}</td></tr>`);
  }
  if (recorded.length === 0) rows.push(`<tr><td>recorded</td><td></td><td></td><td colspan="${CHECKPOINT_FIELDS.length + 1}"><span class="dangling">no checkpoint recorded at this wake</span></td></tr>`);
  for (const c of recorded) rows.push(`<tr><td>recorded</td><td>${htmlText(c.t)}</td><td>${refLink(index, c.ref)}</td>${CHECKPOINT_FIELDS.map((f) => `<td>${orNone(c[f])}</td>`).join('')}<td>${refLinks(index, c.evidence)}</td></tr>`);
  return rows;
}

/** Every wake that is expected, unscored or recorded, in wake order, each with its rows. */
function checkpointRows(input: ScorecardInput, index: LinkIndex): string[] {
  const recordedBy = new Map<string, StateCheckpoints>();
  for (const c of input.checkpoints) recordedBy.set(c.wake, [...(recordedBy.get(c.wake) ?? []), c]);
  const expectedBy = new Map(input.expected.checkpoints.map((e) => [e.wake, e] as const));
  const unscoredBy = new Map(input.expected.unscored_wakes.map((u) => [u.wake, u] as const));
  const wakes = [...new Set([...expectedBy.keys(), ...unscoredBy.keys(), ...recordedBy.keys()])].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  return wakes.flatMap((wake) => wakeRows(index, wake, expectedBy.get(wake), unscoredBy.get(wake), recordedBy.get(wake) ?? []));
}

/**
 * Per wake, the expected checkpoint (what "equal to the oracle's" compares with) above what the
 * subject recorded: the rows a reviewer scores state_recovery, re_planning and recovery from.
 */
export function checkpointsSection(input: ScorecardInput, index: LinkIndex): string {
  const out = ['<section id="checkpoints" aria-labelledby="checkpoints-h">', '<h2 id="checkpoints-h">Checkpoints</h2>'];
  const m = input.manifest;
  const weights = m.checkpoint_fields.map((f) => `<code>${htmlText(f)}</code> ${htmlText(String(m.checkpoint_field_weights[f]))}`).join(', ');
  out.push(
    `<p>Per wake, the <strong>expected</strong> checkpoint (${htmlText(PACKAGE_FILES.expected)}: the oracle's, computed before the run from the pre-registered rules, version ${htmlText(input.expected.oracle_rules_version)}, the scenario and the intervention plan only) above the checkpoint the subject <strong>recorded</strong> at the end of the wake. The instructions say when a recorded field is equal to the expected one. Field weights: ${weights || 'none'}.</p>`,
  );
  const rows = checkpointRows(input, index);
  if (rows.length === 0) {
    out.push('<p>No wake is scored and no checkpoint was recorded.</p>', '</section>');
    return out.join('\n');
  }
  const head = ['Wake', 'Row', 'Time', 'Entry', ...CHECKPOINT_FIELDS, 'Evidence, or why expected'].map((h) => `<th scope="col">${htmlText(h)}</th>`).join('');
  out.push('<div class="table-scroll">', '<table class="checkpoints">', '<caption>Per wake: the expected checkpoint, then the recorded one; "none" is an empty field.</caption>', `<thead><tr>${head}</tr></thead>`, `<tbody>\n${rows.join('\n')}\n</tbody>`, '</table>', '</div>', '</section>');
  return out.join('\n');
}
