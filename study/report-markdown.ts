// report.md of a study: report.json (oracle/study-report.ts) in words and tables, for a reader
// without tools. The verdict comes first, and a dry run says at once that it is evidence about
// the apparatus, not about subjects, before any number can be read as a result.
// report.html prints the same numbers and the same dry-run wording: it imports formatPoints and
// dryRunText from here so the two documents never disagree on a digit.
import { DIMENSIONS } from '../oracle/continuity-score.js';
import { formatByRule, POINTS_TEXT_ROUNDING } from '../oracle/figure-rounding.js';
import { GROUPS, type Group } from '../design/groups.js';
import { type BlockSummary, type ReportHardFailure, type ReportInstance, type StudyReport } from '../oracle/study-report.js';
import { describeFailures, formatShare } from '../schema/usable-data.js';
import { allPriced, usdText, type CostSummary } from '../schema/cost-summary.js';
import type { z } from 'zod';

/** Every point value (scores, dimensions, ranges, SDs) is printed with this many decimals (the oracle's text rule). */
export const POINT_DECIMALS = POINTS_TEXT_ROUNDING.decimals;
/** Printed where a number is absent (not scored, SD of fewer than two values). */
export const NO_VALUE = '—';
/** Said when a dry run carries no statement of its own: the point must be made either way. */
export const DRY_RUN_FALLBACK_STATEMENT = 'This is an apparatus dry run, not evidence about subjects.';

export function formatPoints(value: number | null): string {
  return value === null ? NO_VALUE : formatByRule(POINTS_TEXT_ROUNDING, value);
}

/** How the printed numbers were rounded: the report's rounding section in one sentence (report 2.2.0), or just the printing. */
export function roundingText(report: StudyReport): string {
  const printed = `Every number here is printed with ${POINT_DECIMALS} decimals (${POINTS_TEXT_ROUNDING.formula}).`;
  const points = report.rounding?.rules.points;
  if (points === undefined) return printed;
  return `${printed} report.json holds every digit: wake values, dimensions and scores rounded to ${points.decimals} decimals (${points.formula}, an exact half toward +infinity), each score from the rounded dimensions; group statistics unrounded; its rounding section says how each figure was rounded.`;
}

export function formatMeanSd(mean: number | null, sd: number | null): string {
  if (mean === null) return NO_VALUE;
  return `${formatPoints(mean)} ± ${formatPoints(sd)}`;
}

/** The dry-run statement to print, or null when the study is not a dry run. */
/** An exploratory study's statement (report.exploratory), the same words in report.md and report.html; null when it follows its pre-registration. */
export function exploratoryText(report: StudyReport): { readonly lead: string; readonly departures: readonly string[]; readonly reason: string } | null {
  const e = report.exploratory;
  if (e === undefined) return null;
  return { lead: 'Exploratory study: it knowingly departs from its pre-registration, so its verdict is no test of it. It departs in:', departures: e.departures, reason: `Reason given: ${e.reason}` };
}

export function dryRunText(report: StudyReport): string | null {
  if (!report.dry_run) return null;
  const stated = report.dry_run_statement?.trim() ?? '';
  return stated === '' ? DRY_RUN_FALLBACK_STATEMENT : stated;
}

/**
 * Rule 8 in one sentence, with the pre-registered share and the n it applies to. report.html and
 * the study command print these same words (usableDataRuleText, usableDataGroupLine).
 */
export function usableDataRuleText(report: StudyReport): string {
  const share = report.usable_data.min_accepted_share;
  const rule = share === null ? 'No minimum share of accepted model answers is pre-registered (model_calls.usable_data.min_accepted_share), so no instance counts as data' : `An instance counts as data only when at least ${formatShare(share)} of its model calls gave accepted answers (model_calls.usable_data.min_accepted_share)`;
  return `${rule}; the verdict needs all n = ${report.usable_data.required_per_group} instances of each group usable, else it is insufficient evidence (rule 8).`;
}

/**
 * A group's count of usable instances, the one every usable-data line uses (report.md, report.html,
 * the screen): `usable` of `of`, where `of` is the n the verdict rests on — the n of rule 8's
 * shortfall line ("group B: 0 of 1 instances have usable data") — not the instances the report
 * happens to hold. A replicate never run (a stop, a pause) is not in the report at all, so the
 * group's own n would say "0 of 0" beside the verdict's "0 of 1" (issue 31 item 7); it is counted
 * as not run instead, and an instance that ran but was not scored as not scored.
 */
export function usableDataCount(report: StudyReport, group: Group): { readonly usable: number; readonly of: number; readonly notScored: number; readonly notRun: number } {
  const s = report.groups[group];
  const of = report.usable_data.required_per_group;
  return { usable: s.usable_instances, of, notScored: s.n - s.scores.length, notRun: Math.max(0, of - s.n) };
}

/** "group B: 1 of 3 instances usable (1 not scored); 35 of 93 model calls accepted (37.63 %); failed: 45 schema, 13 transport". */
export function usableDataGroupLine(report: StudyReport, group: Group): string {
  const s = report.groups[group];
  const count = usableDataCount(report, group);
  const why = [...(count.notScored > 0 ? [`${count.notScored} not scored`] : []), ...(count.notRun > 0 ? [`${count.notRun} not run`] : [])];
  const share = s.calls === 0 ? 'no call made' : formatShare(s.accepted / s.calls);
  return `group ${group}: ${count.usable} of ${count.of} instances usable${why.length === 0 ? '' : ` (${why.join(', ')})`}; ${s.accepted} of ${s.calls} model calls accepted (${share}); failed: ${describeFailures(s.by_failure)}`;
}

/** Instances without usable data named on screen with their reason; the rest are counted (report.md lists every one). */
const MAX_SCREEN_NO_DATA_LINES = 12;

/**
 * The usable-data lines `npm run study` prints: the group lines, each instance without usable
 * data with why (accepted is not usable: issue 32 item 6), and rule 8, in the words (and counts)
 * of report.md and report.html.
 */
export function usableDataScreenLines(report: StudyReport): string[] {
  const noData = report.instances.filter((i) => !i.usable);
  const named = noData.slice(0, MAX_SCREEN_NO_DATA_LINES).map((i) => `no data, ${instanceLabel(i)}: ${i.usable_reason}`);
  const more = noData.length > named.length ? [`no data: ${noData.length - named.length} more instance(s), each with its reason in report.md`] : [];
  return [...GROUPS.map((group) => `usable data, ${usableDataGroupLine(report, group)}`), ...named, ...more, `${report.usable_data.shortfalls.length === 0 ? '' : 'NO USABLE DATA: '}${usableDataVerdictLine(report)}`];
}

/** "rule 8 met: …" or "rule 8 NOT met: group B: 1 of 3 instances have usable data". */
export function usableDataVerdictLine(report: StudyReport): string {
  const { shortfalls, required_per_group: n } = report.usable_data;
  return shortfalls.length === 0 ? `rule 8 met: every group has usable data in all n = ${n} instances` : `rule 8 NOT met: ${shortfalls.join('; ')}`;
}

/** One instance's model calls in the cells of the usable-data tables: accepted, calls, share, failed, usable. */
export function usableDataCells(instance: ReportInstance): [accepted: string, calls: string, share: string, failed: string, usable: string] {
  return [
    instance.accepted === null ? NO_VALUE : String(instance.accepted),
    instance.calls === null ? NO_VALUE : String(instance.calls),
    instance.accepted_share === null ? NO_VALUE : formatShare(instance.accepted_share),
    instance.by_failure === null ? NO_VALUE : describeFailures(instance.by_failure),
    instance.usable ? 'yes' : 'NO',
  ];
}

/** What a block (report 2.1.0) says, as table cells: its turns' check, who went first and waited how long, each group's failed calls, the load verdict. */
export function blockCells(block: BlockSummary): [replicate: string, turns: string, first: string, wait: string, failures: string[], load: string] {
  const t = block.turns;
  const seconds = (ms: number | null): string => (ms === null ? NO_VALUE : `${(ms / 1000).toFixed(1)} s`);
  const failures = GROUPS.map((g) => {
    const b = block.load.by_group[g];
    return b === null ? NO_VALUE : describeFailures(b);
  });
  const load = !block.load.checked ? 'not checked' : block.load.confounded ? `CONFOUNDED: ${block.load.over.join('; ')}` : 'within tolerance';
  return [`r${block.replicate}`, `${t.ok ? 'as drawn' : 'FAILED'} (${t.recorded} turns, ${t.sessions} session(s))`, GROUPS.map((g) => `${g} ${t.first[g]}`).join(' · '), GROUPS.map((g) => `${g} ${seconds(t.mean_wait_ms[g])}`).join(' · '), failures, load];
}

/** The blocks' section's lead: what a block is and what its two checks decide. */
export const BLOCKS_LEAD = "A block is one replicate's A, B and C, run side by side against the same model server, wakes in lockstep, their calls in an order drawn from the replicate's seed. Turns: the recorded order held to the draw (a failure voids the batch). Load: each group's failed calls by kind against the pre-registered tolerance; a confounded block's instances count as no usable data.";

export function instanceLabel(instance: Pick<ReportInstance, 'group' | 'replicate'>): string {
  return `${instance.group} r${instance.replicate}`;
}

export interface LocatedHardFailure {
  readonly instance: ReportInstance;
  readonly failure: z.infer<typeof ReportHardFailure>;
}

/** Every hard failure of every instance, in the report's instance order. */
export function allHardFailures(report: StudyReport): LocatedHardFailure[] {
  return report.instances.flatMap((instance) => instance.hard_failures.map((failure) => ({ instance, failure })));
}

/**
 * Report strings are data, not markdown: backslash-escape what would start emphasis, code, links
 * or raw HTML, and the pipe that would split a table cell; a line break would end a table row.
 */
export function markdownText(text: string): string {
  return text.replace(/\r\n|\r|\n/g, ' ').replace(/[\\`*_[\]<>|&#]/g, (c) => `\\${c}`);
}

/** An identifier as inline code when it can be one (no backtick, pipe or line break), else as escaped text. */
export function markdownCode(text: string): string {
  return /^[^`|\r\n]+$/.test(text) ? `\`${text}\`` : markdownText(text);
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)];
}

const metText = (met: boolean | null): string => (met === null ? 'not decidable' : met ? 'yes' : 'no');

function headSection(report: StudyReport): string[] {
  const out = [`# Study report: ${markdownText(report.study_id)}`, '', `**Verdict: ${report.verdict}.** ${markdownText(report.verdict_statement)}`, ''];
  const dryRun = dryRunText(report);
  if (dryRun !== null) out.push(`**${markdownText(dryRun)}**`, '');
  const exploratory = exploratoryText(report);
  if (exploratory !== null) out.push(`**${markdownText(exploratory.lead)}**`, '', ...exploratory.departures.map((d) => `- ${markdownText(d)}`), '', markdownText(exploratory.reason), '');
  if (report.voided) {
    out.push('**This study is voided.** Its numbers are not a result; reasons:', '');
    if (report.void_reasons.length === 0) out.push('- (no reason recorded)');
    for (const reason of report.void_reasons) out.push(`- ${markdownText(reason)}`);
    out.push('');
  }
  const m = report.model;
  out.push(
    `- generated at: ${markdownText(report.generated_at)}`,
    `- pre-registration hash: ${markdownText(report.prereg.sha256)}, scoring spec ${markdownText(report.prereg.scoring_spec_version)}, oracle rules ${markdownText(report.prereg.oracle_rules_version)}`,
    `- study seed: ${markdownText(report.seed)}`,
    `- model: ${markdownText(m.adapter)} / ${markdownText(m.model_id)}${m.build === null ? '' : ` (build ${markdownText(m.build)})`}`,
    `- instances per group the verdict rests on: ${report.n} (initial ${report.n_initial}${report.expanded ? ', expanded' : ''})`,
    '',
  );
  return out;
}

function thresholdsSection(report: StudyReport): string[] {
  const rows = report.thresholds.map((t) => [markdownCode(t.id), markdownText(t.description), markdownText(t.required), markdownText(t.observed), metText(t.met)]);
  return ['## Thresholds', '', 'Exploratory effect thresholds fixed before the runs; not significance tests.', '', ...table(['Threshold', 'Description', 'Required', 'Observed', 'Met'], rows), ''];
}

function usableDataSection(report: StudyReport): string[] {
  const lines = GROUPS.map((g) => `- Usable data, ${markdownText(usableDataGroupLine(report, g))}`);
  const rows = report.instances.map((i) => [instanceLabel(i), ...usableDataCells(i).map(markdownText), markdownText(i.usable_reason)]);
  return [
    '## Usable data',
    '',
    markdownText(usableDataRuleText(report)),
    '',
    ...lines,
    '',
    `**${markdownText(usableDataVerdictLine(report))}.**`,
    '',
    ...table(['Instance', 'Accepted', 'Calls made', 'Share', 'Failed', 'Usable', 'Why'], rows),
    '',
  ];
}

function groupsSection(report: StudyReport): string[] {
  const rows = GROUPS.map((g) => {
    const s = report.groups[g];
    return [g, String(s.n), formatPoints(s.median), formatPoints(s.min), formatPoints(s.max), formatPoints(s.range), `${s.instances_at_or_above_pass} of ${s.n}`, String(s.hard_failures)];
  });
  return ['## Groups', '', ...table(['Group', 'n', 'Median', 'Min', 'Max', 'Range', 'Instances ≥ pass', 'Hard failures'], rows), ''];
}

/** The cost section's lead (issue 36 item 4): what the figures are, or why there are none. */
export function costLead(report: StudyReport): string {
  const cost = report.cost;
  if (cost === undefined) return `Not recorded: this report (report_version ${report.report_version}) was written before the cost of model calls was.`;
  if (cost.priced_calls === 0) return `Not priced: none of the ${cost.calls} model call(s) carries a cost (the model configuration states no prices).`;
  const cover = allPriced(cost) ? 'every call priced' : `only ${cost.priced_calls} of ${cost.calls} calls priced: the sums leave the others out`;
  return `The study's model calls cost ${usdText(cost.nano_usd)} in all (${cover}): each call's cost is its recorded usage at the configured prices (US dollars per million tokens), summed from the call records.`;
}

/** Study, groups and instances: what, calls, priced, US dollars ("—" where nothing was read). */
export function costRows(report: StudyReport): [what: string, calls: string, priced: string, usd: string][] {
  const cells = (what: string, c: CostSummary | null | undefined): [string, string, string, string] => (c == null ? [what, NO_VALUE, NO_VALUE, NO_VALUE] : [what, String(c.calls), String(c.priced_calls), c.priced_calls === 0 ? NO_VALUE : usdText(c.nano_usd)]);
  return [cells('study', report.cost), ...GROUPS.map((g) => cells(`group ${g}`, report.groups[g].cost)), ...report.instances.map((i) => cells(instanceLabel(i), i.cost))];
}

export const COST_HEADERS = ['Cost of', 'Model calls', 'Priced', 'US dollars'];

function costSection(report: StudyReport): string[] {
  return ['## Cost', '', markdownText(costLead(report)), '', ...(report.cost === undefined ? [] : table(COST_HEADERS, costRows(report).map((r) => r.map(markdownText)))), ''];
}

function dimensionsSection(report: StudyReport): string[] {
  const rows = DIMENSIONS.map((d) => [markdownCode(d), ...GROUPS.map((g) => formatMeanSd(report.groups[g].dimensions[d].mean, report.groups[g].dimensions[d].sd))]);
  return ['## Dimensions', '', `Mean ± sample SD per group (${NO_VALUE}: fewer than two values).`, '', ...table(['Dimension', ...GROUPS], rows), ''];
}

function expansionSection(report: StudyReport): string[] {
  const decision = report.expanded ? `Expanded from ${report.n_initial} to ${report.n} instances per group; the verdict rests on the expanded data only.` : `Not expanded: ${report.n} instances per group.`;
  const reasons = report.expansion_reasons.length === 0 ? ['- (no reason recorded)'] : report.expansion_reasons.map((r) => `- ${markdownText(r)}`);
  return ['## Expansion', '', decision, '', ...reasons, ''];
}

function fairnessSection(report: StudyReport): string[] {
  const rows = report.fairness.checks.map((c) => [markdownCode(c.check), c.ok ? 'ok' : 'FAILED', markdownText(c.detail)]);
  const body = rows.length === 0 ? ['No fairness check recorded.'] : table(['Check', 'Result', 'Detail'], rows);
  return ['## Fairness', '', `Overall: ${report.fairness.ok ? 'ok' : 'FAILED'}.`, '', ...body, ''];
}

function hardFailuresSection(report: StudyReport): string[] {
  const located = allHardFailures(report);
  if (located.length === 0) return ['## Hard failures', '', 'None.', ''];
  const rows = located.map(({ instance, failure }) => [instanceLabel(instance), markdownText(instance.dir), markdownCode(failure.id), failure.seq === null ? NO_VALUE : String(failure.seq), markdownText(failure.detail)]);
  return ['## Hard failures', '', ...table(['Instance', 'Dir', 'Hard failure', 'Seq', 'Detail'], rows), ''];
}

function instancesSection(report: StudyReport): string[] {
  const rows = report.instances.map((i) => {
    const status = i.status_detail === null ? i.status : `${i.status}: ${markdownText(i.status_detail)}`;
    const dims = DIMENSIONS.map((d) => formatPoints(i.dimensions === null ? null : i.dimensions[d]));
    return [i.group, String(i.replicate), markdownText(i.seed), markdownText(i.dir), status, formatPoints(i.score), formatPoints(i.counted_score), ...dims];
  });
  return ['## Instances', '', 'Counted: what the statistics use — 0 when a hard failure overrides the score (spec §8.4).', '', markdownText(roundingText(report)), '', ...table(['Group', 'Replicate', 'Seed', 'Dir', 'Status', 'Score', 'Counted', ...DIMENSIONS.map(markdownCode)], rows), ''];
}

function blocksSection(report: StudyReport): string[] {
  if (report.blocks === undefined) return [];
  const rows = report.blocks.map((b) => {
    const [replicate, turns, first, wait, failures, load] = blockCells(b);
    return [replicate, turns, first, wait, ...failures.map(markdownText), markdownText(load)];
  });
  return ['## Blocks', '', markdownText(BLOCKS_LEAD), '', ...table(['Block', 'Turns', 'First at a wake', 'Mean wait', ...GROUPS.map((g) => `${g} failed calls`), 'Load'], rows), ''];
}

function notesSection(report: StudyReport): string[] {
  const notes = report.notes.length === 0 ? ['None.'] : report.notes.map((n) => `- ${markdownText(n)}`);
  return ['## Notes', '', ...notes, ''];
}

export function renderReportMarkdown(report: StudyReport): string {
  const sections = [headSection, thresholdsSection, usableDataSection, blocksSection, groupsSection, costSection, dimensionsSection, expansionSection, fairnessSection, hardFailuresSection, instancesSection, notesSection];
  return sections.flatMap((section) => section(report)).join('\n');
}
