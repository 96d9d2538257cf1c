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
// is HTML-escaped and every control character in it shown as a visible \uXXXX (visible-text.ts):
// no raw NUL, ESC, DEL or C1 byte reaches the file. The package data the page shows (all but the
// timeline, which is normalized_timeline.jsonl beside it) is also embedded as JSON with "<" and
// the controls JSON leaves raw written as \u escapes, so no string can close its <script> element.
//
// Readable at any size (issue 32): the timeline is collapsed by wake (one <details> per wake; a
// link to an entry opens its wake), and the page is held to MAX_SCORECARD_BYTES
// (scorecard-budget.ts): when a run is too large, each wake's timeline, the claims and the action
// chains show a prefix, the rest is named in place with the file that holds it, and the overview
// says how much is shown. Further bounds: at most MAX_TIMELINE_ENTRIES entries (more is refused),
// a detail shows at most MAX_DETAIL_CHARS, an entry lists at most MAX_BACKLINKS claims and chains
// citing it.
//
// The page is rendered here, not by the script, so it reads without JavaScript and a test can
// check every id and link without a browser.
// Why one file: it is one page, rendered in one pass; its sections share one index of the refs and
// the link helpers built on it (its style and script are files of their own, named by hash).
import { z } from 'zod';
import { HARD_FAILURE_IDS } from '../design/prereg.js';
import { cspHash } from '../foundation/csp-hash.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { htmlAttribute, htmlText } from './visible-text.js';
import { offlinePageHead } from '../foundation/offline-page.js';
import { CHECKPOINT_FIELDS } from '../oracle/checkpoint-match.js';
import { DIMENSIONS } from '../oracle/continuity-score.js';
import { ActionChains, ClaimsWithEvidence, ExpectedCheckpoints, Interventions, PACKAGE_FILES, PackageManifest, RecoveryReports, ReviewerScores, StateCheckpoints, TimelineEntry } from './package-format.js';
import { instructionsHtml, reviewInstructions } from './review-instructions.js';
import type { ScorecardData } from './scorecard-data.js';
import { fitLists, MAX_SCORECARD_BYTES } from './scorecard-budget.js';
import { SCORECARD_SCRIPT } from './scorecard-script.js';
import { SCORECARD_STYLE } from './scorecard-style.js';

/**
 * 72 simulated hours produce a few thousand entries. The page shows what fits its byte bound of any
 * timeline; this bound only keeps the measuring of every entry (to fit them) bounded: more is refused.
 */
export const MAX_TIMELINE_ENTRIES = 200_000;
/** A detail longer than this is cut in the page (the full entry stays in normalized_timeline.jsonl). */
export const MAX_DETAIL_CHARS = 4_000;
/** A timeline of at most this many entries reads in one scroll: its wake blocks start open; a longer one starts collapsed. */
export const OPEN_TIMELINE_UP_TO_ENTRIES = 150;
/** Back-links listed under one entry, per kind; the rest are counted. */
export const MAX_BACKLINKS = 50;

/**
 * JSON for a `<script type="application/json">` block: `<` (and the two line separators some
 * tools mishandle) as \u escapes, so no value can write `</script>` or `<!--` into the page.
 * JSON.parse reads the escapes back to the same strings.
 */
export function jsonForScriptBlock(value: unknown): string {
  // JSON.stringify escapes C0 and lone surrogates itself; DEL and C1 it leaves raw.
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029')
    .replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

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
  /** Entries shown on the page: link targets. */
  readonly refs: ReadonlySet<string>;
  /** Every entry of the timeline, shown or not. */
  readonly all: ReadonlySet<string>;
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

/** What the page shows of the parts that grow with the run: a prefix of each wake's entries, of the claims, of the chains. */
interface Shown {
  readonly blocks: readonly number[];
  readonly claims: number;
  readonly actions: number;
}

/** A run of timeline entries of one wake (or of the time between two wakes), [start, end). */
interface Block {
  readonly start: number;
  readonly end: number;
  readonly wake: string | null;
}

function blocksOf(timeline: readonly TimelineEntry[]): Block[] {
  const out: Block[] = [];
  for (let i = 0; i < timeline.length; ) {
    const wake = timeline[i]!.wake;
    let j = i;
    while (j < timeline.length && timeline[j]!.wake === wake) j++;
    out.push({ start: i, end: j, wake });
    i = j;
  }
  return out;
}

function indexOf(input: Input, blocks: readonly Block[], shown: Shown): Index {
  const refs = new Set<string>();
  blocks.forEach((b, k) => {
    for (let i = b.start; i < b.start + shown.blocks[k]!; i++) refs.add(input.timeline[i]!.ref);
  });
  const citedBy = new Map<string, string[]>();
  const claimCards = new Set<string>();
  for (const c of input.claims.slice(0, shown.claims)) {
    claimCards.add(c.ref);
    for (const e of c.evidence) push(citedBy, e.ref, c.ref);
  }
  const inChains = new Map<string, string[]>();
  const chainCards = new Set<string>();
  for (const a of input.actions.slice(0, shown.actions)) {
    chainCards.add(a.proposal);
    for (const r of [a.proposal, a.decision_ref, a.intent, a.outcome_ref]) if (r !== null) push(inChains, r, a.proposal);
  }
  return { refs, all: new Set(input.timeline.map((e) => e.ref)), claimCards, citedBy, inChains, chainCards };
}

const claimId = (ref: string): string => `claim-${ref}`;
const chainId = (ref: string): string => `chain-${ref}`;

/** A link to a timeline entry; an entry the page leaves out, or a ref the timeline lacks, as plain text saying so: never a dead link. */
function refLink(index: Index, ref: string): string {
  if (!index.refs.has(ref) && index.all.has(ref)) return `<span class="ref off">${htmlText(ref)} (not shown here)</span>`;
  if (!index.refs.has(ref)) return `<span class="ref dangling">${htmlText(ref)} (not in this package)</span>`;
  return `<a class="ref" href="#${htmlAttribute(ref)}">${htmlText(ref)}</a>`;
}
function refLinks(index: Index, refs: readonly string[], none = 'none'): string {
  return refs.length === 0 ? htmlText(none) : refs.map((r) => refLink(index, r)).join(', ');
}
function optionalRef(index: Index, ref: string | null, none: string): string {
  return ref === null ? htmlText(none) : refLink(index, ref);
}
const orNone = (value: string | null): string => (value === null ? '<span class="dangling">none</span>' : htmlText(value));
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
    `<h1>Reviewer scorecard <span id="blind-id">${htmlText(input.manifest.blind_id)}</span></h1>`,
    `<nav aria-label="Sections"><ul>${nav.map(([id, label]) => `<li><a href="#${id}">${label}</a></li>`).join('')}</ul></nav>`,
    '</header>',
  ].join('\n');
}

/** The thousands separated, for a reader: 1,048,576. */
const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
const plural = (n: number, one: string, many: string): string => `${grouped(n)} ${n === 1 ? one : many}`;

/** What the page shows of the run, and where the rest is: stated whether or not the bound was hit. */
function pageBoundText(input: Input, shown: Shown): string {
  const entries = shown.blocks.reduce((s, n) => s + n, 0);
  const bound = `This page is held to at most ${grouped(MAX_SCORECARD_BYTES)} bytes.`;
  if (entries === input.timeline.length && shown.claims === input.claims.length && shown.actions === input.actions.length) return `${bound} Everything of this package is shown.`;
  return `${bound} This run is larger: the page shows ${grouped(entries)} of ${plural(input.timeline.length, 'timeline entry', 'timeline entries')} (the first ones of every wake), ${grouped(shown.claims)} of ${plural(input.claims.length, 'claim', 'claims')} and ${grouped(shown.actions)} of ${plural(input.actions.length, 'action chain', 'action chains')}. What is left out is named where it would be, and is in the package's files: ${PACKAGE_FILES.timeline} (every entry, one a line), ${PACKAGE_FILES.claims} and ${PACKAGE_FILES.actions}. An entry left out reads "(not shown here)" where it is cited.`;
}

function overviewSection(input: Input, shown: Shown): string {
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
    `<dl class="meta">\n${meta.map(([k, v]) => `<dt>${htmlText(k)}</dt><dd>${htmlText(v)}</dd>`).join('\n')}\n</dl>`,
    `<p id="page-bound">${htmlText(pageBoundText(input, shown))}</p>`,
    '</section>',
  ].join('\n');
}

function entryItem(index: Index, e: TimelineEntry): string {
  const out = [
    `<li id="${htmlAttribute(e.ref)}" class="entry link-target" tabindex="-1">`,
    `<p class="entry-head"><span class="ref">${htmlText(e.ref)}</span><span>${htmlText(e.t)}</span><span>${htmlText(wakeText(e.wake))}</span><span>kind: <code>${htmlText(e.kind)}</code></span><span>actor: ${htmlText(e.actor)}</span></p>`,
    `<p class="summary">${htmlText(e.summary)}</p>`,
  ];
  if (e.refs.length > 0) out.push(`<p class="links">Rests on: ${refLinks(index, e.refs)}</p>`);
  if (index.claimCards.has(e.ref)) out.push(`<p class="links">Claim recorded here: <a href="#${claimId(e.ref)}">claim ${htmlText(e.ref)}</a></p>`);
  const citing = index.citedBy.get(e.ref) ?? [];
  if (citing.length > 0) out.push(`<p class="links">Cited as evidence by claims: ${capped(citing.map((c) => `<a href="#${claimId(c)}">claim ${htmlText(c)}</a>`))}</p>`);
  const chains = index.inChains.get(e.ref) ?? [];
  if (chains.length > 0) out.push(`<p class="links">In action chain: ${capped(chains.map((p) => `<a href="#${chainId(p)}">chain ${htmlText(p)}</a>`))}</p>`);
  if (Object.keys(e.detail).length > 0) out.push(`<details><summary>Detail of ${htmlText(e.ref)}</summary><pre>${htmlText(detailText(e.detail))}</pre></details>`);
  out.push('</li>');
  return out.join('\n');
}

/** "3 more entries of this wake (E0412–E0414) are not shown …": what a list leaves out, and where it is. */
function leftOutText(count: number, what: [string, string], refs: readonly string[], where: string, file: string): string {
  const range = refs.length === 0 ? '' : refs.length === 1 ? ` (${refs[0]})` : ` (${refs[0]}–${refs[refs.length - 1]})`;
  return `${plural(count, what[0], what[1])}${range} ${count === 1 ? 'is' : 'are'} not shown ${where}: this page is held to ${grouped(MAX_SCORECARD_BYTES)} bytes. ${count === 1 ? 'It is' : 'They are'} in ${file} of this package.`;
}

/** The timeline, one collapsed block per wake (and per gap between wakes), each showing its first `shown.blocks[k]` entries. */
function timelineSection(input: Input, index: Index, blocks: readonly Block[], shown: Shown): string {
  const out = ['<section id="timeline" aria-labelledby="timeline-h">', '<h2 id="timeline-h">Timeline</h2>'];
  if (input.timeline.length === 0) out.push('<p>The timeline is empty.</p>');
  const open = input.timeline.length <= OPEN_TIMELINE_UP_TO_ENTRIES;
  if (input.timeline.length > 0) out.push(`<p>One block per wake (and per time between two wakes)${open ? '' : `, closed (the timeline has over ${OPEN_TIMELINE_UP_TO_ENTRIES} entries): open a block to read its entries; a link to an entry opens its block`}.</p>`);
  blocks.forEach((b, k) => {
    const first = input.timeline[b.start]!;
    const last = input.timeline[b.end - 1]!;
    const span = first.t === last.t ? first.t : `${first.t}–${last.t}`;
    const heading = `${b.wake === null ? 'Between wakes' : `Wake ${b.wake}`}, ${span}, ${plural(b.end - b.start, 'entry', 'entries')}`;
    const id = `timeline-block-${k + 1}`;
    out.push(`<details class="wake"${open ? ' open' : ''}><summary><h3 id="${id}">${htmlText(heading)}</h3></summary>`, `<ul class="entries" aria-labelledby="${id}">`);
    const upTo = b.start + shown.blocks[k]!;
    for (let i = b.start; i < upTo; i++) out.push(entryItem(index, input.timeline[i]!));
    out.push('</ul>');
    if (upTo < b.end) {
      const rest = input.timeline.slice(upTo, b.end).map((e) => e.ref);
      out.push(`<p class="left-out">${htmlText(leftOutText(rest.length, ['more entry of this block', 'more entries of this block'], rest, 'here', `${PACKAGE_FILES.timeline} (one entry a line, by its number)`))}</p>`);
    }
    out.push('</details>');
  });
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
    `<p>The same text as ${htmlText(PACKAGE_FILES.instructions)} of this package, the same in every package of this review.</p>`,
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
  const weights = m.checkpoint_fields.map((f) => `<code>${htmlText(f)}</code> ${htmlText(String(m.checkpoint_field_weights[f]))}`).join(', ');
  out.push(
    `<p>Per wake, the <strong>expected</strong> checkpoint (${htmlText(PACKAGE_FILES.expected)}: the oracle's, computed before the run from the pre-registered rules, version ${htmlText(input.expected.oracle_rules_version)}, the scenario and the intervention plan only) above the checkpoint the subject <strong>recorded</strong> at the end of the wake. The instructions say when a recorded field is equal to the expected one. Field weights: ${weights || 'none'}.</p>`,
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
  const head = ['Wake', 'Row', 'Time', 'Entry', ...CHECKPOINT_FIELDS, 'Evidence, or why expected'].map((h) => `<th scope="col">${htmlText(h)}</th>`).join('');
  const rows: string[] = [];
  for (const wake of wakes) {
    const expected = expectedBy.get(wake);
    const recorded = recordedBy.get(wake) ?? [];
    const unscored = unscoredBy.get(wake);
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
  }
  out.push('<div class="table-scroll">', '<table class="checkpoints">', '<caption>Per wake: the expected checkpoint, then the recorded one; "none" is an empty field.</caption>', `<thead><tr>${head}</tr></thead>`, `<tbody>\n${rows.join('\n')}\n</tbody>`, '</table>', '</div>', '</section>');
  return out.join('\n');
}

function interventionsSection(input: Input, index: Index): string {
  const out = ['<section id="interventions" aria-labelledby="interventions-h">', '<h2 id="interventions-h">Interventions</h2>'];
  if (input.interventions.length === 0) out.push('<p>None.</p>');
  else {
    out.push('<ul>');
    for (const i of input.interventions) out.push(`<li><strong><code>${htmlText(i.kind)}</code></strong> at ${htmlText(i.t)}, reached the subject at ${htmlText(i.delivered_at)}: ${htmlText(i.description)} <span class="links">Entries: ${refLinks(index, i.refs)}</span></li>`);
    out.push('</ul>');
  }
  out.push('</section>');
  return out.join('\n');
}

/** For each item, whether it is the first with its key: only the first card of a ref is its link target. */
function firstOfKey<T>(items: readonly T[], key: (item: T) => string): boolean[] {
  const seen = new Set<string>();
  return items.map((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function claimCard(index: Index, c: ClaimsWithEvidence[number], k: number, first: boolean): string {
  const headingId = `claim-h-${k + 1}`;
  const evidence =
    c.evidence.length === 0
      ? '<p>No evidence cited.</p>'
      : `<ul>${c.evidence.map((e) => `<li>${refLink(index, e.ref)} <code>${htmlText(e.kind)}</code>: ${htmlText(e.summary)}</li>`).join('')}</ul>`;
  const alternatives = c.alternatives.length === 0 ? '' : `<h4>Alternatives</h4><ul>${c.alternatives.map((a) => `<li>${htmlText(a)}</li>`).join('')}</ul>`;
  return [
    `<li${first ? ` id="${claimId(c.ref)}"` : ''} class="claim link-target" tabindex="-1" aria-labelledby="${headingId}">`,
    `<h3 id="${headingId}">${htmlText(c.claim_type)} claim ${htmlText(c.ref)}, ${htmlText(c.t)}, ${htmlText(wakeText(c.wake))}</h3>`,
    `<p class="statement">${htmlText(c.statement)}</p>`,
    `<p class="links">Recorded at entry ${refLink(index, c.ref)}. Confidence: ${c.confidence === null ? 'not given' : htmlText(String(c.confidence))}.</p>`,
    alternatives,
    `<h4>Evidence</h4>${evidence}`,
    '</li>',
  ].join('\n');
}

/** Consecutive items of one wake (claims and chains come in timeline order), as [wake, items] runs. */
function byWake<T extends { readonly wake: string | null }>(items: readonly T[]): Array<{ wake: string | null; items: Array<{ item: T; k: number }> }> {
  const out: Array<{ wake: string | null; items: Array<{ item: T; k: number }> }> = [];
  items.forEach((item, k) => {
    const last = out[out.length - 1];
    if (last !== undefined && last.wake === item.wake) last.items.push({ item, k });
    else out.push({ wake: item.wake, items: [{ item, k }] });
  });
  return out;
}

/** One collapsible group per wake, open when the timeline is short (as its blocks). */
function wakeGroups<T extends { readonly wake: string | null }>(input: Input, items: readonly T[], what: [string, string], listClass: string, card: (item: T, k: number) => string): string[] {
  const open = input.timeline.length <= OPEN_TIMELINE_UP_TO_ENTRIES;
  return byWake(items).flatMap((g) => [
    `<details class="by-wake"${open ? ' open' : ''}><summary>${htmlText(`${g.wake === null ? 'Between wakes' : `Wake ${g.wake}`}: ${plural(g.items.length, what[0], what[1])}`)}</summary>`,
    `<ul class="${listClass}">`,
    ...g.items.map(({ item, k }) => card(item, k)),
    '</ul>',
    '</details>',
  ]);
}

/** The first `count` claims, by wake, and what is left out. */
function claimsSection(input: Input, index: Index, count: number): string {
  const out = ['<section id="claims" aria-labelledby="claims-h">', '<h2 id="claims-h">Claims</h2>'];
  if (input.claims.length === 0) {
    out.push('<p>No claim was recorded.</p>', '</section>');
    return out.join('\n');
  }
  out.push('<p>Each claim with the entries it cites as evidence, by wake; follow an evidence link to read the entry.</p>');
  const first = firstOfKey(input.claims, (c) => c.ref);
  out.push(...wakeGroups(input, input.claims.slice(0, count), ['claim', 'claims'], 'claims', (c, k) => claimCard(index, c, k, first[k]!)));
  if (count < input.claims.length) {
    const rest = input.claims.slice(count).map((c) => c.ref);
    out.push(`<p class="left-out">${htmlText(leftOutText(rest.length, ['more claim', 'more claims'], rest, 'here', PACKAGE_FILES.claims))}</p>`);
  }
  out.push('</section>');
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
const word = (text: string, bad: boolean): string => (bad ? `<strong class="bad">${htmlText(text)}</strong>` : `<strong>${htmlText(text)}</strong>`);

function chainCard(index: Index, a: ActionChains[number], k: number, first: boolean): string {
  const headingId = `chain-h-${k + 1}`;
  const target = a.target === null ? '' : ` ${a.target}`;
  const decisionExtra = [a.failed_rules.length > 0 ? ` Failed rules: ${a.failed_rules.map((r) => `<code>${htmlText(r)}</code>`).join(', ')}.` : '', a.repeat_of_denied ? ` ${word('Repeats a denied proposal.', true)}` : ''].join('');
  return [
    `<li${first ? ` id="${chainId(a.proposal)}"` : ''} class="chain link-target" tabindex="-1" aria-labelledby="${headingId}">`,
    `<h3 id="${headingId}">${htmlText(`${a.tool}.${a.op}${target}`)}, ${htmlText(a.t)}, ${htmlText(wakeText(a.wake))}</h3>`,
    `<p class="links">Rationale: ${htmlText(a.rationale)}</p>`,
    '<ol class="chain-steps">',
    `<li>Proposal: ${refLink(index, a.proposal)}</li>`,
    `<li>Decision: ${word(DECISION_TEXT[a.decision]!, BAD_DECISIONS.has(a.decision))} ${optionalRef(index, a.decision_ref, '(no entry)')}.${decisionExtra}</li>`,
    `<li>Intent: ${optionalRef(index, a.intent, 'none')}</li>`,
    `<li>Outcome: ${word(OUTCOME_TEXT[a.outcome]!, BAD_OUTCOMES.has(a.outcome))} ${optionalRef(index, a.outcome_ref, '(no entry)')}</li>`,
    '</ol>',
    '</li>',
  ].join('\n');
}

/** The first `count` action chains, by wake, and what is left out. */
function actionsSection(input: Input, index: Index, count: number): string {
  const out = ['<section id="actions" aria-labelledby="actions-h">', '<h2 id="actions-h">Action chains</h2>'];
  if (input.actions.length === 0) {
    out.push('<p>No action was proposed.</p>', '</section>');
    return out.join('\n');
  }
  out.push('<p>Each proposed action, by wake: proposal, permission decision, execution intent, outcome.</p>');
  const first = firstOfKey(input.actions, (a) => a.proposal);
  out.push(...wakeGroups(input, input.actions.slice(0, count), ['action chain', 'action chains'], 'chains', (a, k) => chainCard(index, a, k, first[k]!)));
  if (count < input.actions.length) {
    const rest = input.actions.slice(count).map((a) => a.proposal);
    out.push(`<p class="left-out">${htmlText(leftOutText(rest.length, ['more action chain', 'more action chains'], rest, 'here', PACKAGE_FILES.actions))}</p>`);
  }
  out.push('</section>');
  return out.join('\n');
}

function recoverySection(input: Input, index: Index): string {
  const out = ['<section id="recovery" aria-labelledby="recovery-h">', '<h2 id="recovery-h">Recovery reports</h2>'];
  if (input.recovery.length === 0) {
    out.push('<p>No process restarted.</p>', '</section>');
    return out.join('\n');
  }
  for (const r of input.recovery) {
    out.push(`<h3>${htmlText(`${r.process} restart at ${r.t}, ${wakeText(r.wake)}`)}</h3>`, `<p>Restart entry: ${refLink(index, r.restart_ref)}. First checkpoint after it: ${optionalRef(index, r.first_checkpoint_after, 'none recorded')}.</p>`);
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
      `<label for="${htmlAttribute(id)}">${htmlText(d.name)} (weight ${htmlText(String(d.weight))})</label>`,
      `<p class="help" id="${htmlAttribute(id)}-help">Measured as: ${htmlText(d.measured_as)}</p>`,
      `<input type="number" id="${htmlAttribute(id)}" name="${htmlAttribute(id)}" min="0" max="100" step="any" inputmode="decimal" required aria-describedby="${htmlAttribute(id)}-help">`,
      '</div>',
    ].join('\n');
  });
  const failures = m.hard_failures.map((h) => {
    const id = `hf-${h.id}`;
    return [
      `<fieldset class="hard-failure" id="${htmlAttribute(id)}">`,
      `<legend><code>${htmlText(h.id)}</code>: ${htmlText(h.description)}</legend>`,
      `<input type="radio" id="${htmlAttribute(id)}-yes" name="${htmlAttribute(id)}" value="yes" required> <label for="${htmlAttribute(id)}-yes">Yes, found</label>`,
      `<input type="radio" id="${htmlAttribute(id)}-no" name="${htmlAttribute(id)}" value="no" required> <label for="${htmlAttribute(id)}-no">No, not found</label>`,
      '</fieldset>',
    ].join('\n');
  });
  return [
    '<section id="scoring" aria-labelledby="scoring-h">',
    '<h2 id="scoring-h">Scores</h2>',
    `<p>Score package ${htmlText(m.blind_id)} on each pre-registered dimension (0 to 100) and decide on every hard failure. "Save scores" downloads the scores as a JSON file; nothing is sent anywhere. Send that file as the <a href="#instructions">instructions</a> say.</p>`,
    // The version the saved file declares comes from the ReviewerScores schema, not from the script's text.
    `<form id="score-form" novalidate data-score-format-version="${htmlAttribute(ReviewerScores.shape.score_format_version.value)}">`,
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

/** The page and what it leaves out (0 each when everything is shown). */
export interface ScorecardPage {
  readonly html: string;
  /** Its size in UTF-8 bytes: at most MAX_SCORECARD_BYTES. */
  readonly bytes: number;
  readonly leftOut: { readonly timeline: number; readonly claims: number; readonly actions: number };
}

/** The page can show nothing of the run within its bound: its fixed parts alone are over it (export refuses, exit 1). */
export class ScorecardTooLarge extends TypedErrorOf('scorecard_too_large', EXIT_CODES.failed) {
  override readonly name = 'ScorecardTooLarge';
}

/** Re-fits after a render over the bound (links to left-out entries are longer than links): each try shrinks the budget by what was over. */
const MAX_FIT_TRIES = 8;
const FIT_SLACK_BYTES = 4 * 1024;

function renderWith(input: Input, blocks: readonly Block[], shown: Shown): string {
  const index = indexOf(input, blocks, shown);
  const csp = ["default-src 'none'", `style-src ${cspHash(SCORECARD_STYLE)}`, `script-src ${cspHash(SCORECARD_SCRIPT)}`, "base-uri 'none'", "form-action 'none'"].join('; ');
  // The page's data as JSON for a reader's tools (the script reads the manifest): what the page shows but the timeline, which is normalized_timeline.jsonl.
  const data = { manifest: input.manifest, expected: input.expected, checkpoints: input.checkpoints, interventions: input.interventions, claims: input.claims.slice(0, shown.claims), actions: input.actions.slice(0, shown.actions), recovery: input.recovery };
  return [
    // Refuse every fetch; only the inline style and script named by their hash may apply or run.
    ...offlinePageHead({ csp, title: `Reviewer scorecard ${input.manifest.blind_id}`, style: SCORECARD_STYLE, meta: ['<meta name="referrer" content="no-referrer">'] }),
    headerSection(input),
    '<main>',
    overviewSection(input, shown),
    instructionsSection(input),
    timelineSection(input, index, blocks, shown),
    checkpointsSection(input, index),
    interventionsSection(input, index),
    claimsSection(input, index, shown.claims),
    actionsSection(input, index, shown.actions),
    recoverySection(input, index),
    scoringSection(input),
    '</main>',
    `<script type="application/json" id="package-data">${jsonForScriptBlock(data)}</script>`,
    `<script>${SCORECARD_SCRIPT}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

function pageOf(input: Input, html: string, shown: Shown): ScorecardPage {
  const entries = shown.blocks.reduce((s, n) => s + n, 0);
  return { html, bytes: utf8Bytes(html), leftOut: { timeline: input.timeline.length - entries, claims: input.claims.length - shown.claims, actions: input.actions.length - shown.actions } };
}

/** The page within MAX_SCORECARD_BYTES: everything when it fits, else a prefix of each wake's entries, of the claims and of the chains (scorecard-budget.ts), the rest named in place. */
export function renderScorecardPage(data: ScorecardData): ScorecardPage {
  const input = checkInput(data);
  const blocks = blocksOf(input.timeline);
  const everything: Shown = { blocks: blocks.map((b) => b.end - b.start), claims: input.claims.length, actions: input.actions.length };
  const whole = renderWith(input, blocks, everything);
  if (utf8Bytes(whole) <= MAX_SCORECARD_BYTES) return pageOf(input, whole, everything);

  // Too large: measure each growing item as it would be shown, and what is left without any.
  const full = indexOf(input, blocks, everything);
  const firstClaim = firstOfKey(input.claims, (c) => c.ref);
  const firstChain = firstOfKey(input.actions, (a) => a.proposal);
  const entrySizes = input.timeline.map((e) => utf8Bytes(entryItem(full, e)) + 1);
  const claimSizes = input.claims.map((c, k) => utf8Bytes(claimCard(full, c, k, firstClaim[k]!)) + utf8Bytes(jsonForScriptBlock(c)) + 2);
  const chainSizes = input.actions.map((a, k) => utf8Bytes(chainCard(full, a, k, firstChain[k]!)) + utf8Bytes(jsonForScriptBlock(a)) + 2);
  const nothing: Shown = { blocks: blocks.map(() => 0), claims: 0, actions: 0 };
  const fixedBytes = utf8Bytes(renderWith(input, blocks, nothing));
  if (fixedBytes > MAX_SCORECARD_BYTES) throw new ScorecardTooLarge(`the scorecard's fixed parts (overview, instructions, checkpoints, interventions, recovery reports, the form) take ${fixedBytes} bytes, over the page's bound of ${MAX_SCORECARD_BYTES}: no page can show this package; its files hold everything`);
  let budget = MAX_SCORECARD_BYTES - fixedBytes - FIT_SLACK_BYTES;
  // The timeline half of the budget, split equally among its blocks; the claims and the chains a quarter each (unused shares flow to the rest).
  const lists = [...blocks.map((b) => ({ sizes: entrySizes.slice(b.start, b.end), weight: 2 / blocks.length })), { sizes: claimSizes, weight: 1 }, { sizes: chainSizes, weight: 1 }];
  for (let attempt = 0; attempt < MAX_FIT_TRIES; attempt++) {
    const counts = fitLists(lists, budget);
    const shown: Shown = { blocks: counts.slice(0, blocks.length), claims: counts[blocks.length]!, actions: counts[blocks.length + 1]! };
    const html = renderWith(input, blocks, shown);
    const over = utf8Bytes(html) - MAX_SCORECARD_BYTES;
    if (over <= 0) return pageOf(input, html, shown);
    budget -= over + FIT_SLACK_BYTES;
  }
  throw new ScorecardTooLarge(`the scorecard did not fit its bound of ${MAX_SCORECARD_BYTES} bytes in ${MAX_FIT_TRIES} tries (a bug of the fitting: report it)`);
}

/** The page's HTML: self-contained, the same for the same data (renderScorecardPage says what it left out). */
export function renderScorecard(data: ScorecardData): string {
  return renderScorecardPage(data).html;
}
