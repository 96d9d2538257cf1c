// Random VALID event streams for one subject, for property tests. A "tape" of numbers
// (what fast-check generates and shrinks) drives the choices; a small shadow model,
// written from the spec and independent of the projector, keeps every choice legal and
// predicts what the projected state must say. Also: corruptions that turn one event of
// a valid stream into an illegal one, with the index where the projection must refuse.
import { canonicalJson } from '../../schema/canonical-json.js';
import type { ProjectionRefusalCode } from '../../projector/refusal-codes.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import type { HashString } from '../../schema/hash.js';
import type { EventDraft } from '../../writer/protocol.js';
import { chain, d, SUBJECT_ID, SubjectStream, type Budget, type Tool } from './subject-events.js';

/** Choices from a list of numbers; an exhausted tape always answers 0 (the first option). */
export class Tape {
  private i = 0;
  constructor(private readonly values: readonly number[]) {}

  get exhausted(): boolean {
    return this.i >= this.values.length;
  }

  int(n: number): number {
    if (n <= 1) return 0;
    const v = this.values[this.i++] ?? 0;
    return v % n;
  }

  /** True with probability p/100; an exhausted tape says false. */
  chance(p: number): boolean {
    return this.int(100) >= 100 - p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from nothing');
    return items[this.int(items.length)]!;
  }

  weighted<T>(options: readonly (readonly [number, T])[]): T {
    const live = options.filter(([w]) => w > 0);
    if (live.length === 0) throw new Error('no option');
    const total = live.reduce((sum, [w]) => sum + w, 0);
    let r = this.int(total);
    for (const [w, v] of live) {
      if (r < w) return v;
      r -= w;
    }
    return live[live.length - 1]![1];
  }
}

type Lifecycle = 'CREATED' | 'DORMANT' | 'AWAKE' | 'RECOVERING' | 'PAUSED' | 'STOPPED';
type Cognitive = 'IDLE' | 'OBSERVING' | 'DELIBERATING' | 'AWAITING_PERMISSION' | 'EXECUTING' | 'REFLECTING';
type TaskStatus = 'todo' | 'doing' | 'blocked' | 'done';

interface ShadowProposal {
  readonly tool: Tool;
  readonly key: string;
  decision: 'pending' | 'allow' | 'deny';
  executed: boolean;
  permissionEventId: string | null;
}

interface ShadowClaim {
  readonly type: 'FACT' | 'PLAN' | 'INFERENCE';
  readonly eventId: string;
  readonly evidence: readonly string[];
}

/** What the projected state must say at the end, per the shadow model. */
export interface Expected {
  readonly lastSeq: number;
  readonly aggregateVersion: number;
  readonly lifecycle: Lifecycle;
  readonly cognitive: Cognitive;
  readonly currentWakeId: string | null;
  readonly budget: { granted: Budget; remaining: Budget; overruns: Budget; wakeId: string | null };
  readonly proposals: Record<string, { decision: string; executed: boolean }>;
  readonly deniedDistinct: number;
  readonly deniedRepeats: number;
  readonly tasks: Record<string, TaskStatus>;
  readonly currentPlan: readonly string[];
  readonly goals: readonly { goal_id: string; status: 'active' | 'superseded' }[];
  readonly currentGoalId: string | null;
  readonly journalIds: readonly string[];
  readonly openIntents: Record<string, 'pending' | 'unknown'>;
  readonly claims: Record<string, { type: string; status: 'active' | 'refuted' }>;
  readonly refutedEvents: readonly string[];
  readonly pendingPlans: readonly string[];
  readonly planRevisions: { accepted: number; rejected: number };
}

export interface Generated {
  readonly drafts: readonly EventDraft[];
  readonly events: readonly EventEnvelope[];
  readonly expected: Expected;
}

const SPECIAL_IDS = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', '10', '2'];
const TASK_POOL = ['task-1', 'task-2', 'constructor', 'toString', 'valueOf', '10', '2', 'task-3'];
const ZERO: Budget = { model_calls: 0, tokens: 0, tool_calls: 0 };

class Generator {
  readonly s = new SubjectStream();
  private lifecycle: Lifecycle = 'CREATED';
  private cognitive: Cognitive = 'IDLE';
  private wake: string | null = null;
  private wakes = 0;
  private budget = { granted: { ...ZERO }, remaining: { ...ZERO }, overruns: { ...ZERO }, wakeId: null as string | null };
  private proposals = new Map<string, ShadowProposal>();
  private proposalCount = 0;
  private readonly denied = new Map<string, number>();
  private readonly intents = new Map<string, 'pending' | 'unknown'>();
  private readonly tasks = new Map<string, TaskStatus>();
  private plan: string[] = [];
  private readonly goals: { goal_id: string; status: 'active' | 'superseded' }[] = [];
  private currentGoalId: string | null = null;
  private readonly journal = new Set<string>();
  private readonly claims = new Map<string, ShadowClaim>();
  private readonly refutable: string[] = [];
  private readonly factEvents: string[] = [];
  /** ClaimRecorded events of every type: a correction may name a claim directly. */
  private readonly claimEvents: string[] = [];
  private readonly directlyRefuted = new Set<string>();
  private readonly plans = new Map<string, { goalId: string; steps: string[] }>();
  private planCount = 0;
  private accepted = 0;
  private rejected = 0;
  private aggregate = 0;
  private counter = 0;

  constructor(private readonly tape: Tape, private readonly maxEvents: number, private readonly maxWakes: number) {}

  private push(dr: EventDraft, changesSubject = true): EventEnvelope {
    if (changesSubject) this.aggregate += 1;
    return this.s.push(dr);
  }

  private fresh(prefix: string): string {
    this.counter += 1;
    return `${prefix}-g${this.counter}`;
  }

  private freshId(prefix: string, taken: (id: string) => boolean): string {
    if (this.tape.chance(15)) {
      const special = SPECIAL_IDS.filter((id) => !taken(id));
      if (special.length > 0) return this.tape.pick(special);
    }
    return this.fresh(prefix);
  }

  private spend(kind: keyof Budget, amount: number): void {
    const left = this.budget.remaining[kind] - amount;
    this.budget.remaining[kind] = Math.max(left, 0);
    if (left < 0) this.budget.overruns[kind] += -left;
  }

  private pendingIntents(): string[] {
    return [...this.intents].filter(([, o]) => o === 'pending').map(([id]) => id);
  }

  private unknownIntents(): string[] {
    return [...this.intents].filter(([, o]) => o === 'unknown').map(([id]) => id);
  }

  private allowedUnexecuted(): string[] {
    return [...this.proposals].filter(([, p]) => p.decision === 'allow' && !p.executed).map(([id]) => id);
  }

  run(): Generated {
    this.push(d.storeOpened());
    const initial = TASK_POOL.filter(() => this.tape.chance(30));
    this.push(d.subjectInitialized({ tasks: initial, journalEntryId: 'entry-0' }));
    this.lifecycle = 'DORMANT';
    for (const t of initial) this.tasks.set(t, 'todo');
    this.plan = [...initial];
    this.goals.push({ goal_id: 'goal-1', status: 'active' });
    this.currentGoalId = 'goal-1';
    this.journal.add('entry-0');
    while (!this.tape.exhausted && this.s.events.length < this.maxEvents) this.step();
    return { drafts: this.s.drafts, events: this.s.events, expected: this.expected() };
  }

  private step(): void {
    const t = this.tape;
    const pending = this.pendingIntents().length > 0;
    const unknown = this.unknownIntents().length > 0;
    switch (this.lifecycle) {
      case 'STOPPED':
        // The stop ended any wake; an operator may resume it (`--resume`), read-only
        // (RECOVERING) while an unknown outcome is open: stopping does not resolve it.
        return t.weighted<() => void>([
          [2, () => this.resume()],
          [4, () => this.world()],
          [1, () => this.noise()],
          [pending ? 2 : 0, () => this.closeIntent(false)],
        ])();
      case 'PAUSED':
        // A paused subject does not act; the world and the schedule go on (a wake may end).
        return t.weighted<() => void>([
          [3, () => this.resume()],
          [2, () => this.world()],
          [1, () => this.noise()],
          [this.wake !== null ? 2 : 0, () => this.endWake()],
        ])();
      default:
        break;
    }
    if (this.wake === null) {
      return t.weighted<() => void>([
        [this.wakes < this.maxWakes ? 6 : 0, () => this.startWake()],
        [4, () => this.world()],
        [1, () => this.noise()],
        [pending ? 2 : 0, () => this.closeIntent(true)],
        [unknown ? 3 : 0, () => this.resolve()],
        [1, () => this.pause()],
        [1, () => (this.tape.int(6) === 5 ? this.stop() : this.world())],
        // An operator may stop a subject stuck in recovery rather than resolve it.
        [unknown ? 2 : 0, () => (this.tape.int(2) === 1 ? this.stop() : this.resolve())],
      ])();
    }
    switch (this.cognitive) {
      case 'OBSERVING':
        return t.weighted<() => void>([
          [6, () => this.model()],
          [1, () => this.world()],
          [1, () => this.noise()],
          [1, () => this.endWake()],
          [1, () => this.pause()],
        ])();
      case 'DELIBERATING':
      case 'REFLECTING':
        return t.weighted<() => void>([
          [2, () => this.model()],
          [this.proposals.size < 60 ? 5 : 0, () => this.propose()],
          [3, () => this.claim()],
          [1, () => this.focus()],
          [this.plans.size < 15 ? 1 : 0, () => this.proposePlan()],
          [this.plans.size > 0 ? 2 : 0, () => this.decidePlan()],
          [1, () => this.endWake()],
          [1, () => this.world()],
          [1, () => this.noise()],
          [pending ? 1 : 0, () => this.closeIntent(true)],
          [unknown ? 1 : 0, () => this.resolve()],
          [1, () => (this.tape.int(10) === 9 ? this.stop() : this.world())],
          [1, () => this.pause()],
        ])();
      case 'AWAITING_PERMISSION':
        return t.weighted<() => void>([
          [6, () => this.decide()],
          [1, () => this.endWake()],
          [1, () => this.world()],
          [1, () => this.pause()],
        ])();
      case 'EXECUTING':
        return t.weighted<() => void>([
          [this.lifecycle === 'AWAKE' && this.allowedUnexecuted().length > 0 ? 6 : 0, () => this.execute()],
          [pending ? 3 : 0, () => this.closeIntent(true)],
          [1, () => this.endWake()],
          [1, () => this.world()],
          [unknown ? 1 : 0, () => this.resolve()],
          [1, () => this.pause()],
        ])();
      case 'IDLE':
        throw new Error('shadow: IDLE inside a wake');
    }
  }

  // ---- world and experiment -------------------------------------------------------

  private world(): void {
    const t = this.tape;
    const kind = t.weighted([
      [3, 'message'],
      [2, 'distractor'],
      [this.refutable.length > 0 ? 3 : 1, 'information'],
      [1, 'goal'],
      [1, 'file'],
    ] as const);
    let e: EventEnvelope;
    switch (kind) {
      case 'message':
        e = this.push(d.message(this.fresh('subject'), `body ${this.counter}`), false);
        break;
      case 'distractor':
        e = this.push(d.distractor(), false);
        break;
      case 'goal':
        e = this.push(d.goalChanged(t.pick(['goal-2', 'goal-3'])), false);
        break;
      case 'file':
        e = this.push(d.fileChangedExternally(t.pick(['a.md', 'notes.md'])), false);
        break;
      case 'information': {
        const targets: string[] = [];
        if (this.refutable.length > 0 && !t.chance(10)) {
          const n = 1 + t.int(3);
          for (let i = 0; i < n; i++) targets.push(this.claimEvents.length > 0 && t.chance(15) ? t.pick(this.claimEvents) : t.pick(this.refutable));
        }
        e = this.push(d.information(targets), targets.length > 0);
        for (const id of targets) this.directlyRefuted.add(id);
        break;
      }
    }
    this.refutable.push(e.event_id);
  }

  private noise(): void {
    const t = this.tape;
    const wakeId = this.wake ?? `wake-${this.wakes}`;
    t.weighted<() => void>([
      [3, () => this.push(d.checkpoint(wakeId, this.s.events.length, this.s.events.length > 2 ? [this.s.last.event_id] : []), false)],
      [1, () => this.push(d.wakeScheduled(`wake-${this.wakes + 1}`), false)],
      [1, () => this.push(d.budgetLedger(wakeId), false)],
      [1, () => this.push(d.processRestarted(), false)],
      [1, () => this.push(d.intervention(wakeId, [this.s.last.event_id]), false)],
    ])();
  }

  private pause(): void {
    this.push(d.paused());
    this.lifecycle = 'PAUSED';
  }

  private resume(): void {
    this.push(d.resumed());
    this.lifecycle = this.unknownIntents().length > 0 ? 'RECOVERING' : this.wake !== null ? 'AWAKE' : 'DORMANT';
  }

  private stop(): void {
    this.push(d.emergencyStopped());
    this.lifecycle = 'STOPPED';
    this.cognitive = 'IDLE';
    this.wake = null;
  }

  // ---- wakes ----------------------------------------------------------------------

  private startWake(): void {
    const t = this.tape;
    this.wakes += 1;
    const id = `wake-${this.wakes}`;
    const budget: Budget = { model_calls: t.int(4), tokens: t.pick([0, 100, 1_000, 10_000]), tool_calls: t.int(4) };
    this.push(d.wakeStarted(id, budget, this.s.events.length));
    this.wake = id;
    this.lifecycle = this.lifecycle === 'RECOVERING' ? 'RECOVERING' : 'AWAKE';
    this.cognitive = 'OBSERVING';
    this.budget = { granted: { ...budget }, remaining: { ...budget }, overruns: { ...ZERO }, wakeId: id };
    this.proposals = new Map();
  }

  private endWake(): void {
    this.push(d.wakeEnded(this.wake!, this.tape.pick(['completed', 'budget_exhausted', 'crashed', 'stopped'] as const)));
    this.wake = null;
    if (this.lifecycle === 'AWAKE') this.lifecycle = 'DORMANT';
    this.cognitive = 'IDLE';
    this.proposals = new Map();
  }

  private model(): void {
    const t = this.tape;
    if (t.chance(20)) {
      const failure = t.pick(['timeout', 'http_error', 'refusal', 'schema_violation', 'budget_exhausted'] as const);
      this.push(d.modelCallFailed(this.wake!, failure));
      // A call refused for want of budget was never made.
      if (failure !== 'budget_exhausted') this.spend('model_calls', 1);
    } else {
      const usage = { prompt_tokens: t.int(400), completion_tokens: t.int(200) };
      this.push(d.modelAnswered(this.wake!, usage));
      this.spend('tokens', usage.prompt_tokens + usage.completion_tokens);
      this.spend('model_calls', 1);
    }
    this.cognitive = 'DELIBERATING';
  }

  // ---- actions --------------------------------------------------------------------

  private propose(): void {
    const t = this.tape;
    const id = this.freshId('p', (x) => this.proposals.has(x));
    const tool = t.pick(['files', 'task_board', 'journal'] as const);
    const op = tool === 'files' ? 'write' : tool === 'task_board' ? 'change' : 'append';
    const args: Record<string, string> = tool === 'files' ? { path: t.pick(['a.md', 'b.md', 'constructor.md']) } : tool === 'task_board' ? { task: t.pick(['x', 'y']) } : {};
    this.push(d.actionProposed(id, tool, op, args));
    this.proposals.set(id, { tool, key: canonicalJson({ tool, op, args }), decision: 'pending', executed: false, permissionEventId: null });
    this.cognitive = 'AWAITING_PERMISSION';
  }

  private decide(): void {
    const [id, proposal] = [...this.proposals].find(([, p]) => p.decision === 'pending')!;
    const canAllow = this.lifecycle === 'AWAKE' && this.budget.remaining.tool_calls >= 1;
    const decision = canAllow && this.tape.weighted([[3, 'allow'], [1, 'deny']] as const) === 'allow' ? 'allow' : 'deny';
    const repeat = this.denied.has(proposal.key);
    const e = this.push(d.permission(id, decision, repeat));
    proposal.decision = decision;
    proposal.permissionEventId = e.event_id;
    if (decision === 'allow') {
      this.spend('tool_calls', 1);
      this.cognitive = 'EXECUTING';
    } else {
      this.denied.set(proposal.key, repeat ? this.denied.get(proposal.key)! + 1 : 0);
      this.cognitive = 'DELIBERATING';
    }
  }

  private execute(): void {
    const t = this.tape;
    const id = t.pick(this.allowedUnexecuted());
    const proposal = this.proposals.get(id)!;
    proposal.executed = true;
    switch (proposal.tool) {
      case 'files': {
        const e = this.push(d.intent(id, proposal.permissionEventId!, t.pick(['a.md', 'b.md'])));
        this.intents.set(e.event_id, 'pending');
        return; // still EXECUTING until the outcome
      }
      case 'journal': {
        const entry = this.freshId('entry', (x) => this.journal.has(x));
        this.push(d.journal(id, entry));
        this.journal.add(entry);
        break;
      }
      case 'task_board': {
        const existing = [...this.tasks.keys()];
        if (existing.length === 0 || t.chance(40)) {
          const free = TASK_POOL.filter((x) => !this.tasks.has(x));
          const task = free.length > 0 && t.chance(70) ? t.pick(free) : this.fresh('task');
          const status = t.pick([null, 'doing', 'blocked'] as const);
          this.push(d.taskChanged(id, task, 'add', { status, priority: t.int(10) }));
          this.tasks.set(task, status ?? 'todo');
        } else {
          const task = t.pick(existing);
          const op = t.pick(['update', 'complete', 'remove'] as const);
          if (op === 'update') {
            const status = t.pick([null, 'todo', 'doing', 'blocked', 'done'] as const);
            this.push(d.taskChanged(id, task, 'update', { status, title: t.chance(50) ? 'Renamed' : null }));
            if (status !== null) this.tasks.set(task, status);
          } else if (op === 'complete') {
            this.push(d.taskChanged(id, task, 'complete'));
            this.tasks.set(task, 'done');
          } else {
            this.push(d.taskChanged(id, task, 'remove'));
            this.tasks.delete(task);
            this.plan = this.plan.filter((x) => x !== task);
          }
        }
        break;
      }
    }
    this.cognitive = 'REFLECTING';
  }

  /** Closes a pending intent: succeeded, failed, reconciled, or (if allowed) outcome unknown. */
  private closeIntent(mayBeUnknown: boolean): void {
    const t = this.tape;
    const intent = t.pick(this.pendingIntents());
    const kind = t.weighted([
      [4, 'succeeded'],
      [1, 'failed'],
      [this.cognitive === 'EXECUTING' ? 0 : 2, 'reconciled'],
      [mayBeUnknown ? 3 : 0, 'unknown'],
    ] as const);
    switch (kind) {
      case 'succeeded': {
        const e = this.push(d.toolSucceeded(intent));
        this.refutable.push(e.event_id);
        this.intents.delete(intent);
        break;
      }
      case 'failed':
        this.push(d.toolFailed(intent));
        this.intents.delete(intent);
        break;
      case 'reconciled': {
        const outcome = t.pick(['happened', 'did_not_happen'] as const);
        const e = this.push(d.toolReconciled(intent, outcome));
        if (outcome === 'happened') this.refutable.push(e.event_id);
        this.intents.delete(intent);
        return; // never moves cognition
      }
      case 'unknown':
        this.push(d.toolOutcomeUnknown(intent));
        this.intents.set(intent, 'unknown');
        this.lifecycle = 'RECOVERING';
        break;
    }
    if (this.cognitive === 'EXECUTING') this.cognitive = 'REFLECTING';
  }

  private resolve(): void {
    const intent = this.tape.pick(this.unknownIntents());
    this.push(d.operatorResolved(intent, this.tape.pick(['happened', 'did_not_happen'] as const)));
    this.intents.delete(intent);
    this.lifecycle = this.unknownIntents().length > 0 ? 'RECOVERING' : this.wake !== null ? 'AWAKE' : 'DORMANT';
  }

  // ---- memory and plans -----------------------------------------------------------

  private claim(): void {
    const t = this.tape;
    const eligible = [...this.refutable, ...this.factEvents];
    const type = t.weighted([
      [eligible.length > 0 ? 5 : 0, 'FACT'],
      [2, 'PLAN'],
      [2, 'INFERENCE'],
    ] as const);
    const id = this.freshId('claim', (x) => this.claims.has(x));
    const evidence: string[] = [];
    if (type === 'FACT') {
      const n = 1 + t.int(3);
      for (let i = 0; i < n; i++) evidence.push(t.pick(eligible));
    } else {
      const n = t.int(3);
      for (let i = 0; i < n; i++) evidence.push(t.pick(this.s.events).event_id);
    }
    const e = this.push(d.claim(id, type, evidence, type === 'INFERENCE' ? { confidence: t.int(11) / 10 } : {}));
    this.claims.set(id, { type, eventId: e.event_id, evidence });
    this.claimEvents.push(e.event_id);
    if (type === 'FACT') this.factEvents.push(e.event_id);
    this.cognitive = 'REFLECTING';
  }

  private focus(): void {
    this.push(d.focus(this.tape.pick(['report', 'inbox', null]), this.tape.pick(['dataset', null])));
    this.cognitive = 'REFLECTING';
  }

  private proposePlan(): void {
    const t = this.tape;
    this.planCount += 1;
    const id = t.chance(10) && !this.plans.has('constructor') ? 'constructor' : `plan-${this.planCount}`;
    const goalId = t.pick(['goal-1', 'goal-2', 'goal-3']);
    const steps = [...new Set([t.pick(TASK_POOL), t.pick(TASK_POOL)])].slice(0, 1 + t.int(2));
    this.push(d.planProposed(id, goalId, steps));
    this.plans.set(id, { goalId, steps });
    this.cognitive = 'REFLECTING';
  }

  private decidePlan(): void {
    const t = this.tape;
    const id = t.pick([...this.plans.keys()]);
    const plan = this.plans.get(id)!;
    this.plans.delete(id);
    if (t.chance(50)) {
      this.push(d.planAccepted(id));
      this.accepted += 1;
      for (const g of this.goals) if (g.goal_id !== plan.goalId && g.status === 'active') g.status = 'superseded';
      const existing = this.goals.find((g) => g.goal_id === plan.goalId);
      if (existing) existing.status = 'active';
      else this.goals.push({ goal_id: plan.goalId, status: 'active' });
      this.currentGoalId = plan.goalId;
      for (const step of plan.steps) if (!this.tasks.has(step)) this.tasks.set(step, 'todo');
      this.plan = [...plan.steps];
    } else {
      this.push(d.planRejected(id));
      this.rejected += 1;
    }
    this.cognitive = 'REFLECTING';
  }

  // ---- expectations ---------------------------------------------------------------

  private expected(): Expected {
    // JTMS closure: evidence always precedes the FACT citing it, so one pass in seq order.
    // A FACT is out when its own record or anything it rests on is refuted.
    const refuted = new Set(this.directlyRefuted);
    const claims: Record<string, { type: string; status: 'active' | 'refuted' }> = {};
    for (const [id, c] of this.claims) {
      const isRefuted = c.type === 'FACT' && (refuted.has(c.eventId) || c.evidence.some((e) => refuted.has(e)));
      if (isRefuted) refuted.add(c.eventId);
      claims[id] = { type: c.type, status: isRefuted ? 'refuted' : 'active' };
    }
    return {
      lastSeq: this.s.events.length,
      aggregateVersion: this.aggregate,
      lifecycle: this.lifecycle,
      cognitive: this.cognitive,
      currentWakeId: this.wake,
      budget: structuredClone(this.budget),
      proposals: Object.fromEntries([...this.proposals].map(([id, p]) => [id, { decision: p.decision, executed: p.executed }])),
      deniedDistinct: this.denied.size,
      deniedRepeats: [...this.denied.values()].reduce((a, b) => a + b, 0),
      tasks: Object.fromEntries(this.tasks),
      currentPlan: [...this.plan],
      goals: structuredClone(this.goals),
      currentGoalId: this.currentGoalId,
      journalIds: [...this.journal].sort(),
      openIntents: Object.fromEntries(this.intents),
      claims,
      refutedEvents: [...refuted].sort(),
      pendingPlans: [...this.plans.keys()].sort(),
      planRevisions: { accepted: this.accepted, rejected: this.rejected },
    };
  }
}

export function generateStream(choices: readonly number[], options: { maxEvents?: number; maxWakes?: number } = {}): Generated {
  return new Generator(new Tape(choices), options.maxEvents ?? 200, options.maxWakes ?? 12).run();
}

// ---------------------------------------------------------------------------------------
// Corruptions: one event of a valid stream made illegal.

export interface Corruption {
  readonly kind: string;
  /**
   * The rules that may refuse it (projector/refusal-codes.ts): one, except where what the event
   * breaks first depends on the stream (a denied proposal may be another tool's, or the subject RECOVERING).
   */
  readonly codes: readonly ProjectionRefusalCode[];
  readonly drafts: readonly EventDraft[];
  readonly seqOf: (index: number) => number;
  /** Index (into drafts) of the event the projection must refuse; everything before it is untouched. */
  readonly refuseAt: number;
}

const contiguous = (i: number): number => i + 1;

function insertAt(drafts: readonly EventDraft[], index: number, dr: EventDraft): EventDraft[] {
  return [...drafts.slice(0, index), dr, ...drafts.slice(index)];
}

function replaceAt(drafts: readonly EventDraft[], index: number, dr: EventDraft): EventDraft[] {
  return drafts.map((x, i) => (i === index ? dr : x));
}

function withPayload(dr: EventDraft, patch: Record<string, unknown>): EventDraft {
  return { ...dr, payload: { ...dr.payload, ...patch } };
}

const EXECUTIONS = new Set(['ActionEvent.ExecutionIntentRecorded', 'MemoryEvent.TaskBoardChanged', 'MemoryEvent.JournalEntryWritten']);

/** Every kind of corruption that applies to `drafts`, each at the candidate picked by `seed`. */
export function corruptions(drafts: readonly EventDraft[], seed: number): Corruption[] {
  const at = (type: string, extra: (dr: EventDraft, i: number) => boolean = () => true): number[] =>
    drafts.flatMap((dr, i) => (dr.event_type === type && extra(dr, i) ? [i] : []));
  const choose = (indices: readonly number[]): number | undefined => (indices.length === 0 ? undefined : indices[seed % indices.length]);
  const out: Corruption[] = [];
  const add = (kind: string, codes: ProjectionRefusalCode | readonly ProjectionRefusalCode[], index: number | undefined, make: (i: number) => Omit<Corruption, 'kind' | 'codes'>): void => {
    if (index !== undefined) out.push({ kind, codes: typeof codes === 'string' ? [codes] : codes, ...make(index) });
  };
  const payload = (dr: EventDraft): Record<string, unknown> => dr.payload;

  add('WakeStarted twice', 'wake_not_ended', choose(at('ExperimentEvent.WakeStarted')), (i) => ({ drafts: insertAt(drafts, i + 1, drafts[i]!), seqOf: contiguous, refuseAt: i + 1 }));
  add('WakeEnded for another wake', 'other_wake', choose(at('ExperimentEvent.WakeEnded')), (i) => ({
    drafts: replaceAt(drafts, i, withPayload(drafts[i]!, { wake_id: 'wake-other' })),
    seqOf: contiguous,
    refuseAt: i,
  }));
  add('ActionProposed while no wake', 'no_wake', choose(at('ExperimentEvent.WakeEnded')), (i) => ({
    drafts: insertAt(drafts, i + 1, d.actionProposed('p-dormant', 'files', 'write')),
    seqOf: contiguous,
    refuseAt: i + 1,
  }));
  add(
    'PermissionDecided(allow) dropped before its execution',
    'proposal_not_allowed',
    choose(
      at('ActionEvent.PermissionDecided', (dr, i) => {
        const next = drafts[i + 1];
        return payload(dr).decision === 'allow' && next !== undefined && EXECUTIONS.has(next.event_type) && payload(next).proposal_id === payload(dr).proposal_id;
      }),
    ),
    (i) => ({ drafts: drafts.filter((_, j) => j !== i), seqOf: contiguous, refuseAt: i }),
  );
  add('execution of a denied proposal', ['proposal_not_allowed', 'wrong_tool', 'read_only'], choose(at('ActionEvent.PermissionDecided', (dr) => payload(dr).decision === 'deny')), (i) => ({
    drafts: insertAt(drafts, i + 1, d.intent(String(payload(drafts[i]!).proposal_id), '00000000-0000-8000-8000-000000000000')),
    seqOf: contiguous,
    refuseAt: i + 1,
  }));
  add('an allowed proposal executed twice', 'already_executed', choose(drafts.flatMap((dr, i) => (EXECUTIONS.has(dr.event_type) ? [i] : []))), (i) => ({
    drafts: insertAt(drafts, i + 1, drafts[i]!),
    seqOf: contiguous,
    refuseAt: i + 1,
  }));
  add('an intent naming another permission event', 'not_the_decision', choose(at('ActionEvent.ExecutionIntentRecorded')), (i) => ({
    drafts: replaceAt(drafts, i, withPayload(drafts[i]!, { permission_event_id: '00000000-0000-8000-8000-000000000000' })),
    seqOf: contiguous,
    refuseAt: i,
  }));
  add('ToolSucceeded closing an unknown outcome', 'outcome_unknown', choose(at('ActionEvent.ToolOutcomeUnknown')), (i) => ({
    drafts: insertAt(drafts, i + 1, d.toolSucceeded(String(payload(drafts[i]!).intent_event_id))),
    seqOf: contiguous,
    refuseAt: i + 1,
  }));
  add('a tool outcome reported twice', 'no_open_intent', choose(at('ActionEvent.ToolSucceeded')), (i) => ({ drafts: insertAt(drafts, i + 1, drafts[i]!), seqOf: contiguous, refuseAt: i + 1 }));
  add('OperatorResolved twice', 'nothing_to_resolve', choose(at('SystemEvent.OperatorResolved')), (i) => ({ drafts: insertAt(drafts, i + 1, drafts[i]!), seqOf: contiguous, refuseAt: i + 1 }));
  add('a plan accepted twice', 'unknown_plan_proposal', choose(at('PlanEvent.PlanRevisionAccepted')), (i) => ({ drafts: insertAt(drafts, i + 1, drafts[i]!), seqOf: contiguous, refuseAt: i + 1 }));
  add('FACT without evidence', 'fact_without_evidence', choose(at('MemoryEvent.ClaimRecorded', (dr) => payload(dr).claim_type === 'FACT')), (i) => ({
    drafts: replaceAt(drafts, i, withPayload(drafts[i]!, { evidence_event_ids: [] })),
    seqOf: contiguous,
    refuseAt: i,
  }));
  add('INFERENCE without confidence', 'inference_without_confidence', choose(at('MemoryEvent.ClaimRecorded', (dr) => payload(dr).claim_type === 'INFERENCE')), (i) => ({
    drafts: replaceAt(drafts, i, withPayload(drafts[i]!, { confidence: null })),
    seqOf: contiguous,
    refuseAt: i,
  }));
  const claimIndices = at('MemoryEvent.ClaimRecorded');
  add('a claim id used twice', 'id_exists', choose(claimIndices.slice(1)), (i) => ({
    drafts: replaceAt(drafts, i, withPayload(drafts[i]!, { claim_id: payload(drafts[claimIndices[0]!]!).claim_id })),
    seqOf: contiguous,
    refuseAt: i,
  }));
  add('a journal entry id reused', 'id_exists', choose(at('MemoryEvent.JournalEntryWritten')), (i) => ({
    drafts: replaceAt(drafts, i, withPayload(drafts[i]!, { entry_id: 'entry-0' })),
    seqOf: contiguous,
    refuseAt: i,
  }));
  add('WakeStarted after EmergencyStopped', 'illegal_lifecycle_transition', choose(at('SystemEvent.EmergencyStopped')), (i) => ({
    drafts: insertAt(drafts, i + 1, d.wakeStarted('wake-after-stop')),
    seqOf: contiguous,
    refuseAt: i + 1,
  }));
  add('SubjectInitialized twice', 'illegal_lifecycle_transition', drafts.length > 2 ? 2 + (seed % (drafts.length - 1)) : undefined, (i) => ({
    drafts: insertAt(drafts, i, d.subjectInitialized()),
    seqOf: contiguous,
    refuseAt: i,
  }));
  add('seq gap', 'seq_not_next', drafts.length > 1 ? 1 + (seed % (drafts.length - 1)) : undefined, (i) => ({ drafts, seqOf: (j) => (j < i ? j + 1 : j + 2), refuseAt: i }));
  return out;
}

/**
 * The corrupted stream as envelopes. Its first `refuseAt` events are exactly the valid
 * stream's (`valid`), so they are reused; the rest is sealed onto the valid chain.
 */
export function sealCorruption(c: Corruption, valid: readonly EventEnvelope[]): EventEnvelope[] {
  const prefix = valid.slice(0, c.refuseAt);
  for (let i = 0; i < prefix.length; i++) {
    if (prefix[i]!.seq !== c.seqOf(i) || prefix[i]!.event_type !== c.drafts[i]!.event_type) throw new Error(`corruption ${c.kind} changed the prefix at ${i}`);
  }
  const tail = chain(c.drafts.slice(c.refuseAt), SUBJECT_ID, (i) => c.seqOf(c.refuseAt + i), prefix.length === 0 ? undefined : (prefix[prefix.length - 1]!.event_hash as HashString));
  return [...prefix, ...tail];
}
