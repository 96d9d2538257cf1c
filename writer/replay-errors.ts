// Why a replay refused to run (spec §10.4, §12.6). Each is typed so that callers (the
// replay and restore commands, a study runner) can tell a version question from a
// broken store or a bug, and each message says what to do instead.
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { CodedErrorOf } from '../foundation/typed-error.js';
import { describeDifference, type VersionDifference } from './projection-versions.js';

export type ReplayRefusalCode = 'usage' | 'version_mismatch' | 'missing_upcaster' | 'recorded_version_unavailable' | 'bad_upcast' | 'snapshot_unusable';

/** Each refusal's code is whole (classCode null: docs/errors.md lists them under replay); exit 2, yet no flag was wrong. */
export class ReplayRefusal extends CodedErrorOf<ReplayRefusalCode>(null, EXIT_CODES.misused) {
  override readonly name: string = 'ReplayRefusal';
  constructor(
    code: ReplayRefusalCode,
    message: string,
    /** What a script needs beside the message (the JSON's error object): the differences, the missing upcasters. */
    private readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(code, message);
  }
  override get endingDetails(): Readonly<Record<string, unknown>> {
    return this.details;
  }
  /** The store's recorded versions were refused on purpose: the usage after it would read as a typo. */
  override get usageHelps(): boolean {
    return false;
  }
}

/** Recorded versions differ from the ones this replay would use; nothing was replayed. */
export class VersionMismatchError extends ReplayRefusal {
  override readonly name: string = 'VersionMismatchError';
  constructor(readonly differences: readonly VersionDifference[]) {
    super(
      'version_mismatch',
      `refusing to replay under other versions than were recorded (spec §12.6):\n${differences.map((d) => `  - ${describeDifference(d)}`).join('\n')}\n` +
        'choose explicitly: --migrate (upcast old events, build a new projection under this build) or --use-recorded (replay with the recorded projector, if this build still carries it)',
      { differences },
    );
  }
}

export interface MissingUpcaster {
  /** "<event_type>@<from_version>", the registry key that has no entry. */
  readonly key: string;
  readonly first_seq: number;
  readonly events: number;
}

/** A migrating replay met an event version no registered upcaster lifts. */
export class MissingUpcasterError extends ReplayRefusal {
  override readonly name: string = 'MissingUpcasterError';
  constructor(readonly missing: readonly MissingUpcaster[]) {
    super(
      'missing_upcaster',
      `cannot migrate: no upcaster registered for ${missing.map((m) => `${m.key} (${m.events} event(s), first at seq ${m.first_seq})`).join(', ')}; ` +
        'add one to the upcaster registry, or replay with the build that recorded these events',
      { missing_upcasters: missing },
    );
  }
}

/** --use-recorded asked for a projector version that this build does not carry. */
export class RecordedVersionUnavailableError extends ReplayRefusal {
  override readonly name: string = 'RecordedVersionUnavailableError';
  constructor(
    readonly projection: string,
    readonly projectorVersion: string,
    carried: string | null,
  ) {
    super(
      'recorded_version_unavailable',
      `this build lacks projector ${projection}@${projectorVersion}, which recorded this store` +
        `${carried === null ? ` (it has no projection named ${projection} at all)` : ` (it carries ${carried})`}; ` +
        'replay with the build that recorded it, or use --migrate to build a new projection under this build',
    );
  }
}
