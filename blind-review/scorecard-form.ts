// The scorecard's scoring form: one 0–100 value per pre-registered dimension (its weight and what
// it measures shown), a yes/no per hard failure (no default), the reviewer's name and comments.
// Its ids are the ones the page's script reads to save a ReviewerScores file (scorecard-script.ts).
import { ReviewerScores, type PackageManifest } from './package-format.js';
import type { ScorecardInput } from './scorecard-input.js';
import { htmlAttribute, htmlText } from './visible-text.js';

function dimensionField(d: PackageManifest['dimensions'][number]): string {
  const id = `dim-${d.name}`;
  return [
    '<div class="field">',
    `<label for="${htmlAttribute(id)}">${htmlText(d.name)} (weight ${htmlText(String(d.weight))})</label>`,
    `<p class="help" id="${htmlAttribute(id)}-help">Measured as: ${htmlText(d.measured_as)}</p>`,
    `<input type="number" id="${htmlAttribute(id)}" name="${htmlAttribute(id)}" min="0" max="100" step="any" inputmode="decimal" required aria-describedby="${htmlAttribute(id)}-help">`,
    '</div>',
  ].join('\n');
}

function hardFailureFieldset(h: PackageManifest['hard_failures'][number]): string {
  const id = `hf-${h.id}`;
  return [
    `<fieldset class="hard-failure" id="${htmlAttribute(id)}">`,
    `<legend><code>${htmlText(h.id)}</code>: ${htmlText(h.description)}</legend>`,
    `<input type="radio" id="${htmlAttribute(id)}-yes" name="${htmlAttribute(id)}" value="yes" required> <label for="${htmlAttribute(id)}-yes">Yes, found</label>`,
    `<input type="radio" id="${htmlAttribute(id)}-no" name="${htmlAttribute(id)}" value="no" required> <label for="${htmlAttribute(id)}-no">No, not found</label>`,
    '</fieldset>',
  ].join('\n');
}

/** The form, at the end of the page: saving it downloads the scores as a file; nothing is sent anywhere. */
export function scoringSection(input: ScorecardInput): string {
  const m = input.manifest;
  return [
    '<section id="scoring" aria-labelledby="scoring-h">',
    '<h2 id="scoring-h">Scores</h2>',
    `<p>Score package ${htmlText(m.blind_id)} on each pre-registered dimension (0 to 100) and decide on every hard failure. "Save scores" downloads the scores as a JSON file; nothing is sent anywhere. Send that file as the <a href="#instructions">instructions</a> say.</p>`,
    // The version the saved file declares comes from the ReviewerScores schema, not from the script's text.
    `<form id="score-form" novalidate data-score-format-version="${htmlAttribute(ReviewerScores.shape.score_format_version.value)}">`,
    // At the top of the form and focused when shown, so the reviewer reads what is missing first.
    '<div id="form-errors" class="errors" tabindex="-1" hidden><p>The scores were not saved. Missing or invalid:</p><ul id="form-error-list"></ul></div>',
    `<fieldset><legend>Dimensions, each 0 to 100</legend>\n${m.dimensions.map(dimensionField).join('\n')}\n</fieldset>`,
    `<fieldset><legend>Hard failures: is each one present in this package?</legend>\n${m.hard_failures.map(hardFailureFieldset).join('\n')}\n</fieldset>`,
    '<div class="field"><label for="reviewer">Reviewer name</label><input type="text" id="reviewer" name="reviewer" maxlength="100" autocomplete="name" required></div>',
    '<div class="field"><label for="comments">Comments (optional)</label><textarea id="comments" name="comments" rows="6" maxlength="16384"></textarea></div>',
    '<button type="submit" id="save-scores">Save scores</button>',
    '<p id="save-status" class="status" role="status" aria-live="polite"></p>',
    '<noscript><p><strong>Saving needs JavaScript, which is turned off: turn it on for this file to save the scores.</strong></p></noscript>',
    '</form>',
    '</section>',
  ].join('\n');
}
