// Which event carries out an allowed proposal of each tool of the table (schema/tools.ts): the
// first event of its execution, naming the proposal it executes by proposal_id. The oracle checks
// each against its permission (unauthorized_tool_execution) and counts a second one for the same
// proposal as a duplicated side effect (oracle/hard-failures.ts, oracle/side-effects.ts). Mapped
// over the tool table, so a tool added there without its event here is a compile error.
import type { EventType, PayloadOf } from './event-catalog.js';
import { TOOL_NAMES, type ToolName } from './tools.js';

export const TOOL_EXECUTION_EVENTS = {
  /** A file operation's intent: its outcome (ToolSucceeded, ToolFailed, …) follows and names the intent (DESIGN §7). */
  files: 'ActionEvent.ExecutionIntentRecorded',
  task_board: 'MemoryEvent.TaskBoardChanged',
  journal: 'MemoryEvent.JournalEntryWritten',
} as const satisfies { readonly [T in ToolName]: EventType };

/** The tools carried out in one event, with no intent and outcome around it: every tool but the files tool. */
export type OneEventTool = Exclude<ToolName, 'files'>;
/** The event that carries out a proposal of `T`. */
export type ExecutionEventOf<T extends ToolName> = (typeof TOOL_EXECUTION_EVENTS)[T];
/** The one-event tools, in the table's order. */
export const ONE_EVENT_TOOLS: readonly OneEventTool[] = TOOL_NAMES.filter((tool): tool is OneEventTool => tool !== 'files');

// Every execution event names the proposal it executes.
const EVERY_EXECUTION_NAMES_ITS_PROPOSAL: PayloadOf<ExecutionEventOf<ToolName>> extends { readonly proposal_id: string } ? true : false = true;
void EVERY_EXECUTION_NAMES_ITS_PROPOSAL;
