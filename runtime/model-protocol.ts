// The model's output protocol (issue 5 item 3, docs/model-protocol.md): what one model call
// must answer, whatever the adapter (reference policy, an OpenAI-compatible server, a
// replay). One zod schema is the type and the check. Raw output that fails it is recorded
// as ModelOutputEvent.ModelCallFailed{schema_violation} with the raw text, and nothing of it
// is used: malformed output never executes anything.
//
// The model proposes; it decides nothing. Every action goes through the permission gate,
// every plan revision through the Capability Policy, every FACT through the writer's
// evidence check. Ids the store needs (proposal ids, claim ids, journal entry ids) are
// made by the runtime from the wake id and the position, never taken from the model, so a
// model cannot collide with or overwrite earlier records.
import { z } from 'zod';
import { ClaimType } from '../schema/events/memory-events.js';
import { EventId, Identifier, LongText, ShortText, Timestamp } from '../schema/event-definition.js';

export const MODEL_PROTOCOL = 'ds-model-output/1';

/** Bounds of one answer: more is a schema violation, not a silent cut. */
export const MODEL_OUTPUT_LIMITS = {
  maxActions: 16,
  maxClaims: 16,
  maxEvidencePerClaim: 16,
  maxPlanSteps: 32,
  maxFileContentChars: 32_768,
} as const;

/** A workspace-relative path as the model writes it; the permission gate normalises and judges it. */
const ModelPath = z.string().min(1).max(512);
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

export const ModelAction = z.union([FilesRead, FilesWrite, FilesModify, FilesMove, TaskBoardAction, JournalWrite]);
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

export const ModelOutput = z.strictObject({
  protocol: z.literal(MODEL_PROTOCOL),
  focus: z.strictObject({ attention_target: ShortText.nullable(), waiting_condition: ShortText.nullable() }),
  actions: z.array(ModelAction).max(MODEL_OUTPUT_LIMITS.maxActions),
  claims: z.array(ModelClaim).max(MODEL_OUTPUT_LIMITS.maxClaims),
  plan_revision: ModelPlanRevision.nullable(),
  checkpoint: ModelCheckpoint,
});
export type ModelOutput = z.infer<typeof ModelOutput>;

export type ParsedModelOutput = { readonly ok: true; readonly output: ModelOutput } | { readonly ok: false; readonly detail: string };

/**
 * Parses raw model text: the JSON object itself, or one fenced ```json block around it (chat
 * models add fences). Anything else — prose around it, two objects, a schema miss — fails
 * with a detail naming the first problems; nothing is repaired or guessed.
 */
export function parseModelOutput(raw: string): ParsedModelOutput {
  const trimmed = raw.trim();
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n```$/.exec(trimmed);
  const text = fenced ? fenced[1]! : trimmed;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, detail: `not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const parsed = ModelOutput.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 8).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    return { ok: false, detail: `fails ${MODEL_PROTOCOL}: ${issues.join('; ')}${parsed.error.issues.length > 8 ? ` (+${parsed.error.issues.length - 8} more)` : ''}` };
  }
  return { ok: true, output: parsed.data };
}
