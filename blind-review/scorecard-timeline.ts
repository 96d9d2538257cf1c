// The scorecard's timeline: one collapsible block per wake (and per time between two wakes), each
// showing its first entries (scorecard-shown.ts) and naming the rest. An entry shows its number,
// time, wake, kind and actor, its summary, the entries it rests on, the claims and chains that cite
// it (back-links, bounded) and its detail (cut at a bound; the whole entry is in the package).
import { PACKAGE_FILES, type TimelineEntry } from './package-format.js';
import { leftOutParagraph, plural } from './scorecard-bound-text.js';
import type { ScorecardInput } from './scorecard-input.js';
import { chainId, claimId, refLinks, type LinkIndex } from './scorecard-links.js';
import type { Block, Shown } from './scorecard-shown.js';
import { blocksStartOpen, OPEN_TIMELINE_UP_TO_ENTRIES, wakeText, wakeTitle } from './scorecard-wakes.js';
import { htmlAttribute, htmlText } from './visible-text.js';

/** A detail longer than this is cut in the page (the full entry stays in normalized_timeline.jsonl). */
export const MAX_DETAIL_CHARS = 4_000;
/** Back-links listed under one entry, per kind; the rest are counted. */
export const MAX_BACKLINKS = 50;

function capped(links: readonly string[]): string {
  const shown = links.slice(0, MAX_BACKLINKS).join(', ');
  return links.length > MAX_BACKLINKS ? `${shown} and ${links.length - MAX_BACKLINKS} more` : shown;
}

function detailText(detail: Record<string, unknown>): string {
  const full = JSON.stringify(detail, null, 2);
  if (full.length <= MAX_DETAIL_CHARS) return full;
  return `${full.slice(0, MAX_DETAIL_CHARS)}\n… ${full.length - MAX_DETAIL_CHARS} more characters (the whole entry is in normalized_timeline.jsonl)`;
}

/** One timeline entry, a link target, with the links to and from it. */
export function entryItem(index: LinkIndex, e: TimelineEntry): string {
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

/** One wake's block: its heading, its first `count` entries, and what it leaves out. */
function timelineBlock(input: ScorecardInput, index: LinkIndex, b: Block, k: number, count: number): string[] {
  const first = input.timeline[b.start]!;
  const last = input.timeline[b.end - 1]!;
  const span = first.t === last.t ? first.t : `${first.t}–${last.t}`;
  const heading = `${wakeTitle(b.wake)}, ${span}, ${plural(b.end - b.start, 'entry', 'entries')}`;
  const id = `timeline-block-${k + 1}`;
  const out = [`<details class="wake"${blocksStartOpen(input) ? ' open' : ''}><summary><h3 id="${id}">${htmlText(heading)}</h3></summary>`, `<ul class="entries" aria-labelledby="${id}">`];
  const upTo = b.start + count;
  for (let i = b.start; i < upTo; i++) out.push(entryItem(index, input.timeline[i]!));
  out.push('</ul>');
  if (upTo < b.end) {
    const rest = input.timeline.slice(upTo, b.end).map((e) => e.ref);
    out.push(leftOutParagraph(rest.length, ['more entry of this block', 'more entries of this block'], rest, 'here', `${PACKAGE_FILES.timeline} (one entry a line, by its number)`));
  }
  out.push('</details>');
  return out;
}

/** The timeline, one collapsed block per wake (and per gap between wakes), each showing its first `shown.blocks[k]` entries. */
export function timelineSection(input: ScorecardInput, index: LinkIndex, blocks: readonly Block[], shown: Shown): string {
  const out = ['<section id="timeline" aria-labelledby="timeline-h">', '<h2 id="timeline-h">Timeline</h2>'];
  if (input.timeline.length === 0) out.push('<p>The timeline is empty.</p>');
  const open = blocksStartOpen(input);
  if (input.timeline.length > 0) out.push(`<p>One block per wake (and per time between two wakes)${open ? '' : `, closed (the timeline has over ${OPEN_TIMELINE_UP_TO_ENTRIES} entries): open a block to read its entries; a link to an entry opens its block`}.</p>`);
  blocks.forEach((b, k) => out.push(...timelineBlock(input, index, b, k, shown.blocks[k]!)));
  out.push('</section>');
  return out.join('\n');
}
