// The scorecard's recovery reports: per process restart, its entry, the first checkpoint after it,
// and the execution intents open when the process stopped with how each was settled.
import { verdict } from './scorecard-action-chains.js';
import type { ScorecardInput } from './scorecard-input.js';
import { optionalRef, refLink, type LinkIndex } from './scorecard-links.js';
import { wakeText } from './scorecard-wakes.js';
import { htmlText } from './visible-text.js';

/** Every restart of a process, or that none happened. */
export function recoverySection(input: ScorecardInput, index: LinkIndex): string {
  const out = ['<section id="recovery" aria-labelledby="recovery-h">', '<h2 id="recovery-h">Recovery reports</h2>'];
  if (input.recovery.length === 0) {
    out.push('<p>No process restarted.</p>', '</section>');
    return out.join('\n');
  }
  for (const r of input.recovery) {
    out.push(`<h3>${htmlText(`${r.process} restart at ${r.t}, ${wakeText(r.wake)}`)}</h3>`, `<p>Restart entry: ${refLink(index, r.restart_ref)}. First checkpoint after it: ${optionalRef(index, r.first_checkpoint_after, 'none recorded')}.</p>`);
    if (r.open_intents.length === 0) out.push('<p>No execution intent was open.</p>');
    else {
      const rows = r.open_intents.map((o) => `<tr><td>${refLink(index, o.intent)}</td><td>${verdict(o.settled_as, o.settled_as !== 'succeeded' && o.settled_as !== 'reconciled_happened')}</td><td>${optionalRef(index, o.settled_ref, 'not settled')}</td></tr>`);
      out.push('<table>', '<caption>Execution intents open when the process stopped, and how each was settled</caption>', '<thead><tr><th scope="col">Intent</th><th scope="col">Settled as</th><th scope="col">Settling entry</th></tr></thead>', `<tbody>\n${rows.join('\n')}\n</tbody>`, '</table>');
    }
  }
  out.push('</section>');
  return out.join('\n');
}
