// The reviewer's score file as docs/blind-review.md §4 documents it, held to the code so the doc
// cannot drift (issue 16 item 7): the doc's one fenced JSON example parses with the real schema
// (ReviewerScores) and through the import's own reader (readScoreArgument: size bound, JSON,
// schema); its field table names exactly the schema's fields and its version literal; its
// dimension table exactly the pre-registered dimensions with the default pre-registration's
// weights; its hard-failure table exactly HARD_FAILURE_IDS; and the total it works out is the one
// the review computes. The forged case: the example changed in one value each way a file can be
// wrong is refused by the same schema, so a passing parse means something.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ReviewerScores } from '../../blind-review/package-format.js';
import { readScoreArgument, totalOf } from '../../blind-review/review-state.js';
import { HARD_FAILURE_IDS } from '../../design/prereg.js';
import { DIMENSIONS } from '../../oracle/continuity-score.js';
import { REPO } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

const DOC = readFileSync(path.join(REPO, 'docs', 'blind-review.md'), 'utf8');
const SECTION_START = '## 4. The score file';
const SECTION_END = '\n## 5. ';

/** The score file's section of the doc (from its heading to the next section). */
function section(): string {
  const start = DOC.indexOf(SECTION_START);
  const end = DOC.indexOf(SECTION_END, start);
  if (start < 0 || end < 0) throw new Error(`docs/blind-review.md has no section "${SECTION_START}" followed by "${SECTION_END.trim()}"`);
  return DOC.slice(start, end);
}

function jsonBlocks(text: string): string[] {
  return [...text.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** The body rows of the markdown table whose header row starts with `| header |`, as cells. */
function tableRows(text: string, header: string): string[][] {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith(`| ${header} |`));
  if (at < 0) throw new Error(`no table with a "${header}" column in the section`);
  const rows: string[][] = [];
  for (const line of lines.slice(at + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split('|').slice(1, -1).map((c) => c.trim()));
  }
  return rows;
}

/** The `code` names of a table's first column. */
function tableColumn(text: string, header: string): string[] {
  return tableRows(text, header).map((r) => {
    const name = /^`([^`]+)`$/.exec(r[0]!);
    if (!name) throw new Error(`a row of the "${header}" table does not start with a \`name\`: ${r.join(' | ')}`);
    return name[1]!;
  });
}

const defaultWeights = (): Record<(typeof DIMENSIONS)[number], number> => {
  const prereg = JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')) as { scoring: { dimensions: Record<string, { weight: number }> } };
  return Object.fromEntries(DIMENSIONS.map((d) => [d, prereg.scoring.dimensions[d]!.weight])) as Record<(typeof DIMENSIONS)[number], number>;
};

describe('docs/blind-review.md: the score file', () => {
  test('the one example parses with ReviewerScores and through the import reader, unchanged', () => {
    const blocks = jsonBlocks(section());
    expect(blocks).toHaveLength(1);
    const example = JSON.parse(blocks[0]!) as unknown;
    const parsed = ReviewerScores.parse(example);
    // Parsing keeps every field as written: the example holds nothing the schema drops or rewrites.
    expect(parsed).toEqual(example);
    const file = path.join(tempDir('ds-score-doc-'), 'scores-R-3F9A0C-Ada_Example.json');
    writeFileSync(file, blocks[0]!);
    const read = readScoreArgument(file);
    expect('problem' in read ? read.problem : null).toBeNull();
    expect('scores' in read && read.scores).toEqual(parsed);
  });

  test('the tables name exactly the schema: its fields and version, the dimensions with their default weights, the hard-failure ids; the worked total is the review\'s', () => {
    const text = section();
    expect(tableColumn(text, 'field')).toEqual(Object.keys(ReviewerScores.shape));
    const versionRow = tableRows(text, 'field').find((r) => r[0] === '`score_format_version`')!;
    expect(versionRow[1]).toContain(`\`"${ReviewerScores.shape.score_format_version.value}"\``);
    expect(text).toContain(`"score_format_version": "${ReviewerScores.shape.score_format_version.value}"`);

    const weights = defaultWeights();
    expect(tableColumn(text, 'dimension')).toEqual([...DIMENSIONS]);
    for (const row of tableRows(text, 'dimension')) expect(Number(row[1]), row[0]).toBe(weights[row[0]!.replaceAll('`', '') as (typeof DIMENSIONS)[number]]);
    expect(tableColumn(text, 'id')).toEqual([...HARD_FAILURE_IDS]);

    const example = ReviewerScores.parse(JSON.parse(jsonBlocks(text)[0]!));
    const stated = /this reviewer's total is [^=]+= ([0-9.]+)\./.exec(text.replace(/\s+/g, ' '));
    expect(stated).not.toBeNull();
    expect(Number(stated![1])).toBe(totalOf(example.dimensions, weights));
  });

  test('forged: the example with one value wrong in each way a file can be is refused by the same schema', () => {
    const example = JSON.parse(jsonBlocks(section())[0]!) as Record<string, unknown>;
    const dims = example.dimensions as Record<string, number>;
    const failures = example.hard_failures as Record<string, boolean>;
    const forgeries: Array<[string, Record<string, unknown>]> = [
      ['another version', { ...example, score_format_version: '1.1.0' }],
      ['a score over 100', { ...example, dimensions: { ...dims, recovery: 101 } }],
      ['a dimension missing', { ...example, dimensions: Object.fromEntries(Object.entries(dims).slice(1)) }],
      ['an unknown dimension', { ...example, dimensions: { ...dims, charm: 50 } }],
      ['a hard failure undecided', { ...example, hard_failures: { ...failures, duplicate_side_effect: null } }],
      ['an unknown field', { ...example, group: 'C' }],
      ['a lower-case blind id', { ...example, blind_id: 'R-3f9a0c' }],
      ['a time with an offset', { ...example, saved_at: '2026-03-10T10:12:44.120+01:00' }],
    ];
    for (const [what, forged] of forgeries) expect(ReviewerScores.safeParse(forged).success, what).toBe(false);
  });
});
