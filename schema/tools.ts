// The tools the subject can use and their operations (DESIGN §7, issue 33 item 3): the one table
// that `ToolName`, the op enums of the events (ActionProposed's tool, ExecutionIntentRecorded's and
// TaskBoardChanged's op), the permission gate's operation list (tool_allowed) and the tool and op
// literals of the current answer protocol (runtime/model-protocol.ts ModelAnswerV2) derive from.
// How each tool is judged and carried out is its own file under runtime/tools/, one per row
// (runtime/tools/tool-set.ts holds them in a map the compiler holds to this table);
// docs/architecture.md "Where to start" names every place a new tool touches, and
// test/architecture/tools.test.ts holds that row to the code.
//
// The order of the rows and of each row's ops is part of formats: the enums made of them are
// written in that order into the event catalogue and into the answer's JSON Schema and GBNF
// grammar (runtime/answer-schema.ts, runtime/answer-grammar.ts), whose hash a manifest pins. A
// new row goes at the end; nothing is reordered or removed. The frozen ds-model-output/1 keeps
// its literals as recorded; runtime/model-protocol.ts checks they are a subset of this table.
import { z } from 'zod';

/** One tool: its operations, and which argument of an action names what it is aimed at. */
export interface ToolRow {
  /** In the order the enums list them (see above). */
  readonly ops: readonly [string, ...string[]];
  /** The action argument naming its target (shown beside a denial, in the review package's summary); null when nothing is aimed at. */
  readonly target_arg: string | null;
}

export const TOOLS = {
  /** The workspace files (runtime/tools/files.ts): every operation goes intent → execute → outcome. */
  files: { ops: ['read', 'write', 'modify', 'move'], target_arg: 'path' },
  /** The subject's task board (runtime/tools/task-board.ts): one TaskBoardChanged per allowed change. */
  task_board: { ops: ['add', 'update', 'complete', 'remove'], target_arg: 'task_id' },
  /** The subject's journal (runtime/tools/journal.ts): one JournalEntryWritten per allowed entry. */
  journal: { ops: ['write'], target_arg: null },
} as const satisfies Readonly<Record<string, ToolRow>>;

export type ToolName = keyof typeof TOOLS;
/** The operations of one tool (of any tool, without a parameter). */
export type ToolOp<T extends ToolName = ToolName> = (typeof TOOLS)[T]['ops'][number];

/** The tools in the table's order. */
export const TOOL_NAMES = Object.keys(TOOLS) as [ToolName, ...ToolName[]];
export const ToolName = z.enum(TOOL_NAMES);

/** The workspace file operations a model may propose. */
export const FileOp = z.enum(TOOLS.files.ops);
export type FileOp = z.infer<typeof FileOp>;
/**
 * The operations an execution intent records (ExecutionIntentRecorded.op, an open intent's op):
 * the files tool's, and 'delete', in the intent's format since 1.0.0 though no protocol
 * proposes it. A store may hold one; reconciliation and the oracle handle it.
 */
export const FileIntentOp = z.enum([...TOOLS.files.ops, 'delete']);
export type FileIntentOp = z.infer<typeof FileIntentOp>;
export const TaskBoardOp = z.enum(TOOLS.task_board.ops);
export type TaskBoardOp = z.infer<typeof TaskBoardOp>;
export const JournalOp = z.enum(TOOLS.journal.ops);
export type JournalOp = z.infer<typeof JournalOp>;

/** Whether `tool.op` is an operation of the table (the gate's tool_allowed); any string may be asked, a forged action's included. */
export function isToolOperation(tool: string, op: string): boolean {
  if (!Object.hasOwn(TOOLS, tool)) return false;
  const ops: readonly string[] = TOOLS[tool as ToolName].ops;
  return ops.includes(op);
}

/** The argument of an action with `tool` that names its target (the row's target_arg), if it is a string. */
export function targetOf(tool: ToolName, args: Readonly<Record<string, unknown>>): string | null {
  const arg = TOOLS[tool].target_arg;
  const value = arg === null ? null : args[arg];
  return typeof value === 'string' ? value : null;
}
