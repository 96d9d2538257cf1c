// The reviewer scorecard page without a browser: it references nothing outside itself, carries a
// CSP that names its one style and one script by hash, shows the blind id and nothing that names
// a group, escapes hostile package strings in text and in the embedded JSON (which reads back to
// the same data), gives every timeline entry, claim and chain an id and links only to ids that
// exist, labels every form control, and refuses packages it could not show or score faithfully.
// scorecard-browser.test.ts drives the same page in Chromium.
import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { HARD_FAILURE_IDS } from '../../design/prereg.js';
import { DIMENSIONS } from '../../oracle/continuity-score.js';
import type { ScorecardData } from '../../blind-review/scorecard-data.js';
import { renderScorecard } from '../../blind-review/scorecard-html.js';
import { MAX_TIMELINE_ENTRIES } from '../../blind-review/scorecard-input.js';
import { MAX_DETAIL_CHARS } from '../../blind-review/scorecard-timeline.js';
import { escapeHtml } from '../../foundation/html-escape.js';
import { SCORECARD_SCRIPT } from '../../blind-review/scorecard-script.js';
import { SAMPLE_BLIND_ID, samplePackage, sampleRef } from '../support/sample-package.js';

const HOSTILE = `</script><script>alert(1)</script><!-- <img src="http://198.51.100.7/x.png" onerror="alert(2)"> & 'q' \u2028`;

const all = (html: string, re: RegExp): string[] => [...html.matchAll(re)].map((m) => m[1]!);
const idsOf = (html: string): string[] => all(html, /\sid="([^"]*)"/g);
const hrefsOf = (html: string): string[] => all(html, /\shref="([^"]*)"/g);
/** The markup without the two script blocks (their code and JSON are not tags). */
const withoutScripts = (html: string): string => html.replace(/<script\b[^>]*>[\s\S]*?<\/script>/gi, '<script></script>');
/** Every quoted attribute value inside a tag (escaped text holds no "<", so this sees tags only). */
const attributeValues = (html: string): string[] => [...withoutScripts(html).matchAll(/<[a-z][^>]*>/gi)].flatMap((tag) => all(tag[0], /\s[a-z:-]+="([^"]*)"/gi));

function packageJson(html: string): unknown {
  const m = /<script type="application\/json" id="package-data">([\s\S]*?)<\/script>/.exec(html);
  expect(m, 'the package-data block').not.toBeNull();
  return JSON.parse(m![1]!);
}

/** The element with this id, as its opening tag up to the end of the line the renderer closes it on. */
function elementHtml(html: string, id: string): string {
  const start = html.indexOf(` id="${id}"`);
  expect(start, `element #${id}`).toBeGreaterThan(0);
  const end = html.indexOf('\n</li>', start);
  return html.slice(start, end);
}

function hostilePackage(): ScorecardData {
  const base = samplePackage();
  return {
    ...base,
    timeline: base.timeline.map((e, k) => (k === 3 ? { ...e, summary: HOSTILE, detail: { [HOSTILE]: HOSTILE } } : e)),
    claims: base.claims.map((c, k) => (k === 0 ? { ...c, statement: HOSTILE, alternatives: [HOSTILE], evidence: c.evidence.map((e) => ({ ...e, summary: HOSTILE })) } : c)),
    actions: base.actions.map((a, k) => (k === 2 ? { ...a, rationale: HOSTILE, target: HOSTILE, failed_rules: [HOSTILE] } : a)),
    interventions: base.interventions.map((i) => ({ ...i, description: HOSTILE })),
    manifest: { ...base.manifest, scenario_id: HOSTILE, hard_failures: base.manifest.hard_failures.map((h) => ({ ...h, description: HOSTILE })) },
  };
}

describe('the sample package page', () => {
  const data = samplePackage();
  const html = renderScorecard(data);

  test('references nothing outside itself', () => {
    const markup = withoutScripts(html);
    expect(markup).not.toMatch(/<[^>]*\s(?:src|srcset|action|formaction|poster|background|data|xlink:href|ping)\s*=/i);
    expect(markup).not.toMatch(/<(?:link|img|iframe|object|embed|base|audio|video|source)\b/i);
    for (const style of all(html, /<style>([\s\S]*?)<\/style>/g)) expect(style).not.toMatch(/@import|url\(|@font-face/i);
    for (const href of hrefsOf(html)) expect(href, href).toMatch(/^#[A-Za-z][\w-]*$/);
    for (const value of attributeValues(html)) expect(value, value).not.toMatch(/^\/\/|[a-z][a-z0-9+.-]*:\/\//i);
    expect(html).not.toMatch(/https?:\/\//i);
  });

  test('carries a CSP that refuses every fetch and names its one style and one script by hash', () => {
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html)?.[1];
    expect(csp).toBeDefined();
    expect(html.indexOf('Content-Security-Policy')).toBeLessThan(html.indexOf('<style>'));
    const directives = new Map(csp!.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));
    expect(directives.get('default-src')).toEqual(["'none'"]);
    const styles = all(html, /<style>([\s\S]*?)<\/style>/g);
    const scripts = all(html, /<script>([\s\S]*?)<\/script>/g);
    expect(styles).toHaveLength(1);
    expect(scripts).toEqual([SCORECARD_SCRIPT]);
    const hash = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
    expect(directives.get('style-src')).toEqual([hash(styles[0]!)]);
    expect(directives.get('script-src')).toEqual([hash(scripts[0]!)]);
    expect(html).not.toMatch(/\sstyle="|\son[a-z]+="/i);
  });

  test('shows the blind id and nothing naming a group', () => {
    expect(all(html, /<h1>([\s\S]*?)<\/h1>/g)).toEqual([`Reviewer scorecard <span id="blind-id">${SAMPLE_BLIND_ID}</span>`]);
    expect(html).toContain(`<title>Reviewer scorecard ${SAMPLE_BLIND_ID}</title>`);
    expect(html).not.toMatch(/\bgroup\b|\bgroups\b|capabilit/i);
  });

  test('embeds the package as JSON that reads back to the same data, but the timeline (normalized_timeline.jsonl holds it)', () => {
    const { timeline, ...rest } = data;
    expect(timeline.length).toBeGreaterThan(0);
    expect(packageJson(html)).toEqual(JSON.parse(JSON.stringify(rest)));
  });

  test('gives every entry, claim and chain a unique id and links only to ids that exist', () => {
    const ids = idsOf(html);
    expect(new Set(ids).size).toBe(ids.length);
    const idSet = new Set(ids);
    for (const e of data.timeline) expect(idSet.has(e.ref), e.ref).toBe(true);
    for (const c of data.claims) expect(idSet.has(`claim-${c.ref}`), c.ref).toBe(true);
    for (const a of data.actions) expect(idSet.has(`chain-${a.proposal}`), a.proposal).toBe(true);
    const hrefs = hrefsOf(html);
    for (const href of hrefs) expect(idSet.has(href.slice(1)), href).toBe(true);
    expect(html).not.toContain('not in this package');

    // Every ref the package mentions is a link somewhere.
    const mentioned = new Set([
      ...data.timeline.flatMap((e) => e.refs),
      ...data.checkpoints.flatMap((c) => [c.ref, ...c.evidence]),
      ...data.interventions.flatMap((i) => i.refs),
      ...data.claims.flatMap((c) => [c.ref, ...c.evidence.map((e) => e.ref)]),
      ...data.actions.flatMap((a) => [a.proposal, a.decision_ref, a.intent, a.outcome_ref].filter((r): r is string => r !== null)),
      ...data.recovery.flatMap((r) => [r.restart_ref, r.first_checkpoint_after, ...r.open_intents.flatMap((o) => [o.intent, o.settled_ref])].filter((r): r is string => r !== null)),
    ]);
    const linked = new Set(hrefs.map((h) => h.slice(1)));
    for (const ref of mentioned) expect(linked.has(ref), ref).toBe(true);
  });

  test('links each claim to its evidence and each chain to its steps, and each entry back', () => {
    for (const c of data.claims) {
      const card = elementHtml(html, `claim-${c.ref}`);
      for (const e of c.evidence) expect(card).toContain(`<a class="ref" href="#${e.ref}">${e.ref}</a>`);
      for (const e of c.evidence) expect(elementHtml(html, e.ref)).toContain(`<a href="#claim-${c.ref}">claim ${c.ref}</a>`);
      expect(elementHtml(html, c.ref)).toContain(`Claim recorded here: <a href="#claim-${c.ref}">`);
    }
    for (const a of data.actions) {
      const card = elementHtml(html, `chain-${a.proposal}`);
      for (const r of [a.proposal, a.decision_ref, a.intent, a.outcome_ref]) if (r !== null) {
        expect(card).toContain(`href="#${r}"`);
        expect(elementHtml(html, r)).toContain(`<a href="#chain-${a.proposal}">chain ${a.proposal}</a>`);
      }
    }
    // The denial and the failure say so in words, not only in style.
    expect(elementHtml(html, `chain-${sampleRef('deny-prop')}`)).toMatch(/Decision: <strong class="bad">DENIED<\/strong>[\s\S]*path_inside_workspace/);
    expect(elementHtml(html, `chain-${sampleRef('fail-prop')}`)).toContain('Outcome: <strong class="bad">FAILED</strong>');
  });

  test('shows per wake the expected checkpoint above the recorded one, the interventions and the recovery report', () => {
    for (const e of data.expected.checkpoints) expect(html).toContain(`<tr class="expected"><th scope="row" rowspan="2">${e.wake}</th><td>expected</td><td>${e.t}</td><td></td><td>${e.current_goal_id}</td><td>${e.goal_status}</td>`);
    expect(html).toContain('<td>wait for thread-review</td>');
    for (const c of data.checkpoints) expect(html).toContain(`<tr><td>recorded</td><td>${c.t}</td><td><a class="ref" href="#${c.ref}">`);
    for (const i of data.interventions) expect(html).toContain(escapeHtml(i.description));
    expect(html).toContain(`Restart entry: <a class="ref" href="#${sampleRef('restart')}">`);
    expect(html).toContain(`<td><a class="ref" href="#${sampleRef('retry-intent')}">${sampleRef('retry-intent')}</a></td><td><strong>reconciled_happened</strong></td>`);
  });

  test('has a labelled form control for every dimension, hard failure, the reviewer and the comments', () => {
    for (const d of data.manifest.dimensions) {
      expect(html).toContain(`<label for="dim-${d.name}">${d.name} (weight ${d.weight})</label>`);
      expect(html).toContain(escapeHtml(d.measured_as));
      expect(html).toMatch(new RegExp(`<input type="number" id="dim-${d.name}" [^>]*min="0" max="100"`));
    }
    expect(data.manifest.dimensions.map((d) => d.name)).toEqual([...DIMENSIONS]);
    for (const h of data.manifest.hard_failures) {
      expect(html).toContain(`<legend><code>${h.id}</code>: ${escapeHtml(h.description)}</legend>`);
      for (const v of ['yes', 'no']) expect(html).toMatch(new RegExp(`<input type="radio" id="hf-${h.id}-${v}" name="hf-${h.id}" value="${v}"`));
    }
    expect(data.manifest.hard_failures.map((h) => h.id)).toEqual([...HARD_FAILURE_IDS]);
    const labelled = new Set(all(html, /<label for="([^"]*)"/g));
    const controls = all(html, /<(?:input|textarea|select)\b[^>]*\sid="([^"]*)"/g);
    expect(controls).toHaveLength(DIMENSIONS.length + 2 * HARD_FAILURE_IDS.length + 2);
    for (const id of controls) expect(labelled.has(id), id).toBe(true);
    expect(html).toContain('<button type="submit" id="save-scores">Save scores</button>');
  });

  test('is the same page for the same data', () => {
    expect(renderScorecard(samplePackage())).toBe(html);
  });
});

describe('hostile package strings', () => {
  const data = hostilePackage();
  const html = renderScorecard(data);

  test('cannot break out of the JSON block, which still reads back to the same data', () => {
    expect(html.match(/<script/gi)).toHaveLength(2);
    expect(html.match(/<\/script/gi)).toHaveLength(2);
    expect(html.match(/<!--/g)).toBeNull();
    const { timeline: _timeline, ...rest } = data;
    expect(packageJson(html)).toEqual(JSON.parse(JSON.stringify(rest)));
  });

  test('are escaped in text', () => {
    expect(html).not.toMatch(/<img|onerror="|alert\(1\)<\/script>/i);
    const escaped = escapeHtml(HOSTILE);
    expect(escaped).toContain('&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    // Claim statement and alternative, evidence summary (in the claim), entry summary, chain rationale, intervention descriptions, hard-failure descriptions.
    expect(html.split(escaped).length - 1).toBeGreaterThanOrEqual(1 + 1 + 1 + 1 + 1 + data.interventions.length + HARD_FAILURE_IDS.length);
  });
});

describe('what the page refuses or bounds', () => {
  test('a manifest without every dimension or hard failure exactly once (its scores could not be saved valid)', () => {
    const base = samplePackage();
    expect(() => renderScorecard({ ...base, manifest: { ...base.manifest, dimensions: base.manifest.dimensions.slice(1) } })).toThrow(/each of state_recovery/);
    const twice = [...base.manifest.hard_failures.slice(0, -1), base.manifest.hard_failures[0]!];
    expect(() => renderScorecard({ ...base, manifest: { ...base.manifest, hard_failures: twice } })).toThrow(/hard_failures must list each/);
  });

  test('a ref twice in the timeline, a wrong entry count, a malformed part', () => {
    const base = samplePackage();
    const dup = base.timeline.map((e, k) => (k === 1 ? { ...e, ref: base.timeline[0]!.ref } : e));
    expect(() => renderScorecard({ ...base, timeline: dup })).toThrow(/appears twice/);
    expect(() => renderScorecard({ ...base, manifest: { ...base.manifest, timeline_entries: 7 } })).toThrow(/timeline_entries is 7/);
    expect(() => renderScorecard({ ...base, claims: [{ ...base.claims[0]!, ref: 'E12"><b>' }] })).toThrow();
  });

  test('a timeline longer than the page shows', () => {
    const base = samplePackage();
    const long = Array.from({ length: MAX_TIMELINE_ENTRIES + 1 }, () => base.timeline[0]!);
    expect(() => renderScorecard({ ...base, timeline: long })).toThrow(RangeError);
  });

  test('a ref the timeline lacks is named as such, never a dead link', () => {
    const base = samplePackage();
    const claims = base.claims.map((c, k) => (k === 0 ? { ...c, evidence: [...c.evidence, { ref: 'E9999', kind: 'world_message' as const, summary: 'gone' }] } : c));
    const html = renderScorecard({ ...base, claims });
    expect(html).toContain('<span class="ref dangling">E9999 (not in this package)</span>');
    expect(hrefsOf(html)).not.toContain('#E9999');
  });

  test('a long detail is cut in the page, saying where it is whole', () => {
    const base = samplePackage();
    const big = 'x'.repeat(MAX_DETAIL_CHARS * 3);
    const html = renderScorecard({ ...base, timeline: base.timeline.map((e, k) => (k === 0 ? { ...e, detail: { big } } : e)) });
    const pre = /<pre>([^<]*)<\/pre>/.exec(elementHtml(html, base.timeline[0]!.ref))![1]!;
    expect(pre.length).toBeLessThan(MAX_DETAIL_CHARS + 200);
    expect(pre).toMatch(/more characters \(the whole entry is in normalized_timeline\.jsonl\)$/);
    expect(packageJson(html) as ScorecardData).not.toHaveProperty('timeline');
  });
});
