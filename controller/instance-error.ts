// The one refusal an instance run throws (exit 1 with code `instance_<its code>`, through the
// error base foundation/typed-error.ts): a start or resume refused before anything ran, a writer or runtime
// lost outside a planned crash, a plan the controller cannot carry out, a model that failed its check,
// the disk holding the run folder full (store_full: free space, then --resume).
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { CodedErrorOf } from '../foundation/typed-error.js';

export type InstanceErrorCode = 'prereg' | 'run_dir' | 'resume' | 'isolation' | 'writer' | 'runtime' | 'plan' | 'model' | 'store_full' | 'cost_cap';

export class InstanceError extends CodedErrorOf<InstanceErrorCode>('instance', EXIT_CODES.failed) {
  override readonly name: string = 'InstanceError';
}

/**
 * The writer stopped answering but did not exit (a stall: a stopped or starved process, a full
 * disk's slow path): it may answer again, so the controller tries once to record the stop with
 * this error's words before it ends (controller/instance.ts), instead of leaving the resume to
 * find a stop nobody recorded.
 */
export class WriterUnansweredError extends InstanceError {
  override readonly name = 'WriterUnansweredError';
  constructor(message: string) {
    super('writer', message);
  }
}
