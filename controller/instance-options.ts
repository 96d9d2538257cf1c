// What a caller gives an instance run and gets back (controller/instance-runner.ts is the door),
// and InstanceInput: what the run's parts (instance.ts, instance-processes.ts, wake-sequence.ts,
// crash-drills.ts) share once instance-start.ts has checked and built it. Types only.
import type { ModelCallRules, PreRegistration } from '../design/prereg.js';
import type { ExperimentPlan } from '../design/experiment-plan.js';
import type { GROUP_CAPABILITIES, InstanceManifest } from '../design/manifest.js';
import type { ModelChoice } from '../design/model-choice.js';
import type { Scenario } from '../design/scenario.js';
import type { CostCapRaise } from '../design/cost-cap.js';
import type { ModelProtocol } from '../runtime/model-protocol.js';
import type { RuntimeModelConfig } from '../runtime/protocol.js';
import type { ChainHead } from '../schema/chain-head.js';
import type { EventEnvelope } from '../schema/envelope.js';
import type { FaultSwitch } from '../schema/fault-switch.js';
import type { HashString } from '../schema/hash.js';
import type { Head } from '../writer/protocol.js';
import type { IsolationOptions, IsolationPlan } from './isolation.js';
import type { BlockSeat } from './lockstep-block.js';
import type { ModelCheck } from './model-check.js';
import type { ControllerKey } from './key-store.js';

import type { Group } from '../design/groups.js';
export type { Group };

export interface CommonOptions {
  readonly runDir: string;
  readonly keyDir: string;
  /** Real-time factor of the virtual clock; null = as fast as possible. */
  readonly speed: number | null;
  /** Aborted = emergency stop (the CLI wires SIGINT/SIGTERM to it): a wake under way is cut, ended 'stopped' and never run again. */
  readonly signal: AbortSignal;
  /**
   * Aborted = stop at the next wake boundary: the wake under way finishes as planned, the stop is
   * recorded before the next one starts (its reason: the abort's). A cluster task's stop (a time
   * limit, a preemption) uses it so that a requeued instance has the same wakes as one that ran
   * through; `signal` still cuts the wake when the grace runs out. Unset: never.
   */
  readonly stopAtWakeEnd?: AbortSignal;
  /** Who asks (recorded with stops and resumes). */
  readonly operator: string;
  readonly scenariosDir: string;
  readonly isolation?: IsolationOptions;
  readonly log: (line: string) => void;
  /** The writer's and the runtime's stdout and stderr go to RUN_FILES.processLog in the run folder (a study's screen stays calm); unset: the controller's own. */
  readonly childOutputToRunFolder?: boolean;
  /** The fault harness's points in this process (npm run faults); FaultSwitch.off otherwise. */
  readonly faults?: FaultSwitch;
  /**
   * Asked after each wake with the events it recorded: a stop to record right there (the
   * unknown-outcome drill's, cli/drill.ts), or null to go on. Unset: never.
   */
  readonly stopAfterWake?: (wakeEvents: readonly EventEnvelope[]) => WakeStopOrder | null;
  /**
   * This instance's seat in its replicate's block (controller/lockstep-block.ts): its runtime's
   * start and each wake's runtime part wait for their turn, and each ended wake is reported.
   * Unset: the instance runs on its own.
   */
  readonly block?: BlockSeat;
}

/** A stop a caller orders after a wake: recorded like any stop, with this reason and operator. */
export interface WakeStopOrder {
  readonly reason: string;
  readonly operator: string;
}

export interface NewInstanceOptions extends CommonOptions {
  readonly preregFile: string;
  readonly seed: string;
  readonly group: Group;
  /** Virtual time of hour 0 (part of the schedule, so of its hash). */
  readonly startAt: string;
  readonly experimentId: string;
  readonly replicate: number;
  readonly groupBlindId: string;
  /** Wall clock, read once for the manifest's started_at. */
  readonly startedAt: string;
  readonly model: ModelChoice;
  /**
   * The scenario folder itself (npm run experiment --scenario DIR, a study's copy of it:
   * design/scenario-folder.ts); absent: `scenariosDir`/<the pre-registration's scenario id>.
   */
  readonly scenarioDir?: string | undefined;
  /**
   * The model's check before hour 0 made once for a whole study (controller/model-check.ts), used
   * instead of checking again; null: the model has nothing to check. Absent: the instance checks.
   */
  readonly modelCheck?: ModelCheck | null;
}

export interface ResumeOptions extends CommonOptions {
  /** --raise-cost-cap-usd with its reason: this instance's cost cap raised from this resume on (only when it stopped at its cap, controller/cost-cap-resume.ts). */
  readonly costCapRaise?: CostCapRaise | null;
}

export interface InstanceResult {
  readonly status: 'finished' | 'stopped';
  readonly runDir: string;
  readonly experimentId: string;
  readonly groupBlindId: string;
  readonly isolation: InstanceManifest['isolation'];
  readonly isolationSummary: string;
  readonly wakesTotal: number;
  /** Wakes this call ran (a resumed instance ran the others before). */
  readonly wakesRun: number;
  readonly head: Head;
  readonly finalHead: ChainHead | null;
  readonly stopReason: string | null;
  /** Everything that deviated from the plain path (kill points not reached, restarts, …). */
  readonly notes: readonly string[];
  /** The preflight's forecast signed into the manifest (null: nothing to measure, or a manifest before issue 31). */
  readonly forecast: InstanceManifest['forecast'];
}

/** A checked start or resume: everything the run's parts read, none of it changing during the run. */
export interface InstanceInput {
  readonly options: CommonOptions;
  readonly runDir: string;
  readonly key: ControllerKey;
  readonly plan: ExperimentPlan;
  readonly manifest: InstanceManifest;
  readonly manifestHash: HashString;
  readonly prereg: PreRegistration;
  readonly isolation: IsolationPlan;
  readonly scenario: Scenario;
  readonly model: RuntimeModelConfig;
  readonly protocol: ModelProtocol;
  readonly rules: ModelCallRules;
  /** A resume's raise of the cost cap, checked (controller/cost-cap-resume.ts) and recorded in its Resumed; null: none. */
  readonly costCapRaise?: CostCapRaise | null;
}
