// A study's replicates (spec §6): replicate k of groups A, B and C runs with the same seed, each in
// its own run folder <out>/instances/<G>-r<k>. Part of the study folder's contract (study-folder.ts):
// the study runner names the folders and seeds so, and a resumed study, a recomputation, the
// exporter and the leak check find the instances and their seeds by it.
import { GROUPS, type Group } from '../design/groups.js';

/** The name of an instance folder: its group and replicate (m[1], m[2]). */
export const INSTANCE_DIR_RE = new RegExp(`^([${GROUPS.join('')}])-r([1-9][0-9]*)$`);

/** The seed of replicate k: the same for A, B and C, different per replicate. */
export function replicateSeed(seed: string, replicate: number): string {
  return `${seed}-r${replicate}`;
}

export function instanceDirName(group: Group, replicate: number): string {
  return `${group}-r${replicate}`;
}
