// The study's screen (cli/study-screen.ts). On a terminal: one live line per running instance,
// rewritten in place, a summary line per finished one, every unexpected line shown whole, and the
// live block gone before the verdict. Elsewhere: plain records, no control code. Checked first on
// a stream that says it is a terminal (what it shows, read by test/support/terminal-screen.ts),
// then for real: `npm run study` in a pseudo-terminal (util-linux `script`), its screen read back.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { StudyScreen, type ScreenStream } from '../../cli/study-screen.js';
import { processCodeFor } from '../../foundation/process-code.js';
import { RUN_FILES } from '../../schema/run-files.js';
import type { StudyProgress } from '../../study/study-runner.js';
import { makeKey, writeLockedPrereg } from '../support/batch-study.js';
import { REPO } from '../support/controller-run.js';
import { terminalLines } from '../support/terminal-screen.js';
import { tempDir } from '../support/writer-fixture.js';

const ESC = '\x1b';

class Captured implements ScreenStream {
  text = '';
  constructor(readonly isTTY: boolean) {}
  readonly columns = 200;
  readonly rows = 30;
  write(t: string): boolean {
    this.text += t;
    return true;
  }
}

const progress = (running: Record<string, string>, finished: number): StudyProgress => ({ total: 3, finished, failed: 0, running: new Map(Object.entries(running)), phase: 'n = 1 per group' });

/** A study of three instances as the runner says it, A-r1 with a line the screen does not know. */
function feed(screen: StudyScreen, clock: { ms: number }): void {
  screen.line('[study] blocks: each replicate side by side');
  screen.progress(progress({ 'A-r1': 'starting', 'B-r1': 'starting' }, 0));
  screen.line('[A-r1] isolation: same-uid — writer and runtime run as the controller uid 0: test');
  screen.line('[A-r1] manifest signed (sha256:ab…), key cd…; plan: 31 wakes, 9 interventions, schedule sha256:ef…');
  screen.line('[B-r1] manifest signed (sha256:ab…), key cd…; plan: 31 wakes, 9 interventions, schedule sha256:ef…');
  screen.line('[A-r1] ds-writer pid 10 serving seq 1');
  clock.ms += 1_000;
  screen.line('[A-r1] wake-0001 at h00:00 (2026-03-02T08:00:00.000Z) · 1 model call(s), 6 execution(s), 0 denial(s), 2 claim(s) · completed');
  screen.progress(progress({ 'A-r1': 'wake-0001 h00:00', 'B-r1': 'starting' }, 0));
  screen.line('[A-r1]   wake-0011: intent 0000 (read sources/x.md) reconciled: did_not_happen');
  clock.ms += 1_000;
  screen.line('[A-r1] wake-0012 at h22:07 (2026-03-03T06:07:00.000Z) · delivered iv-awaited-reply · runtime SIGKILLed after 6 appends, 0 execution intents · crashed');
  screen.line('[B-r1] wake-0031 at h72:00 (2026-03-05T08:00:00.000Z) · 1 model call(s), 6 execution(s), 0 denial(s), 4 claim(s) · completed');
  screen.line('[B-r1] sealed at seq 700; final head signed');
  screen.line('[B-r1] scored 92.24');
  screen.progress(progress({ 'A-r1': 'wake-0012 h22:07' }, 1));
}

describe('the study screen on a stream', () => {
  it('on a terminal: live lines per running instance, a summary per finished one, the unexpected shown, nothing left after finish', () => {
    const clock = { ms: 0 };
    const out = new Captured(true);
    const screen = new StudyScreen(out, () => clock.ms);
    feed(screen, clock);
    clock.ms += 1_000;
    screen.line('[A-r1] wake-0013 at h23:52 (2026-03-03T07:52:00.000Z) · 1 model call(s), 4 execution(s), 0 denial(s), 2 claim(s) · completed');
    // Within the redraw interval the block is not redrawn; the next line after it is.
    const live = terminalLines(out.text);
    expect(live).toContain('study (n = 1 per group): 1/3 finished · 1 running');
    expect(live.some((l) => l.startsWith('  A-r1  wake 13/31 · sim h23:52 · 3 s · 1 model call(s)'))).toBe(true);
    expect(live.filter((l) => l.includes('A-r1  wake'))).toHaveLength(1);
    expect(out.text).toContain(`${ESC}[1A${ESC}[2K`);
    expect(live).toContain('B-r1 finished: 31/31 wakes to h72:00 in 2.0 s; scored 92.24');
    expect(live).toContain('[A-r1]   wake-0011: intent 0000 (read sources/x.md) reconciled: did_not_happen');
    expect(live.some((l) => /isolation|manifest signed|ds-writer pid|sealed at seq/.test(l)), 'routine lines only in processes.log').toBe(false);
    screen.finish();
    const after = terminalLines(out.text);
    expect(after.some((l) => l.includes('A-r1  wake') || l.startsWith('study ('))).toBe(false);
    expect(after.at(-1)).toBe('B-r1 finished: 31/31 wakes to h72:00 in 2.0 s; scored 92.24');
  });

  it('off a terminal: one plain record per line, no control code, started and finished records', () => {
    const clock = { ms: 0 };
    const out = new Captured(false);
    const screen = new StudyScreen(out, () => clock.ms);
    feed(screen, clock);
    screen.finish();
    expect(out.text).not.toMatch(/[\x1b\r]/);
    expect(out.text.split('\n').filter((l) => l !== '')).toEqual([
      '[study] blocks: each replicate side by side',
      'A-r1 started',
      'B-r1 started',
      'study (n = 1 per group): 0/3 finished',
      '[A-r1]   wake-0011: intent 0000 (read sources/x.md) reconciled: did_not_happen',
      'B-r1 finished: 31/31 wakes to h72:00 in 2.0 s; scored 92.24',
      'study (n = 1 per group): 1/3 finished',
    ]);
  });

  it('forged: an instance that stops running without a score is said, and a line the screen does not know is shown whole', () => {
    const out = new Captured(false);
    const screen = new StudyScreen(out, () => 0);
    screen.progress(progress({ 'C-r1': 'starting' }, 0));
    screen.line('[C-r1] wake-0004 at h05:56 (2026-03-02T13:56:00.000Z) · 1 model call(s) · stopped');
    screen.progress(progress({}, 0));
    expect(out.text).toContain('[C-r1] wake-0004 at h05:56 (2026-03-02T13:56:00.000Z) · 1 model call(s) · stopped');
    expect(out.text).toContain('C-r1 ended without a score after wake 0 (h00:00), 0.0 s: why is said above and in report.json');
  });
});

/** Why the screen does not end with the verdict block whole and last (null: it does). */
function verdictBlockProblem(screen: readonly string[], reportHtml: string): string | null {
  const verdict = screen.findIndex((l) => l.startsWith('VERDICT: '));
  if (verdict < 0) return 'no VERDICT line';
  const block = screen.slice(verdict);
  const foreign = block.slice(1).find((l) => !l.startsWith('  '));
  if (foreign !== undefined) return `a line inside or after the verdict block is not its own: ${foreign}`;
  if (block.at(-1)!.trim() !== reportHtml) return `the block does not end with ${reportHtml}`;
  if (screen.some((l) => l.startsWith('study ('))) return 'a live line was left on screen';
  return null;
}

describe('the verdict-block check', () => {
  it('forged: a live block not cleared before the verdict is caught', () => {
    const out = new Captured(true);
    const screen = new StudyScreen(out, () => 0);
    screen.progress(progress({ 'A-r1': 'starting' }, 0));
    // The verdict written without finish(): the live block stays above it.
    out.write('VERDICT: REJECTED\n  report: /s/report.json\n          /s/report.html\n');
    expect(verdictBlockProblem(terminalLines(out.text), '/s/report.html')).toMatch(/no VERDICT line|not its own|live line was left/);
    screen.finish();
  });
});

const HAS_SCRIPT = spawnSync('script', ['--version']).status === 0;

describe('npm run study in a pseudo-terminal', () => {
  it.runIf(HAS_SCRIPT)('shows live lines while it runs, a summary per instance, and ends with the verdict block whole', async () => {
    const dir = tempDir('ds-study-tty-');
    const keyDir = path.join(dir, 'keys');
    // n = 1 per group, 12-hour wakes: seconds an instance.
    const preregFile = writeLockedPrereg(path.join(dir, 'prereg-n1.json'), makeKey(keyDir));
    const out = path.join(dir, 'study');
    const code = await processCodeFor(path.join(REPO, 'cli', 'study.ts'), REPO);
    const command = [process.execPath, ...code.execArgv, code.main, '--n', '1', '--seed', 'tty', '--prereg', preregFile, '--key-dir', keyDir, '--out', out, '--same-uid', 'test'].map((a) => `'${a}'`).join(' ');
    // script: a pseudo-terminal for the command (stdout and stderr both on it), its bytes on our stdout.
    const run = spawnSync('script', ['-qfec', command, '/dev/null'], { cwd: REPO, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 150_000 });
    const raw = run.stdout;
    // -e: script exits with the study's code: a report written (0, or 4 for a verdict of insufficient evidence).
    expect([0, 4], raw.slice(-3000)).toContain(run.status);
    expect(raw).toMatch(new RegExp(`${ESC}\\[1A${ESC}\\[2K`));
    // Live lines were drawn (read from the raw bytes: they are gone from the final screen).
    expect(raw).toMatch(/ {2}[ABC]-r1 {2}wake \d+\/\d+ · sim h\d\d:\d\d · \d+ s/);
    const screen = terminalLines(raw);
    for (const g of ['A', 'B', 'C']) expect(screen.some((l) => new RegExp(`^${g}-r1 finished: \\d+/\\d+ wakes to h\\d\\d:\\d\\d in [\\d.]+ s; scored `).test(l)), g).toBe(true);
    expect(screen.some((l) => l.startsWith('[ds-runtime') || l.startsWith('[ds-writer')), 'children print into processes.log').toBe(false);
    expect(verdictBlockProblem(screen, path.join(out, 'report.html'))).toBeNull();
    for (const g of ['A', 'B', 'C']) {
      const log = readFileSync(path.join(out, 'instances', `${g}-r1`, RUN_FILES.processLog), 'utf8');
      expect(log).toMatch(new RegExp(`Z \\[${g}-r1\\] wake-0001 at h00:00`));
      expect(log).toMatch(/^\[ds-writer \d+\] serving /m);
      expect(log).toMatch(/^\[ds-runtime \d+\] started for subject /m);
    }
  }, 180_000);
});
