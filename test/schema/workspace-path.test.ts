// The one workspace path rule (issue 32 item 5, schema/workspace-path.ts): each clause at its
// bound passes and one past it is refused with the clause named; the protocol's length is the
// rule's; an answer the store could not hold (a lone surrogate) is refused by the protocol itself.
import { describe, expect, test } from 'vitest';
import { MODEL_OUTPUT_V2_LIMITS, ModelOutput, parseModelOutput } from '../../runtime/model-protocol.js';
import { checkWorkspacePath, RECORDED_PATH_MAX_CHARS, WORKSPACE_PATH_RULE } from '../../schema/workspace-path.js';
import { FileChangedExternally } from '../../schema/events/world-events.js';
import { EMPTY_ANSWER } from '../../faults/scripted-model-server.js';

const R = WORKSPACE_PATH_RULE;

describe('the workspace path rule', () => {
  test('at every bound a path passes; one past it is refused, naming the clause', () => {
    const atBounds = [
      Array.from({ length: R.maxSegments }, (_, i) => `d${i}`).join('/'),
      'x'.repeat(R.maxChars),
      `${'\u6587'.repeat(Math.floor(R.maxSegmentBytes / 3))}${'a'.repeat(R.maxSegmentBytes % 3)}`,
      'notes/2026/03/02/caf\u00e9 \u{1F4DD}.md',
      './a//b.md',
    ];
    for (const p of atBounds) expect(checkWorkspacePath(p), p).toMatchObject({ ok: true });
    expect(checkWorkspacePath('./a//b.md')).toEqual({ ok: true, normalized: 'a/b.md', segments: 2 });
    const beyond: [string, string][] = [
      [Array.from({ length: R.maxSegments + 1 }, (_, i) => `d${i}`).join('/'), 'depth'],
      ['x'.repeat(R.maxChars + 1), 'length'],
      [`${'\u6587'.repeat(Math.floor(R.maxSegmentBytes / 3))}${'a'.repeat(R.maxSegmentBytes % 3)}a`, 'length'],
      ['a\u0000b', 'characters'],
      ['a\u0085b', 'characters'],
      ['a\u007fb', 'characters'],
      ['a\\b', 'characters'],
      ['a\ud800b', 'characters'],
      ['', 'form'],
      ['/etc/passwd', 'form'],
      ['a/../b', 'form'],
      ['a/', 'form'],
      ['.', 'form'],
    ];
    for (const [p, clause] of beyond) expect(checkWorkspacePath(p), JSON.stringify(p)).toMatchObject({ ok: false, clause });
  });

  test("the protocol's path length is the rule's", () => {
    expect(MODEL_OUTPUT_V2_LIMITS.pathChars).toBe(R.maxChars);
  });

  test('the recorded bound is one constant: an event and a /1 answer carry a path of exactly that many characters and refuse one more', () => {
    const at = 'p'.repeat(RECORDED_PATH_MAX_CHARS);
    const over = `${at}p`;
    const event = (path: string) => FileChangedExternally.payload.safeParse({ path, change: 'created', post_hash: null }).success;
    expect([event(at), event(over)]).toEqual([true, false]);
    const checkpoint = { current_goal_id: null, goal_status: null, attention_target: null, waiting_condition: null, next_action: null, evidence_event_ids: [] };
    const answerV1 = (path: string) => ({ protocol: 'ds-model-output/1', focus: { attention_target: null, waiting_condition: null }, actions: [{ tool: 'files', op: 'read', path, rationale: 'r' }], claims: [], plan_revision: null, checkpoint });
    expect([ModelOutput.safeParse(answerV1(at)).success, ModelOutput.safeParse(answerV1(over)).success]).toEqual([true, false]);
  });

  test('an answer with a lone surrogate (valid JSON text, no UTF-8 form) is refused by the protocol, not carried to the store', () => {
    const answer = { ...EMPTY_ANSWER, actions: [{ tool: 'files', op: 'write', path: 'a.md', content: 'x', rationale: 'r' }] };
    const raw = JSON.stringify(answer).replace('"a.md"', '"a\\ud800.md"');
    expect(JSON.parse(raw).actions[0].path).toBe('a\ud800.md');
    const parsed = parseModelOutput(raw, 'ds-model-output/2', new Map());
    expect(parsed).toMatchObject({ ok: false, detail: expect.stringMatching(/^not JSON the store can hold: .*lone surrogate/) });
    expect(parseModelOutput(JSON.stringify(answer), 'ds-model-output/2', new Map())).toMatchObject({ ok: true });
  });
});
