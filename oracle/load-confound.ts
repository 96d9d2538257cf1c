// The load-confound check (issue 31 item 2; DESIGN §12 "Blocks under real load"; spec §5.2): the
// groups of a block ran side by side against one model server, so which of their calls failed
// should not depend on the group. Per block and per failure kind, the groups' counts of failed
// model calls are compared with the pre-registered tolerance (model_calls.load_confound_tolerance):
// a block whose groups differ by more is confounded by the server's load — the failures followed
// what else the server was doing, not the capability switches — and its instances count like
// instances without usable data, so no verdict of "supported" or "rejected" rests on it (rule 8,
// docs/oracle.md). Pure: the instances' failure counts in, the judgement out.
import { LOAD_CONFOUND_KINDS, type LoadConfoundKind, type LoadConfoundTolerance } from '../design/prereg.js';
import type { ByFailure } from '../schema/usable-data.js';
import { GROUPS, type Group } from '../design/groups.js';

export interface LoadInstance {
  readonly group: Group;
  readonly replicate: number;
  /** The instance's failed calls by kind (schema/usable-data.ts); null when its events were not read. */
  readonly byFailure: ByFailure | null;
}

export interface BlockLoad {
  readonly replicate: number;
  readonly by_group: Readonly<Record<Group, ByFailure | null>>;
  /** The kinds held to a tolerance (a null tolerance: not compared). */
  readonly compared: readonly LoadConfoundKind[];
  /** Per kind over its tolerance: "timeout: A 19, B 17, C 15 — differ by 4, tolerance 2". */
  readonly over: readonly string[];
  readonly confounded: boolean;
  readonly detail: string;
}

/** Why no block is checked, when the pre-registration fixes no tolerance. */
export const NO_TOLERANCE_DETAIL = 'the pre-registration fixes no load_confound_tolerance (model_calls): no block was checked for a load confound';

function describeKind(kind: LoadConfoundKind, counts: readonly (readonly [Group, number])[], tolerance: number): string {
  const values = counts.map(([, n]) => n);
  return `${kind}: ${counts.map(([g, n]) => `${g} ${n}`).join(', ')} — differ by ${Math.max(...values) - Math.min(...values)}, tolerance ${tolerance}`;
}

/** One block: its groups' counts per kind against the tolerance; groups whose events were not read are left out (they are no data already). */
function judgeBlock(replicate: number, members: readonly LoadInstance[], tolerance: LoadConfoundTolerance): BlockLoad {
  const byGroup = Object.fromEntries(GROUPS.map((g) => [g, members.find((m) => m.group === g)?.byFailure ?? null])) as Record<Group, ByFailure | null>;
  const read = GROUPS.flatMap((g) => (byGroup[g] === null ? [] : [[g, byGroup[g]!] as const]));
  const compared = LOAD_CONFOUND_KINDS.filter((k) => tolerance[k] !== null);
  const over: string[] = [];
  for (const kind of compared) {
    const counts = read.map(([g, b]) => [g, b[kind]] as const);
    if (counts.length < 2) continue;
    const values = counts.map(([, n]) => n);
    if (Math.max(...values) - Math.min(...values) > tolerance[kind]!) over.push(describeKind(kind, counts, tolerance[kind]!));
  }
  const notCompared = LOAD_CONFOUND_KINDS.filter((k) => tolerance[k] === null);
  const unread = GROUPS.filter((g) => byGroup[g] === null);
  const scope = `${compared.length === 0 ? 'no kind compared' : `compared ${compared.join(', ')}`}${notCompared.length > 0 ? `; not compared (tolerance null): ${notCompared.join(', ')}` : ''}${unread.length > 0 ? `; ${unread.join(', ')} not read (not scored)` : ''}`;
  const detail = over.length > 0 ? `replicate ${replicate}: CONFOUNDED by the server's load — ${over.join('; ')} (${scope})` : `replicate ${replicate}: within tolerance (${scope})`;
  return { replicate, by_group: byGroup, compared, over, confounded: over.length > 0, detail };
}

/** Every block of the study, replicate by replicate; null tolerance: nothing is checked (the caller says NO_TOLERANCE_DETAIL). */
export function checkLoadConfound(instances: readonly LoadInstance[], tolerance: LoadConfoundTolerance | null): BlockLoad[] | null {
  if (tolerance === null) return null;
  const replicates = [...new Set(instances.map((i) => i.replicate))].sort((a, b) => a - b);
  return replicates.map((r) => judgeBlock(r, instances.filter((i) => i.replicate === r), tolerance));
}
