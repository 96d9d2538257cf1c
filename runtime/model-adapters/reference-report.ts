// The report the reference policy writes (reference-policy.ts): its text from what was observed
// and found, and whether a submission of it is already seen in the workspace. Pure.
import { MODEL_OUTPUT_V2_LIMITS } from '../model-protocol.js';
import { clip, fitted, oneLine, type Finding, type Goal, type Observation, type Task } from './reference-observation.js';

const V2 = MODEL_OUTPUT_V2_LIMITS;

export const REPORT_HEADER = '# Continuity report\n';

export const STATUS_DRAFT = 'Status: draft';

export const STATUS_SUBMITTED = 'Status: submitted';

/** A statement, journal text or plan text: 1-V2.textChars chars. */
export function prose(text: string): string {
  const t = clip(text, V2.textChars);
  return t.length > 0 ? t : '-';
}

/** A finding as a line of a file this policy writes (and reads back: Observation.findings). */
function findingLine(f: Finding): string {
  return `- ${f.statement} — source: ${f.source}`;
}

/** Said in a file in place of the findings one write cannot hold: the cut is in the file itself. */
function moreFindings(left: number): string {
  return `(${left} more finding${left === 1 ? '' : 's'} not listed: one write holds at most ${V2.fileContentChars} characters)`;
}

export function findingsText(findings: readonly Finding[]): string {
  const head = ['# Findings', '', 'Figures extracted from the sources I read; each line names its source.', '', ''].join('\n');
  if (findings.length === 0) return `${head}(no figures at hand yet)\n`;
  return `${fitted(head, findings.map(findingLine), '\n', V2.fileContentChars - 1, moreFindings)}\n`;
}

export function reportText(o: Observation, goal: Goal | null, thread: string | null, submitted: boolean): string {
  const { wake } = o.bundle;
  // The parts around the findings are bounded (two prose lines and short ones), so the status
  // line — which submitting replaces — always fits; the findings get the room that is left.
  const head = [REPORT_HEADER.trimEnd(), '', prose(goal ? `Goal: ${goal.goal_id}: ${oneLine(goal.description)} (deadline ${goal.deadline_at ?? 'none'})` : 'Goal: not known to me at this wake'), '', '## Findings', '', ''].join('\n');
  const tail: string[] = [];
  if (thread !== null) {
    const reply = o.replyIn(thread);
    tail.push('', '## Reviewer', '', prose(reply ? `Reviewer's reply (thread ${thread}): ${oneLine(reply.p.body)}` : `Reviewer's reply (thread ${thread}): pending.`));
  }
  // The status line stands alone so that submitting replaces all of it (find STATUS_DRAFT).
  tail.push('', `Written in wake ${wake.wake_id} at ${wake.wake_at}.`, submitted ? `${STATUS_SUBMITTED} at ${wake.wake_at}` : STATUS_DRAFT, '');
  const end = `\n${tail.join('\n')}`;
  const findings = o.findings();
  const body = findings.length === 0 ? `${head}(no figures at hand)` : fitted(head, findings.map(findingLine), '\n', V2.fileContentChars - end.length, moreFindings);
  return `${body}${end}`;
}

/** The report already carries the submitted status, as far as the window shows. */
export function submittedSeen(o: Observation, reportPath: string, submitTask: Task | undefined): boolean {
  if (submitTask && submitTask.status === 'done') return true;
  const entry = o.listing.get(reportPath);
  if (!entry) return false;
  return o.proposals.some(
    (a) =>
      a.p.tool === 'files' &&
      a.p.args['path'] === reportPath &&
      [a.p.args['content'], a.p.args['replace']].some((v) => typeof v === 'string' && v.includes(STATUS_SUBMITTED)) &&
      o.outcomes.some((s) => s.event.seq > a.event.seq && s.p.content === null && s.p.observed_post_hash === entry.sha256),
  );
}
