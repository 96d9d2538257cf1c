// The error of a context bundle that cannot be built from what it was given (events out of seq
// order, too many pinned events, a persistent state behind the wake or missing the events its
// denials point at): the runtime's own inputs are wrong, a bug of the apparatus, never a
// subject's doing. Its own file because the window (retrieval-window.ts), the views
// (subject-view.ts) and the bundle (context-bundle.ts) all throw it.
import { InternalError } from '../foundation/typed-error.js';

export class ContextBundleError extends InternalError {
  override readonly name = 'ContextBundleError';
}
