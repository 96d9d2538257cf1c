// What a leak check reads: packages (a folder name and its files' text), at most as many as a
// study has instances; and its refusal of input it cannot check (a folder that is not one, a study
// with more instances than a study may have).
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { PACKAGE_FILE_NAMES } from './package-format.js';

export interface PackageFiles {
  /** The package's folder name (its blind id if the export is right). */
  readonly name: string;
  readonly files: ReadonlyMap<string, string>;
}

/** At most this many packages are read (the study bound). */
export const MAX_PACKAGES = 99;

/** The files every package holds, and only those. */
export const EXPECTED_FILES = new Set(PACKAGE_FILE_NAMES);

export class LeakCheckInputError extends TypedErrorOf('leak_check_input', EXIT_CODES.failed) {
  override readonly name = 'LeakCheckInputError';
}
