// The model's output protocol (issue 5 item 3, issue 15 item 2, docs/model-protocol.md): what
// one model call must answer, whatever the adapter (reference policy, an OpenAI-compatible
// server, a local model, a replay). One zod schema per protocol version is the type, the check
// and (runtime/answer-schema.ts) the JSON Schema a model is constrained by. Raw output that
// fails it is recorded as ModelOutputEvent.ModelCallFailed{schema_violation} with the raw text,
// and nothing of it is used: malformed output never executes anything.
//
// Two versions, never mixed within a run (the run's protocol is fixed in its start message):
// - ds-model-output/2 (current): events are cited by the seq the window shows; the runtime
//   maps seq → event id and fails an answer that cites a seq the wake did not show. Texts are
//   short and bounded tightly, so that an answer filling every string to its bound still fits
//   the answer's token cap; enums where the protocol has them.
// - ds-model-output/1: events cited by event id (UUID). Runs recorded under it still replay.
// Both are turned into one internal shape, `ModelOutput` (the /1 shape, ids resolved), which
// the wake loop uses.
//
// The model proposes; it decides nothing. Every action goes through the permission gate,
// every plan revision through the Capability Policy, every FACT through the writer's
// evidence check. Ids the store needs (proposal ids, claim ids, journal entry ids) are
// made by the runtime from the wake id and the position, never taken from the model, so a
// model cannot collide with or overwrite earlier records.
import { assertNever } from '../foundation/assert-never.js';
import { z } from 'zod';
import { canonicalJson, NotJsonError } from '../schema/canonical-json.js';
import { ClaimType } from '../schema/events/memory-events.js';
import { AnswerProtocol } from '../schema/events/model-output-events.js';
import { EventId, Identifier, LongText, ShortText, Timestamp } from '../schema/event-definition.js';
import { FileOp, JournalOp, TaskBoardOp, ToolName, type ToolOp } from '../schema/tools.js';
import { RecordedWorkspacePath, WORKSPACE_PATH_RULE } from '../schema/workspace-path.js';

export const MODEL_PROTOCOL_V1 = AnswerProtocol.enum['ds-model-output/1'];
export const MODEL_PROTOCOL_V2 = AnswerProtocol.enum['ds-model-output/2'];
/** The protocol versions, as the model events record them (schema/events/model-output-events.ts). */
export const ModelProtocol = AnswerProtocol;
export type ModelProtocol = z.infer<typeof ModelProtocol>;
/** What new runs answer in. */
export const MODEL_PROTOCOL: ModelProtocol = MODEL_PROTOCOL_V2;

/** Bounds of one /1 answer (and of the internal shape): more is a schema violation, not a silent cut. */
export const MODEL_OUTPUT_LIMITS = {
  maxActions: 16,
  maxClaims: 16,
  maxEvidencePerClaim: 16,
  maxPlanSteps: 32,
  maxFileContentChars: 32_768,
} as const;

/** A workspace-relative path as the model writes it; the permission gate normalises and judges it. */
const ModelPath = RecordedWorkspacePath;
const Rationale = z.string().min(1).max(2_000);

const FilesRead = z.strictObject({ tool: z.literal('files'), op: z.literal('read'), path: ModelPath, rationale: Rationale });
const FilesWrite = z.strictObject({ tool: z.literal('files'), op: z.literal('write'), path: ModelPath, content: z.string().max(MODEL_OUTPUT_LIMITS.maxFileContentChars), rationale: Rationale });
/** Replaces the first occurrence of `find` (which must occur) with `replace`. */
const FilesModify = z.strictObject({ tool: z.literal('files'), op: z.literal('modify'), path: ModelPath, find: z.string().min(1).max(4_096), replace: z.string().max(MODEL_OUTPUT_LIMITS.maxFileContentChars), rationale: Rationale });
const FilesMove = z.strictObject({ tool: z.literal('files'), op: z.literal('move'), path: ModelPath, to_path: ModelPath, rationale: Rationale });

const TaskFields = {
  task_id: Identifier,
  title: ShortText.nullable(),
  status: z.enum(['todo', 'doing', 'blocked', 'done']).nullable(),
  priority: z.number().int().min(0).max(9).nullable(),
  depends_on: z.array(Identifier).max(32),
};
const TaskBoardAction = z.strictObject({ tool: z.literal('task_board'), op: z.enum(['add', 'update', 'complete', 'remove']), ...TaskFields, rationale: Rationale });
const JournalWrite = z.strictObject({ tool: z.literal('journal'), op: z.literal('write'), text: LongText.min(1), rationale: Rationale });

/** The /1 protocol's actions, as recorded: frozen, its literals spelled, not taken from the tool table. */
const V1_ACTIONS = [FilesRead, FilesWrite, FilesModify, FilesMove, TaskBoardAction, JournalWrite] as const;
const ModelActionV1 = z.union(V1_ACTIONS);

/**
 * An action in the internal shape every protocol's actions are turned into (what the wake loop,
 * the permission gate and the tools take), with /1's bounds, the loosest. It is /1's actions
 * today; a tool added to the table adds its action here and to the current protocol, not to /1
 * (the compiler holds all three to the table, below).
 */
export const ModelAction = z.union(V1_ACTIONS);
export type ModelAction = z.infer<typeof ModelAction>;

export const ModelClaim = z
  .strictObject({
    claim_type: ClaimType,
    statement: LongText.min(1),
    /** Events in the context bundle the claim rests on; a FACT needs at least one eligible one. */
    evidence_event_ids: z.array(EventId).max(MODEL_OUTPUT_LIMITS.maxEvidencePerClaim),
    confidence: z.number().min(0).max(1).nullable(),
    alternatives: z.array(ShortText).max(16),
  })
  .refine((c) => c.claim_type !== 'INFERENCE' || c.confidence !== null, { message: 'an INFERENCE carries a confidence', path: ['confidence'] });
export type ModelClaim = z.infer<typeof ModelClaim>;

export const ModelPlanRevision = z.strictObject({
  reason: LongText.min(1),
  goal_id: Identifier,
  goal_description: LongText.min(1),
  deadline_at: Timestamp.nullable(),
  steps: z.array(z.strictObject({ task_id: Identifier, title: ShortText })).min(1).max(MODEL_OUTPUT_LIMITS.maxPlanSteps),
});
export type ModelPlanRevision = z.infer<typeof ModelPlanRevision>;

/** The subject's own account of where it stands (spec §9.4); the runtime records it as the checkpoint. */
export const ModelCheckpoint = z.strictObject({
  current_goal_id: Identifier.nullable(),
  goal_status: ShortText.nullable(),
  attention_target: ShortText.nullable(),
  waiting_condition: ShortText.nullable(),
  next_action: ShortText.nullable(),
  evidence_event_ids: z.array(EventId).max(64),
});
export type ModelCheckpoint = z.infer<typeof ModelCheckpoint>;

/** A ds-model-output/1 answer. */
export const ModelOutput = z.strictObject({
  protocol: z.literal(MODEL_PROTOCOL_V1),
  focus: z.strictObject({ attention_target: ShortText.nullable(), waiting_condition: ShortText.nullable() }),
  actions: z.array(ModelActionV1).max(MODEL_OUTPUT_LIMITS.maxActions),
  claims: z.array(ModelClaim).max(MODEL_OUTPUT_LIMITS.maxClaims),
  plan_revision: ModelPlanRevision.nullable(),
  checkpoint: ModelCheckpoint,
});
export type ModelOutput = z.infer<typeof ModelOutput>;


/** The internal shape every protocol version is turned into: the /1 answer with ids resolved, without its protocol tag, its actions the internal ones. */
export type SubjectAnswer = Omit<ModelOutput, 'protocol' | 'actions'> & { actions: ModelAction[] };

// ---------------------------------------------------------------------------------------
// ds-model-output/2

/** Bounds of one /2 answer. Every string and list is bounded, so the longest answer the schema allows is bounded too (answer-schema.ts states it). */
export const MODEL_OUTPUT_V2_LIMITS = {
  /** = the pre-registered tool calls per wake; the reference policy proposes up to 8. */
  maxActions: 8,
  maxClaims: 6,
  maxEvidencePerClaim: 4,
  maxCheckpointEvidence: 8,
  maxPlanSteps: 8,
  maxDependsOn: 4,
  maxAlternatives: 3,
  idChars: 40,
  briefChars: 100,
  textChars: 400,
  /** The workspace path rule's length (schema/workspace-path.ts); its other clauses are the gate's, a denial naming the clause. */
  pathChars: WORKSPACE_PATH_RULE.maxChars,
  rationaleChars: 160,
  findChars: 200,
  fileContentChars: 2_000,
} as const;
const V2 = MODEL_OUTPUT_V2_LIMITS;

/** An id the subject names (task, goal): the store's Identifier alphabet, shorter. */
const IdV2 = z.string().regex(new RegExp(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,${V2.idChars - 1}}$`), `expected an id of 1-${V2.idChars} characters [A-Za-z0-9._:-], starting with a letter or digit`);
const BriefV2 = z.string().min(1).max(V2.briefChars);
const TextV2 = z.string().min(1).max(V2.textChars);
const PathV2 = z.string().min(1).max(V2.pathChars);
const RationaleV2 = z.string().min(1).max(V2.rationaleChars);
/**
 * The seq of an event the window showed. The JSON Schema sent to a model replaces this node by
 * the enum of the wake's shown seqs (answer-schema.ts, found by this meta key); the runtime
 * checks membership itself in any case.
 */
export const EVENT_SEQ_META = 'x-ds-event-seq';
const SeqV2 = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).meta({ [EVENT_SEQ_META]: true });

const TaskStatus = z.enum(['todo', 'doing', 'blocked', 'done']);
const Priority = z.number().int().min(0).max(9);

// Tools and operations are the table's (schema/tools.ts), in its order: one action shape per
// file operation, one for the task board's operations, one for the journal's.
const TOOL = ToolName.enum;
const FILE = FileOp.enum;
const ActionsV2 = [
  z.strictObject({ tool: z.literal(TOOL.files), op: z.literal(FILE.read), path: PathV2, rationale: RationaleV2 }),
  z.strictObject({ tool: z.literal(TOOL.files), op: z.literal(FILE.write), path: PathV2, content: z.string().max(V2.fileContentChars), rationale: RationaleV2 }),
  z.strictObject({ tool: z.literal(TOOL.files), op: z.literal(FILE.modify), path: PathV2, find: z.string().min(1).max(V2.findChars), replace: z.string().max(V2.fileContentChars), rationale: RationaleV2 }),
  z.strictObject({ tool: z.literal(TOOL.files), op: z.literal(FILE.move), path: PathV2, to_path: PathV2, rationale: RationaleV2 }),
  z.strictObject({ tool: z.literal(TOOL.task_board), op: TaskBoardOp, task_id: IdV2, title: BriefV2.nullable(), status: TaskStatus.nullable(), priority: Priority.nullable(), depends_on: z.array(IdV2).max(V2.maxDependsOn), rationale: RationaleV2 }),
  z.strictObject({ tool: z.literal(TOOL.journal), op: z.literal(JournalOp.enum.write), text: TextV2, rationale: RationaleV2 }),
] as const;

/** `tool.op` for every operation an action shape (a union of them) allows. */
type OperationsOf<A> = A extends { readonly tool: infer T extends string; readonly op: infer O extends string } ? `${T}.${O}` : never;
/** `tool.op` for every operation of the tool table. */
type TableOperations = { [T in ToolName]: `${T}.${ToolOp<T>}` }[ToolName];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// The compiler holds the protocols to the table: the current one and the internal shape have
// every operation of every tool and nothing else; the frozen /1 nothing else. A row or op added
// to the table and not to ModelAnswerV2 and ModelAction (or the reverse) fails here.
const CURRENT_PROTOCOL_HAS_EVERY_OPERATION: Same<OperationsOf<z.infer<(typeof ActionsV2)[number]>>, TableOperations> = true;
const INTERNAL_SHAPE_HAS_EVERY_OPERATION: Same<OperationsOf<ModelAction>, TableOperations> = true;
const V1_PROTOCOL_HAS_TABLE_OPERATIONS_ONLY: [OperationsOf<z.infer<typeof ModelActionV1>>] extends [TableOperations] ? true : false = true;
void CURRENT_PROTOCOL_HAS_EVERY_OPERATION;
void INTERNAL_SHAPE_HAS_EVERY_OPERATION;
void V1_PROTOCOL_HAS_TABLE_OPERATIONS_ONLY;

/** A claim's type decides its fields, so the schema itself says what each needs (no cross-field rule left to a refine). */
const ClaimV2 = z.discriminatedUnion('claim_type', [
  z.strictObject({ claim_type: z.literal('FACT'), statement: TextV2, evidence_seqs: z.array(SeqV2).min(1).max(V2.maxEvidencePerClaim) }),
  z.strictObject({ claim_type: z.literal('PLAN'), statement: TextV2 }),
  z.strictObject({ claim_type: z.literal('INFERENCE'), statement: TextV2, confidence: z.number().min(0).max(1), alternatives: z.array(BriefV2).max(V2.maxAlternatives) }),
]);

export const ModelAnswerV2 = z.strictObject({
  protocol: z.literal(MODEL_PROTOCOL_V2),
  focus: z.strictObject({ attention_target: BriefV2.nullable(), waiting_condition: BriefV2.nullable() }),
  actions: z.array(z.union(ActionsV2)).max(V2.maxActions),
  claims: z.array(ClaimV2).max(V2.maxClaims),
  plan_revision: z
    .strictObject({
      reason: TextV2,
      goal_id: IdV2,
      goal_description: TextV2,
      deadline_at: Timestamp.nullable(),
      steps: z.array(z.strictObject({ task_id: IdV2, title: BriefV2 })).min(1).max(V2.maxPlanSteps),
    })
    .nullable(),
  checkpoint: z.strictObject({
    current_goal_id: IdV2.nullable(),
    goal_status: z.enum(['active', 'submitted']).nullable(),
    attention_target: BriefV2.nullable(),
    waiting_condition: BriefV2.nullable(),
    next_action: BriefV2.nullable(),
    evidence_seqs: z.array(SeqV2).max(V2.maxCheckpointEvidence),
  }),
});
export type ModelAnswerV2 = z.infer<typeof ModelAnswerV2>;

/** The zod schema of an answer in `protocol`. */
export function answerSchemaOf(protocol: ModelProtocol): typeof ModelOutput | typeof ModelAnswerV2 {
  return protocol === MODEL_PROTOCOL_V1 ? ModelOutput : ModelAnswerV2;
}

export type ParsedModelOutput = { readonly ok: true; readonly output: SubjectAnswer } | { readonly ok: false; readonly detail: string };

/** What the wake showed the model: seq → event id, for every event of its window (pinned ones included). */
export type ShownEvents = ReadonlyMap<number, string>;

/**
 * Parses raw model text in the run's protocol: the JSON object itself, or one fenced ```json
 * block around it (chat models add fences). Anything else — prose around it, two objects, a
 * schema miss, an answer in the other protocol version, a /2 seq the wake did not show —
 * fails with a detail naming the first problems; nothing is repaired or guessed.
 */
export function parseModelOutput(raw: string, protocol: ModelProtocol, shown: ShownEvents): ParsedModelOutput {
  const trimmed = raw.trim();
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n```$/.exec(trimmed);
  const text = fenced ? fenced[1]! : trimmed;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, detail: `not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  // JSON.parse takes "\ud800" (a lone surrogate), which has no UTF-8 form: the store could not
  // hold an event carrying it, so such an answer is refused here, recorded with its raw text.
  try {
    canonicalJson(json);
  } catch (error) {
    if (error instanceof NotJsonError) return { ok: false, detail: `not JSON the store can hold: ${error.message}` };
    throw error;
  }
  const parsed = answerSchemaOf(protocol).safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 8).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    return { ok: false, detail: `fails ${protocol}: ${issues.join('; ')}${parsed.error.issues.length > 8 ? ` (+${parsed.error.issues.length - 8} more)` : ''}` };
  }
  if (parsed.data.protocol === MODEL_PROTOCOL_V1) {
    const { protocol: _tag, ...answer } = parsed.data as ModelOutput;
    return { ok: true, output: answer };
  }
  return resolveSeqs(parsed.data as ModelAnswerV2, shown);
}

/** A /2 answer in the internal shape: every cited seq must be one the wake showed. */
function resolveSeqs(answer: ModelAnswerV2, shown: ShownEvents): ParsedModelOutput {
  const unknown: string[] = [];
  const ids = (seqs: readonly number[], where: string): string[] =>
    seqs.flatMap((seq, i) => {
      const id = shown.get(seq);
      if (id === undefined) unknown.push(`${where}.${i}: seq ${seq}`);
      return id === undefined ? [] : [id];
    });
  const claims = answer.claims.map((c, i): ModelClaim => {
    switch (c.claim_type) {
      case 'FACT':
        return { claim_type: 'FACT', statement: c.statement, evidence_event_ids: ids(c.evidence_seqs, `claims.${i}.evidence_seqs`), confidence: null, alternatives: [] };
      case 'PLAN':
        return { claim_type: 'PLAN', statement: c.statement, evidence_event_ids: [], confidence: null, alternatives: [] };
      case 'INFERENCE':
        return { claim_type: 'INFERENCE', statement: c.statement, evidence_event_ids: [], confidence: c.confidence, alternatives: [...c.alternatives] };
      default: {
        assertNever(c, 'claim');
      }
    }
  });
  const { evidence_seqs, ...checkpoint } = answer.checkpoint;
  const evidence = ids(evidence_seqs, 'checkpoint.evidence_seqs');
  if (unknown.length > 0) {
    return { ok: false, detail: `fails ${MODEL_PROTOCOL_V2}: cites ${unknown.length} seq(s) this wake's window did not show (${unknown.slice(0, 8).join('; ')})` };
  }
  return {
    ok: true,
    output: { focus: answer.focus, actions: answer.actions.map((a) => ({ ...a })), claims, plan_revision: answer.plan_revision, checkpoint: { ...checkpoint, evidence_event_ids: evidence } },
  };
}
