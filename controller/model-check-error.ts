// A model refused before anything of a new instance or study is written (issue 31 items 3, 5;
// controller/model-check.ts): exit 1, code `model_check_<why>`, and in --json the facts the
// check learnt before it refused (the probe's raw output, finish reason, usage, timings), since
// there is no run folder yet whose preflight.jsonl could keep them.
//   refused       — the preflight: the server does not answer, serves another model, ignores the constraint
//   forecast      — the plan's prompts do not fit the context, or its largest call not the timeout
//   unmeasurable  — the adapter has nothing to check with (a bug of a new adapter)
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { CodedErrorOf } from '../foundation/typed-error.js';
import type { PreflightFacts } from '../runtime/model-adapter.js';

export type ModelCheckErrorCode = 'refused' | 'forecast' | 'unmeasurable';

export class ModelCheckError extends CodedErrorOf<ModelCheckErrorCode>('model_check', EXIT_CODES.failed) {
  override readonly name = 'ModelCheckError';
  constructor(
    code: ModelCheckErrorCode,
    message: string,
    readonly facts: PreflightFacts,
  ) {
    super(code, message);
  }

  override get endingDetails(): Readonly<Record<string, unknown>> {
    return { facts: this.facts };
  }
}
