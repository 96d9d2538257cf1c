// report.html of a study: the content of report.md plus three inline SVG charts, as ONE file a
// reader can open offline, archive or mail. Nothing is fetched: inline CSS, no script, no font,
// no image, no link; a Content-Security-Policy of default-src 'none' makes the browser refuse
// anything that slipped in. Every report string is HTML-escaped (ids, details and notes come
// from run folders and may hold <, & or quotes).
import { escapeHtml } from '../foundation/html-escape.js';
import { offlinePageHead } from '../foundation/offline-page.js';
import { DIMENSIONS } from '../oracle/continuity-score.js';
import { GROUPS } from '../design/groups.js';
import { type ReportInstance, type StudyReport } from '../oracle/study-report.js';
import { accuracyChartMarks } from './accuracy-chart-marks.js';
import type { ReportTimelines } from './instance-timelines.js';
import { timelineSection } from './report-timeline.js';
import type { FindingHref } from './finding-href.js';
import { accuracyChartSvg, dimensionsChartSvg, GROUP_MARKS, passLine, scoresChartSvg } from './report-charts.js';
import { allHardFailures, blockCells, BLOCKS_LEAD, COST_HEADERS, costLead, costRows, dryRunText, exploratoryText, formatMeanSd, formatPoints, instanceLabel, NO_VALUE, roundingText, usableDataCells, usableDataGroupLine, usableDataRuleText, usableDataVerdictLine } from './report-markdown.js';

const STYLE = `
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #111; background: #fff; margin: 0; line-height: 1.45; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 1rem; overflow-wrap: anywhere; }
h2 { font-size: 1.25rem; margin: 2rem 0 0.6rem; border-bottom: 1px solid #ccc; }
.verdict { border: 3px solid #111; padding: 0.8rem 1rem; margin: 0 0 1rem; }
.verdict-label { font-size: 1.3rem; margin: 0 0 0.3rem; }
.verdict-supported { background: #e8f5ee; }
.verdict-rejected { background: #fbeaea; }
.verdict-insufficient-evidence { background: #f3f3f3; }
.dry-run { border: 3px dashed #111; background: #fff6d6; padding: 0.8rem 1rem; margin: 0 0 1rem; font-size: 1.1rem; }
.voided { border: 3px double #111; background: #fbeaea; padding: 0.8rem 1rem; margin: 0 0 1rem; }
.exploratory { border: 3px dashed #111; background: #fff7e0; padding: 0.8rem 1rem; margin: 0 0 1rem; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #bbb; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; overflow-wrap: break-word; }
.table-scroll { overflow-x: auto; max-width: 100%; }
td code { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.failed { font-weight: bold; }
figure { margin: 1rem 0; }
figcaption { font-size: 0.9rem; color: #333; max-width: 720px; }
svg.chart { max-width: 100%; height: auto; border: 1px solid #ddd; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 0.9em; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; font-size: 0.9rem; }
dl.meta dt { font-weight: bold; }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
`;

interface Cell {
  readonly html: string;
  readonly numeric?: boolean;
  readonly className?: string;
}
const text = (value: string): Cell => ({ html: escapeHtml(value) });
const num = (value: string): Cell => ({ html: escapeHtml(value), numeric: true });
const code = (value: string): Cell => ({ html: `<code>${escapeHtml(value)}</code>` });

function table(header: readonly string[], rows: readonly (readonly Cell[])[], numericColumns: readonly number[] = []): string {
  // Dimension names in headers may break after an underscore, so the numbers' columns stay narrow.
  const head = header.map((h, i) => `<th scope="col"${numericColumns.includes(i) ? ' class="num"' : ''}>${escapeHtml(h).replace(/_/g, '_<wbr>')}</th>`).join('');
  const body = rows.map((row) => `<tr>${row.map((c) => `<td${cellClass(c)}>${c.html}</td>`).join('')}</tr>`).join('\n');
  // Wide tables (the instances) scroll sideways rather than squeeze ids into one-letter columns.
  return `<div class="table-scroll">\n<table>\n<thead><tr>${head}</tr></thead>\n<tbody>\n${body}\n</tbody>\n</table>\n</div>`;
}
function cellClass(cell: Cell): string {
  const classes = [cell.numeric === true ? 'num' : '', cell.className ?? ''].filter((c) => c !== '');
  return classes.length === 0 ? '' : ` class="${classes.join(' ')}"`;
}

const list = (items: readonly string[], empty: string): string => (items.length === 0 ? `<p>${escapeHtml(empty)}</p>` : `<ul>\n${items.map((i) => `<li>${escapeHtml(i)}</li>`).join('\n')}\n</ul>`);
const metText = (met: boolean | null): string => (met === null ? 'not decidable' : met ? 'yes' : 'no');

function headSection(report: StudyReport): string {
  const out = [
    `<h1>Study report: ${escapeHtml(report.study_id)}</h1>`,
    `<section id="verdict" class="verdict verdict-${report.verdict.replace(/ /g, '-')}" aria-label="Verdict">`,
    `<p class="verdict-label">Verdict: <strong>${escapeHtml(report.verdict)}</strong></p>`,
    `<p>${escapeHtml(report.verdict_statement)}</p>`,
    '</section>',
  ];
  const dryRun = dryRunText(report);
  if (dryRun !== null) out.push(`<p id="dry-run" class="dry-run"><strong>${escapeHtml(dryRun)}</strong></p>`);
  const exploratory = exploratoryText(report);
  if (exploratory !== null) out.push('<section id="exploratory" class="exploratory" aria-label="Exploratory">', `<p><strong>${escapeHtml(exploratory.lead)}</strong></p>`, list(exploratory.departures, ''), `<p>${escapeHtml(exploratory.reason)}</p>`, '</section>');
  if (report.voided) {
    out.push('<section id="voided" class="voided" aria-label="Voided">', '<p><strong>This study is voided.</strong> Its numbers are not a result; reasons:</p>', list(report.void_reasons, '(no reason recorded)'), '</section>');
  }
  const m = report.model;
  const meta: [string, string][] = [
    ['generated at', report.generated_at],
    ['pre-registration hash', report.prereg.sha256],
    ['scoring spec / oracle rules', `${report.prereg.scoring_spec_version} / ${report.prereg.oracle_rules_version}`],
    ['study seed', report.seed],
    ['model', `${m.adapter} / ${m.model_id}${m.build === null ? '' : ` (build ${m.build})`}`],
    ['instances per group', `${report.n} (initial ${report.n_initial}${report.expanded ? ', expanded' : ''})`],
  ];
  out.push(`<dl class="meta">\n${meta.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('\n')}\n</dl>`);
  return out.join('\n');
}

function thresholdsSection(report: StudyReport): string {
  const rows = report.thresholds.map((t) => [code(t.id), text(t.description), text(t.required), text(t.observed), { ...text(metText(t.met)), className: t.met === false ? 'failed' : '' }]);
  return ['<h2>Thresholds</h2>', '<p>Exploratory effect thresholds fixed before the runs; not significance tests.</p>', table(['Threshold', 'Description', 'Required', 'Observed', 'Met'], rows)].join('\n');
}

function usableDataSection(report: StudyReport): string {
  const rows = report.instances.map((i) => {
    const [accepted, calls, share, failed, usable] = usableDataCells(i);
    return [text(instanceLabel(i)), num(accepted), num(calls), num(share), text(failed), { ...text(usable), className: i.usable ? '' : 'failed' }, text(i.usable_reason)];
  });
  const met = report.usable_data.shortfalls.length === 0;
  return [
    '<h2>Usable data</h2>',
    `<section id="usable-data" aria-label="Usable data">`,
    `<p>${escapeHtml(usableDataRuleText(report))}</p>`,
    `<ul>\n${GROUPS.map((g) => `<li class="usable-data-group" data-group="${g}">Usable data, ${escapeHtml(usableDataGroupLine(report, g))}</li>`).join('\n')}\n</ul>`,
    `<p id="usable-data-verdict"${met ? '' : ' class="failed"'}>${escapeHtml(usableDataVerdictLine(report))}.</p>`,
    table(['Instance', 'Accepted', 'Calls made', 'Share', 'Failed', 'Usable', 'Why'], rows, [1, 2, 3]),
    '</section>',
  ].join('\n');
}

function blocksSection(report: StudyReport): string {
  if (report.blocks === undefined) return '';
  const rows = report.blocks.map((b) => {
    const [replicate, turns, first, wait, failures, load] = blockCells(b);
    return [text(replicate), { ...text(turns), className: b.turns.ok ? '' : 'failed' }, text(first), text(wait), ...failures.map(text), { ...text(load), className: b.load.confounded ? 'failed' : '' }];
  });
  return ['<h2>Blocks</h2>', `<section id="blocks" aria-label="Blocks">`, `<p>${escapeHtml(BLOCKS_LEAD)}</p>`, table(['Block', 'Turns', 'First at a wake', 'Mean wait', ...GROUPS.map((g) => `${g} failed calls`), 'Load'], rows), '</section>'].join('\n');
}

function groupsSection(report: StudyReport): string {
  const rows = GROUPS.map((g) => {
    const s = report.groups[g];
    return [text(g), num(String(s.n)), num(formatPoints(s.median)), num(formatPoints(s.min)), num(formatPoints(s.max)), num(formatPoints(s.range)), num(`${s.instances_at_or_above_pass} of ${s.n}`), num(String(s.hard_failures))];
  });
  const pass = passLine(report);
  const notScored = report.instances.filter((i) => i.score === null).map((i) => `${instanceLabel(i)} (${i.status})`);
  const caption = [
    `Every scored instance is one marker (${GROUPS.map((g) => `${g} ${GROUP_MARKS[g].marker}`).join(', ')}); the thick bar is the group median; the dashed line is the ${pass.label}.`,
    notScored.length === 0 ? '' : ` Not scored: ${notScored.join(', ')}.`,
  ].join('');
  return [
    '<h2>Groups</h2>',
    table(['Group', 'n', 'Median', 'Min', 'Max', 'Range', 'Instances ≥ pass', 'Hard failures'], rows, [1, 2, 3, 4, 5, 6, 7]),
    `<figure>\n${scoresChartSvg(report)}\n<figcaption>${escapeHtml(caption)}</figcaption>\n</figure>`,
  ].join('\n');
}

function costSection(report: StudyReport): string {
  const rows = costRows(report).map(([what, calls, priced, usd]) => [text(what), num(calls), num(priced), num(usd)]);
  return ['<h2>Cost</h2>', '<section id="cost" aria-label="Cost">', `<p>${escapeHtml(costLead(report))}</p>`, report.cost === undefined ? '' : table(COST_HEADERS, rows, [1, 2, 3]), '</section>'].join('\n');
}

function dimensionsSection(report: StudyReport): string {
  const rows = DIMENSIONS.map((d) => [code(d), ...GROUPS.map((g) => num(formatMeanSd(report.groups[g].dimensions[d].mean, report.groups[g].dimensions[d].sd)))]);
  return [
    '<h2>Dimensions</h2>',
    `<p>Mean ± sample SD per group (${escapeHtml(NO_VALUE)}: fewer than two values).</p>`,
    table(['Dimension', ...GROUPS], rows, [1, 2, 3]),
    `<figure>\n${dimensionsChartSvg(report)}\n<figcaption>Bars are group means, lettered by group below the axis; whiskers span ±1 sample SD.</figcaption>\n</figure>`,
  ].join('\n');
}

function accuracySection(report: StudyReport, timelines: ReportTimelines | null): string {
  const marks = timelines === null ? '' : ' Along the foot of the plot: each intervention of a replicate (a diamond lettered by kind) and each crash of an instance (a cross), at its simulated hour.';
  const caption = `For each group, the mean over its finished instances of the state-recovery value at each scored wake; x is the wake's simulated time in hours. Groups differ by line and marker: ${GROUPS.map((g) => `${g} ${GROUP_MARKS[g].dashName} with ${GROUP_MARKS[g].marker}s`).join(', ')}.${marks}`;
  return ['<h2>Checkpoint accuracy over simulated time</h2>', `<figure>\n${accuracyChartSvg(report, accuracyChartMarks(timelines))}\n<figcaption>${escapeHtml(caption)}</figcaption>\n</figure>`].join('\n');
}

function expansionSection(report: StudyReport): string {
  const decision = report.expanded ? `Expanded from ${report.n_initial} to ${report.n} instances per group; the verdict rests on the expanded data only.` : `Not expanded: ${report.n} instances per group.`;
  return ['<h2>Expansion</h2>', `<p id="expansion-decision">${escapeHtml(decision)}</p>`, list(report.expansion_reasons, '(no reason recorded)')].join('\n');
}

function fairnessSection(report: StudyReport): string {
  const rows = report.fairness.checks.map((c) => [code(c.check), { ...text(c.ok ? 'ok' : 'FAILED'), className: c.ok ? '' : 'failed' }, text(c.detail)]);
  const body = rows.length === 0 ? '<p>No fairness check recorded.</p>' : table(['Check', 'Result', 'Detail'], rows);
  return ['<h2>Fairness</h2>', `<p>Overall: <strong>${report.fairness.ok ? 'ok' : 'FAILED'}</strong>.</p>`, body].join('\n');
}

function seqCell(instance: ReportInstance, seq: number | null, findingHref: FindingHref | undefined): Cell {
  if (seq === null) return num(NO_VALUE);
  if (findingHref === undefined) return num(String(seq));
  return { html: `<a class="finding-link" href="${escapeHtml(findingHref(instance, seq))}">${seq}</a>`, numeric: true };
}

function hardFailuresSection(report: StudyReport, findingHref?: FindingHref): string {
  const located = allHardFailures(report);
  if (located.length === 0) return '<h2>Hard failures</h2>\n<p>None.</p>';
  const rows = located.map(({ instance, failure }) => [text(instanceLabel(instance)), code(instance.dir), code(failure.id), seqCell(instance, failure.seq, findingHref), text(failure.detail)]);
  return ['<h2>Hard failures</h2>', table(['Instance', 'Dir', 'Hard failure', 'Seq', 'Detail'], rows, [3])].join('\n');
}

function instancesSection(report: StudyReport): string {
  const rows = report.instances.map((i) => {
    const status = i.status_detail === null ? i.status : `${i.status}: ${i.status_detail}`;
    const dims = DIMENSIONS.map((d) => num(formatPoints(i.dimensions === null ? null : i.dimensions[d])));
    return [text(i.group), num(String(i.replicate)), code(i.seed), code(i.dir), { ...text(status), className: i.status === 'finished' ? '' : 'failed' }, num(formatPoints(i.score)), num(formatPoints(i.counted_score)), ...dims];
  });
  return ['<h2>Instances</h2>', '<p>Counted: what the statistics use — 0 when a hard failure overrides the score (spec §8.4).</p>', `<p>${escapeHtml(roundingText(report))}</p>`, table(['Group', 'Replicate', 'Seed', 'Dir', 'Status', 'Score', 'Counted', ...DIMENSIONS], rows, [1, 5, 6, 7, 8, 9, 10, 11])].join('\n');
}

function notesSection(report: StudyReport): string {
  return ['<h2>Notes</h2>', list(report.notes, 'None.')].join('\n');
}

/** `timelines`: the instances' 72-hour strips read from the study folder (instance-timelines.ts); null or absent draws none and says so. `findingHref`: links each hard failure to the desk (the served report only). */
export function renderReportHtml(report: StudyReport, options: { readonly timelines?: ReportTimelines | null; readonly findingHref?: FindingHref } = {}): string {
  const timelines = options.timelines ?? null;
  const sections = [headSection, thresholdsSection, usableDataSection, blocksSection, groupsSection, costSection, dimensionsSection, (r: StudyReport) => accuracySection(r, timelines), (r: StudyReport) => timelineSection(r, timelines, options.findingHref), expansionSection, fairnessSection, (r: StudyReport) => hardFailuresSection(r, options.findingHref), instancesSection, notesSection];
  return [
    // Refuse every fetch; only the inline style block may apply.
    ...offlinePageHead({ csp: "default-src 'none'; style-src 'unsafe-inline'", title: `Study report: ${report.study_id} (${report.verdict})`, style: STYLE }),
    '<main>',
    ...sections.map((section) => section(report)),
    '</main>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
