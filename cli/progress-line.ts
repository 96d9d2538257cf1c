// The experiment's screen: on a terminal, one progress line (wake k/N, simulated time) redrawn
// in place under the log lines; elsewhere (CI, a pipe, a file) plain lines only, nothing redrawn.
const WAKE_LINE = /^\[ds-controller\] (wake-(\d+)) at (h\d+:\d\d)/;

export class ProgressLine {
  private readonly tty: boolean;
  private drawn = false;
  private total: number | null = null;

  constructor(private readonly stream: NodeJS.WriteStream) {
    this.tty = stream.isTTY === true;
  }

  /** A log line; on a terminal a wake line also moves the bar. */
  line(text: string): void {
    const plan = /plan: (\d+) wakes/.exec(text);
    if (plan) this.total = Number(plan[1]);
    if (!this.tty) {
      this.stream.write(`${text}\n`);
      return;
    }
    this.clear();
    this.stream.write(`${text}\n`);
    const wake = WAKE_LINE.exec(text);
    if (wake) this.draw(Number(wake[2]), wake[3]!);
  }

  private draw(done: number, simulated: string): void {
    const total = this.total ?? done;
    const width = 30;
    const filled = Math.round((done / Math.max(total, 1)) * width);
    this.stream.write(`[${'#'.repeat(filled)}${' '.repeat(width - filled)}] wake ${done}/${total} · ${simulated} of h72:00`);
    this.drawn = true;
  }

  private clear(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }

  finish(): void {
    this.clear();
  }
}
