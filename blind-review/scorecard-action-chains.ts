// The scorecard's action chains: each proposed action as proposal → permission decision →
// execution intent → outcome, each step a link to its entry, a denial or a failed or unknown
// outcome marked; grouped by wake, the first `count` shown, the rest named.
import { PACKAGE_FILES, type ActionChains } from './package-format.js';
import { leftOutParagraph } from './scorecard-bound-text.js';
import type { ScorecardInput } from './scorecard-input.js';
import { chainId, firstOfKey, optionalRef, refLink, type LinkIndex } from './scorecard-links.js';
import { wakeGroups, wakeText } from './scorecard-wakes.js';
import { htmlText } from './visible-text.js';

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
/** A decision or outcome in words, in bold; marked when it went wrong. */
export const verdict = (text: string, bad: boolean): string => (bad ? `<strong class="bad">${htmlText(text)}</strong>` : `<strong>${htmlText(text)}</strong>`);

/** One chain's card; only the first card of a proposal carries the id links point at. */
export function chainCard(index: LinkIndex, a: ActionChains[number], k: number, first: boolean): string {
  const headingId = `chain-h-${k + 1}`;
  const target = a.target === null ? '' : ` ${a.target}`;
  const decisionExtra = [a.failed_rules.length > 0 ? ` Failed rules: ${a.failed_rules.map((r) => `<code>${htmlText(r)}</code>`).join(', ')}.` : '', a.repeat_of_denied ? ` ${verdict('Repeats a denied proposal.', true)}` : ''].join('');
  return [
    `<li${first ? ` id="${chainId(a.proposal)}"` : ''} class="chain link-target" tabindex="-1" aria-labelledby="${headingId}">`,
    `<h3 id="${headingId}">${htmlText(`${a.tool}.${a.op}${target}`)}, ${htmlText(a.t)}, ${htmlText(wakeText(a.wake))}</h3>`,
    `<p class="links">Rationale: ${htmlText(a.rationale)}</p>`,
    '<ol class="chain-steps">',
    `<li>Proposal: ${refLink(index, a.proposal)}</li>`,
    `<li>Decision: ${verdict(DECISION_TEXT[a.decision]!, BAD_DECISIONS.has(a.decision))} ${optionalRef(index, a.decision_ref, '(no entry)')}.${decisionExtra}</li>`,
    `<li>Intent: ${optionalRef(index, a.intent, 'none')}</li>`,
    `<li>Outcome: ${verdict(OUTCOME_TEXT[a.outcome]!, BAD_OUTCOMES.has(a.outcome))} ${optionalRef(index, a.outcome_ref, '(no entry)')}</li>`,
    '</ol>',
    '</li>',
  ].join('\n');
}

/** The first `count` action chains, by wake, and what is left out. */
export function actionsSection(input: ScorecardInput, index: LinkIndex, count: number): string {
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
    out.push(leftOutParagraph(rest.length, ['more action chain', 'more action chains'], rest, 'here', PACKAGE_FILES.actions));
  }
  out.push('</section>');
  return out.join('\n');
}
