// reviewer_scorecard.html of a blind-review package (DESIGN §10, spec §8.5): ONE self-contained
// page a reviewer opens offline. It shows the package (timeline, checkpoints, interventions,
// claims with their evidence, action chains, recovery reports) with every event ref a link to its
// timeline entry and back, and a form for the pre-registered dimensions and hard failures that
// saves the reviewer's ReviewerScores as a JSON file (scorecard-script.ts; no network, no server).
//
// Nothing is fetched: inline CSS and script only, no font, image or external link, and a
// Content-Security-Policy naming the style and the script by their SHA-256 refuses anything else
// (an injected script or style would not run even if escaping failed). Blinding: the header shows
// the blind id and nothing else; the page says only what the package says. Every package string
// is HTML-escaped; the package data is also embedded as JSON (for the script) with "<" written as
// \u003c, so no string can close its <script> element.
//
// The page is rendered here, not by the script, so it reads without JavaScript and a test can
// check every id and link without a browser. Sizes are bounded: the timeline has at most
// MAX_TIMELINE_ENTRIES entries (more is refused, not cut), a detail shows at most
// MAX_DETAIL_CHARS, an entry lists at most MAX_BACKLINKS claims and chains citing it.
// Why one file: it is one page, rendered in one pass; its sections share one index of the refs and
// the link helpers built on it (its style and script are files of their own, named by hash).
import { z } from 'zod';
import { HARD_FAILURE_IDS } from '../design/prereg.js';
import { cspHash } from '../foundation/csp-hash.js';
import { escapeHtml } from '../foundation/html-escape.js';
import { offlinePageHead } from '../foundation/offline-page.js';
import { CHECKPOINT_FIELDS } from '../oracle/checkpoint-match.js';
import { DIMENSIONS } from '../oracle/continuity-score.js';
import { ActionChains, ClaimsWithEvidence, ExpectedCheckpoints, Interventions, PACKAGE_FILES, PackageManifest, RecoveryReports, ReviewerScores, StateCheckpoints, TimelineEntry } from './package-format.js';
import { instructionsHtml, reviewInstructions } from './review-instructions.js';
import type { ScorecardData } from './scorecard-data.js';
import { SCORECARD_SCRIPT } from './scorecard-script.js';
import { SCORECARD_STYLE } from './scorecard-style.js';

/** 72 simulated hours produce a few thousand entries; far beyond that the page would not be readable, and the exporter must say so rather than ship half a timeline. */
export const MAX_TIMELINE_ENTRIES = 20_000;
/** A detail longer than this is cut in the page (the full entry stays in normalized_timeline.jsonl and in the embedded JSON). */
export const MAX_DETAIL_CHARS = 4_000;
/** Back-links listed under one entry, per kind; the rest are counted. */
export const MAX_BACKLINKS = 50;

/**
 * JSON for a `<script type="application/json">` block: `<` (and the two line separators some
 * tools mishandle) as \u escapes, so no value can write `</script>` or `<!--` into the page.
 * JSON.parse reads the escapes back to the same strings.
 */
export function jsonForScriptBlock(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

const DIMENSION_SET: ReadonlySet<string> = new Set(DIMENSIONS);
const HARD_FAILURE_SET: ReadonlySet<string> = new Set(HARD_FAILURE_IDS);

const Input = z.strictObject({
  manifest: PackageManifest,
  timeline: z.array(TimelineEntry).max(MAX_TIMELINE_ENTRIES),
  checkpoints: StateCheckpoints,
  interventions: Interventions,
  claims: ClaimsWithEvidence,
  actions: ActionChains,
  recovery: RecoveryReports,
  expected: ExpectedCheckpoints,
});
type Input = z.infer<typeof Input>;

/** Fails loudly on a package the page could not show faithfully or whose scores could not be saved valid. */
function checkInput(data: ScorecardData): Input {
  if (data.timeline.length > MAX_TIMELINE_ENTRIES) throw new RangeError(`the timeline has ${data.timeline.length} entries; the scorecard shows at most ${MAX_TIMELINE_ENTRIES}`);
  const input = Input.parse(data);
  const m = input.manifest;
  // ReviewerScores needs every dimension and every hard-failure id exactly once; a manifest
  // without them would give the reviewer a form whose file the review flow then refuses.
  const dims = m.dimensions.map((d) => d.name);
  if (dims.length !== DIMENSION_SET.size || new Set(dims).size !== dims.length) throw new Error(`manifest.dimensions must list each of ${DIMENSIONS.join(', ')} exactly once; it lists ${dims.join(', ') || 'none'}`);
  const failures = m.hard_failures.map((h) => h.id);
  if (failures.length !== HARD_FAILURE_SET.size || new Set(failures).size !== failures.length) throw new Error(`manifest.hard_failures must list each of ${HARD_FAILURE_IDS.join(', ')} exactly once; it lists ${failures.join(', ') || 'none'}`);
  if (m.timeline_entries !== input.timeline.length) throw new Error(`manifest.timeline_entries is ${m.timeline_entries} but the timeline has ${input.timeline.length} entries`);
  const seen = new Set<string>();
  for (const e of input.timeline) {
    if (seen.has(e.ref)) throw new Error(`timeline ref ${e.ref} appears twice; refs are the page's link targets and must be unique`);
    seen.add(e.ref);
  }
  return input;
}

/** What links where: refs that exist, and for each entry the claims and chains that mention it. */
interface Index {
  readonly refs: ReadonlySet<string>;
  /** Claim cards by their own ref (the claim_recorded entry). */
  readonly claimCards: ReadonlySet<string>;
  readonly citedBy: ReadonlyMap<string, readonly string[]>;
  readonly inChains: ReadonlyMap<string, readonly string[]>;
  /** Chain card id by proposal ref; a second chain of the same proposal gets no id of its own. */
  readonly chainCards: ReadonlySet<string>;
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else if (!list.includes(value)) list.push(value);
}

function indexOf(input: Input): Index {
  const citedBy = new Map<string, string[]>();
  const claimCards = new Set<string>();
  for (const c of input.claims) {
    claimCards.add(c.ref);
    for (const e of c.evidence) push(citedBy, e.ref, c.ref);
  }
  const inChains = new Map<string, string[]>();
  const chainCards = new Set<string>();
  for (const a of input.actions) {
    chainCards.add(a.proposal);
    for (const r of [a.proposal, a.decision_ref, a.intent, a.outcome_ref]) if (r !== null) push(inChains, r, a.proposal);
  }
  return { refs: new Set(input.timeline.map((e) => e.ref)), claimCards, citedBy, inChains, chainCards };
}

const claimId = (ref: string): string => `claim-${ref}`;
const chainId = (ref: string): string => `chain-${ref}`;

/** A link to a timeline entry, or (a ref the timeline lacks) plain text saying so: never a dead link. */
function refLink(index: Index, ref: string): string {
  if (!index.refs.has(ref)) return `<span class="ref dangling">${escapeHtml(ref)} (not in this package)</span>`;
  return `<a class="ref" href="#${escapeHtml(ref)}">${escapeHtml(ref)}</a>`;
}
function refLinks(index: Index, refs: readonly string[], none = 'none'): string {
  return refs.length === 0 ? escapeHtml(none) : refs.map((r) => refLink(index, r)).join(', ');
}
function optionalRef(index: Index, ref: string | null, none: string): string {
  return ref === null ? escapeHtml(none) : refLink(index, ref);
}
const orNone = (value: string | null): string => (value === null ? '<span class="dangling">none</span>' : escapeHtml(value));
const wakeText = (wake: string | null): string => (wake === null ? 'between wakes' : wake);

function capped(links: readonly string[]): string {
  const shown = links.slice(0, MAX_BACKLINKS).join(', ');
  return links.length > MAX_BACKLINKS ? `${shown} and ${links.length - MAX_BACKLINKS} more` : shown;
}

function detailText(detail: Record<string, unknown>): string {
  const full = JSON.stringify(detail, null, 2);
  if (full.length <= MAX_DETAIL_CHARS) return full;
  return `${full.slice(0, MAX_DETAIL_CHARS)}\n… ${full.length - MAX_DETAIL_CHARS} more characters (the whole entry is in normalized_timeline.jsonl)`;
}

function headerSection(input: Input): string {
  const nav = [
    ['overview', 'Overview'],
    ['instructions', 'Instructions'],
    ['timeline', 'Timeline'],
    ['checkpoints', 'Checkpoints'],
    ['interventions', 'Interventions'],
    ['claims', 'Claims'],
    ['actions', 'Action chains'],
    ['recovery', 'Recovery'],
    ['scoring', 'Scores'],
  ];
  return [
    '<a class="skip" href="#scoring">Skip to the scoring form</a>',
    '<header>',
    `<h1>Reviewer scorecard <span id="blind-id">${escapeHtml(input.manifest.blind_id)}</span></h1>`,
    `<nav aria-label="Sections"><ul>${nav.map(([id, label]) => `<li><a href="#${id}">${label}</a></li>`).join('')}</ul></nav>`,
    '</header>',
  ].join('\n');
}

function overviewSection(input: Input): string {
  const m = input.manifest;
  const meta: [string, string][] = [
    ['Package', m.blind_id],
    ['Scenario', m.scenario_id],
    ['Simulated hours', String(m.simulated_hours)],
    ['Wakes', String(m.wakes)],
    ['Timeline entries', String(input.timeline.length)],
    ['Claims', String(input.claims.length)],
    ['Action chains', String(input.actions.length)],
    ['Process restarts', String(input.recovery.length)],
  ];
  return [
    '<section id="overview" aria-labelledby="overview-h">',
    '<h2 id="overview-h">Overview</h2>',
    '<p>Times are simulated hours since the start (h12:30); wakes are numbered in schedule order (W01, W02, …); entries are numbered in timeline order (E0001, …). Every entry number is a link: follow it to the entry, and use the browser\'s Back to return. Read the <a href="#instructions">instructions</a> first (they are also in review_instructions.md); score the package in the form at the end; it saves a file on this computer and sends nothing anywhere.</p>',
    `<dl class="meta">\n${meta.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('\n')}\n</dl>`,
    '</section>',
  ].join('\n');
}

function entryItem(index: Index, e: TimelineEntry): string {
  const out = [
    `<li id="${escapeHtml(e.ref)}" class="entry link-target" tabindex="-1">`,
    `<p class="entry-head"><span class="ref">${escapeHtml(e.ref)}</span><span>${escapeHtml(e.t)}</span><span>${escapeHtml(wakeText(e.wake))}</span><span>kind: <code>${escapeHtml(e.kind)}</code></span><span>actor: ${escapeHtml(e.actor)}</span></p>`,
    `<p class="summary">${escapeHtml(e.summary)}</p>`,
  ];
  if (e.refs.length > 0) out.push(`<p class="links">Rests on: ${refLinks(index, e.refs)}</p>`);
  if (index.claimCards.has(e.ref)) out.push(`<p class="links">Claim recorded here: <a href="#${claimId(e.ref)}">claim ${escapeHtml(e.ref)}</a></p>`);
  const citing = index.citedBy.get(e.ref) ?? [];
  if (citing.length > 0) out.push(`<p class="links">Cited as evidence by claims: ${capped(citing.map((c) => `<a href="#${claimId(c)}">claim ${escapeHtml(c)}</a>`))}</p>`);
  const chains = index.inChains.get(e.ref) ?? [];
  if (chains.length > 0) out.push(`<p class="links">In action chain: ${capped(chains.map((p) => `<a href="#${chainId(p)}">chain ${escapeHtml(p)}</a>`))}</p>`);
  if (Object.keys(e.detail).length > 0) out.push(`<details><summary>Detail of ${escapeHtml(e.ref)}</summary><pre>${escapeHtml(detailText(e.detail))}</pre></details>`);
  out.push('</li>');
  return out.join('\n');
}

function timelineSection(input: Input, index: Index): string {
  const out = ['<section id="timeline" aria-labelledby="timeline-h">', '<h2 id="timeline-h">Timeline</h2>'];
  if (input.timeline.length === 0) out.push('<p>The timeline is empty.</p>');
  // One block per run of entries with the same wake, in timeline order (the gaps between wakes are blocks too).
  let block = 0;
  for (let i = 0; i < input.timeline.length; ) {
    const wake = input.timeline[i]!.wake;
    let j = i;
    while (j < input.timeline.length && input.timeline[j]!.wake === wake) j++;
    const first = input.timeline[i]!;
    const last = input.timeline[j - 1]!;
    const span = first.t === last.t ? first.t : `${first.t}–${last.t}`;
    const heading = `${wake === null ? 'Between wakes' : `Wake ${wake}`}, ${span}`;
    block++;
    out.push(`<h3 id="timeline-block-${block}">${escapeHtml(heading)}</h3>`, `<ul class="entries" aria-labelledby="timeline-block-${block}">`);
    for (let k = i; k < j; k++) out.push(entryItem(index, input.timeline[k]!));
    out.push('</ul>');
    i = j;
  }
  out.push('</section>');
  return out.join('\n');
}

/** The oracle's next action in words. */
function expectedNextText(next: ExpectedCheckpoints['checkpoints'][number]['next_action']): string {
  return next.kind === 'none' ? 'none' : next.kind === 'wait' ? `wait for ${next.id ?? '?'}` : (next.id ?? '?');
}

function instructionsSection(input: Input): string {
  return [
    '<section id="instructions" aria-labelledby="instructions-h">',
    '<h2 id="instructions-h">Instructions</h2>',
    `<p>The same text as ${escapeHtml(PACKAGE_FILES.instructions)} of this package, the same in every package of this review.</p>`,
    instructionsHtml(reviewInstructions(input.manifest, input.expected.oracle_rules_version)),
    '</section>',
  ].join('\n');
}

/**
 * Per wake, the expected checkpoint (what "equal to the oracle's" compares with) above what the
 * subject recorded: the rows a reviewer scores state_recovery, re_planning and recovery from.
 */
function checkpointsSection(input: Input, index: Index): string {
  const out = ['<section id="checkpoints" aria-labelledby="checkpoints-h">', '<h2 id="checkpoints-h">Checkpoints</h2>'];
  const m = input.manifest;
  const weights = m.checkpoint_fields.map((f) => `<code>${escapeHtml(f)}</code> ${escapeHtml(String(m.checkpoint_field_weights[f]))}`).join(', ');
  out.push(
    `<p>Per wake, the <strong>expected</strong> checkpoint (${escapeHtml(PACKAGE_FILES.expected)}: the oracle's, computed before the run from the pre-registered rules, version ${escapeHtml(input.expected.oracle_rules_version)}, the scenario and the intervention plan only) above the checkpoint the subject <strong>recorded</strong> at the end of the wake. The instructions say when a recorded field is equal to the expected one. Field weights: ${weights || 'none'}.</p>`,
  );
  const recordedBy = new Map<string, StateCheckpoints>();
  for (const c of input.checkpoints) recordedBy.set(c.wake, [...(recordedBy.get(c.wake) ?? []), c]);
  const expectedBy = new Map(input.expected.checkpoints.map((e) => [e.wake, e] as const));
  const unscoredBy = new Map(input.expected.unscored_wakes.map((u) => [u.wake, u] as const));
  const wakes = [...new Set([...expectedBy.keys(), ...unscoredBy.keys(), ...recordedBy.keys()])].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  if (wakes.length === 0) {
    out.push('<p>No wake is scored and no checkpoint was recorded.</p>', '</section>');
    return out.join('\n');
  }
  const head = ['Wake', 'Row', 'Time', 'Entry', ...CHECKPOINT_FIELDS, 'Evidence, or why expected'].map((h) => `<th scope="col">${escapeHtml(h)}</th>`).join('');
  const rows: string[] = [];
  for (const wake of wakes) {
    const expected = expectedBy.get(wake);
    const recorded = recordedBy.get(wake) ?? [];
    const unscored = unscoredBy.get(wake);
    const span = 1 + Math.max(recorded.length, 1);
    const wakeCell = `<th scope="row" rowspan="${span}">${escapeHtml(wake)}</th>`;
    if (expected !== undefined) {
      const fields = [expected.current_goal_id, expected.goal_status, expected.attention_target, expected.waiting_condition, expectedNextText(expected.next_action)];
      rows.push(`<tr class="expected">${wakeCell}<td>expected</td><td>${escapeHtml(expected.t)}</td><td></td>${fields.map((v) => `<td>${orNone(v)}</td>`).join('')}<td>${escapeHtml(expected.because.join('; '))}</td></tr>`);
    } else {
      const why = unscored === undefined ? 'no expected checkpoint: the oracle does not score this wake' : `not scored: ${unscored.reason}`;
      rows.push(`<tr class="expected">${wakeCell}<td>expected</td><td>${escapeHtml(unscored?.t ?? '')}</td><td></td><td colspan="${CHECKPOINT_FIELDS.length + 1}">${escapeHtml(why)}</td></tr>`);
    }
    if (recorded.length === 0) rows.push(`<tr><td>recorded</td><td></td><td></td><td colspan="${CHECKPOINT_FIELDS.length + 1}"><span class="dangling">no checkpoint recorded at this wake</span></td></tr>`);
    for (const c of recorded) rows.push(`<tr><td>recorded</td><td>${escapeHtml(c.t)}</td><td>${refLink(index, c.ref)}</td>${CHECKPOINT_FIELDS.map((f) => `<td>${orNone(c[f])}</td>`).join('')}<td>${refLinks(index, c.evidence)}</td></tr>`);
  }
  out.push('<div class="table-scroll">', '<table class="checkpoints">', '<caption>Per wake: the expected checkpoint, then the recorded one; "none" is an empty field.</caption>', `<thead><tr>${head}</tr></thead>`, `<tbody>\n${rows.join('\n')}\n</tbody>`, '</table>', '</div>', '</section>');
  return out.join('\n');
}

function interventionsSection(input: Input, index: Index): string {
  const out = ['<section id="interventions" aria-labelledby="interventions-h">', '<h2 id="interventions-h">Interventions</h2>'];
  if (input.interventions.length === 0) out.push('<p>None.</p>');
  else {
    out.push('<ul>');
    for (const i of input.interventions) out.push(`<li><strong><code>${escapeHtml(i.kind)}</code></strong> at ${escapeHtml(i.t)}, reached the subject at ${escapeHtml(i.delivered_at)}: ${escapeHtml(i.description)} <span class="links">Entries: ${refLinks(index, i.refs)}</span></li>`);
    out.push('</ul>');
  }
  out.push('</section>');
  return out.join('\n');
}

function claimsSection(input: Input, index: Index): string {
  const out = ['<section id="claims" aria-labelledby="claims-h">', '<h2 id="claims-h">Claims</h2>'];
  if (input.claims.length === 0) {
    out.push('<p>No claim was recorded.</p>', '</section>');
    return out.join('\n');
  }
  out.push('<p>Each claim with the entries it cites as evidence; follow an evidence link to read the entry.</p>', '<ul class="claims">');
  const given = new Set<string>();
  input.claims.forEach((c, k) => {
    // A claim is one entry; should one appear twice, only the first card is its link target.
    const id = given.has(c.ref) ? null : claimId(c.ref);
    if (id !== null) given.add(c.ref);
    const headingId = `claim-h-${k + 1}`;
    const evidence =
      c.evidence.length === 0
        ? '<p>No evidence cited.</p>'
        : `<ul>${c.evidence.map((e) => `<li>${refLink(index, e.ref)} <code>${escapeHtml(e.kind)}</code>: ${escapeHtml(e.summary)}</li>`).join('')}</ul>`;
    const alternatives = c.alternatives.length === 0 ? '' : `<h4>Alternatives</h4><ul>${c.alternatives.map((a) => `<li>${escapeHtml(a)}</li>`).join('')}</ul>`;
    out.push(
      `<li${id === null ? '' : ` id="${id}"`} class="claim link-target" tabindex="-1" aria-labelledby="${headingId}">`,
      `<h3 id="${headingId}">${escapeHtml(c.claim_type)} claim ${escapeHtml(c.ref)}, ${escapeHtml(c.t)}, ${escapeHtml(wakeText(c.wake))}</h3>`,
      `<p class="statement">${escapeHtml(c.statement)}</p>`,
      `<p class="links">Recorded at entry ${refLink(index, c.ref)}. Confidence: ${c.confidence === null ? 'not given' : escapeHtml(String(c.confidence))}.</p>`,
      alternatives,
      `<h4>Evidence</h4>${evidence}`,
      '</li>',
    );
  });
  out.push('</ul>', '</section>');
  return out.join('\n');
}

const DECISION_TEXT: Readonly<Record<string, string>> = { allow: 'allowed', deny: 'DENIED', none: 'no decision recorded' };
const OUTCOME_TEXT: Readonly<Record<string, string>> = {
  succeeded: 'succeeded',
  failed: 'FAILED',
  unknown: 'OUTCOME UNKNOWN',
  reconciled_happened: 'reconciled after a restart: it happened',
  reconciled_did_not_happen: 'reconciled after a restart: it did NOT happen',
  recorded: 'recorded',
  none: 'no outcome (not executed)',
};
const BAD_DECISIONS = new Set(['deny']);
const BAD_OUTCOMES = new Set(['failed', 'unknown', 'reconciled_did_not_happen']);
const word = (text: string, bad: boolean): string => (bad ? `<strong class="bad">${escapeHtml(text)}</strong>` : `<strong>${escapeHtml(text)}</strong>`);

function actionsSection(input: Input, index: Index): string {
  const out = ['<section id="actions" aria-labelledby="actions-h">', '<h2 id="actions-h">Action chains</h2>'];
  if (input.actions.length === 0) {
    out.push('<p>No action was proposed.</p>', '</section>');
    return out.join('\n');
  }
  out.push('<p>Each proposed action: proposal, permission decision, execution intent, outcome.</p>', '<ul class="chains">');
  const given = new Set<string>();
  input.actions.forEach((a, k) => {
    // A proposal is one chain; should one appear twice, only the first card is its link target.
    const id = given.has(a.proposal) ? null : chainId(a.proposal);
    if (id !== null) given.add(a.proposal);
    const headingId = `chain-h-${k + 1}`;
    const target = a.target === null ? '' : ` ${a.target}`;
    const decisionExtra = [a.failed_rules.length > 0 ? ` Failed rules: ${a.failed_rules.map((r) => `<code>${escapeHtml(r)}</code>`).join(', ')}.` : '', a.repeat_of_denied ? ` ${word('Repeats a denied proposal.', true)}` : ''].join('');
    out.push(
      `<li${id === null ? '' : ` id="${id}"`} class="chain link-target" tabindex="-1" aria-labelledby="${headingId}">`,
      `<h3 id="${headingId}">${escapeHtml(`${a.tool}.${a.op}${target}`)}, ${escapeHtml(a.t)}, ${escapeHtml(wakeText(a.wake))}</h3>`,
      `<p class="links">Rationale: ${escapeHtml(a.rationale)}</p>`,
      '<ol class="chain-steps">',
      `<li>Proposal: ${refLink(index, a.proposal)}</li>`,
      `<li>Decision: ${word(DECISION_TEXT[a.decision]!, BAD_DECISIONS.has(a.decision))} ${optionalRef(index, a.decision_ref, '(no entry)')}.${decisionExtra}</li>`,
      `<li>Intent: ${optionalRef(index, a.intent, 'none')}</li>`,
      `<li>Outcome: ${word(OUTCOME_TEXT[a.outcome]!, BAD_OUTCOMES.has(a.outcome))} ${optionalRef(index, a.outcome_ref, '(no entry)')}</li>`,
      '</ol>',
      '</li>',
    );
  });
  out.push('</ul>', '</section>');
  return out.join('\n');
}

function recoverySection(input: Input, index: Index): string {
  const out = ['<section id="recovery" aria-labelledby="recovery-h">', '<h2 id="recovery-h">Recovery reports</h2>'];
  if (input.recovery.length === 0) {
    out.push('<p>No process restarted.</p>', '</section>');
    return out.join('\n');
  }
  for (const r of input.recovery) {
    out.push(`<h3>${escapeHtml(`${r.process} restart at ${r.t}, ${wakeText(r.wake)}`)}</h3>`, `<p>Restart entry: ${refLink(index, r.restart_ref)}. First checkpoint after it: ${optionalRef(index, r.first_checkpoint_after, 'none recorded')}.</p>`);
    if (r.open_intents.length === 0) out.push('<p>No execution intent was open.</p>');
    else {
      const rows = r.open_intents.map((o) => `<tr><td>${refLink(index, o.intent)}</td><td>${word(o.settled_as, o.settled_as !== 'succeeded' && o.settled_as !== 'reconciled_happened')}</td><td>${optionalRef(index, o.settled_ref, 'not settled')}</td></tr>`);
      out.push('<table>', '<caption>Execution intents open when the process stopped, and how each was settled</caption>', '<thead><tr><th scope="col">Intent</th><th scope="col">Settled as</th><th scope="col">Settling entry</th></tr></thead>', `<tbody>\n${rows.join('\n')}\n</tbody>`, '</table>');
    }
  }
  out.push('</section>');
  return out.join('\n');
}

function scoringSection(input: Input): string {
  const m = input.manifest;
  const dims = m.dimensions.map((d) => {
    const id = `dim-${d.name}`;
    return [
      '<div class="field">',
      `<label for="${escapeHtml(id)}">${escapeHtml(d.name)} (weight ${escapeHtml(String(d.weight))})</label>`,
      `<p class="help" id="${escapeHtml(id)}-help">Measured as: ${escapeHtml(d.measured_as)}</p>`,
      `<input type="number" id="${escapeHtml(id)}" name="${escapeHtml(id)}" min="0" max="100" step="any" inputmode="decimal" required aria-describedby="${escapeHtml(id)}-help">`,
      '</div>',
    ].join('\n');
  });
  const failures = m.hard_failures.map((h) => {
    const id = `hf-${h.id}`;
    return [
      `<fieldset class="hard-failure" id="${escapeHtml(id)}">`,
      `<legend><code>${escapeHtml(h.id)}</code>: ${escapeHtml(h.description)}</legend>`,
      `<input type="radio" id="${escapeHtml(id)}-yes" name="${escapeHtml(id)}" value="yes" required> <label for="${escapeHtml(id)}-yes">Yes, found</label>`,
      `<input type="radio" id="${escapeHtml(id)}-no" name="${escapeHtml(id)}" value="no" required> <label for="${escapeHtml(id)}-no">No, not found</label>`,
      '</fieldset>',
    ].join('\n');
  });
  return [
    '<section id="scoring" aria-labelledby="scoring-h">',
    '<h2 id="scoring-h">Scores</h2>',
    `<p>Score package ${escapeHtml(m.blind_id)} on each pre-registered dimension (0 to 100) and decide on every hard failure. "Save scores" downloads the scores as a JSON file; nothing is sent anywhere. Send that file as the <a href="#instructions">instructions</a> say.</p>`,
    // The version the saved file declares comes from the ReviewerScores schema, not from the script's text.
    `<form id="score-form" novalidate data-score-format-version="${escapeHtml(ReviewerScores.shape.score_format_version.value)}">`,
    // At the top of the form and focused when shown, so the reviewer reads what is missing first.
    '<div id="form-errors" class="errors" tabindex="-1" hidden><p>The scores were not saved. Missing or invalid:</p><ul id="form-error-list"></ul></div>',
    `<fieldset><legend>Dimensions, each 0 to 100</legend>\n${dims.join('\n')}\n</fieldset>`,
    `<fieldset><legend>Hard failures: is each one present in this package?</legend>\n${failures.join('\n')}\n</fieldset>`,
    '<div class="field"><label for="reviewer">Reviewer name</label><input type="text" id="reviewer" name="reviewer" maxlength="100" autocomplete="name" required></div>',
    '<div class="field"><label for="comments">Comments (optional)</label><textarea id="comments" name="comments" rows="6" maxlength="16384"></textarea></div>',
    '<button type="submit" id="save-scores">Save scores</button>',
    '<p id="save-status" class="status" role="status" aria-live="polite"></p>',
    '<noscript><p><strong>Saving needs JavaScript, which is turned off: turn it on for this file to save the scores.</strong></p></noscript>',
    '</form>',
    '</section>',
  ].join('\n');
}

// The script and style sit inside <script>/<style> verbatim: they must not be able to end early.
if (/<\/|<!--/.test(SCORECARD_SCRIPT) || /<\//.test(SCORECARD_STYLE)) throw new Error('scorecard script or style contains "</" or "<!--"');

/** The page: self-contained HTML, the same for the same data. */
export function renderScorecard(data: ScorecardData): string {
  const input = checkInput(data);
  const index = indexOf(input);
  const csp = ["default-src 'none'", `style-src ${cspHash(SCORECARD_STYLE)}`, `script-src ${cspHash(SCORECARD_SCRIPT)}`, "base-uri 'none'", "form-action 'none'"].join('; ');
  return [
    // Refuse every fetch; only the inline style and script named by their hash may apply or run.
    ...offlinePageHead({ csp, title: `Reviewer scorecard ${input.manifest.blind_id}`, style: SCORECARD_STYLE, meta: ['<meta name="referrer" content="no-referrer">'] }),
    headerSection(input),
    '<main>',
    overviewSection(input),
    instructionsSection(input),
    timelineSection(input, index),
    checkpointsSection(input, index),
    interventionsSection(input, index),
    claimsSection(input, index),
    actionsSection(input, index),
    recoverySection(input, index),
    scoringSection(input),
    '</main>',
    `<script type="application/json" id="package-data">${jsonForScriptBlock(input)}</script>`,
    `<script>${SCORECARD_SCRIPT}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
