// What links where on the scorecard page: the entries the page shows (link targets), the claim
// and chain cards, and for each entry the claims and chains that cite it; and the links built on
// that index, which never point at nothing: an entry the page leaves out, or a ref the timeline
// lacks, is plain text saying so.
import type { ScorecardInput } from './scorecard-input.js';
import type { Block, Shown } from './scorecard-shown.js';
import { htmlAttribute, htmlText } from './visible-text.js';

/** What links where: refs that exist, and for each entry the claims and chains that mention it. */
export interface LinkIndex {
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

/** The index of what the page shows: `shown` entries of each block, of the claims and of the chains. */
export function linkIndexOf(input: ScorecardInput, blocks: readonly Block[], shown: Shown): LinkIndex {
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

export const claimId = (ref: string): string => `claim-${ref}`;
export const chainId = (ref: string): string => `chain-${ref}`;

/** A link to a timeline entry; an entry the page leaves out, or a ref the timeline lacks, as plain text saying so: never a dead link. */
export function refLink(index: LinkIndex, ref: string): string {
  if (!index.refs.has(ref) && index.all.has(ref)) return `<span class="ref off">${htmlText(ref)} (not shown here)</span>`;
  if (!index.refs.has(ref)) return `<span class="ref dangling">${htmlText(ref)} (not in this package)</span>`;
  return `<a class="ref" href="#${htmlAttribute(ref)}">${htmlText(ref)}</a>`;
}
export function refLinks(index: LinkIndex, refs: readonly string[], none = 'none'): string {
  return refs.length === 0 ? htmlText(none) : refs.map((r) => refLink(index, r)).join(', ');
}
export function optionalRef(index: LinkIndex, ref: string | null, none: string): string {
  return ref === null ? htmlText(none) : refLink(index, ref);
}

/** For each item, whether it is the first with its key: only the first card of a ref is its link target. */
export function firstOfKey<T>(items: readonly T[], key: (item: T) => string): boolean[] {
  const seen = new Set<string>();
  return items.map((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
