// The worked example of docs/oracle.md (issue 32 item 4) is a test: the instance of
// test/oracle/oracle-doc-example.ts is run for real (controller, writer, runtime, a scripted
// model on loopback), scored by the oracle's own code from its run folder, and every table and
// figure of the doc's "A worked example" section must be what that code computes: each block
// after an `<!-- example:NAME -->` marker equals its rendering from the run, and each line of
// the figures block is arithmetic that holds (`round6` as docs/oracle.md "Numbers" defines it)
// and ends in the code's figure. Forged: a doc with one figure or one cell changed fails.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countedScore, evaluateInstance, type InstanceEvaluation } from '../../oracle/instance-evaluation.js';
import { REPO, SCENARIOS_DIR, TEST_START_AT } from '../support/controller-run.js';
import { EXAMPLE_BASE_PERIOD_MINUTES, EXAMPLE_BLOCKS, EXAMPLE_GROUP, EXAMPLE_SEED, renderCheckpoints, runWorkedExample, type WorkedExampleRun } from './oracle-doc-example.js';
import { checkFigures, docSection, evaluate, exampleBlock } from './oracle-doc-reader.js';

const DOC = readFileSync(path.join(REPO, 'docs', 'oracle.md'), 'utf8');
const SECTION = 'A worked example';

let run: WorkedExampleRun;
let evaluation: InstanceEvaluation;

beforeAll(async () => {
  run = await runWorkedExample();
  if (run.result.status !== 'finished') throw new Error(`the worked example's run did not finish: ${run.result.status}`);
  evaluation = evaluateInstance(run.result.runDir, { scenariosDir: SCENARIOS_DIR, expectedPreregSha256: null });
}, 60_000);

afterAll(async () => {
  await run?.server.close();
  if (run) rmSync(run.setup.dir, { recursive: true, force: true });
});

describe('the worked example of docs/oracle.md', () => {
  const section = docSection(DOC, SECTION);

  it('was made by the scripted answers alone: one answer per scheduled wake, no script error', () => {
    expect(run.server.errors).toEqual([]);
    expect([...run.answers.keys()]).toEqual(evaluation.record.plan.schedule.wakes.map((w) => w.wake_id));
  });

  it('names the instance it was made from', () => {
    for (const fact of [`\`${EXAMPLE_SEED}\``, `\`${TEST_START_AT}\``, `group ${EXAMPLE_GROUP}`, `\`base_period_sim_minutes\` ${EXAMPLE_BASE_PERIOD_MINUTES}`, 'test/oracle/oracle-doc-example.ts']) expect(section).toContain(fact);
  });

  it.each(EXAMPLE_BLOCKS)('the %s block is what the oracle computes from the run', (name, render) => {
    expect(exampleBlock(section, name).join('\n')).toBe(render(evaluation).join('\n'));
  });

  it('every line of the figures block is arithmetic that holds and ends in the code figure', () => {
    const { problems, figures } = checkFigures(exampleBlock(section, 'figures'));
    expect(problems).toEqual([]);
    const s = evaluation.score;
    expect(Object.fromEntries(figures)).toEqual({ ...s.dimensions, score: s.score, hard_failures: evaluation.hardFailures.length, counted_score: countedScore(evaluation) });
  });
});

describe('the example checks catch a doc that drifted (forged)', () => {
  const section = docSection(DOC, SECTION);

  it('a figure changed in the figures block: the arithmetic no longer holds, and the figure is not the code figure', () => {
    const block = exampleBlock(section, 'figures');
    const scoreLine = block.findIndex((l) => l.startsWith('score '));
    const written = block[scoreLine]!.split(' = ').at(-1)!;
    const forged = block.map((l, i) => (i === scoreLine ? l.replace(new RegExp(`${written.replace('.', '\\.')}$`), String(Number(written) + 0.000001)) : l));
    expect(forged).not.toEqual(block);
    expect(checkFigures(forged).problems).toEqual([expect.stringMatching(/^score: round6\(.*\) is \S+, not \S+$/)]);
  });

  it('an operand changed: the line still ends in the right figure but does not add up', () => {
    const block = exampleBlock(section, 'figures').map((l) => (l.startsWith('state_recovery') ? l.replace('(80 + ', '(90 + ') : l));
    expect(block.join('\n')).toContain('(90 + ');
    expect(checkFigures(block).problems).toHaveLength(1);
  });

  it('a cell of a table changed, and a block missing', () => {
    const forged = section.replace(/(\| `wake-0001` \| `goal-continuity-report` )✓/, '$1✗');
    expect(forged).not.toBe(section);
    expect(exampleBlock(forged, 'checkpoints').join('\n')).not.toBe(renderCheckpoints(evaluation).join('\n'));
    expect(() => exampleBlock(section.replace('<!-- example:probes -->', ''), 'probes')).toThrow(/no block/);
  });

  it('the evaluator follows round6 as defined (ties up, on the binary64 product) and refuses what it cannot read', () => {
    expect(evaluate('round6(100 × 4 / 6)')).toBe(66.666667);
    expect(evaluate('round6(0.0000005)')).toBe(0.000001);
    expect(evaluate('40 × 90 / 100 + 15 × 0 / 100')).toBe(36);
    expect(() => evaluate('round6(1 + )')).toThrow(/cannot read/);
    expect(() => evaluate('2 ^ 3')).toThrow(/cannot read/);
  });
});
