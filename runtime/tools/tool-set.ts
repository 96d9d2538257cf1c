// The tools of the table (schema/tools.ts), one file each: the map the permission gate takes a
// tool's rules from and the wake loop carries an allowed action out through. Its type is mapped
// over ToolName, so a row of the table without its tool here is a compile error, and each tool
// is handed its own tool's actions only (ToolActions): there is no default a tool falls into.
import { TOOL_NAMES, type ToolName } from '../../schema/tools.js';
import type { GateFacts, PermissionInput, RuleResult } from '../gate-rule.js';
import { FILES_TOOL } from './files.js';
import { JOURNAL_TOOL } from './journal.js';
import { TASK_BOARD_TOOL } from './task-board.js';
import type { AllowedAction, SubjectTool, ToolActions, ToolInWake, ToolWake } from './tool.js';

export const SUBJECT_TOOLS: { readonly [T in ToolName]: SubjectTool<T> } = {
  files: FILES_TOOL,
  task_board: TASK_BOARD_TOOL,
  journal: JOURNAL_TOOL,
};

/** The gate rules of the action's own tool (runtime/permission-gate.ts), for an action of the protocol. */
export function toolGateRules<T extends ToolName>(tool: T, action: ToolActions[T], input: PermissionInput): RuleResult[] {
  return SUBJECT_TOOLS[tool].gateRules(action, input);
}

/** Every tool, opened for one wake. */
export class ToolsInWake {
  private readonly opened: { readonly [T in ToolName]: ToolInWake<T> };

  constructor(wake: ToolWake) {
    this.opened = Object.fromEntries(TOOL_NAMES.map((name) => [name, SUBJECT_TOOLS[name].open(wake)])) as { [T in ToolName]: ToolInWake<T> };
  }

  /** What the action's tool tells the gate of the world. */
  gateFacts<T extends ToolName>(tool: T, action: ToolActions[T]): GateFacts {
    return this.opened[tool].gateFacts(action);
  }

  /** The action's tool carries it out. */
  carryOut<T extends ToolName>(tool: T, action: ToolActions[T], allowed: AllowedAction): Promise<void> {
    return this.opened[tool].carryOut(action, allowed);
  }
}
