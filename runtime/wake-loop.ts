// Why one file: the steps of one wake share the Wake's counts, notes and append numbering; what outlives a wake (the observed state, the retrieval index, the cache) has its own files (issue 19).
// One wake of the subject (DESIGN §6, issue 5 item 1), after the controller's WakeStarted:
//
//   reconcile open intents → observe (context bundle) → think (one model call, recorded before
//   use) → plan (Capability Policy) → act (propose → decide, the permission gate → carry out, by
//   the action's tool: runtime/tools/) → remember (claims, focus) → the checkpoint, returned to
//   the controller (which records it).
//
// Every append goes through `recordAndReport`, which reports progress to the controller (its
// runtime-crash intervention kills this process on those counts); every draft is built by
// `draft`, whose payload the compiler holds to its event type's. Ids the store needs are made
// here from the wake id and positions, never taken from the model. Causation links: decision →
// its proposal, intent → its decision, outcome → its intent (issue 5 item 6).
import { InternalError } from '../foundation/typed-error.js';
import { canonicalJson } from '../schema/canonical-json.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { schemaVersionOf, type EventType, type PayloadOf } from '../schema/event-catalog.js';
import { eventIs } from '../schema/typed-event.js';
import type { Capabilities } from '../schema/capabilities.js';
import type { RetrievalPolicy } from '../schema/retrieval-policy.js';
import type { SubjectState } from '../projector/subject-state.js';
import type { WriterClient } from '../writer/client.js';
import { WRITER_LIMITS, WriterError, type EventDraft } from '../writer/protocol.js';
import { judgePlanRevision } from './capability-policy.js';
import { buildContextBundle, type ContextBundle } from './context-bundle.js';
import { readToHead, type EventCache } from './event-cache.js';
import type { ObservedState } from './observed-state.js';
import type { RetrievalIndex } from './retrieval-window.js';
import type { FaultSwitch } from '../schema/fault-switch.js';
import { FILE_LIMITS } from './gate-rule.js';
import { listWorkspaceCounted, reconcileIntent } from './tools/workspace-files.js';
import { ToolsInWake } from './tools/tool-set.js';
import type { ToolWake } from './tools/tool.js';
import { specialisedAnswerSchema } from './answer-schema.js';
import { answerSchemaToSend, type SubsetChoice } from './schema-subsets/schema-to-send.js';
import { NO_CALL_FACTS, NO_TOKENS_RECORDED, noUsageReason, type CallFacts, type ModelAdapter, type ModelCallOutcome, type TransportFailure } from './model-adapter.js';
import { adapterOf } from './model-adapters/adapter-list.js';
import { parseModelOutput, type ModelAction, type ModelProtocol, type ShownEvents, type SubjectAnswer } from './model-protocol.js';
import { actionArgs, decidePermission, fingerprintOfAction } from './permission-gate.js';
import { renderPrompt } from './prompt.js';
import { requestedAnswerCap, sentAnswerCap } from './answer-cap.js';
import { callCostNanoUsd } from './call-cost.js';
import { costCapHold } from './cost-cap-hold.js';
import type { ModelPrices } from '../schema/model-prices.js';
import type { RuntimeWake, WakeCheckpoint, WakeCounts } from './protocol.js';

/** The store keeps at most this much raw model text per call (schema/events/model-output-events.ts). */
export const MAX_STORED_RAW_OUTPUT_CHARS = 48_000;
const MAX_FINGERPRINT_CHARS = 200;
/** For models that are not waited for (reference, replay): a bound, never reached in practice. */
export const MODEL_CALL_TIMEOUT_MS = 60_000;
/** The answer's token cap: what is left of the wake's token budget, at most this. */

export interface WakeInput {
  readonly subjectId: string;
  readonly wake: RuntimeWake;
  readonly client: WriterClient;
  readonly cache: EventCache;
  /** The projection of the observed events, kept beside the cache: a wake folds only what is new to it. */
  readonly observed: ObservedState;
  /** The cache's events classified by the retrieval rule (of `retrievalPolicy`), kept beside the cache likewise. */
  readonly retrieval: RetrievalIndex;
  readonly adapter: ModelAdapter;
  /** The protocol the run's answers are asked for and checked in (fixed per run, runtime/model-protocol.ts). */
  readonly protocol: ModelProtocol;
  /** The dialect the schema is sent in and the pre-registered subset policy: what each call's schema leaves out (runtime/schema-subsets/). */
  readonly schemaSubset: SubsetChoice;
  readonly capabilities: Capabilities;
  readonly retrievalPolicy: RetrievalPolicy;
  /** The scenario's framing of the system message (runtime/prompt-framing.ts). */
  readonly framing: string;
  readonly workspaceRoot: string;
  /** How long the model call may take before it is recorded as a timeout. */
  readonly modelTimeoutMs: number;
  /** The configured prices (runtime/configured-prices.ts): each call's cost, and the cost cap's hold on each call; null: not priced, no cost recorded. */
  readonly prices: ModelPrices | null;
  /** True once the runtime is asked to stop: the wake ends at its next step boundary. */
  readonly shouldStop: () => boolean;
  /** Resolves when the controller has seen the append (it may kill this process instead: a planned crash). */
  readonly onProgress: (counts: { appends: number; execution_intents: number }) => Promise<void>;
  /** Resolves once the controller has been told a model call starts (so a death during it is not silent). */
  readonly onModelCallStarted: (callNumber: number) => Promise<void>;
  /** The fault harness's points (schema/fault-switch.ts); FaultSwitch.off outside npm run faults. */
  readonly faults: FaultSwitch;
  readonly log: (line: string) => void;
}

export interface WakeResult {
  readonly counts: WakeCounts;
  readonly checkpoint: WakeCheckpoint;
  readonly window_statement: string;
  readonly notes: string[];
}

/**
 * A draft before its schema version and default idempotency key (recordAndReport adds them).
 * Built here, not with writer/event-draft.ts draftOf: a runtime append's default idempotency key is
 * numbered by the attempt at record time, and of the writer room this process loads only the client
 * side (writer/client.ts, writer/protocol.ts; test/runtime/runtime-process.test.ts holds it to that).
 */
type Draft = Omit<EventDraft, 'schema_version'> & { readonly event_type: EventType };

/** What every model event says of its call: the adapter, its parameters, the latency, the bundle's counts. */
type ModelCallFields = Pick<PayloadOf<'ModelOutputEvent.ModelCallFailed'>, 'wake_id' | 'adapter' | 'model_id' | 'params' | 'system_fingerprint' | 'latency_ms' | 'context'>;
/** The call record (schema/events/model-output-events.ts CallRecord). */
type CallRecordFields = Pick<PayloadOf<'ModelOutputEvent.ModelCallFailed'>, 'protocol' | 'finish_reason' | 'response_model' | 'prompt_tokens_counted' | 'prompt_count_source' | 'attempts' | 'prompt_reuse' | 'provider_finish_reason' | 'cache_read_tokens' | 'cache_write_tokens' | 'cost_nano_usd'>;

/** The runtime is stopping: the wake ended at a step boundary, everything before it recorded. */
export class WakeStoppedError extends InternalError {
  override readonly name = 'WakeStoppedError';
}

/** The runtime was woken for a wake the store does not have open: nothing is appended. */
export class WakeNotOpenError extends InternalError {
  override readonly name = 'WakeNotOpenError';
}

class Wake {
  private appends = 0;
  private executionIntents = 0;
  readonly counts = { model_calls: 0, tokens: 0, tool_calls: 0, retries: 0, proposals: 0, executions: 0, denials: 0, failures: 0, claims: 0, claims_refused: 0, plan_revisions: 0, reconciled: 0, unknown_outcomes: 0 };
  readonly notes: string[] = [];

  constructor(private readonly input: WakeInput) {}

  private get wakeId(): string {
    return this.input.wake.wake_id;
  }

  /** Append requests sent in this wake, refused ones included: numbers the default idempotency keys. */
  private attempts = 0;

  /**
   * Appends one event, or several in one commit (`after`: steps with nothing between them, see
   * RuntimeWake steps_share_appends), committed before this returns, and reports progress once.
   * An event without an idempotency key of its own gets one from the wake and an attempt number
   * of its own, so a request the writer receives twice is stored once (a wake is never run
   * twice, and a refused attempt still uses up its numbers).
   */
  async recordAndReport(draft: Draft, ...after: readonly Draft[]): Promise<{ event_id: string; seq: number }> {
    const drafts = [draft, ...after];
    const full = drafts.map((d): EventDraft => {
      this.attempts += 1;
      return { ...d, idempotency_key: d.idempotency_key ?? `${this.input.subjectId}:${this.wakeId}:append-${this.attempts}`, schema_version: schemaVersionOf(d.event_type) };
    });
    const result = await this.input.client.append(full);
    this.appends += drafts.length;
    this.executionIntents += drafts.filter((d) => eventIs(d, 'ActionEvent.ExecutionIntentRecorded')).length;
    await this.input.onProgress({ appends: this.appends, execution_intents: this.executionIntents });
    return { event_id: result.events[0]!.event_id, seq: result.events[0]!.seq };
  }

  /** A draft of this wake (its time, its correlation), with `event_type`'s own payload (the compiler holds it to the catalogue's). */
  private draft<T extends EventType>(event_type: T, actor: EventDraft['actor'], payload: PayloadOf<T>, causation_id: string | null = null, idempotency_key: string | null = null): Draft {
    return { event_type, occurred_at: this.input.wake.wake_at, actor, causation_id, correlation_id: this.wakeId, idempotency_key, payload };
  }

  async run(): Promise<WakeResult> {
    const { cache, client, wake, retrieval } = this.input;
    // The catch-up reads on through the head: the first state needs no read of its own.
    const tail = await cache.catchUp(client, wake.visible_to_seq);
    retrieval.add(cache.since(retrieval.lastSeq));
    let state = this.foldTail(tail);
    if (state.current_wake_id !== wake.wake_id) throw new WakeNotOpenError(`the store has no open wake ${wake.wake_id} (current wake: ${String(state.current_wake_id)}, lifecycle ${state.lifecycle_state}); the controller appends WakeStarted before waking the runtime`);
    // Reconciliation may move the subject to RECOVERING (read-only): decide everything after it on the state it leaves.
    if (await this.reconcileOpenIntents(state)) state = await this.stateNow();

    const listing = listWorkspaceCounted(this.input.workspaceRoot);
    const unlisted = listing.omitted.too_deep + listing.omitted.too_large + listing.omitted.over_count;
    if (unlisted > 0) this.notes.push(`workspace listing left out ${listing.omitted.over_count} over the limit, ${listing.omitted.too_large} too large, ${listing.omitted.too_deep} folder(s) too deep (stated in the prompt)`);
    const bundle = buildContextBundle({
      wake: { wake_id: wake.wake_id, wake_at: wake.wake_at, budget: wake.budget, visible_to_seq: wake.visible_to_seq },
      events: cache.events,
      retrieval,
      policy: this.input.retrievalPolicy,
      capabilities: this.input.capabilities,
      persistentState: state,
      workspace: listing.entries,
      workspaceOmitted: listing.omitted,
    });
    this.boundary('before the model call');
    const output = await this.think(bundle);
    this.boundary('after the model call (recorded)');
    if (output) {
      if (output.plan_revision) {
        await this.plan(output, bundle);
        // An accepted revision rewrites goals and the board: the gate judges the actions on what it left.
        state = await this.stateNow();
      }
      for (const [index, action] of output.actions.entries()) {
        this.boundary(`before action ${index + 1}`);
        await this.act(action, index, state);
      }
      for (const [index, claim] of output.claims.entries()) {
        this.boundary(`before claim ${index + 1}`);
        await this.remember(claim, index);
      }
      if (!this.focusRecorded) {
        this.boundary('before the focus update');
        await this.recordAndReport(this.focusDraft(output));
      }
    }
    const checkpoint: WakeCheckpoint = output
      ? { ...output.checkpoint, observed_event_seq: wake.visible_to_seq }
      : { current_goal_id: null, goal_status: null, attention_target: null, waiting_condition: null, next_action: null, evidence_event_ids: [], observed_event_seq: wake.visible_to_seq };
    return { counts: { ...this.counts, appends: this.appends }, checkpoint, window_statement: bundle.window.statement, notes: this.notes };
  }

  /**
   * Persistent state — bookkeeping for reconciliation, and B/C's view: the projection of every
   * event up to the writer's head, the observed ones plus what the controller (WakeStarted,
   * deliveries) and this wake appended since visible_to_seq. Folded incrementally: only the
   * cached events and the tail not folded before (issue 19 item 1). The state returned is the
   * one the next call folds on: read it, never keep it past the next step that appends.
   */
  private async stateNow(): Promise<SubjectState> {
    const { client, cache, observed } = this.input;
    observed.advance(cache.since(observed.seq));
    return this.foldTail(await readToHead(client, observed.seq + 1, this.input.subjectId));
  }

  /** The observed state with the cache and then `tail` (the events after it through the head, read in this wake) folded in. */
  private foldTail(tail: readonly EventEnvelope[]): SubjectState {
    const { cache, observed } = this.input;
    observed.advance(cache.since(observed.seq));
    return observed.advance(tail);
  }

  /** DESIGN §7: every open intent is settled by hashing the file, before anything new happens. Returns whether it appended anything. */
  private async reconcileOpenIntents(state: SubjectState): Promise<boolean> {
    let appended = false;
    for (const [intentEventId, intent] of Object.entries(state.open_intents)) {
      if (intent.outcome !== 'pending') continue;
      const verdict = reconcileIntent(this.input.workspaceRoot, intent);
      if (verdict.outcome === 'unknown') {
        await this.recordAndReport(this.draft('ActionEvent.ToolOutcomeUnknown', 'tool', { intent_event_id: intentEventId, observed_hash: verdict.observed_hash, detail: verdict.detail }, intentEventId));
        this.counts.unknown_outcomes += 1;
        this.notes.push(`intent ${intentEventId} (${intent.op} ${intent.path}): outcome unknown — the subject is read-only (RECOVERING) until an operator resolves it`);
      } else {
        await this.recordAndReport(this.draft('ActionEvent.ToolReconciled', 'tool', { intent_event_id: intentEventId, outcome: verdict.outcome, observed_hash: verdict.observed_hash }, intentEventId));
        this.counts.reconciled += 1;
        this.notes.push(`intent ${intentEventId} (${intent.op} ${intent.path}) reconciled: ${verdict.outcome}`);
      }
      appended = true;
    }
    return appended;
  }

  /** One model call; exactly one ModelOutputEvent, committed before the output is used (transport attempts before it, one event each). */
  private async think(bundle: ContextBundle): Promise<SubjectAnswer | null> {
    const { adapter, wake, protocol } = this.input;
    const prompt = renderPrompt(bundle, this.input.framing);
    const w = bundle.window;
    this.context = { window_events: w.events.length, eligible_total: w.eligible_total, omitted_by_count: w.omitted_by_count, omitted_by_token_cap: w.omitted_by_token_cap, not_eligible: w.not_eligible, tokens_estimated: w.tokens_estimated };
    if (wake.budget.model_calls < 1) {
      await this.recordAndReport(this.draft('ModelOutputEvent.ModelCallFailed', 'model', { ...this.callFields(0), ...this.recordFields(NO_CALL_FACTS), context: null, failure: 'budget_exhausted', detail: 'the wake grants no model call', raw_output: null, usage: null, usage_source: null }));
      return null;
    }
    const shown: ShownEvents = new Map(w.events.map((e) => [e.seq, e.event_id]));
    const maxTokens = requestedAnswerCap(wake.budget.tokens, prompt.system, prompt.user);
    const held = costCapHold(wake.cost_cap, this.input.prices, prompt, sentAnswerCap(maxTokens, adapter.params.max_tokens));
    if (held !== null) {
      // Recorded like a call never made (no usage, nothing spent); the controller stops the instance after this wake.
      await this.recordAndReport(this.draft('ModelOutputEvent.ModelCallFailed', 'model', { ...this.callFields(0), ...this.recordFields(NO_CALL_FACTS), context: this.context, failure: 'cost_cap', detail: held.slice(0, 2_000), raw_output: null, usage: null, usage_source: null }));
      this.notes.push(`model call held back by the cost cap: ${held}`);
      return null;
    }
    let abandoned = false;
    const onTransportFailure = async (f: TransportFailure): Promise<void> => {
      // A call given up as timed out (the fault harness's model_timeout) records nothing after its ModelCallFailed.
      if (abandoned) return;
      await this.recordAndReport(this.draft('ModelOutputEvent.ModelCallAttemptFailed', 'model', { wake_id: wake.wake_id, call_number: 1, attempt: f.attempt, kind: f.kind, detail: f.detail.slice(0, 2_000), latency_ms: f.latency_ms, backoff_ms: f.backoff_ms }));
      this.notes.push(`model call attempt ${f.attempt} failed without an answer (${f.kind})${f.backoff_ms === null ? '' : `; retrying in ${f.backoff_ms} ms under the pre-registered policy`}`);
    };
    await this.input.onModelCallStarted(1);
    const startedMs = Date.now();
    const pending = adapter.call({ wake_id: wake.wake_id, call_number: 1, bundle, system: prompt.system, user: prompt.user, max_tokens: maxTokens, answer_schema: answerSchemaToSend(this.input.schemaSubset, specialisedAnswerSchema(protocol, [...shown.keys()])), onTransportFailure }, this.input.modelTimeoutMs);
    const fault = this.input.faults.hit('runtime.model_call.in_flight', () => ({ wake_id: wake.wake_id, call_number: 1 }));
    let outcome: ModelCallOutcome;
    if (fault === 'model_timeout') {
      // Abandoned like a call past its timeout: whatever it answers later is never used.
      abandoned = true;
      pending.catch(() => undefined);
      outcome = { kind: 'failed', failure: 'timeout', detail: 'fault injection (npm run faults): the call was abandoned as timed out; its answer, if any, is not used', raw_output: null, latency_ms: Date.now() - startedMs, ...NO_CALL_FACTS };
    } else {
      outcome = await pending;
      if (fault === 'model_garbage' && outcome.kind === 'answered') outcome = { ...outcome, raw_output: GARBAGE_OUTPUT };
      // random_subject returns here too and is left alone: the harness started the instance with a real model, whose answer is the fault.
      // Every other kind the point can return is a harness action (schema/fault-points.ts harnessActionOf), never the runtime's.
    }
    this.counts.model_calls += 1;
    this.counts.retries += Math.max(0, outcome.attempts - 1);
    return this.record(outcome, shown);
  }

  /** The bundle's counts of the wake's one call (set by think before the call is recorded). */
  private context: ModelCallFields['context'] = null;

  private callFields(latencyMs: number, fingerprint: string | null = null): ModelCallFields {
    const { adapter } = this.input;
    if (fingerprint !== null && fingerprint.length > MAX_FINGERPRINT_CHARS) {
      this.notes.push(`system_fingerprint of ${fingerprint.length} chars cut to the ${MAX_FINGERPRINT_CHARS} the store keeps`);
      fingerprint = fingerprint.slice(0, MAX_FINGERPRINT_CHARS);
    }
    return { wake_id: this.wakeId, adapter: adapter.name, model_id: adapter.model_id, params: { ...adapter.params }, system_fingerprint: fingerprint, latency_ms: latencyMs, context: this.context };
  }

  /** The call record every model event carries (schema/events/model-output-events.ts CallRecord); over-long texts are cut, and said. */
  private recordFields(facts: Omit<CallFacts, 'usage_source'>): CallRecordFields {
    const cut = (what: string, text: string | null, max: number): string | null => {
      if (text === null || text.length === 0) return null;
      if (text.length <= max) return text;
      this.notes.push(`${what} of ${text.length} chars cut to the ${max} the store keeps`);
      return text.slice(0, max);
    };
    return {
      protocol: this.input.protocol,
      finish_reason: cut('finish_reason', facts.finish_reason, 64),
      response_model: cut('response model', facts.response_model, 200),
      prompt_tokens_counted: facts.prompt_tokens_counted,
      prompt_count_source: facts.prompt_count_source,
      attempts: facts.attempts,
      prompt_reuse: facts.prompt_reuse ?? null,
      provider_finish_reason: cut('provider finish reason', facts.provider_finish_reason ?? null, 64),
      cache_read_tokens: facts.cache_read_tokens ?? null,
      cache_write_tokens: facts.cache_write_tokens ?? null,
      // Priced from the counts this record holds (issue 36 item 4), so the verifier can recompute it; not priced: null.
      cost_nano_usd: this.input.prices === null ? null : callCostNanoUsd(facts.usage === null ? null : { ...facts.usage, cache_read_tokens: facts.cache_read_tokens ?? null, cache_write_tokens: facts.cache_write_tokens ?? null }, this.input.prices),
    };
  }

  private async record(outcome: ModelCallOutcome, shown: ShownEvents): Promise<SubjectAnswer | null> {
    // Tokens spent count whether or not the answer is used: a misbehaving model is not cheap.
    if (outcome.usage !== null) this.counts.tokens += outcome.usage.prompt_tokens + outcome.usage.completion_tokens;
    if (adapterOf(this.input.adapter.name).callsModel) {
      // A call no server evaluated records no tokens and says why; what follows concerns calls that reached one (issue 31 item 7).
      if (outcome.kind === 'failed' && outcome.usage === null) this.notes.push(`${NO_TOKENS_RECORDED} for this call: ${noUsageReason(outcome.failure)}`);
      else {
        if (outcome.usage_source === 'estimate') this.notes.push(outcome.kind === 'answered' ? 'the model reported no token usage: the counts recorded are estimates (usage_source "estimate")' : 'the call reached the server, which may have queued or evaluated it, and reported no usage: its tokens are estimates (usage_source "estimate")');
        if (outcome.prompt_count_source === 'estimate') this.notes.push('the prompt was not counted by a tokenizer (prompt_count_source "estimate"): a prompt the server cut short cannot be detected for this call');
      }
    }
    if (outcome.kind === 'failed') {
      const base = { ...this.callFields(outcome.latency_ms, outcome.system_fingerprint ?? null), ...this.recordFields(outcome), failure: outcome.failure, detail: outcome.detail.slice(0, 2_000), usage: outcome.usage, usage_source: outcome.usage_source };
      const raw = outcome.raw_output === null ? null : this.fitted(base, outcome.raw_output);
      await this.recordAndReport(this.draft('ModelOutputEvent.ModelCallFailed', 'model', { ...base, raw_output: raw }));
      this.notes.push(`model call failed (${outcome.failure}): ${outcome.detail.slice(0, 200)}`);
      return null;
    }
    const fields = { ...this.callFields(outcome.latency_ms, outcome.system_fingerprint), ...this.recordFields(outcome), usage: { ...outcome.usage }, usage_source: outcome.usage_source };
    const context = this.context;
    if (context === null) throw new Error('bug: a model answer is recorded before its context was counted');
    const answered = { ...fields, context, raw_output: outcome.raw_output };
    const bytes = payloadBytes(answered);
    if (outcome.raw_output.length > MAX_STORED_RAW_OUTPUT_CHARS || bytes > WRITER_LIMITS.maxPayloadBytes) {
      // It cannot be stored verbatim, so it is not used: recorded as a protocol failure with the longest prefix that fits.
      const base = { ...fields, failure: 'schema_violation' as const, detail: `raw output of ${outcome.raw_output.length} chars (${bytes} bytes as an event) exceeds what the store keeps (${MAX_STORED_RAW_OUTPUT_CHARS} chars, ${WRITER_LIMITS.maxPayloadBytes} bytes per event); a prefix is stored and nothing is used` };
      await this.recordAndReport(this.draft('ModelOutputEvent.ModelCallFailed', 'model', { ...base, raw_output: this.fitted(base, outcome.raw_output) }));
      this.notes.push('model output too long to store verbatim: not used');
      return null;
    }
    const parsed = parseModelOutput(outcome.raw_output, this.input.protocol, shown);
    if (!parsed.ok) {
      // An answer cut at its token cap is a failure of its own kind: the cap, not the model's grasp of the protocol, may be the cause.
      const cutAtCap = outcome.finish_reason === 'length';
      const base = { ...fields, failure: cutAtCap ? ('length' as const) : ('schema_violation' as const), detail: `${cutAtCap ? 'the answer ended at its token cap (finish_reason length) and ' : ''}${parsed.detail}`.slice(0, 2_000) };
      await this.recordAndReport(this.draft('ModelOutputEvent.ModelCallFailed', 'model', { ...base, raw_output: this.fitted(base, outcome.raw_output) }));
      this.notes.push(`model output fails the protocol${cutAtCap ? ' (cut at its token cap)' : ''}: ${parsed.detail.slice(0, 200)}`);
      return null;
    }
    const answer = this.draft('ModelOutputEvent.ModelAnswered', 'model', answered);
    const output = parsed.output;
    if (this.input.wake.steps_share_appends && !output.plan_revision && output.actions.length === 0 && output.claims.length === 0) {
      // Nothing lies between the answer and its focus: one commit for both (issue 19 item 2), the same events in the same order.
      await this.recordAndReport(answer, this.focusDraft(output));
      this.focusRecorded = true;
    } else await this.recordAndReport(answer);
    return output;
  }

  /** Set when the focus update was committed with the answer (record()): run() then has none left to append. */
  private focusRecorded = false;

  private focusDraft(output: SubjectAnswer): Draft {
    return this.draft('MemoryEvent.FocusUpdated', 'runtime', { attention_target: output.focus.attention_target, waiting_condition: output.focus.waiting_condition });
  }

  /** The longest prefix of `raw` that keeps the event within the store's limits (a note says when it is cut). */
  private fitted(base: Record<string, unknown>, raw: string): string {
    const fits = (n: number): boolean => n <= MAX_STORED_RAW_OUTPUT_CHARS && payloadBytes({ ...base, raw_output: prefixOf(raw, n) }) <= WRITER_LIMITS.maxPayloadBytes;
    if (fits(raw.length)) return raw;
    // Binary search over the prefix length: at most ~17 steps for 48,000 chars.
    let lo = 0;
    let hi = Math.min(raw.length, MAX_STORED_RAW_OUTPUT_CHARS);
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (fits(mid)) lo = mid;
      else hi = mid - 1;
    }
    const kept = prefixOf(raw, lo);
    this.notes.push(`raw model output cut to its first ${kept.length} of ${raw.length} chars to fit the store`);
    return kept;
  }

  private async plan(output: SubjectAnswer, bundle: ContextBundle): Promise<void> {
    const revision = output.plan_revision!;
    const proposalId = `${this.wakeId}-plan`;
    this.counts.plan_revisions += 1;
    const proposed = await this.recordAndReport(this.draft('PlanEvent.PlanRevisionProposed', 'model', { proposal_id: proposalId, ...revision }));
    const verdict = judgePlanRevision(this.input.capabilities, revision, bundle);
    if (verdict.verdict === 'accept') {
      try {
        await this.recordAndReport(this.draft('PlanEvent.PlanRevisionAccepted', 'runtime', { proposal_id: proposalId }, proposed.event_id));
      } catch (error) {
        // The projector refuses to adopt it (e.g. the board would exceed its limits): the plan is invalid, and says so, instead of ending the wake.
        if (!(error instanceof WriterError) || error.code !== 'projection_rejected') throw error;
        this.notes.push(`plan revision ${proposalId} passed the policy but the projector refused to adopt it (${error.recordNote.slice(0, 300)}): rejected as invalid_plan`);
        await this.recordAndReport(this.draft('PlanEvent.PlanRevisionRejected', 'runtime', { proposal_id: proposalId, reason_code: 'invalid_plan' }, proposed.event_id));
      }
    } else {
      // No retry, no extra call, no compensating prompt (spec §5.2): the rejection is the whole answer.
      await this.recordAndReport(this.draft('PlanEvent.PlanRevisionRejected', 'runtime', { proposal_id: proposalId, reason_code: verdict.reason_code }, proposed.event_id));
    }
  }

  /** A step boundary: stop here when asked (nothing half done: an intent always has its outcome). */
  private boundary(where: string): void {
    if (this.input.shouldStop()) throw new WakeStoppedError(`stopped ${where}`);
  }

  private toolCallsLeft(): number {
    return this.input.wake.budget.tool_calls - this.counts.tool_calls;
  }

  /** Propose → decide (the permission gate, on what the action's tool found) → carry out (by the action's tool). */
  private async act(action: ModelAction, index: number, state: SubjectState): Promise<void> {
    const proposalId = `${this.wakeId}-a${index + 1}`;
    this.counts.proposals += 1;
    const args = actionArgs(action);
    const proposed = await this.recordAndReport(this.draft('ActionEvent.ActionProposed', 'model', { proposal_id: proposalId, tool: action.tool, op: action.op, args, rationale: action.rationale }));
    const tools = this.toolsFor(state);
    const fingerprint = fingerprintOfAction(action);
    const decision = decidePermission({
      action,
      fingerprint,
      ...tools.gateFacts(action.tool, action),
      limits: FILE_LIMITS,
      tool_calls_left: this.toolCallsLeft(),
      lifecycle: state.lifecycle_state,
      denied_fingerprints: new Set([...Object.keys(state.denied_actions), ...this.deniedThisWake]),
    });
    const decided = await this.recordAndReport(this.draft('ActionEvent.PermissionDecided', 'runtime', { proposal_id: proposalId, decision: decision.decision, rules: decision.rules, repeat_of_denied: decision.repeat_of_denied }, proposed.event_id));
    if (decision.decision === 'deny') {
      this.counts.denials += 1;
      this.deniedThisWake.add(fingerprint);
      return;
    }
    this.counts.tool_calls += 1;
    const keyOf = (what: string): string => `${this.input.subjectId}:${this.wakeId}:${proposalId}:${what}`;
    await tools.carryOut(action.tool, action, { proposal_id: proposalId, index, permission_event_id: decided.event_id, keyOf });
  }

  private readonly deniedThisWake = new Set<string>();
  /** The tools as this wake uses them: opened at its first action, on the state its actions are judged on. */
  private tools: ToolsInWake | null = null;

  private toolsFor(state: SubjectState): ToolsInWake {
    this.tools ??= new ToolsInWake(this.toolWake(state));
    return this.tools;
  }

  /** What this wake lends its tools: its appends (numbered and reported like every other) and its counts. */
  private toolWake(state: SubjectState): ToolWake {
    return {
      wakeId: this.wakeId,
      workspaceRoot: this.input.workspaceRoot,
      faults: this.input.faults,
      state,
      append: (event_type, actor, payload, causation_id, idempotency_key) => this.recordAndReport(this.draft(event_type, actor, payload, causation_id, idempotency_key)),
      counted: (outcome) => {
        this.counts[outcome] += 1;
      },
    };
  }

  private async remember(claim: SubjectAnswer['claims'][number], index: number): Promise<void> {
    try {
      await this.recordAndReport(this.draft('MemoryEvent.ClaimRecorded', 'model', { claim_id: `${this.wakeId}-c${index + 1}`, ...claim }));
      this.counts.claims += 1;
    } catch (error) {
      // A FACT without eligible evidence is refused by the writer and recorded there (AppendRejected); the wake goes on.
      if (!(error instanceof WriterError) || (error.code !== 'evidence_rejected' && error.code !== 'projection_rejected')) throw error;
      this.counts.claims_refused += 1;
      this.notes.push(`claim ${index + 1} (${claim.claim_type}) refused by the writer: ${error.code}`);
    }
  }
}

/** What the model_garbage fault makes the model answer: not the output protocol, and says why. */
const GARBAGE_OUTPUT = '%%%\u00ff{{{ fault injection (npm run faults): garbage in place of the model answer ]]]';

function payloadBytes(payload: Record<string, unknown>): number {
  return Buffer.byteLength(canonicalJson(payload), 'utf8');
}

/** The first n UTF-16 units of text, one fewer when n would split a surrogate pair (a lone surrogate is not JSON the store accepts). */
function prefixOf(text: string, n: number): string {
  const code = text.charCodeAt(n - 1);
  return n > 0 && n < text.length && code >= 0xd800 && code <= 0xdbff ? text.slice(0, n - 1) : text.slice(0, n);
}

export async function runWake(input: WakeInput): Promise<WakeResult> {
  return new Wake(input).run();
}
