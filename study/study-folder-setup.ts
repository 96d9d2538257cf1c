// A new study's folder (the layout: study-runner.ts): checked before anything is written, made with
// its instances/ folder, and taken back — only what this run made, only while empty — when the
// study is refused before it wrote study.json. And the one command that continues a study in it,
// as every message of the study names it.
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { STUDY_FILES, StudyError } from '../study-contract/study-folder.js';

/** The one way to continue a study, as every message of the study names it. */
export function studyResumeCommand(outDir: string): string {
  return `npm run study -- --resume ${outDir}`;
}

/**
 * The checks on a new study's folder, before anything is written: a file, or a non-empty
 * folder (a study or not), is refused with a path code (misuse), the folder untouched.
 */
export function checkNewStudyFolder(outDir: string): void {
  const dir = path.resolve(outDir);
  // The nearest part of the path that exists must be a folder: `--out FILE/x` is refused here, not by mkdir's ENOTDIR.
  let at = dir;
  while (!existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
  if (!statSync(at).isDirectory()) throw new StudyError('out_is_a_file', at === dir ? `${dir} is a file: --out needs a new (or empty) folder for the study; nothing was changed` : `${at} is a file, so ${dir} cannot be a folder: --out needs a new (or empty) folder for the study; nothing was changed`);
  if (at !== dir) return;
  const entries = readdirSync(dir);
  if (entries.length === 0) return;
  if (entries.includes(STUDY_FILES.plan)) throw new StudyError('out_not_empty', `${dir} holds a study already: a new study needs a new folder; continue that one with ${studyResumeCommand(dir)} (or recompute its report with npm run study -- --recompute ${dir}); nothing was changed`);
  throw new StudyError('out_not_empty', `${dir} is not empty and is not a study folder: a study needs a new (or empty) folder; nothing was changed`);
}

/** Makes `dir` and its missing parents; returns the topmost one it made (null: it existed). */
export function makeFolder(dir: string): string | null {
  try {
    return mkdirSync(dir, { recursive: true }) ?? null;
  } catch (error) {
    throw new StudyError('out_unwritable', `cannot make the study folder ${dir} (${error instanceof Error ? error.message : String(error)}); nothing was written`);
  }
}

/** Removes the folders makeFolder made, deepest first, and only while empty: never anything this run did not create. */
export function removeMadeFolders(made: string | null, deepest: string): void {
  if (made === null) return;
  for (let at = deepest; at.startsWith(made); at = path.dirname(at)) {
    try {
      rmdirSync(at);
    } catch {
      return; // not empty (someone else wrote there) or already gone: left as it is
    }
    if (at === made) return;
  }
}
