// The review's agreement (review-agreement.ts) as the table `npm run review -- unblind` prints:
// one row per dimension and per hard failure against the oracle, one row per two reviewers, and
// every listed disagreement by name under its table. Text only; the same figures are in
// review/unblinded.json (`agreement`).
import type { Agreement, DimensionAgreement, HardFailureAgreement, ReviewerPairAgreement } from './review-agreement.js';
import type { Kappa } from './cohens-kappa.js';

function kappaText(k: Kappa): string {
  if (k.kappa !== null) return k.kappa.toFixed(2);
  return k.items === 0 ? '–' : `– (${k.note.startsWith('undefined') ? 'one category' : k.note})`;
}

const num = (v: number | null): string => (v === null ? '–' : v.toFixed(2));

/** Left-aligned columns, each as wide as its widest cell. */
function columns(rows: readonly (readonly string[])[], indent = '  '): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) => `${indent}${r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}`.trimEnd());
}

function dimensionRows(rows: readonly DimensionAgreement[], tolerance: number): string[] {
  return columns([['dimension', 'pairs', 'mean |Δ|', 'max |Δ|', `within ${tolerance}`, 'κ (bands)'], ...rows.map((r) => [r.dimension, String(r.pairs), num(r.mean_abs_diff), num(r.max_abs_diff), `${r.within_tolerance}/${r.pairs}`, kappaText(r.kappa)])]);
}

function hardFailureRows(rows: readonly HardFailureAgreement[]): string[] {
  return columns([['hard failure', 'pairs', 'agree', 'reviewer found', 'oracle found', 'κ'], ...rows.map((r) => [r.id, String(r.pairs), `${r.agree}/${r.pairs}`, String(r.reviewer_found), String(r.oracle_found), kappaText(r.kappa)])]);
}

function pairRows(pairs: readonly ReviewerPairAgreement[], tolerance: number): string[] {
  return columns([
    ['reviewers', 'packages', 'hard failures κ', `dimensions within ${tolerance}`, 'mean |Δ|', 'dimensions κ (bands)'],
    ...pairs.map((p) => [`${p.reviewers[0]} × ${p.reviewers[1]}`, String(p.packages), kappaText(p.hard_failures.kappa), `${p.dimensions.within_tolerance}/${p.dimensions.kappa.items}`, num(p.dimensions.mean_abs_diff), kappaText(p.dimensions.kappa)]),
  ]);
}

const where = (d: { blind_id: string; group: string; replicate: number }): string => `${d.blind_id} group ${d.group} r${d.replicate}`;
const more = (n: number): string[] => (n > 0 ? [`    … and ${n} more (not listed)`] : []);

/** The lines the unblind command prints. */
export function agreementLines(a: Agreement): string[] {
  const t = a.tolerance_points;
  const out = [`agreement with the oracle (${a.oracle.source}; ${a.oracle.instances} instance(s) compared; a difference over ${t} points is a disagreement; κ = Cohen's kappa, dimensions in bands ${a.kappa_bands.join(', ')}):`];
  for (const m of a.oracle.missing) out.push(`  not compared: ${where(m)}: ${m.reason}`);
  out.push(...dimensionRows(a.reviewer_oracle.dimensions, t));
  const dimDisagreements = a.reviewer_oracle.dimensions.flatMap((r) => r.disagreements.map((d) => `    ${where(d)}  ${d.role} ${JSON.stringify(d.reviewer)}  ${r.dimension}: ${d.reviewer_value} vs the oracle's ${d.oracle_value} (${d.diff > 0 ? '+' : ''}${d.diff})`));
  if (dimDisagreements.length > 0) out.push('  disagreements:', ...dimDisagreements, ...more(a.reviewer_oracle.dimensions.reduce((s, r) => s + r.disagreements_not_listed, 0)));
  out.push(...hardFailureRows(a.reviewer_oracle.hard_failures));
  const hfDisagreements = a.reviewer_oracle.hard_failures.flatMap((r) => r.disagreements.map((d) => `    ${where(d)}  ${d.role} ${JSON.stringify(d.reviewer)}  ${r.id}: ${d.reviewer_found ? 'found' : 'not found'}, the oracle ${d.oracle_found ? `found ${d.oracle_entries}` : 'none'}`));
  if (hfDisagreements.length > 0) out.push('  disagreements:', ...hfDisagreements, ...more(a.reviewer_oracle.hard_failures.reduce((s, r) => s + r.disagreements_not_listed, 0)));
  if (a.reviewer_reviewer.length === 0) {
    out.push('agreement between reviewers: no two reviewers scored the same package');
    return out;
  }
  out.push('agreement between reviewers (every two who scored the same packages):', ...pairRows(a.reviewer_reviewer, t));
  const pairDisagreements = a.reviewer_reviewer.flatMap((p) => [
    ...p.hard_failures.disagreements.map((d) => `    ${where(d)}  ${d.id}: found by ${JSON.stringify(d.found_by)}, not by ${JSON.stringify(d.not_found_by)}`),
    ...p.dimensions.disagreements.map((d) => `    ${where(d)}  ${d.dimension}: ${JSON.stringify(p.reviewers[0])} ${d.first}, ${JSON.stringify(p.reviewers[1])} ${d.second}`),
  ]);
  const unlisted = a.reviewer_reviewer.reduce((s, p) => s + p.hard_failures.disagreements_not_listed + p.dimensions.disagreements_not_listed, 0);
  if (pairDisagreements.length > 0) out.push('  disagreements:', ...pairDisagreements, ...more(unlisted));
  return out;
}
