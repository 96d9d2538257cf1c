// The scorecard page's only script (vanilla JS, no library, nothing fetched). It does two things:
// marks the entry a followed link points at (the CSS :target rule already highlights it; the
// class and the focus make the highlight survive a re-click of the same link and bring keyboard
// and screen-reader users to it; a target inside a closed wake block is opened first), and turns the scoring form into a ReviewerScores JSON file the
// browser downloads from a Blob (no network, no server). The package data it needs (blind id,
// dimension names, hard-failure ids) comes from the page's JSON block, the same data the HTML was
// rendered from, so the saved keys cannot drift from what the form showed; the file's
// score_format_version comes from the form's data attribute (the ReviewerScores schema's literal).
//
// It is a string, not a function's .toString(): the page's CSP names it by its SHA-256, and a
// transpiler's helpers or renamings would change both its text and its meaning. Kept ES2017 and
// free of "</" so it can sit inside <script> as is (scorecard-html.ts asserts this).
export const SCORECARD_SCRIPT = String.raw`
(function () {
  'use strict';
  var MAX_REVIEWER_CHARS = 100;
  var MAX_COMMENT_CHARS = 16384;

  var data = JSON.parse(document.getElementById('package-data').textContent);
  var manifest = data.manifest;

  // --- Followed links: mark and focus the target -------------------------------------------
  var marked = null;
  function markTarget() {
    if (marked !== null) marked.classList.remove('is-target');
    marked = null;
    var id = '';
    try { id = decodeURIComponent(location.hash.slice(1)); } catch (e) { id = ''; }
    if (id === '') return;
    var target = document.getElementById(id);
    if (target === null || !target.classList.contains('link-target')) return;
    // The timeline is collapsed by wake: open every closed block around the target, then bring it into view.
    var opened = false;
    for (var up = target.parentElement; up !== null; up = up.parentElement) {
      if (up.tagName === 'DETAILS' && !up.open) { up.open = true; opened = true; }
    }
    target.classList.add('is-target');
    marked = target;
    target.focus({ preventScroll: true });
    if (opened) target.scrollIntoView();
  }
  window.addEventListener('hashchange', markTarget);
  // Re-clicking the link already in the hash fires no hashchange: scroll and mark again.
  document.addEventListener('click', function (event) {
    var link = event.target instanceof Element ? event.target.closest('a[href^="#"]') : null;
    if (link !== null && link.getAttribute('href') === location.hash) {
      var target = document.getElementById(location.hash.slice(1));
      if (target !== null) target.scrollIntoView();
      markTarget();
    }
  });
  markTarget();

  // --- The scoring form --------------------------------------------------------------------
  var form = document.getElementById('score-form');
  var scoreFormatVersion = form.getAttribute('data-score-format-version');
  var errorBox = document.getElementById('form-errors');
  var errorList = document.getElementById('form-error-list');
  var status = document.getElementById('save-status');

  function setInvalid(element, invalid) {
    if (invalid) element.setAttribute('aria-invalid', 'true');
    else element.removeAttribute('aria-invalid');
  }

  /** Reads the form; returns {scores} or {problems: [text]} naming everything missing or invalid. */
  function collect() {
    var problems = [];
    var dimensions = {};
    manifest.dimensions.forEach(function (d) {
      var input = document.getElementById('dim-' + d.name);
      var raw = input.value.trim();
      var value = Number(raw);
      var problem = null;
      if (input.validity.badInput) problem = d.name + ': not a number; enter a score from 0 to 100.';
      else if (raw === '') problem = d.name + ': no score; enter a score from 0 to 100.';
      else if (!isFinite(value) || value < 0 || value > 100) problem = d.name + ': ' + raw + ' is outside 0 to 100.';
      setInvalid(input, problem !== null);
      if (problem !== null) problems.push(problem);
      else dimensions[d.name] = value;
    });

    var hardFailures = {};
    manifest.hard_failures.forEach(function (h) {
      var choice = document.getElementById('hf-' + h.id);
      var chosen = choice.querySelector('input[type="radio"]:checked');
      setInvalid(choice, chosen === null);
      if (chosen === null) problems.push(h.id + ': choose "Yes, found" or "No, not found".');
      else hardFailures[h.id] = chosen.value === 'yes';
    });

    var reviewerInput = document.getElementById('reviewer');
    var reviewer = reviewerInput.value.trim();
    var reviewerProblem = reviewer === '' ? 'Reviewer name: required.' : reviewer.length > MAX_REVIEWER_CHARS ? 'Reviewer name: at most ' + MAX_REVIEWER_CHARS + ' characters.' : null;
    setInvalid(reviewerInput, reviewerProblem !== null);
    if (reviewerProblem !== null) problems.push(reviewerProblem);

    var commentsInput = document.getElementById('comments');
    var comments = commentsInput.value;
    var commentsProblem = comments.length > MAX_COMMENT_CHARS ? 'Comments: at most ' + MAX_COMMENT_CHARS + ' characters (now ' + comments.length + ').' : null;
    setInvalid(commentsInput, commentsProblem !== null);
    if (commentsProblem !== null) problems.push(commentsProblem);

    if (problems.length > 0) return { problems: problems };
    return {
      scores: {
        score_format_version: scoreFormatVersion,
        blind_id: manifest.blind_id,
        reviewer: reviewer,
        dimensions: dimensions,
        hard_failures: hardFailures,
        comments: comments,
        saved_at: new Date().toISOString(),
      },
    };
  }

  function showProblems(problems) {
    while (errorList.firstChild) errorList.removeChild(errorList.firstChild);
    problems.forEach(function (text) {
      var item = document.createElement('li');
      item.textContent = text;
      errorList.appendChild(item);
    });
    errorBox.hidden = false;
    status.textContent = '';
    errorBox.focus();
  }

  /** A file name the reviewer recognises and every file system accepts (letters of any script, digits, . _ -). */
  function fileNameFor(scores) {
    var who = scores.reviewer.replace(/[^\p{L}\p{N}._-]+/gu, '_').replace(/^[._]+|[._]+$/g, '');
    who = Array.from(who).slice(0, 60).join('');
    return 'scores-' + scores.blind_id + '-' + (who === '' ? 'reviewer' : who) + '.json';
  }

  function download(name, text) {
    var url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    var link = document.createElement('a');
    link.href = url;
    link.download = name;
    link.hidden = true;
    document.body.appendChild(link);
    link.click();
    link.remove();
    // The download has taken the Blob by now; revoking later only frees the memory.
    setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var result = collect();
    if (result.problems) { showProblems(result.problems); return; }
    errorBox.hidden = true;
    var name = fileNameFor(result.scores);
    download(name, JSON.stringify(result.scores, null, 2) + '\n');
    status.textContent = 'Scores saved as ' + name + ' (in the browser\'s download folder). Saving again writes a new file.';
  });

  document.documentElement.setAttribute('data-scorecard-ready', 'true');
})();
`;
