// The scorecard's claims: each claim the subject recorded, with the entries it cites as evidence
// (links) and its alternatives, grouped by wake; the first `count` shown, the rest named.
import { PACKAGE_FILES, type ClaimsWithEvidence } from './package-format.js';
import { leftOutParagraph } from './scorecard-bound-text.js';
import type { ScorecardInput } from './scorecard-input.js';
import { claimId, firstOfKey, refLink, type LinkIndex } from './scorecard-links.js';
import { wakeGroups, wakeText } from './scorecard-wakes.js';
import { htmlText } from './visible-text.js';

/** One claim's card; only the first card of a ref carries the id links point at. */
export function claimCard(index: LinkIndex, c: ClaimsWithEvidence[number], k: number, first: boolean): string {
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

/** The first `count` claims, by wake, and what is left out. */
export function claimsSection(input: ScorecardInput, index: LinkIndex, count: number): string {
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
    out.push(leftOutParagraph(rest.length, ['more claim', 'more claims'], rest, 'here', PACKAGE_FILES.claims));
  }
  out.push('</section>');
  return out.join('\n');
}
