// Where a batch task's lines about one of its instances go (issue 35 item 3): every line — the
// controller's, the task's own, and (through controller/instance-options.ts
// childOutputToRunFolder) the writer's and the runtime's — into the run folder's processes.log on
// scratch, published with the folder; the task's stderr (the scheduler's log) gets the task's own
// lines (start, resume, publish) and every controller line not known as routine
// (study/routine-controller-lines.ts), so it stays a few lines per instance and still shows every
// warning. A line the file cannot take is said on stderr, with why.
import path from 'node:path';
import { RUN_FILES } from '../../schema/run-files.js';
import { InstanceLogFile } from '../instance-log-file.js';
import { isRoutineControllerLine } from '../routine-controller-lines.js';

export class TaskInstanceLog {
  private readonly file: InstanceLogFile;
  readonly processLog: string;

  constructor(
    private readonly name: string,
    runDir: string,
    private readonly stderr: (line: string) => void,
  ) {
    this.file = new InstanceLogFile(runDir);
    this.processLog = path.join(runDir, RUN_FILES.processLog);
  }

  /** A controller line: kept in processes.log; on stderr too unless routine. */
  controller(text: string): void {
    this.keep(text);
    if (!isRoutineControllerLine(text)) this.stderr(`[${this.name}] ${text}`);
  }

  /** The task's own line about the instance: on stderr and in processes.log. */
  task(text: string): void {
    this.keep(text);
    this.stderr(`[${this.name}] ${text}`);
  }

  /** Writes what waited; what never could be written goes to stderr. */
  close(): void {
    for (const line of this.file.close()) this.stderr(`[${this.name}] not in ${this.processLog} ${line}`);
  }

  private keep(text: string): void {
    for (const line of this.file.line(`[${this.name}] ${text}`)) this.stderr(`[${this.name}] not in ${this.processLog}: ${line}`);
  }
}
