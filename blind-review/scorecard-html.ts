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
//
// This file is the page as a whole: its head and policy, the order of its sections, the embedded
// data, and fitting it to its bound. Each section is a file of its own (scorecard-overview.ts,
// scorecard-timeline.ts, scorecard-checkpoints.ts, scorecard-interventions.ts, scorecard-claims.ts,
// scorecard-action-chains.ts, scorecard-recovery.ts, scorecard-form.ts), all linking through one
// index of what the page shows (scorecard-links.ts); its style and script are files of their own,
// named by hash.
import { cspHash } from '../foundation/csp-hash.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { offlinePageHead } from '../foundation/offline-page.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { actionsSection, chainCard } from './scorecard-action-chains.js';
import { fitLists, MAX_SCORECARD_BYTES, type BudgetList } from './scorecard-budget.js';
import { checkpointsSection } from './scorecard-checkpoints.js';
import { claimCard, claimsSection } from './scorecard-claims.js';
import type { ScorecardData } from './scorecard-data.js';
import { scoringSection } from './scorecard-form.js';
import { checkScorecardInput, type ScorecardInput } from './scorecard-input.js';
import { interventionsSection } from './scorecard-interventions.js';
import { firstOfKey, linkIndexOf } from './scorecard-links.js';
import { headerSection, instructionsSection, overviewSection } from './scorecard-overview.js';
import { recoverySection } from './scorecard-recovery.js';
import { SCORECARD_SCRIPT } from './scorecard-script.js';
import { blocksOf, shownEntries, type Block, type Shown } from './scorecard-shown.js';
import { SCORECARD_STYLE } from './scorecard-style.js';
import { entryItem, timelineSection } from './scorecard-timeline.js';
import { jsonForScriptBlock } from './script-block-json.js';

const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

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

function renderWith(input: ScorecardInput, blocks: readonly Block[], shown: Shown): string {
  const index = linkIndexOf(input, blocks, shown);
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

function pageOf(input: ScorecardInput, html: string, shown: Shown): ScorecardPage {
  return { html, bytes: utf8Bytes(html), leftOut: { timeline: input.timeline.length - shownEntries(shown), claims: input.claims.length - shown.claims, actions: input.actions.length - shown.actions } };
}

/**
 * The lists scorecard-budget.ts fits, each item measured as it would be shown (a claim or a chain
 * also in the embedded data): the timeline half of the budget, split equally among its blocks; the
 * claims and the chains a quarter each (unused shares flow to the rest).
 */
function growingLists(input: ScorecardInput, blocks: readonly Block[], everything: Shown): BudgetList[] {
  const full = linkIndexOf(input, blocks, everything);
  const firstClaim = firstOfKey(input.claims, (c) => c.ref);
  const firstChain = firstOfKey(input.actions, (a) => a.proposal);
  const entrySizes = input.timeline.map((e) => utf8Bytes(entryItem(full, e)) + 1);
  const claimSizes = input.claims.map((c, k) => utf8Bytes(claimCard(full, c, k, firstClaim[k]!)) + utf8Bytes(jsonForScriptBlock(c)) + 2);
  const chainSizes = input.actions.map((a, k) => utf8Bytes(chainCard(full, a, k, firstChain[k]!)) + utf8Bytes(jsonForScriptBlock(a)) + 2);
  return [...blocks.map((b) => ({ sizes: entrySizes.slice(b.start, b.end), weight: 2 / blocks.length })), { sizes: claimSizes, weight: 1 }, { sizes: chainSizes, weight: 1 }];
}

/** A page too large whole: what is left without any growing item, then prefixes of each fitted into the rest, re-fitted while over. */
function fittedPage(input: ScorecardInput, blocks: readonly Block[], everything: Shown): ScorecardPage {
  const lists = growingLists(input, blocks, everything);
  const nothing: Shown = { blocks: blocks.map(() => 0), claims: 0, actions: 0 };
  const fixedBytes = utf8Bytes(renderWith(input, blocks, nothing));
  if (fixedBytes > MAX_SCORECARD_BYTES) throw new ScorecardTooLarge(`the scorecard's fixed parts (overview, instructions, checkpoints, interventions, recovery reports, the form) take ${fixedBytes} bytes, over the page's bound of ${MAX_SCORECARD_BYTES}: no page can show this package; its files hold everything`);
  let budget = MAX_SCORECARD_BYTES - fixedBytes - FIT_SLACK_BYTES;
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

/** The page within MAX_SCORECARD_BYTES: everything when it fits, else a prefix of each wake's entries, of the claims and of the chains (scorecard-budget.ts), the rest named in place. */
export function renderScorecardPage(data: ScorecardData): ScorecardPage {
  const input = checkScorecardInput(data);
  const blocks = blocksOf(input.timeline);
  const everything: Shown = { blocks: blocks.map((b) => b.end - b.start), claims: input.claims.length, actions: input.actions.length };
  const whole = renderWith(input, blocks, everything);
  if (utf8Bytes(whole) <= MAX_SCORECARD_BYTES) return pageOf(input, whole, everything);
  return fittedPage(input, blocks, everything);
}

/** The page's HTML: self-contained, the same for the same data (renderScorecardPage says what it left out). */
export function renderScorecard(data: ScorecardData): string {
  return renderScorecardPage(data).html;
}
