// One instance's log in its run folder (RUN_FILES.processLog): the controller's lines about it,
// appended next to what its writer and runtime print into the same file (their stdout and stderr,
// controller/instance-processes.ts), so the study's screen can stay calm without losing a line.
// The run folder is made by the instance's start, which refuses a folder that is not empty: lines
// said before it exists wait here (bounded) and are written with the first line after.
import { appendFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { RUN_FILES } from '../schema/run-files.js';

/** Lines held while the run folder does not exist yet; a start says a handful before it makes it. */
export const MAX_PENDING_LOG_LINES = 200;

export class InstanceLogFile {
  private readonly file: string;
  private pending: string[] = [];
  /** Lines beyond MAX_PENDING_LOG_LINES, counted: close() says how many. */
  private dropped = 0;

  constructor(private readonly runDir: string) {
    this.file = path.join(runDir, RUN_FILES.processLog);
  }

  /** Appends `text` (and what waited); returns the lines that could not be appended, with why (for the screen): never throws. */
  line(text: string): string[] {
    const stamped = `${new Date().toISOString()} ${text}`;
    if (!existsSync(this.runDir)) {
      if (this.pending.length < MAX_PENDING_LOG_LINES) this.pending.push(stamped);
      else this.dropped += 1;
      return [];
    }
    const lines = [...this.pending, stamped];
    this.pending = [];
    return this.append(lines);
  }

  private append(lines: string[]): string[] {
    try {
      appendFileSync(this.file, `${lines.join('\n')}\n`);
      return [];
    } catch (error) {
      return [...lines, `(the line(s) above could not be appended to ${this.file}: ${error instanceof Error ? error.message : String(error)})`];
    }
  }

  /** Writes what waited if the folder exists now; returns what could not be written (for the screen), the overflow counted: never throws. */
  close(): string[] {
    if (this.pending.length > 0 && existsSync(this.runDir)) this.pending = this.append(this.pending);
    const left = this.pending;
    this.pending = [];
    if (this.dropped > 0) left.push(`(${this.dropped} more line(s) not kept: over ${MAX_PENDING_LOG_LINES} before the run folder existed)`);
    this.dropped = 0;
    return left;
  }
}
