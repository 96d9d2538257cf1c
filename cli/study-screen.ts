// A study's screen (stderr). On a terminal: the lines that matter (the study's own, anything
// unexpected about an instance, one summary line per ended instance) scroll as they come, and
// under them a live block — the study's counts and one line per running instance (wake k/31,
// simulated hour, seconds, what its last wake did) — rewritten in place. Elsewhere (a pipe, a
// file, CI): the same lines as plain records, one per line, with a record when an instance starts
// and when the counts change, and no control code. Every instance's routine lines are in its
// run folder's processes.log (study/instance-log-file.ts), never lost. finish() clears the live
// block, so that what follows — the verdict block — comes last and whole.
import type { StudyProgress } from '../study/study-runner.js';
import { readInstanceLine } from './study-log-lines.js';

/** The live block is redrawn at most this often: wakes of three instances can end dozens of times a second. */
export const REDRAW_INTERVAL_MS = 100;
/** Lines the live block may take below the counts when the terminal says nothing of its height. */
const DEFAULT_ROWS = 24;
const DEFAULT_COLUMNS = 120;

interface Running {
  readonly startedMs: number;
  wakes: number | null;
  wake: number;
  hour: string;
  what: string;
}

/** The stream the screen writes to: process.stderr, or a test's. */
export interface ScreenStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
  readonly rows?: number;
  write(text: string): boolean;
}

export class StudyScreen {
  private readonly tty: boolean;
  private readonly instances = new Map<string, Running>();
  private running: string[] = [];
  /** The runner's word for each running instance before its first wake: starting, resuming. */
  private states = new Map<string, string>();
  private counts = '';
  private lastRecord = '';
  /** Lines of the live block now on screen (the cursor at the end of the last one). */
  private drawnLines = 0;
  private lastDrawMs = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly stream: ScreenStream = process.stderr,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.tty = stream.isTTY === true;
  }

  /** A log line of the study (an instance's lines prefixed `[G-rk]`). */
  line(text: string): void {
    const said = readInstanceLine(text);
    if (said === null || said.kind === 'other') return this.show(text);
    const at = this.instances.get(said.name);
    if (said.kind === 'scored') return this.show(this.summary(said.name, said.text));
    if (at === undefined) return said.kind === 'routine' ? undefined : this.show(text);
    if (said.kind === 'plan') at.wakes = said.wakes;
    if (said.kind === 'wake') Object.assign(at, { wake: said.wake, hour: said.hour, what: said.what });
    this.redrawSoon();
  }

  progress(p: StudyProgress): void {
    for (const name of p.running.keys()) {
      if (this.instances.has(name)) continue;
      this.instances.set(name, { startedMs: this.nowMs(), wakes: null, wake: 0, hour: 'h00:00', what: '' });
      if (!this.tty) this.record(`${name} started`);
    }
    for (const name of this.running) if (!p.running.has(name) && this.instances.has(name)) this.show(this.ended(name));
    this.running = [...p.running.keys()];
    this.states = new Map(p.running);
    this.counts = `study (${p.phase}): ${p.finished}/${p.total} finished${p.failed > 0 ? `, ${p.failed} not finished` : ''} · ${p.running.size} running`;
    if (!this.tty) {
      // Off a terminal a record only when an instance ended or the phase moved, not for every start.
      const key = `${p.phase}/${p.finished}/${p.failed}`;
      if (key !== this.lastRecord) this.record(this.counts.replace(/ · \d+ running$/, ''));
      this.lastRecord = key;
      return;
    }
    this.redrawSoon();
  }

  /** Clears the live block; later lines start on a clean line. */
  finish(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.erase();
  }

  /** One instance's ended line: how far it came, how long it took, and the runner's score line. */
  private summary(name: string, scored: string): string {
    const at = this.instances.get(name);
    this.instances.delete(name);
    if (at === undefined) return `${name} ${scored}`;
    const seconds = ((this.nowMs() - at.startedMs) / 1000).toFixed(1);
    return `${name} finished: ${at.wake}${at.wakes === null ? '' : `/${at.wakes}`} wakes to ${at.hour} in ${seconds} s; ${scored}`;
  }

  /** An instance that left the running ones without a score: stopped, failed, or not scored (the lines above and report.json say why). */
  private ended(name: string): string {
    const at = this.instances.get(name)!;
    this.instances.delete(name);
    return `${name} ended without a score after wake ${at.wake}${at.wakes === null ? '' : `/${at.wakes}`} (${at.hour}), ${((this.nowMs() - at.startedMs) / 1000).toFixed(1)} s: why is said above and in report.json`;
  }

  private show(text: string): void {
    if (!this.tty) return this.record(text);
    this.erase();
    this.stream.write(`${text}\n`);
    this.draw();
  }

  private record(text: string): void {
    this.stream.write(`${text}\n`);
  }

  private redrawSoon(): void {
    if (!this.tty) return;
    const waitMs = this.lastDrawMs + REDRAW_INTERVAL_MS - this.nowMs();
    if (waitMs <= 0) return this.draw();
    if (this.timer !== null) return;
    this.timer = setTimeout(() => this.draw(), waitMs);
    this.timer.unref();
  }

  private liveLines(): string[] {
    const rows = Math.max(3, (this.stream.rows || DEFAULT_ROWS) - 2);
    // An instance that has said its summary line is no longer running, whatever the last counts said.
    const lines = this.running.flatMap((name) => {
      const at = this.instances.get(name);
      if (at === undefined) return [];
      const wake = at.wake === 0 ? (this.states.get(name) ?? 'starting') : `wake ${at.wake}/${at.wakes ?? '?'} · sim ${at.hour}`;
      return [`  ${name}  ${wake} · ${((this.nowMs() - at.startedMs) / 1000).toFixed(0)} s${at.what ? ` · ${at.what}` : ''}`];
    });
    const shown = lines.length <= rows ? lines : [...lines.slice(0, rows - 1), `  … ${lines.length - rows + 1} more running`];
    return this.counts === '' ? shown : [this.counts, ...shown];
  }

  private draw(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.erase();
    const width = (this.stream.columns || DEFAULT_COLUMNS) - 1;
    // Never wider than the terminal: a wrapped line would throw off the erase's line count.
    const lines = this.liveLines().map((l) => (l.length > width ? `${l.slice(0, width - 1)}…` : l));
    if (lines.length > 0) this.stream.write(lines.join('\n'));
    this.drawnLines = lines.length;
    this.lastDrawMs = this.nowMs();
  }

  private erase(): void {
    if (this.drawnLines === 0) return;
    this.stream.write(`\r\x1b[2K${'\x1b[1A\x1b[2K'.repeat(this.drawnLines - 1)}`);
    this.drawnLines = 0;
  }
}
