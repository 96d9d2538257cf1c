// How each ModelOutputEvent reads in a blind-review package (blind-review/event-normalizer.ts).
// Dropped from every model call: adapter, model id, params, fingerprint, latency, protocol,
// response model, finish reason, attempts (configuration or apparatus), and the context counts and
// prompt tokens (the context bundle's size depends on the state setting by construction).
import { MODEL_FAILURE_DETAIL_WITHHELD, SHOWN_MODEL_FAILURE } from '../shown-model-failure.js';
import { keep, type DispositionHandlers } from './disposition.js';

export const disposeModelOutputEvents: DispositionHandlers<'ModelOutputEvent'> = {
  'ModelOutputEvent.ModelAnswered': (p) =>
    keep('model_answered', 'subject', (c) => ({ summary: `the model answered (${p.usage.completion_tokens} output tokens)`, detail: { raw_output: c.text(p.raw_output), completion_tokens: p.usage.completion_tokens }, refs: [] })),
  'ModelOutputEvent.ModelCallAttemptFailed': () => ({ omit: 'transport_attempt' }),
  'ModelOutputEvent.ModelCallFailed': (p) => {
    // The kind as SHOWN_MODEL_FAILURE says. A schema violation's or a refusal's detail is about
    // the subject's own answer: kept. Every other detail is the apparatus's or the server's text
    // and may quote the prompt's size, which depends on whether the group keeps state: withheld.
    // What arrived of a call that brought no answer is withheld too: a whole answer (the server
    // read a truncated prompt) or a part of one (a timeout, a broken stream) or nothing (a
    // refused connection) would tell again which apparatus failure it was; none of it was used.
    const failure = SHOWN_MODEL_FAILURE[p.failure];
    const aboutTheAnswer = p.failure === 'schema_violation' || p.failure === 'refusal';
    return keep('model_call_failed', 'subject', (c) => ({
      summary: `the model call failed: ${failure}`,
      detail: { failure, detail: aboutTheAnswer ? c.text(p.detail) : MODEL_FAILURE_DETAIL_WITHHELD, raw_output: p.raw_output === null || failure === 'no_answer' ? null : c.text(p.raw_output) },
      refs: [],
    }));
  },
};
