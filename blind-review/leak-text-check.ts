// Check (c) of the leak check (leak-check.ts): no text of a package holds a group label, a
// capability word or flag name, a word only some groups can produce, an instance folder name, a
// UUID, an event cited by its seq, a hash of the study (configuration or chain), any other
// forbidden string of the study (leak-context.ts) as a whole token, or another package's blind id.
// Each finding quotes the match with a little of the text around it.
import { GROUPS } from '../design/groups.js';
import { GROUP_CAPABILITIES } from '../design/manifest.js';
import { PlanRevisionAccepted, PlanRevisionRejected } from '../schema/events/plan-events.js';
import type { ForbiddenString, LeakContext } from './leak-context.js';
import type { FileFindings, LeakKind } from './leak-finding.js';

/** The group letters as a character class's body (design/groups.ts). */
const GROUP_LETTERS = GROUPS.join('');

const SNIPPET_CHARS = 40;

/** (c)'s fixed patterns: kind, what it is, and the expression. */
const CAPABILITY_FLAGS = Object.keys(GROUP_CAPABILITIES.A);
const GROUP_ONLY_WORDS = [PlanRevisionAccepted.name, PlanRevisionRejected.name, ...PlanRevisionRejected.payload.shape.reason_code.options];
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const PATTERNS: ReadonlyArray<{ readonly kind: LeakKind; readonly what: string; readonly re: RegExp }> = [
  // "group A", "Group: B", "group-C", "group_A", "(group B)": any separator of up to 3 characters.
  { kind: 'group_label', what: 'a group label', re: new RegExp(`\\bgroups?[\\s:_\\-=#'"]{0,3}[${GROUP_LETTERS}]\\b`, 'gi') },
  { kind: 'group_label', what: 'a JSON key "group"', re: /"group"\s*:/gi },
  { kind: 'capability_flag', what: 'a capability flag name', re: new RegExp(CAPABILITY_FLAGS.map(escape).join('|'), 'gi') },
  { kind: 'capability_word', what: 'the word capability', re: /capabilit/gi },
  { kind: 'group_only_vocabulary', what: 'a word only some groups can produce (a plan decision or its reason code)', re: new RegExp(GROUP_ONLY_WORDS.map(escape).join('|'), 'gi') },
  { kind: 'instance_name', what: 'an instance folder name', re: new RegExp(`\\b[${GROUP_LETTERS}]-r\\d+\\b`, 'g') },
  { kind: 'uuid', what: 'a UUID (event ids must be package refs)', re: /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi },
  // Seqs count events: the normalizer writes every seq cited in text as a ref (text-scrub.ts, SEQ_REF_RE).
  { kind: 'event_seq', what: 'an event cited by its seq (seqs must be package refs)', re: /\b(?:event #|seq #?)\d/gi },
  // A ds-model-output/2 answer's "evidence_seqs": [137, 141] with a number left in it (a ref "E0012" is not one, nor
  // "[id]"). The key's quote is escaped as deep as the text nests JSON (\" in the timeline, &quot; in the page); the
  // list is read up to its "]", at most 4,096 characters.
  { kind: 'event_seq', what: 'a list of cited seqs (evidence_seqs) holding a number (seqs must be package refs)', re: /evidence_seqs(?:\\|"|&quot;|&#34;|&#x22;){0,8}\s*:\s*\[(?:\[id\]|[^\]]){0,4096}?(?<![A-Za-z0-9])\d/gi },
];
const HEX_TOKEN_RE = /(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])/gi;

function snippet(text: string, at: number, length: number): string {
  const from = Math.max(0, at - SNIPPET_CHARS);
  const to = Math.min(text.length, at + length + SNIPPET_CHARS);
  return JSON.stringify(`${from > 0 ? '…' : ''}${text.slice(from, to)}${to < text.length ? '…' : ''}`);
}

/** Where `needle` (lower case) occurs in `lower` as a whole token: not flanked by a letter or a digit. */
function wholeTokenHits(lower: string, needle: string): number[] {
  const hits: number[] = [];
  let from = 0;
  for (let guard = 0; guard < 100_000; guard += 1) {
    const at = lower.indexOf(needle, from);
    if (at < 0) break;
    const before = at === 0 ? '' : lower[at - 1]!;
    const after = lower[at + needle.length] ?? '';
    if (!/[a-z0-9]/.test(before) && !/[a-z0-9]/.test(after)) hits.push(at);
    from = at + needle.length;
  }
  return hits;
}

/** (c) on one file's text: every pattern, every study hash, every searchable forbidden string, every other package's blind id. */
export function textChecks(text: string, f: FileFindings, context: LeakContext, searchable: readonly ForbiddenString[], otherBlindIds: readonly string[]): void {
  for (const p of PATTERNS) {
    for (const m of text.matchAll(p.re)) f.add(p.kind, `${p.what}: ${snippet(text, m.index, m[0].length)}`);
  }
  for (const m of text.matchAll(HEX_TOKEN_RE)) {
    const hit = context.hashes.get(m[0].toLowerCase());
    if (hit) f.add(hit.kind, `${hit.label}: ${snippet(text, m.index, m[0].length)}`);
  }
  const lower = text.toLowerCase();
  for (const s of searchable) {
    const needle = s.value.toLowerCase();
    // Whole tokens only: a seed "r7" must not match inside "mirror7s".
    for (const at of wholeTokenHits(lower, needle)) f.add(s.kind, `${s.label}: ${snippet(text, at, needle.length)}`);
  }
  for (const id of otherBlindIds) {
    const at = text.indexOf(id);
    if (at >= 0) f.add('foreign_blind_id', `the blind id of another package (${id}): ${snippet(text, at, id.length)}`);
  }
}
