// What the reference policy sees in a wake's context bundle (reference-policy.ts): the tasks
// classified and in dependency order, what was read and found, the threads and paths the text
// names — one Observation a wake's decision reads from. Pure.
import type { PayloadOf } from '../../schema/event-catalog.js';
import type { ContextBundle, WorkspaceEntry } from '../context-bundle.js';
import { MODEL_OUTPUT_V2_LIMITS } from '../model-protocol.js';
import { windowPayload, type WindowEvent } from '../retrieval-window.js';
import type { ViewTask } from '../subject-view.js';

const V2 = MODEL_OUTPUT_V2_LIMITS;

export const DEFAULT_SOURCE_FOLDER = 'sources/';

export const DEFAULT_REPORT_PATH = 'report/report.md';

/** `text`, or its first max - 1 characters and "…" (the cut is visible in the text itself). */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** A rationale: one line, 1-V2.rationaleChars chars. */
export function because(text: string): string {
  const t = clip(oneLine(text), V2.rationaleChars);
  return t.length > 0 ? t : '-';
}

/** Whether the protocol can name this id (task, goal): the store's alphabet, at most V2.idChars. */
export function nameable(id: string): boolean {
  return id.length <= V2.idChars;
}

/**
 * `head` followed by as many of `parts` as fit in `max` chars (joined by `sep`), and, when some
 * do not, how many were left out: whole parts or none, never half a figure.
 */
export function fitted(head: string, parts: readonly string[], sep: string, max: number, more: (left: number) => string): string {
  const first = (n: number): string => `${head}${parts.slice(0, n).join(sep)}`;
  if (first(parts.length).length <= max) return first(parts.length);
  // Bounded by parts.length: each pass leaves one more part out.
  for (let n = parts.length - 1; n >= 1; n -= 1) {
    const text = `${first(n)}${sep}${more(parts.length - n)}`;
    if (text.length <= max) return text;
  }
  return clip(`${head}${more(parts.length)}`, max);
}

export const THREAD_RE = /\bthread\s+([A-Za-z0-9][A-Za-z0-9._:-]*)/i;

export const FILE_PATH_RE = /(?:^|[\s(])((?:\.{1,2}\/|\/)?(?:[A-Za-z0-9_.-]+\/)+[A-Za-z0-9_-][A-Za-z0-9_.-]*\.[A-Za-z0-9]+)/;

export const FOLDER_RE = /(?:^|\s)([A-Za-z0-9_-][A-Za-z0-9_.-]*\/)(?=$|[\s.,;:)])/;

export const LARGE_SIZE_RE = /\b\d+(?:[.,]\d+)?\s*(?:KiB|MiB|GiB|KB|MB|GB)\b/i;

export const WRITE_REQUEST_RE = /\b(?:save|write|paste|put|store|copy)\b/i;

export const DO_NOT_USE_RE = /\bdo not use\s+([^.;\n]+)/i;

/** A path the protocol accepts (1-V2.pathChars chars); anything else is not proposed at all. */
export function proposable(path: string): boolean {
  return path.length >= 1 && path.length <= V2.pathChars;
}

export function threadIn(text: string | null): string | null {
  const m = text === null ? null : THREAD_RE.exec(text);
  return m ? m[1]!.replace(/[.:-]+$/, '') : null;
}

export function filePathIn(text: string): string | null {
  const m = FILE_PATH_RE.exec(text);
  return m ? m[1]! : null;
}

export type Kind = 'ask' | 'submit' | 'align' | 'read' | 'create' | 'revise' | 'other';

export interface Task extends ViewTask {
  readonly kind: Kind;
  /** create: its own path; revise/align: the file it changes. */
  readonly path: string | null;
  readonly thread: string | null;
}

export interface Read {
  readonly path: string;
  readonly event_id: string;
  readonly seq: number;
  readonly hash: string;
  readonly content: string;
}

export interface Finding {
  readonly statement: string;
  readonly source: string;
}

export interface Seen<P> {
  readonly event: WindowEvent;
  readonly p: P;
}

export function allOf<T extends Parameters<typeof windowPayload>[1]>(events: readonly WindowEvent[], type: T): Seen<PayloadOf<T>>[] {
  const out: Seen<PayloadOf<T>>[] = [];
  for (const event of events) {
    const p = windowPayload(event, type);
    if (p) out.push({ event, p });
  }
  return out;
}

/** Dependency order: a task comes after the tasks it depends on that are on the board; ties by priority, then board order. */
export function dependencyOrder<T extends ViewTask>(tasks: readonly T[]): T[] {
  const ids = new Set(tasks.map((t) => t.task_id));
  const pending = tasks.map((t, i) => ({ t, i })).sort((a, b) => (a.t.priority ?? 9) - (b.t.priority ?? 9) || a.i - b.i);
  const placed = new Set<string>();
  const out: T[] = [];
  // Each round places one task, so tasks.length rounds place them all; a cycle places its first by priority.
  for (let round = 0; round < tasks.length && pending.length > 0; round += 1) {
    const ready = pending.findIndex(({ t }) => t.depends_on.every((d) => !ids.has(d) || placed.has(d)));
    const [{ t }] = pending.splice(ready >= 0 ? ready : 0, 1) as [{ t: T; i: number }];
    placed.add(t.task_id);
    out.push(t);
  }
  return out;
}

export function classify(tasks: readonly ViewTask[]): Task[] {
  const ownPath = new Map(tasks.map((t) => [t.task_id, filePathIn(t.title)]));
  const threads = new Map(tasks.map((t) => [t.task_id, threadIn(t.title)]));
  const reportPath = [...ownPath.values()].find((p) => p !== null && p.startsWith('report/')) ?? DEFAULT_REPORT_PATH;
  return tasks.map((t) => {
    const thread = threads.get(t.task_id) ?? null;
    const path = ownPath.get(t.task_id) ?? null;
    const base = { ...t, thread, path };
    if (thread !== null) return { ...base, kind: 'ask' };
    if (/\bsubmit/i.test(t.title)) return { ...base, kind: 'submit', path: reportPath };
    if (/^align\b/i.test(t.title)) return { ...base, kind: 'align', path: reportPath };
    if (/\bread\b/i.test(t.title)) return { ...base, kind: 'read' };
    if (path !== null) return { ...base, kind: 'create' };
    const fileDep = t.depends_on.map((d) => ownPath.get(d) ?? null).find((p) => p !== null) ?? null;
    const waitsForReply = t.depends_on.some((d) => (threads.get(d) ?? null) !== null);
    if (fileDep !== null && waitsForReply) return { ...base, kind: 'revise', path: fileDep, thread: t.depends_on.map((d) => threads.get(d) ?? null).find((x) => x !== null) ?? null };
    return { ...base, kind: 'other' };
  });
}

export class Observation {
  readonly events: readonly WindowEvent[];
  readonly listing: ReadonlyMap<string, WorkspaceEntry>;
  readonly tasks: readonly Task[];
  readonly reads = new Map<string, Read>();
  readonly changes: Seen<PayloadOf<'WorldEvent.FileChangedExternally'>>[];
  readonly messages: Seen<PayloadOf<'WorldEvent.MessageReceived'>>[];
  readonly corrections: Seen<PayloadOf<'WorldEvent.InformationPublished'>>[];
  readonly goalChange: Seen<PayloadOf<'WorldEvent.GoalChanged'>> | null;
  readonly proposals: Seen<PayloadOf<'ActionEvent.ActionProposed'>>[];
  readonly outcomes: Seen<PayloadOf<'ActionEvent.ToolSucceeded'>>[];
  /** Event ids some ClaimRecorded in the window cites. */
  readonly cited = new Set<string>();
  readonly sourceFolder: string;

  constructor(readonly bundle: ContextBundle) {
    this.events = bundle.window.events;
    this.listing = new Map(bundle.workspace.map((f) => [f.path, f]));
    this.tasks = dependencyOrder(classify(bundle.state.tasks));
    this.changes = allOf(this.events, 'WorldEvent.FileChangedExternally');
    this.messages = allOf(this.events, 'WorldEvent.MessageReceived');
    this.corrections = allOf(this.events, 'WorldEvent.InformationPublished');
    this.goalChange = allOf(this.events, 'WorldEvent.GoalChanged').at(-1) ?? null;
    this.proposals = allOf(this.events, 'ActionEvent.ActionProposed');
    this.outcomes = allOf(this.events, 'ActionEvent.ToolSucceeded');
    for (const c of allOf(this.events, 'MemoryEvent.ClaimRecorded')) for (const id of c.p.evidence_event_ids) this.cited.add(id);
    const readTask = this.tasks.find((t) => t.kind === 'read');
    this.sourceFolder = (readTask ? FOLDER_RE.exec(readTask.title)?.[1] : undefined) ?? DEFAULT_SOURCE_FOLDER;
    this.linkReads();
  }

  /**
   * A read's ToolSucceeded carries the content and its hash, but not the path (that is in its
   * intent, which the window does not show). The path is the listed file with that hash: so a
   * linked read is always the file's current content. Among equal files, the one last
   * proposed for reading before the outcome.
   */
  private linkReads(): void {
    for (const o of this.outcomes) {
      if (o.p.content === null || o.p.observed_post_hash === null) continue;
      const hash = o.p.observed_post_hash;
      const candidates = [...this.listing.values()].filter((f) => f.sha256 === hash).map((f) => f.path);
      if (candidates.length === 0) continue;
      const proposed = this.proposals.filter((a) => a.event.seq < o.event.seq && a.p.tool === 'files' && a.p.op === 'read' && candidates.includes(String(a.p.args['path']))).at(-1);
      const path = proposed ? String(proposed.p.args['path']) : candidates[0]!;
      this.reads.set(path, { path, event_id: o.event.event_id, seq: o.event.seq, hash, content: o.p.content });
    }
  }

  get sources(): WorkspaceEntry[] {
    return this.bundle.workspace.filter((f) => f.path.startsWith(this.sourceFolder));
  }

  /** The latest external change to `path` in the window newer than its last read, if any. */
  unreconciledChange(path: string): Seen<PayloadOf<'WorldEvent.FileChangedExternally'>> | null {
    const read = this.reads.get(path);
    return this.changes.filter((c) => c.p.path === path && (!read || c.event.seq > read.seq)).at(-1) ?? null;
  }

  replyIn(thread: string | null): Seen<PayloadOf<'WorldEvent.MessageReceived'>> | null {
    return thread === null ? null : (this.messages.filter((m) => m.p.in_reply_to === thread).at(-1) ?? null);
  }

  /** "Do not use X" corrections naming a file: [path, X]. */
  get refuted(): Array<{ path: string; figure: string; event: WindowEvent }> {
    const out: Array<{ path: string; figure: string; event: WindowEvent }> = [];
    for (const c of this.corrections) {
      const path = filePathIn(c.p.body);
      const figure = DO_NOT_USE_RE.exec(c.p.body)?.[1]?.trim();
      if (path !== null && figure) out.push({ path, figure, event: c.event });
    }
    return out;
  }

  /** Figures with their sources: from current reads of the sources, or from a read of a findings file this policy wrote. */
  findings(): Finding[] {
    const out: Finding[] = [];
    const refuted = this.refuted;
    const isRefuted = (f: Finding): boolean => refuted.some((r) => r.path === f.source && f.statement.includes(r.figure));
    for (const read of this.reads.values()) {
      if (read.path.startsWith(this.sourceFolder)) {
        for (const line of read.content.split('\n')) {
          const m = /^\s*[-*]\s+(.*\d.*)$/.exec(line);
          if (m) out.push({ statement: oneLine(m[1]!), source: read.path });
        }
      } else {
        for (const line of read.content.split('\n')) {
          const m = /^- (.+) — source: (\S+)$/.exec(line);
          if (m && !out.some((f) => f.statement === m[1] && f.source === m[2])) out.push({ statement: m[1]!, source: m[2]! });
        }
      }
    }
    const kept = out.filter((f) => !isRefuted(f));
    for (const r of refuted) kept.push({ statement: oneLine(clip(this.corrections.find((c) => c.event === r.event)!.p.body, 400)), source: `correction event #${r.event.seq}` });
    return kept;
  }

  isDenied(tool: string, op: string, target: string): boolean {
    return this.bundle.state.denied_actions.some((d) => d.tool === tool && d.op === op && d.target === target);
  }
}

export interface Goal {
  readonly goal_id: string;
  readonly description: string;
  readonly deadline_at: string | null;
}

export function workingGoal(o: Observation): Goal | null {
  // The world's latest statement of the goal wins over the remembered one: the subject knows the goal changed, whether or not its plan could follow.
  if (o.goalChange) return { goal_id: o.goalChange.p.goal_id, description: o.goalChange.p.description, deadline_at: o.goalChange.p.deadline_at };
  return o.bundle.state.goal;
}
