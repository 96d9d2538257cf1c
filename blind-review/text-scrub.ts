// How every text of a blind-review package is scrubbed (the rules at the top of
// blind-review/event-normalizer.ts): host paths, event ids, seqs cited in words or in a
// ds-model-output/2 answer's evidence_seqs list, and absolute times. Every text is scrubbed twice
// (as text, then as a string of the entry's detail), so each rule leaves its own output alone.
import { rewriteTimes } from './sim-time.js';

const UUID_RE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/**
 * An event cited by its seq in text, the way ds-model-output/2 subjects see events: "event #123"
 * (the reference policy's words), "seq 123" (the prompt's word, and the runtime's in a schema
 * violation's detail: "claims.0.evidence_seqs.1: seq 140"). Group 1 is the word, kept.
 */
const SEQ_REF_RE = /\b(event #|seq #?)(\d{1,15})\b/gi;
/**
 * A ds-model-output/2 answer's list of cited seqs in its raw JSON text, `"evidence_seqs": [137, 141]`
 * (group 1: the backslashes before the key's quotes, when the text quotes JSON in JSON; group 2: up
 * to the "["; group 3: the list). The list is read up to its "]" or, in an answer cut short, up to
 * the first character no list of numbers has; at most 4,096 characters (a list has at most 16 seqs).
 */
const SEQ_LIST_RE = /(\\*)"evidence_seqs\1"(\s*:\s*\[)([\s\d,"\\.-]{0,4096})/g;
/**
 * One cited seq in such a list: a number, bare or (in a wrong answer) quoted. No letters in either
 * expression, so that a list already of refs is left as it is (every text is scrubbed twice:
 * as text, then as a string of the detail). A number they do not read (1e2) is left to the leak check.
 */
const SEQ_IN_LIST_RE = /\\*"?(-?\d+(?:\.\d+)?)\\*"?/g;
/**
 * An absolute path up to and including a `workspace/` folder (at most 32 folders deep, so the match
 * stays linear in the text's length): what lies after it is workspace-relative.
 */
const WORKSPACE_PREFIX_RE = /(?<![\w.~-])\/(?:[^\s"'`<>|;,()[\]{}/]+\/){0,32}?workspace\//g;

/** Scrubs a text; `counted`: whether the ids it hides are counted (a summary repeats its detail's words: counted once, in the detail). */
export type Scrub = (text: string, counted?: boolean) => string;

/** The refs a scrub writes for the ids and seqs of kept events. */
export interface KnownRefs {
  readonly refOfEventId: ReadonlyMap<string, string>;
  readonly refOfSeq: ReadonlyMap<number, string>;
}

/**
 * The scrub of one timeline: `hostPathsGiven` become "[host path]" (under a workspace/, the path
 * becomes workspace-relative), ids and seqs of kept events their refs, any other "[id]" (told to
 * `countHidden` when counted), and times simulated time from `startMs`.
 */
export function scrubberOf(index: KnownRefs, hostPathsGiven: readonly string[], startMs: number, countHidden: () => void): Scrub {
  const hostPaths = [...new Set(hostPathsGiven.filter((p) => p.length > 1))].sort((a, b) => b.length - a.length);
  /** The ref of the kept event at `seq`, or "[id]" (counted) for a seq that names no kept event. */
  const refOrHidden = (seq: string, counted: boolean): string => {
    const ref = index.refOfSeq.get(Number(seq));
    if (ref !== undefined) return ref;
    if (counted) countHidden();
    return '[id]';
  };
  return (text, counted = true) => {
    let out = text;
    for (const p of hostPaths) {
      out = out.split(`${p}/workspace/`).join('');
      out = out.split(p).join('[host path]');
    }
    out = out.replace(WORKSPACE_PREFIX_RE, '');
    out = out.replace(UUID_RE, (id) => {
      const ref = index.refOfEventId.get(id.toLowerCase());
      if (ref !== undefined) return ref;
      if (counted) countHidden();
      return '[id]';
    });
    // A seq list becomes a list of quoted refs, as a ds-model-output/1 answer's evidence_event_ids read.
    out = out.replace(SEQ_LIST_RE, (_match, escapes: string, open: string, list: string) => {
      const quote = `${escapes}"`;
      const items = list.replace(SEQ_IN_LIST_RE, (_item, seq: string) => `${quote}${refOrHidden(seq, counted)}${quote}`);
      return `${quote}evidence_seqs${quote}${open}${items}`;
    });
    out = out.replace(SEQ_REF_RE, (_match, word: string, seq: string) => `${word.replace(/[\s#]+$/, '')} ${refOrHidden(seq, counted)}`);
    return rewriteTimes(out, startMs);
  };
}
