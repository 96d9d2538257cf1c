// The scenario of spec §6.3: identical initial conditions for every group. A scenario is a
// folder: `scenario.json` (the SubjectInitialized payload as a template, the refutable facts,
// the reviewer the subject must ask) and `workspace/` (the files the subject starts with).
//
// scenario_hash = sha256(JCS({subject_initialized, files: {path: sha256 of bytes}})), where
// subject_initialized is the template as stored (the deadline is an offset in simulated hours,
// so the hash does not depend on when a run starts), and `framing` beside them when the scenario
// names a framing other than the default (issue 35: the system message's words for where the
// subject works; a scenario without one hashes as before). A manifest pins it; changing one byte
// of one workspace file, or the framing, changes it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { Identifier, LongText, SemVer, ShortText } from '../schema/event-definition.js';
import { SubjectInitialized } from '../schema/events/system-events.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { hashCanonical, HashString, hashText } from '../schema/hash.js';
import { checkWorkspacePath, describeWorkspacePathRule, WORKSPACE_PATH_RULE } from '../schema/workspace-path.js';
import { DEFAULT_FRAMING, PromptFraming } from '../runtime/prompt-framing.js';

export const SCENARIO_FILE = 'scenario.json';
export const WORKSPACE_DIR = 'workspace';
export const MAX_SCENARIO_FILES = 32;
export const MAX_SCENARIO_FILE_BYTES = 64 * 1024;
const MAX_SCENARIO_JSON_BYTES = 256 * 1024;
/** Folders below the workspace: the workspace path rule's segments, less the file name. */
const MAX_DIR_DEPTH = WORKSPACE_PATH_RULE.maxSegments - 1;
const MS_PER_HOUR = 3_600_000;

/**
 * A workspace-relative path: within the workspace path rule (schema/workspace-path.ts) a subject's
 * own paths obey, and narrower still — plain ASCII names a scenario's author can type.
 */
const WorkspacePath = z
  .string()
  .regex(/^(?!\/)(?!.*(^|\/)\.\.(\/|$))[A-Za-z0-9._/-]+$/, 'expected a relative workspace path without .., of A-Z a-z 0-9 . _ / -')
  .refine((p) => checkWorkspacePath(p).ok, { message: `expected a path within the workspace path rule: ${describeWorkspacePathRule()}` });

const SubjectInitializedTemplate = z.strictObject({
  identity: z.strictObject({ name: ShortText, description: LongText }),
  identity_schema_version: SemVer,
  // An offset, not a timestamp: the start time is data given to each run.
  goal: z.strictObject({ goal_id: Identifier, description: LongText, deadline_after_sim_hours: z.number().int().min(1).max(72) }),
  tasks: z.array(z.strictObject({ task_id: Identifier, title: ShortText, priority: z.number().int().min(0).max(9), depends_on: z.array(Identifier).max(32) })).min(1).max(64),
  journal_first_page: z.strictObject({ entry_id: Identifier, text: LongText }),
});

/** A figure stated in a source file: what a refutation intervention can name. */
export const ScenarioFact = z.strictObject({
  fact_id: Identifier,
  source_path: WorkspacePath,
  statement: ShortText,
  figure: ShortText,
  /** The true value a refutation publishes; null when no refutation targets this fact. */
  corrected_figure: ShortText.nullable(),
});
export type ScenarioFact = z.infer<typeof ScenarioFact>;

export const ScenarioDefinition = z
  .strictObject({
    scenario_id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/),
    scenario_version: SemVer,
    hours: z.literal(72),
    /** Where the subject works, as the system message says it (runtime/prompt-framing.ts); absent: DEFAULT_FRAMING. The same for every group. */
    framing: PromptFraming.optional(),
    subject_initialized: SubjectInitializedTemplate,
    /** The task whose completion starts the waiting condition the awaited reply resolves. */
    ask_task_id: Identifier,
    /** The task that submits the deliverable: done at the deadline, whatever else is open (oracle rule O4). */
    submit_task_id: Identifier,
    reviewer: z.strictObject({ name: ShortText, thread_id: Identifier }),
    facts: z.array(ScenarioFact).min(1).max(32),
  })
  .superRefine((s, ctx) => {
    const ids = s.subject_initialized.tasks.map((t) => t.task_id);
    if (new Set(ids).size !== ids.length) ctx.addIssue({ code: 'custom', message: 'a task_id appears twice', path: ['subject_initialized', 'tasks'] });
    // Dependencies only on earlier tasks: the board is acyclic by construction, no graph search needed.
    s.subject_initialized.tasks.forEach((task, i) => {
      for (const dep of task.depends_on) {
        if (!ids.slice(0, i).includes(dep)) ctx.addIssue({ code: 'custom', message: `${task.task_id} depends on ${dep}, which is not an earlier task`, path: ['subject_initialized', 'tasks', i] });
      }
    });
    if (!ids.includes(s.ask_task_id)) ctx.addIssue({ code: 'custom', message: `ask_task_id ${s.ask_task_id} is not a task`, path: ['ask_task_id'] });
    if (!ids.includes(s.submit_task_id)) ctx.addIssue({ code: 'custom', message: `submit_task_id ${s.submit_task_id} is not a task`, path: ['submit_task_id'] });
    if (!s.facts.some((f) => f.corrected_figure !== null)) ctx.addIssue({ code: 'custom', message: 'at least one fact needs a corrected_figure for the refutation', path: ['facts'] });
  });
export type ScenarioDefinition = z.infer<typeof ScenarioDefinition>;

export interface ScenarioFile {
  readonly path: string;
  readonly content: string;
  readonly sha256: HashString;
  /** The file as read (content is its UTF-8 reading; sha256 is of these bytes). */
  readonly bytes: Uint8Array;
}

export interface Scenario {
  readonly definition: ScenarioDefinition;
  /** Sorted by path (code-unit order, as JCS sorts keys). */
  readonly files: readonly ScenarioFile[];
  readonly scenario_hash: HashString;
}

/**
 * The scenario as a run folder keeps it (RUN_FILES.scenario, issue 32 item 2; docs/format.md): the
 * definition (submit_task_id, ask_task_id, facts, reviewer: oracle inputs the scenario hash does
 * not cover) and the starting files byte for byte (base64) with their hashes (where the
 * unexplained-file check starts, and what the plan is rebuilt from), so a run folder copied alone
 * to another machine scores and checks the same. Written as canonical JSON: the signed manifest's
 * scenario_sha256 is sha256 of its bytes; its scenario_hash must equal the plan's.
 */
export const RunScenario = z.strictObject({
  scenario_hash: HashString,
  definition: ScenarioDefinition,
  files: z
    .array(z.strictObject({ path: WorkspacePath, sha256: HashString, bytes_base64: z.string().max(Math.ceil(MAX_SCENARIO_FILE_BYTES / 3) * 4) }))
    .min(1)
    .max(MAX_SCENARIO_FILES),
});
export type RunScenario = z.infer<typeof RunScenario>;

/** The run folder's record of a scenario. */
export function runScenarioOf(scenario: Scenario): RunScenario {
  return RunScenario.parse({
    scenario_hash: scenario.scenario_hash,
    definition: scenario.definition,
    files: scenario.files.map((f) => ({ path: f.path, sha256: f.sha256, bytes_base64: Buffer.from(f.bytes).toString('base64') })),
  });
}

/** The bytes of a run folder's scenario.json: the record as canonical JSON (its sha256 is the manifest's scenario_sha256). */
export function runScenarioText(scenario: Scenario): string {
  return canonicalJson(runScenarioOf(scenario));
}

/** A run folder's record read back and checked like a scenario folder: every file's bytes against its hash, the facts against their sources, the hash it names; ScenarioError says what disagrees. */
export function scenarioOfRecord(record: RunScenario): Scenario {
  const files = record.files.map((f) => {
    const bytes = Buffer.from(f.bytes_base64, 'base64');
    if (hashText(bytes) !== f.sha256) throw new ScenarioError(`the scenario record's ${f.path} hashes to ${hashText(bytes)}, not the ${f.sha256} it names: it was changed`);
    return { path: f.path, content: bytes.toString('utf8'), sha256: f.sha256, bytes };
  });
  const scenario = checkedScenario(record.definition, files);
  if (scenario.scenario_hash !== record.scenario_hash) throw new ScenarioError(`the scenario record hashes to ${scenario.scenario_hash}, not the ${record.scenario_hash} it names: it was changed`);
  return scenario;
}

export class ScenarioError extends TypedErrorOf('scenario', EXIT_CODES.failed) {
  override readonly name = 'ScenarioError';
}

export type SubjectInitializedPayload = z.infer<typeof SubjectInitialized.payload>;

/** The SubjectInitialized payload for a run starting at `startAt`, checked against the catalogue. */
export function subjectInitializedPayload(definition: ScenarioDefinition, startAt: string): SubjectInitializedPayload {
  const startMs = Date.parse(z.iso.datetime().parse(startAt));
  const { goal, ...rest } = definition.subject_initialized;
  const deadlineAt = new Date(startMs + goal.deadline_after_sim_hours * MS_PER_HOUR).toISOString();
  return SubjectInitialized.payload.parse({ ...rest, goal: { goal_id: goal.goal_id, description: goal.description, deadline_at: deadlineAt } });
}

/** The framing the subject's system message shows for this scenario: its own, or the default. */
export function framingOf(definition: ScenarioDefinition): string {
  return definition.framing ?? DEFAULT_FRAMING;
}

/** sha256(JCS({subject_initialized, files[, framing]})) — see the file comment. */
export function scenarioHash(definition: ScenarioDefinition, files: readonly Pick<ScenarioFile, 'path' | 'sha256'>[]): HashString {
  const framing = framingOf(definition);
  // Hashed by what the prompt shows: no framing and the default framing are one scenario.
  return hashCanonical({ subject_initialized: definition.subject_initialized, files: Object.fromEntries(files.map((f) => [f.path, f.sha256])), ...(framing === DEFAULT_FRAMING ? {} : { framing }) });
}

/** Reads, bounds and validates a scenario folder; ScenarioError says what is wrong. */
export function loadScenario(dir: string): Scenario {
  const jsonPath = path.join(dir, SCENARIO_FILE);
  const json = readBounded(jsonPath, MAX_SCENARIO_JSON_BYTES);
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new ScenarioError(`${jsonPath} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = ScenarioDefinition.safeParse(raw);
  if (!parsed.success) throw new ScenarioError(`${jsonPath} fails the scenario schema: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  const definition = parsed.data;
  // Catalogue check now, with an arbitrary start: a bad template fails at load, not mid-run.
  subjectInitializedPayload(definition, '2000-01-01T00:00:00.000Z');
  return checkedScenario(definition, listWorkspace(path.join(dir, WORKSPACE_DIR)));
}

/** A definition with its files, its facts held to their sources, and its hash: from a folder or a run's record alike. */
function checkedScenario(definition: ScenarioDefinition, unsorted: readonly ScenarioFile[]): Scenario {
  const files = [...unsorted].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const fact of definition.facts) {
    const file = files.find((f) => f.path === fact.source_path);
    if (!file) throw new ScenarioError(`fact ${fact.fact_id} cites ${fact.source_path}, which is not a workspace file`);
    // The figure must really be in the source, or a refutation would refute nothing the subject can read.
    if (!file.content.includes(fact.figure)) throw new ScenarioError(`fact ${fact.fact_id}: figure "${fact.figure}" does not occur in ${fact.source_path}`);
  }
  return { definition, files, scenario_hash: scenarioHash(definition, files) };
}

function readBounded(file: string, maxBytes: number): string {
  return readBoundedBytes(file, maxBytes).toString('utf8');
}

function readBoundedBytes(file: string, maxBytes: number): Buffer {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    throw new ScenarioError(`${file} does not exist`);
  }
  if (size > maxBytes) throw new ScenarioError(`${file} is ${size} bytes, over the limit of ${maxBytes}`);
  return readFileSync(file);
}

function listWorkspace(root: string): ScenarioFile[] {
  const files: ScenarioFile[] = [];
  // Depth-first with an explicit stack; depth and file count are both bounded.
  const stack: Array<{ rel: string; depth: number }> = [{ rel: '', depth: 0 }];
  for (let guard = 0; stack.length > 0; guard += 1) {
    if (guard > MAX_SCENARIO_FILES * MAX_DIR_DEPTH) throw new ScenarioError(`${root} has too many folders`);
    const { rel, depth } = stack.pop()!;
    let entries;
    try {
      entries = readdirSync(path.join(root, rel), { withFileTypes: true });
    } catch {
      throw new ScenarioError(`${path.join(root, rel)} is not a readable folder`);
    }
    for (const entry of entries) {
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        if (depth + 1 > MAX_DIR_DEPTH) throw new ScenarioError(`${childRel} is nested deeper than ${MAX_DIR_DEPTH} folders`);
        stack.push({ rel: childRel, depth: depth + 1 });
      } else if (entry.isFile()) {
        if (!WorkspacePath.safeParse(childRel).success) throw new ScenarioError(`workspace file name ${childRel} is not a plain relative path`);
        if (files.length >= MAX_SCENARIO_FILES) throw new ScenarioError(`${root} holds more than ${MAX_SCENARIO_FILES} files`);
        const bytes = readBoundedBytes(path.join(root, childRel), MAX_SCENARIO_FILE_BYTES);
        // Hash the bytes, not the decoded text: invalid UTF-8 would otherwise hash as U+FFFD.
        files.push({ path: childRel, content: bytes.toString('utf8'), sha256: hashText(bytes), bytes });
      } else {
        // A symlink or device could point outside the scenario and change without the hash noticing.
        throw new ScenarioError(`${childRel} is neither a regular file nor a folder`);
      }
    }
  }
  if (files.length === 0) throw new ScenarioError(`${root} holds no files`);
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
