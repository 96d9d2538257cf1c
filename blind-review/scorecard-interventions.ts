// The scorecard's interventions: each intervention of the run, when it was made and when it
// reached the subject, with links to its entries.
import type { ScorecardInput } from './scorecard-input.js';
import { refLinks, type LinkIndex } from './scorecard-links.js';
import { htmlText } from './visible-text.js';

export function interventionsSection(input: ScorecardInput, index: LinkIndex): string {
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
