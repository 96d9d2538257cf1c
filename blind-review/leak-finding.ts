// What the leak check reports (leak-check.ts): a finding names the package, the file, a kind a
// person can act on (grouped here by the check that finds it, (a)–(e)) and a detail. Findings are
// bounded per kind and file: the excess is counted in one more finding, never dropped silently.
import { z } from 'zod';

export const LEAK_KINDS = [
  // (a)
  'missing_file',
  'extra_file',
  'unexpected_entry',
  'sealed_map_exposed',
  'package_name',
  'too_large',
  // (b)
  'key_paths',
  // (c)
  'group_label',
  'capability_word',
  'capability_flag',
  'group_only_vocabulary',
  'instance_name',
  'uuid',
  'event_seq',
  'foreign_blind_id',
  'experiment_id',
  'subject_id',
  'seed',
  'group_blind_id',
  'config_hash',
  'chain_hash',
  'host_path',
  // (d)
  'schema',
  'dangling_ref',
  // (e)
  'instructions_differ',
  'oracle_differs_in_replicate',
  'oracle_not_from_plan',
  // bounded output
  'more_findings',
] as const;
export const LeakKind = z.enum(LEAK_KINDS);
export type LeakKind = z.infer<typeof LeakKind>;

export const LeakFinding = z.strictObject({
  /** The package's folder name (its blind id), "(package folder)" for the folder holding the packages, or "(study)" for the study's instances together. */
  package: z.string(),
  file: z.string(),
  kind: LeakKind,
  detail: z.string().max(1_000),
});
export type LeakFinding = z.infer<typeof LeakFinding>;

/** At most this many findings of one kind per package file; the rest are counted in one more. */
export const MAX_FINDINGS_PER_KIND = 10;

/** Findings of one package file, bounded per kind (the excess is counted in one more finding). */
export class FileFindings {
  private readonly counts = new Map<LeakKind, number>();
  constructor(
    private readonly out: LeakFinding[],
    private readonly pkg: string,
    private readonly file: string,
  ) {}

  add(kind: LeakKind, detail: string): void {
    const n = (this.counts.get(kind) ?? 0) + 1;
    this.counts.set(kind, n);
    if (n <= MAX_FINDINGS_PER_KIND) this.out.push({ package: this.pkg, file: this.file, kind, detail: detail.slice(0, 1_000) });
  }

  close(): void {
    for (const [kind, n] of this.counts) {
      if (n > MAX_FINDINGS_PER_KIND) this.out.push({ package: this.pkg, file: this.file, kind: 'more_findings', detail: `${n - MAX_FINDINGS_PER_KIND} more finding(s) of kind ${kind} in this file` });
    }
  }
}

/** One line per finding, for the screen and for error messages. */
export function describeFinding(f: LeakFinding): string {
  return `${f.package}/${f.file}: ${f.kind}: ${f.detail}`;
}
