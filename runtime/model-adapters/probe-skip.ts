// When a runtime restart's model check may leave out its probe call (issue 34): the probe evicts
// the study's prompt from a single-slot server's cache, so it is made only where it can tell
// something new.
import type { StructuredOutputDialect } from '../../schema/model-call-policy.js';
import type { ConstraintShownEarlier } from '../protocol.js';

/**
 * Why a restart's check need not make its probe call (issue 34), or null: the server reports the
 * build that showed the constraint honoured in the same dialect at an earlier start of this
 * session. A server that reports no build, or another one, is probed: it may not be the same.
 */
export function probeSkipReason(shownEarlier: ConstraintShownEarlier | null, serverBuild: string | null, dialect: StructuredOutputDialect): string | null {
  if (shownEarlier === null || serverBuild === null) return null;
  if (shownEarlier.server_build !== serverBuild || shownEarlier.dialect !== dialect) return null;
  return `this server (build ${serverBuild}) showed the constraint honoured in dialect ${dialect} at this run's earlier start; a probe call now would push the study's prompt out of its cache`;
}
