// The typed errors a command can end with, each with its exit code and the stable code a script
// reads (docs/errors.md lists them per command). One table for every command, so a class is never
// mapped twice or differently. Rows are keyed by the error's `name` (every typed error sets it to
// its class name) rather than by class, so a command does not load every room of the apparatus
// to print one line; test/cli/failure-table.test.ts holds each name to its real class. A class
// with a code or problem of its own refines the code: `<prefix>_<its code>` (kebab-case turned
// snake_case), or its code alone where it is already a full name.
import { EXIT_CODES } from './exit-codes.js';

interface Row {
  readonly exitCode: number | ((ownCode: string | null) => number);
  /** The code, or the prefix of the error's own code. */
  readonly code: string;
  /** true: the error's own code is the whole code (it is already a full snake_case name). */
  readonly ownCodeIsWhole?: boolean;
  /** The message, when the error's own needs its context said first (screen and JSON). */
  readonly message?: (error: Error) => string;
  /** The screen's text, when it says more than the message (the JSON carries that as details). */
  readonly screen?: (error: Error) => string;
  /** false: exit 2 without the usage after it — the store's recorded versions were refused, no flag was wrong. */
  readonly usageHelps?: false;
  /** Fields of the error a script needs beside the message (the JSON's error object). */
  readonly details?: (error: Error) => Record<string, unknown>;
}

const { misused, failed } = EXIT_CODES;

/** A path that names nothing usable is misuse; a store that is there but cannot be read is a refusal. */
const storeReadExit = (own: string | null): number => (own === 'not_found' || own === 'not_a_store' ? misused : failed);

/** No key in the folder named, or a file named as the folder, is a wrong --key-dir (misuse); a key that is there but unsafe or malformed is refused. */
const keyStoreExit = (own: string | null): number => (own === 'missing' || own === 'not_a_folder' ? misused : failed);

export const FAILURE_TABLE: Readonly<Record<string, Row>> = {
  UsageError: { exitCode: misused, code: 'usage' },
  ModelFlagError: { exitCode: misused, code: 'usage_model_flags' },
  BundledPreregError: { exitCode: misused, code: 'bundled_prereg' },
  FaultArmingError: { exitCode: misused, code: 'usage_fault_switch' },
  VerifyInputError: { exitCode: misused, code: 'verify_input' },
  PreregInputError: { exitCode: misused, code: 'prereg_input' },
  KeyStoreError: { exitCode: keyStoreExit, code: 'key_store' },
  KeyFormatError: { exitCode: failed, code: 'key_format' },
  VirtualClockError: { exitCode: failed, code: 'virtual_clock' },
  InstanceError: { exitCode: failed, code: 'instance' },
  IsolationError: { exitCode: failed, code: 'isolation' },
  ModelChoiceError: { exitCode: failed, code: 'model_choice' },
  ModelConfigError: { exitCode: failed, code: 'model_config' },
  ManifestError: { exitCode: failed, code: 'manifest' },
  ExperimentPlanError: { exitCode: failed, code: 'experiment_plan' },
  InterventionPlanError: { exitCode: failed, code: 'intervention_plan' },
  ScenarioError: { exitCode: failed, code: 'scenario' },
  WorkspaceError: { exitCode: failed, code: 'workspace' },
  HeadSigningError: { exitCode: failed, code: 'head_signing' },
  WriterStartError: { exitCode: failed, code: 'writer_start' },
  OperatorResolutionRefusal: { exitCode: failed, code: 'repair', ownCodeIsWhole: true, screen: (e) => `REFUSED (${(e as Error & { code: string }).code}): ${e.message}` },
  StoreOpenError: { exitCode: failed, code: 'store_open' },
  StoreReadError: { exitCode: storeReadExit, code: 'store' },
  ReplayRefusal: { exitCode: misused, code: 'replay', ownCodeIsWhole: true, usageHelps: false },
  VersionMismatchError: { exitCode: misused, code: 'replay', ownCodeIsWhole: true, usageHelps: false, details: (e) => ({ differences: (e as Error & { differences: unknown }).differences }) },
  MissingUpcasterError: { exitCode: misused, code: 'replay', ownCodeIsWhole: true, usageHelps: false, details: (e) => ({ missing_upcasters: (e as Error & { missing: unknown }).missing }) },
  RecordedVersionUnavailableError: { exitCode: misused, code: 'replay', ownCodeIsWhole: true, usageHelps: false },
  ProjectionRefusal: { exitCode: failed, code: 'projection_refused', ownCodeIsWhole: true, message: (e) => `the projection refused a stored event, so the state cannot be rebuilt under these versions: ${e.message}` },
  StudyError: { exitCode: failed, code: 'study' },
  RunRecordError: { exitCode: failed, code: 'run_record' },
  OracleError: { exitCode: failed, code: 'oracle' },
  FactCheckError: { exitCode: failed, code: 'fact_check' },
  ExportRefusal: { exitCode: (own) => (own === 'export_out_not_a_folder' ? misused : failed), code: 'export' },
  LeakCheckInputError: { exitCode: failed, code: 'leak_check_input' },
  PackageDigestError: { exitCode: failed, code: 'package_digest' },
  ReviewRefusal: {
    exitCode: failed,
    code: 'review',
    screen: (e) => {
      const { problem, details } = e as Error & { problem: string; details: readonly string[] };
      return `REFUSED (${problem}): ${e.message}${details.map((d) => `\n  ${d}`).join('')}`;
    },
    details: (e) => ({ problem: (e as Error & { problem: string }).problem, details: (e as Error & { details: readonly string[] }).details }),
  },
  ReviewInputError: { exitCode: misused, code: 'review_input' },
  AuditInputError: { exitCode: failed, code: 'audit_input' },
  AuditIndexError: { exitCode: failed, code: 'audit_index' },
  FaultPlanError: { exitCode: misused, code: 'fault_plan' },
  FaultRerunRefusal: { exitCode: misused, code: 'fault_rerun', ownCodeIsWhole: true },
  NotJsonError: { exitCode: failed, code: 'not_json' },
};

function ownCodeOf(error: Error): string | null {
  const own = (error as { code?: unknown }).code ?? (error as { problem?: unknown }).problem;
  return typeof own === 'string' && own !== '' ? own.replaceAll('-', '_') : null;
}

/** The row of a known error, refined by its own code; null for an error no row names. */
export function commandFailureRule(error: Error): { exitCode: number; code: string; message: string; screen: string | null; usageHelps: boolean; details: Record<string, unknown> } | null {
  const row = Object.hasOwn(FAILURE_TABLE, error.name) ? FAILURE_TABLE[error.name] : undefined;
  if (row === undefined) return null;
  const own = ownCodeOf(error);
  const code = own === null ? row.code : row.ownCodeIsWhole || own.startsWith(`${row.code}_`) ? own : `${row.code}_${own}`;
  return {
    exitCode: typeof row.exitCode === 'number' ? row.exitCode : row.exitCode(own),
    code,
    message: row.message ? row.message(error) : error.message,
    screen: row.screen ? row.screen(error) : null,
    usageHelps: row.usageHelps !== false,
    details: row.details ? row.details(error) : {},
  };
}
