// Ctrl-C / SIGTERM as an operator's emergency stop, the same for npm run experiment and npm run
// study: the first signal aborts the returned signal (the controller records the stop and
// signs the head), a second one abandons at once (exit 130; the stores stay intact and
// --resume records the interruption).

export interface OperatorStop {
  readonly signal: AbortSignal;
}

/** `announce` writes one screen line; `what` names what the first signal stops. */
export function installOperatorStop(announce: (line: string) => void, what: string): OperatorStop {
  const stop = new AbortController();
  let signals = 0;
  const onSignal = (name: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      announce(`second ${name}: abandoning without recording the stop; the stores are intact and --resume records the interruption`);
      process.exit(130);
    }
    announce(`${name}: emergency stop — ${what} (again to abandon)`);
    stop.abort(`operator signal ${name}`);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { signal: stop.signal };
}

/** YYYYMMDD of the wall clock: the date part of generated experiment and study ids. */
export function todayCompact(): string {
  return new Date().toISOString().slice(0, 10).replaceAll('-', '');
}
