// The top of the scorecard: the header (the blind id and nothing else, and the sections'
// navigation), the overview (what the package is, how to read the page, what the page shows of the
// run within its bound) and the review instructions, the same text as review_instructions.md.
import { PACKAGE_FILES } from './package-format.js';
import { instructionsHtml, reviewInstructions } from './review-instructions.js';
import { pageBoundText } from './scorecard-bound-text.js';
import type { ScorecardInput } from './scorecard-input.js';
import type { Shown } from './scorecard-shown.js';
import { htmlText } from './visible-text.js';

/** The blind id (and nothing else of the run) and the sections' navigation. */
export function headerSection(input: ScorecardInput): string {
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

/** What the package is, how to read the page, and what it shows of the run within its bound. */
export function overviewSection(input: ScorecardInput, shown: Shown): string {
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

/** The review instructions: the text of review_instructions.md, the same in every package. */
export function instructionsSection(input: ScorecardInput): string {
  return [
    '<section id="instructions" aria-labelledby="instructions-h">',
    '<h2 id="instructions-h">Instructions</h2>',
    `<p>The same text as ${htmlText(PACKAGE_FILES.instructions)} of this package, the same in every package of this review.</p>`,
    instructionsHtml(reviewInstructions(input.manifest, input.expected.oracle_rules_version)),
    '</section>',
  ].join('\n');
}
