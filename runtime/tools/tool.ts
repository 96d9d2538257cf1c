// What a tool the subject can use is to the runtime (issue 33 item 3): its own rules for the
// permission gate, what the gate needs to know of the world to judge an action, and how an
// allowed action is carried out as events. One file per row of the tool table (schema/tools.ts)
// implements it; runtime/tools/tool-set.ts holds them, and the wake loop's act step is
// propose → decide (runtime/permission-gate.ts) → carry out, through that set.
//
// A tool never appends on its own: the wake lends it `append`, which numbers the wake's default
// idempotency keys and reports progress to the controller (whose crash drills count on it), so
// a tool's events are recorded exactly as every other event of the wake.
import type { SubjectState } from '../../projector/subject-state.js';
import type { EventType, PayloadOf } from '../../schema/event-catalog.js';
import type { FaultSwitch } from '../../schema/fault-switch.js';
import type { ToolName } from '../../schema/tools.js';
import type { EventDraft } from '../../writer/protocol.js';
import type { GateFacts, PermissionInput, RuleResult } from '../gate-rule.js';
import type { ModelAction } from '../model-protocol.js';

/** The actions of one tool. */
export type ActionOf<T extends ToolName> = Extract<ModelAction, { tool: T }>;
/** Each tool's actions, by tool: what lets a map of tools take its own tool's action (tool-set.ts). */
export type ToolActions = { [T in ToolName]: ActionOf<T> };

/** What the wake lends a tool while the tool carries out its actions. */
export interface ToolWake {
  readonly wakeId: string;
  readonly workspaceRoot: string;
  readonly faults: FaultSwitch;
  /** The state the wake's actions are judged on (after an accepted plan revision). */
  readonly state: SubjectState;
  /** Appends one event of the wake, committed and reported before this returns; a null key gets the wake's numbered default. */
  append<T extends EventType>(event_type: T, actor: EventDraft['actor'], payload: PayloadOf<T>, causation_id: string, idempotency_key: string | null): Promise<{ event_id: string; seq: number }>;
  /** Counts how an allowed action ended: carried out, or failed in the carrying out. */
  counted(outcome: 'executions' | 'failures'): void;
}

/** An action the gate allowed, as the wake hands it to its tool. */
export interface AllowedAction {
  readonly proposal_id: string;
  /** The action's position in the answer (0-based): ids made from it are the wake's, never the model's. */
  readonly index: number;
  /** The PermissionDecided that allowed it: the cause of the tool's first event. */
  readonly permission_event_id: string;
  /** The idempotency key of this proposal's event `what`: a request the writer receives twice is stored once. */
  readonly keyOf: (what: string) => string;
}

/** One tool of the table, as the runtime judges and carries out its actions. */
export interface SubjectTool<T extends ToolName> {
  /** Its own gate rules, in GATE_RULES order: checked after tool_allowed, before the rules of every action. Pure. */
  gateRules(action: ToolActions[T], input: PermissionInput): RuleResult[];
  /** The tool for one wake, opened at the wake's first action on the state its actions are judged on. */
  open(wake: ToolWake): ToolInWake<T>;
}

/** One tool within one wake. */
export interface ToolInWake<T extends ToolName> {
  /** What the gate needs to know of the world to judge the action: the only I/O before the decision. */
  gateFacts(action: ToolActions[T]): GateFacts;
  /** Carries out an allowed action: its events in order, each committed before the next step. */
  carryOut(action: ToolActions[T], allowed: AllowedAction): Promise<void>;
}
