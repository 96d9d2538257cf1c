// report.md and report.html from hand-built StudyReports, without a browser: the verdict and the
// dry-run statement come first, every instance and every hard failure is printed, report strings
// are escaped in both formats, and the HTML references nothing outside itself.
import { describe, expect, test } from 'vitest';
import { DIMENSIONS } from '../../oracle/continuity-score.js';
import { GROUPS } from '../../design/groups.js';
import { StudyReport } from '../../oracle/study-report.js';
import { FAILURE_KINDS } from '../../schema/usable-data.js';
import { FALLBACK_PASS_SCORE_POINTS, groupAccuracyOverTime, passLine } from '../../study/report-charts.js';
import { escapeHtml } from '../../foundation/html-escape.js';
import { renderReportHtml } from '../../study/report-html.js';
import { DRY_RUN_FALLBACK_STATEMENT, formatPoints, markdownText, POINT_DECIMALS, renderReportMarkdown } from '../../study/report-markdown.js';
import { expandedStudyReport, hardFailureStudyReport, noUsableDataStudyReport, sampleStudyReport, voidedStudyReport } from '../support/sample-study-report.js';

const VARIANTS = { sample: sampleStudyReport, expanded: expandedStudyReport, voided: voidedStudyReport, hardFailure: hardFailureStudyReport, noUsableData: noUsableDataStudyReport } as const;
const HOSTILE = `<script>alert("x")</script> & 'quoted' | piped **bold** [link](http://evil.example/) <img src=x onerror=alert(1)>`;

/** The lines of a markdown section, from its heading to the next one. */
function markdownSection(markdown: string, heading: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(`## ${heading}`);
  expect(start, `section ${heading}`).toBeGreaterThan(0);
  const end = lines.findIndex((line, k) => k > start && line.startsWith('## '));
  return lines.slice(start + 1, end === -1 ? undefined : end);
}

/** The row of the instances table whose first two cells are the instance's group and replicate. */
function markdownInstanceRow(markdown: string, group: string, replicate: number): string {
  const rows = markdownSection(markdown, 'Instances').filter((line) => line.startsWith(`| ${group} | ${replicate} | `));
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** The HTML table row that holds the instance's dir in its Dir cell (the instances table). */
function htmlInstanceRows(html: string, dir: string): string[] {
  return html.split('\n').filter((line) => line.startsWith('<tr>') && line.includes(`<td><code>${escapeHtml(dir)}</code></td>`));
}

/** Cells of a markdown table row: split on pipes that are not backslash-escaped. */
const markdownCells = (row: string): string[] => row.split(/(?<!\\)\|/).slice(1, -1);

/** The cells of an HTML table row, their inner HTML. */
const htmlCells = (row: string): string[] => [...row.matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((m) => m[1]!);

/** Every point value is printed with two decimals (POINT_DECIMALS), or the absent mark. */
const POINTS = '\\d+\\.\\d\\d';
const POINTS_OR_NONE = new RegExp(`^(?:${POINTS}|—)$`);
const MEAN_SD_OR_NONE = new RegExp(`^(?:${POINTS} ± (?:${POINTS}|—)|—)$`);

/** Attributes that make a browser fetch something, inside a tag (escaped text holds no '<'). */
const FETCHING_ATTRIBUTE = /<[^>]*\s(?:src|href|xlink:href|srcset|action|formaction|poster|background|data)\s*=/i;

describe.each(Object.entries(VARIANTS))('the %s report', (_name, make) => {
  const report = make();
  const markdown = renderReportMarkdown(report);
  const html = renderReportHtml(report);

  test('opens with the verdict and its statement, before any table', () => {
    const thresholdsAt = markdown.indexOf('## Thresholds');
    expect(markdown.indexOf(`**Verdict: ${report.verdict}.** ${markdownText(report.verdict_statement)}`)).toBeGreaterThan(0);
    expect(markdown.indexOf('**Verdict:')).toBeLessThan(thresholdsAt);
    expect(html).toContain(`<p class="verdict-label">Verdict: <strong>${escapeHtml(report.verdict)}</strong></p>\n<p>${escapeHtml(report.verdict_statement)}</p>`);
    expect(html.indexOf('id="verdict"')).toBeLessThan(html.indexOf('<h2>Thresholds</h2>'));
  });

  test('states a dry run in bold before the numbers, and only for a dry run', () => {
    if (report.dry_run) {
      const statement = report.dry_run_statement!;
      expect(statement).toMatch(/apparatus dry run/i);
      expect(statement).toMatch(/not evidence about subjects/);
      expect(markdown).toContain(`**${markdownText(statement)}**`);
      expect(markdown.indexOf(markdownText(statement))).toBeLessThan(markdown.indexOf('## Thresholds'));
      expect(html).toContain(`<p id="dry-run" class="dry-run"><strong>${escapeHtml(statement)}</strong></p>`);
      expect(html.indexOf('id="dry-run"')).toBeLessThan(html.indexOf('<h2>Thresholds</h2>'));
    } else {
      expect(report.dry_run_statement).toBeNull();
      expect(markdown).not.toMatch(/dry run/i);
      expect(html).not.toContain('id="dry-run"');
    }
  });

  test("prints every instance's group, replicate, seed, dir, status, score and counted score, in the fixed decimals", () => {
    expect(POINT_DECIMALS).toBe(2);
    const header = markdownSection(markdown, 'Instances').find((l) => l.startsWith('| Group | '))!;
    expect(markdownCells(header).map((c) => c.trim())).toEqual(['Group', 'Replicate', 'Seed', 'Dir', 'Status', 'Score', 'Counted', ...DIMENSIONS.map((d) => `\`${d}\``)]);
    expect(html).toContain(`<th scope="col" class="num">Score</th><th scope="col" class="num">Counted</th>`);
    for (const instance of report.instances) {
      const row = markdownInstanceRow(markdown, instance.group, instance.replicate);
      const cells = markdownCells(row).map((c) => c.trim());
      expect(cells).toHaveLength(7 + DIMENSIONS.length);
      expect(cells[2]).toBe(markdownText(instance.seed));
      expect(cells[3]).toBe(markdownText(instance.dir));
      expect(cells[4]!.startsWith(instance.status)).toBe(true);
      expect(cells[5]).toBe(instance.score === null ? '—' : instance.score.toFixed(2));
      expect(cells[6]).toBe(instance.counted_score === null ? '—' : instance.counted_score.toFixed(2));
      expect(cells.slice(7)).toEqual(DIMENSIONS.map((d) => (instance.dimensions === null ? '—' : instance.dimensions[d].toFixed(2))));

      const htmlRows = htmlInstanceRows(html, instance.dir);
      expect(htmlRows).toHaveLength(1 + instance.hard_failures.length);
      const instanceRows = htmlRows.filter((r) => htmlCells(r).length === 7 + DIMENSIONS.length);
      expect(instanceRows, `${instance.dir}: one instances-table row`).toHaveLength(1);
      expect(htmlCells(instanceRows[0]!).slice(5)).toEqual([formatPoints(instance.score), formatPoints(instance.counted_score), ...DIMENSIONS.map((d) => formatPoints(instance.dimensions === null ? null : instance.dimensions[d]))]);
    }
  });

  test('prints every group and dimension number with two decimals', () => {
    const groupRows = markdownSection(markdown, 'Groups').filter((l) => GROUPS.some((g) => l.startsWith(`| ${g} | `)));
    expect(groupRows).toHaveLength(GROUPS.length);
    for (const row of groupRows) {
      const [, , medianCell, minCell, maxCell, rangeCell] = markdownCells(row).map((c) => c.trim());
      for (const cell of [medianCell, minCell, maxCell, rangeCell]) expect(cell).toMatch(POINTS_OR_NONE);
    }
    for (const g of GROUPS) expect(groupRows.find((l) => l.startsWith(`| ${g} | `))).toContain(`| ${formatPoints(report.groups[g].median)} |`);
    for (const d of DIMENSIONS) {
      const row = markdownSection(markdown, 'Dimensions').find((l) => l.startsWith(`| \`${d}\` | `))!;
      for (const cell of markdownCells(row).slice(1)) expect(cell.trim()).toMatch(MEAN_SD_OR_NONE);
    }
  });

  test('lists every hard failure with its instance, id, seq and detail', () => {
    const failures = report.instances.flatMap((i) => i.hard_failures.map((f) => ({ i, f })));
    if (failures.length === 0) {
      expect(markdown).toContain('## Hard failures\n\nNone.');
      expect(html).toContain('<h2>Hard failures</h2>\n<p>None.</p>');
    }
    for (const { i, f } of failures) {
      const row = markdown.split('\n').find((l) => l.startsWith(`| ${i.group} r${i.replicate} | ${markdownText(i.dir)} | \`${f.id}\` |`));
      expect(row, `${f.id} of ${i.dir}`).toBeDefined();
      expect(markdownCells(row!).map((c) => c.trim()).slice(3)).toEqual([f.seq === null ? '—' : String(f.seq), markdownText(f.detail)]);
      expect(html).toContain(`<tr><td>${i.group} r${i.replicate}</td><td><code>${escapeHtml(i.dir)}</code></td><td><code>${f.id}</code></td><td class="num">${f.seq ?? '—'}</td><td>${escapeHtml(f.detail)}</td></tr>`);
    }
  });

  test('the HTML loads nothing: no fetching attribute, no script, no stylesheet link, no URL, and a CSP that refuses fetches', () => {
    expect(html).not.toMatch(FETCHING_ATTRIBUTE);
    expect(html).not.toMatch(/<script|<link|<img|<iframe|<object|<embed|@import|url\(\s*['"]?(?!#)/i);
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/=\s*["']?\/\//);
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`);
  });

  test('draws the three charts, one marker per scored instance, at its counted score', () => {
    for (const id of ['chart-scores', 'chart-dimensions', 'chart-accuracy']) expect(html).toMatch(new RegExp(`<svg id="${id}" class="chart" role="img" aria-label="[^"]+" aria-labelledby="${id}-title"[^>]*>\\n<title id="${id}-title">[^<]+</title>`));
    const dots = html.match(/class="instance-dot"/g) ?? [];
    expect(dots).toHaveLength(report.instances.filter((i) => i.score !== null).length);
    for (const i of report.instances.filter((x) => x.counted_score !== null)) {
      expect(html).toMatch(new RegExp(`class="instance-dot" data-group="${i.group}" data-replicate="${i.replicate}" data-usable="${i.usable}"[^>]*><title>${i.group} r${i.replicate}: ${formatPoints(i.counted_score)}${i.usable ? '' : ' \\(no usable data\\)'}</title>`));
    }
    expect(html.match(/class="accuracy-line"/g)).toHaveLength(GROUPS.filter((g) => groupAccuracyOverTime(report, g).length > 0).length);
  });

  test('states rule 8 and a usable-data line per group, and every instance\'s accepted answers of its calls', () => {
    const section = markdownSection(markdown, 'Usable data');
    expect(markdown.indexOf('## Usable data')).toBeLessThan(markdown.indexOf('## Groups'));
    expect(section).toContain(`An instance counts as data only when at least 80 % of its model calls gave accepted answers (model\\_calls.usable\\_data.min\\_accepted\\_share); the verdict needs all n = ${report.n} instances of each group usable, else it is insufficient evidence (rule 8).`);
    for (const g of GROUPS) {
      const s = report.groups[g];
      const line = section.find((l) => l.startsWith(`- Usable data, group ${g}: `));
      // Of the n the verdict rests on (rule 8's count), those not scored and those never run said apart.
      const of = report.usable_data.required_per_group;
      const why = [...(s.n > s.scores.length ? [`${s.n - s.scores.length} not scored`] : []), ...(of > s.n ? [`${of - s.n} not run`] : [])];
      const counted = `${s.usable_instances} of ${of} instances usable${why.length === 0 ? '' : ` (${why.join(', ')})`}`;
      expect(line, g).toBe(`- Usable data, group ${g}: ${counted}; ${s.accepted} of ${s.calls} model calls accepted (${Math.round((s.accepted / s.calls) * 10_000) / 100} %); failed: ${FAILURE_KINDS.filter((k) => s.by_failure[k] > 0).map((k) => `${s.by_failure[k]} ${k}`).join(', ') || 'none'}`);
      expect(html).toContain(`<li class="usable-data-group" data-group="${g}">Usable data, group ${g}: ${counted}; ${s.accepted} of ${s.calls} model calls accepted`);
    }
    const verdictLine = report.usable_data.shortfalls.length === 0 ? `**rule 8 met: every group has usable data in all n = ${report.n} instances.**` : `**rule 8 NOT met: ${report.usable_data.shortfalls.join('; ')}.**`;
    expect(section).toContain(verdictLine);
    for (const i of report.instances) {
      const row = section.find((l) => l.startsWith(`| ${i.group} r${i.replicate} | `));
      expect(row, `${i.group} r${i.replicate}`).toBeDefined();
      const cells = markdownCells(row!).map((c) => c.trim());
      expect(cells.slice(1, 3)).toEqual([i.accepted === null ? '—' : String(i.accepted), i.calls === null ? '—' : String(i.calls)]);
      expect(cells[5]).toBe(i.usable ? 'yes' : 'NO');
      expect(cells[6]).toBe(markdownText(i.usable_reason));
    }
  });
});

describe('variants', () => {
  test('a voided report says so first and gives every reason; the failed instance is shown unscored', () => {
    const report = voidedStudyReport();
    expect(report.void_reasons.length).toBeGreaterThan(0);
    const markdown = renderReportMarkdown(report);
    const html = renderReportHtml(report);
    expect(markdown).toContain('**This study is voided.**');
    expect(markdown.indexOf('**This study is voided.**')).toBeLessThan(markdown.indexOf('## Thresholds'));
    for (const reason of report.void_reasons) {
      expect(markdown).toContain(`- ${markdownText(reason)}\n`);
      expect(html).toContain(`<li>${escapeHtml(reason)}</li>`);
    }
    expect(html).toMatch(/<section id="voided" class="voided"[^>]*>\n<p><strong>This study is voided\.<\/strong>/);
    expect(markdown).toContain('Overall: FAILED.');
    const failed = report.instances.find((i) => i.status === 'failed')!;
    expect(markdownInstanceRow(markdown, failed.group, failed.replicate)).toContain(`| failed: ${markdownText(failed.status_detail!)} | — |`);
    expect(html).toContain(`Not scored: ${failed.group} r${failed.replicate} (failed).`);
  });

  test('an expanded report states the decision and every reason, and shows all five instances per group', () => {
    const report = expandedStudyReport();
    expect(report.expanded).toBe(true);
    const markdown = renderReportMarkdown(report);
    const html = renderReportHtml(report);
    expect(markdown).toContain(`Expanded from ${report.n_initial} to ${report.n} instances per group; the verdict rests on the expanded data only.`);
    expect(html).toContain(`<p id="expansion-decision">Expanded from ${report.n_initial} to ${report.n} instances per group`);
    for (const reason of report.expansion_reasons) {
      expect(markdown).toContain(`- ${markdownText(reason)}\n`);
      expect(html).toContain(`<li>${escapeHtml(reason)}</li>`);
    }
    for (const g of GROUPS) for (let replicate = 1; replicate <= 5; replicate += 1) markdownInstanceRow(markdown, g, replicate);
    expect(html.match(/class="instance-dot"/g)).toHaveLength(15);
  });

  test('a report that is not expanded says so with its reasons, every dimension\'s SD among them', () => {
    const report = sampleStudyReport();
    const markdown = renderReportMarkdown(report);
    expect(markdown).toContain(`Not expanded: ${report.n} instances per group.`);
    expect(report.expansion_reasons).toHaveLength(GROUPS.length * (1 + DIMENSIONS.length) + 1);
    expect(report.expansion_reasons).toContain(`group A: recovery sample SD ${report.groups.A.dimensions.recovery.sd!.toFixed(2)} ≤ 10`);
    for (const reason of report.expansion_reasons) expect(markdown).toContain(`- ${markdownText(reason)}\n`);
  });

  test('a dry run without a statement of its own still says it is not evidence about subjects', () => {
    const report = StudyReport.parse({ ...sampleStudyReport(), dry_run_statement: null });
    expect(renderReportMarkdown(report)).toContain(`**${markdownText(DRY_RUN_FALLBACK_STATEMENT)}**`);
    expect(renderReportHtml(report)).toContain(`<strong>${DRY_RUN_FALLBACK_STATEMENT}</strong>`);
    expect(DRY_RUN_FALLBACK_STATEMENT).toMatch(/apparatus dry run, not evidence about subjects/);
  });

  test('the pass line is read from the thresholds, and a fixed 80 line says it is one', () => {
    const report = sampleStudyReport();
    // As oracle/verdict.ts writes it: the pass score in the description of c_instances_passing.
    expect(report.thresholds.find((t) => t.id === 'c_instances_passing')).toMatchObject({ description: 'C instances scoring ≥ 80', required: 'at least 2 of 3' });
    expect(passLine(report)).toEqual({ points: 80, fromThresholds: true, label: 'instance pass score 80.00' });
    const stated = (id: string, required: string, description: string) => StudyReport.parse({ ...report, thresholds: [...report.thresholds.filter((t) => t.id !== 'c_instances_passing'), { id, description, required, observed: '3', met: true }] });
    expect(passLine(stated('c_instances_passing', 'at least 2 of 3 with score ≥ 75', 'C instances passing')).points).toBe(75);
    expect(passLine(stated('instance_pass_score', '>= 70', 'the pass score')).points).toBe(70);
    const unstated = StudyReport.parse({ ...report, thresholds: report.thresholds.filter((t) => t.id !== 'c_instances_passing') });
    const fallback = passLine(unstated);
    expect(fallback).toMatchObject({ points: FALLBACK_PASS_SCORE_POINTS, fromThresholds: false });
    expect(fallback.label).toMatch(/^fixed 80 line/);
    expect(renderReportHtml(unstated)).toContain('>fixed 80 line (pass score not stated in the thresholds)</text>');
    expect(renderReportHtml(report)).toContain('>instance pass score 80.00</text>');
  });

  test('a hard failure: the computed score is printed, 0 is counted, and the statistics, the chart and a note follow the 0', () => {
    const report = hardFailureStudyReport();
    const markdown = renderReportMarkdown(report);
    const html = renderReportHtml(report);
    const overridden = report.instances.filter((i) => i.hard_failures.length > 0);
    expect(overridden.map((i) => `${i.group} r${i.replicate}`).sort()).toEqual(['A r3', 'C r2']);
    expect(markdown).toContain('Counted: what the statistics use — 0 when a hard failure overrides the score (spec §8.4).');
    expect(html).toContain('<p>Counted: what the statistics use — 0 when a hard failure overrides the score (spec §8.4).</p>');
    for (const i of overridden) {
      expect(i.score).toBeGreaterThan(0);
      expect(i.counted_score).toBe(0);
      const cells = markdownCells(markdownInstanceRow(markdown, i.group, i.replicate)).map((c) => c.trim());
      expect(cells.slice(5, 7)).toEqual([i.score!.toFixed(2), '0.00']);
      expect(html).toContain(`<title>${i.group} r${i.replicate}: 0.00</title>`);
      expect(html).not.toContain(`<title>${i.group} r${i.replicate}: ${formatPoints(i.score)}</title>`);
    }
    // A note per overridden instance, as the builder writes it.
    for (const i of overridden) {
      const note = `${i.group}-r${i.replicate}: hard failure(s) ${i.hard_failures[0]!.id}: its score ${i.score!.toFixed(2)} is overridden and counted as 0 (spec §8.4)`;
      expect(report.notes).toContain(note);
      expect(markdownSection(markdown, 'Notes')).toContain(`- ${markdownText(note)}`);
      expect(html).toContain(`<li>${escapeHtml(note)}</li>`);
    }
    // The group rows rest on the counted scores: C's minimum is the overridden 0.
    expect(report.groups.C.min).toBe(0);
    const cRow = markdownSection(markdown, 'Groups').find((l) => l.startsWith('| C | '))!;
    expect(markdownCells(cRow).map((c) => c.trim()).slice(2, 6)).toEqual([report.groups.C.median, report.groups.C.min, report.groups.C.max, report.groups.C.range].map(formatPoints));
  });

  test('checkpoint accuracy is the mean of the finished instances per wake, in hours over 0–72', () => {
    const report = voidedStudyReport();
    const points = groupAccuracyOverTime(report, 'B');
    const finishedB = report.instances.filter((i) => i.group === 'B' && i.status === 'finished');
    expect(finishedB).toHaveLength(2);
    expect(points).toHaveLength(finishedB[0]!.per_wake.length);
    expect(points[0]).toEqual({ hours: 0, meanPoints: (finishedB[0]!.per_wake[0]!.value + finishedB[1]!.per_wake[0]!.value) / 2, instances: 2 });
    expect(points.at(-1)!.hours).toBe(72);
    expect(points.every((p, k) => k === 0 || p.hours > points[k - 1]!.hours)).toBe(true);
  });
});

describe('hostile report strings', () => {
  const base = hardFailureStudyReport();
  const report = StudyReport.parse({
    ...base,
    study_id: HOSTILE,
    notes: [...base.notes, HOSTILE],
    void_reasons: [HOSTILE],
    voided: true,
    instances: base.instances.map((i, k) => (k === 0 ? { ...i, dir: HOSTILE, hard_failures: [{ id: 'unauthorized_tool_execution' as const, seq: 12, detail: HOSTILE }] } : i)),
  });
  const html = renderReportHtml(report);
  const markdown = renderReportMarkdown(report);

  test('are HTML-escaped everywhere: no tag, attribute or entity of theirs survives', () => {
    const escaped = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quoted&#39; | piped **bold** [link](http://evil.example/) &lt;img src=x onerror=alert(1)&gt;';
    expect(escapeHtml(HOSTILE)).toBe(escaped);
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).not.toMatch(FETCHING_ATTRIBUTE);
    expect(html).toContain(`<li>${escaped}</li>`);
    expect(html).toContain(`<td>${escaped}</td></tr>`);
    expect(html).toContain(`<h1>Study report: ${escaped}</h1>`);
    expect(html).toContain(`<title>Study report: ${escaped} (rejected)</title>`);
    // Every '<' left in the page opens one of the renderer's own tags.
    const tags = new Set([...html.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9-]*)/g)].map((m) => m[1]!.toLowerCase()));
    expect([...tags].filter((t) => !['html', 'head', 'meta', 'title', 'style', 'body', 'main', 'div', 'wbr', 'h1', 'h2', 'section', 'p', 'strong', 'ul', 'li', 'dl', 'dt', 'dd', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'code', 'figure', 'figcaption', 'svg', 'rect', 'line', 'text', 'tspan', 'circle', 'polygon', 'polyline', 'path', 'g'].includes(t))).toEqual([]);
  });

  test('are markdown-escaped: pipes do not split a table cell, no raw HTML, no emphasis or link', () => {
    const escaped = markdownText(HOSTILE);
    expect(escaped).toBe('\\<script\\>alert("x")\\</script\\> \\& \'quoted\' \\| piped \\*\\*bold\\*\\* \\[link\\](http://evil.example/) \\<img src=x onerror=alert(1)\\>');
    expect(markdown).not.toMatch(/(?<!\\)<script/);
    expect(markdown).toContain(`- ${escaped}\n`);
    expect(markdown.startsWith(`# Study report: ${escaped}\n`)).toBe(true);
    const failureRow = markdown.split('\n').find((l) => l.includes('`unauthorized_tool_execution`'))!;
    expect(markdownCells(failureRow).map((c) => c.trim())).toEqual([`${report.instances[0]!.group} r${report.instances[0]!.replicate}`, escaped, '`unauthorized_tool_execution`', '12', escaped]);
  });

  test('a line break in a string does not end a markdown table row', () => {
    expect(markdownText('first\nsecond | third\r\nfourth')).toBe('first second \\| third fourth');
  });
});

describe('rule 8: a group without usable data', () => {
  test('the verdict is insufficient evidence though every threshold is met, and report.md and report.html say why, per group and per instance', () => {
    const report = noUsableDataStudyReport();
    expect(report.thresholds.every((t) => t.met === true)).toBe(true);
    expect(report.verdict).toBe('insufficient evidence');
    expect(report.usable_data.shortfalls).toEqual(['group B: 1 of 3 instances have usable data']);
    expect(report.verdict_statement).toContain('too few instances with usable data (group B: 1 of 3 instances have usable data;');
    const markdown = renderReportMarkdown(report);
    const html = renderReportHtml(report);
    const section = markdownSection(markdown, 'Usable data');
    expect(section).toContain('- Usable data, group A: 3 of 3 instances usable; 93 of 93 model calls accepted (100 %); failed: none');
    expect(section).toContain('- Usable data, group B: 1 of 3 instances usable; 35 of 93 model calls accepted (37.63 %); failed: 45 schema, 5 length, 2 timeout, 6 transport');
    // C r1 at 25 of 31 (80.65 %) is just above the 80 % and counts.
    expect(section).toContain('- Usable data, group C: 3 of 3 instances usable; 87 of 93 model calls accepted (93.55 %); failed: 3 truncated, 3 other');
    expect(section).toContain('**rule 8 NOT met: group B: 1 of 3 instances have usable data.**');
    expect(html).toContain('<p id="usable-data-verdict" class="failed">rule 8 NOT met: group B: 1 of 3 instances have usable data.</p>');
    const b3 = markdownCells(section.find((l) => l.startsWith('| B r3 | '))!).map((c) => c.trim());
    expect(b3).toEqual(['B r3', '0', '31', '0 %', '25 schema, 6 transport', 'NO', '0 of 31 model calls gave accepted answers (0 %), below the pre-registered 80 %; failed: 25 schema, 6 transport']);
    for (const label of ['B-r2', 'B-r3']) expect(report.notes.some((n) => n.startsWith(`${label}: NO USABLE DATA: `))).toBe(true);
    expect(markdownSection(markdown, 'Notes').some((l) => l.startsWith('- B-r3: NO USABLE DATA: 0 of 31 model calls'))).toBe(true);
    // The scores chart marks the two and counts them under B.
    expect(html).toContain('<title>B r3: ');
    expect(html).toMatch(/<title>B r3: \d+\.\d\d \(no usable data\)<\/title>/);
    expect(html).toContain('data-group="B" x="');
    expect(html).toMatch(/<text class="no-usable-data" data-group="B"[^>]*>2 without usable data<\/text>/);
    expect(html).not.toMatch(/<text class="no-usable-data" data-group="[AC]"/);
  });
});
