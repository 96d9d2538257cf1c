// What a study's log line says about one of its instances, read for the screen (cli/study-screen.ts):
// the study runner says every controller line of every instance as `[G-rk] line`
// (study/study-runner.ts), and every one of them is also in the instance's processes.log. The
// screen shows the routine ones only as the instance's live line; anything it does not know as
// routine is shown whole, so a line nobody expected is never hidden.
import { GROUPS } from '../design/groups.js';
import { ROUTINE_LINES, WAKE_LINE } from '../study/routine-controller-lines.js';

/** `[A-r1] text`: the instance and what its controller said. */
const INSTANCE_LINE = new RegExp(`^\\[([${GROUPS.join('')}]-r[1-9][0-9]*)\\] (.*)$`);
/** The plan's wake count, from the controller's `manifest signed …; plan: 31 wakes, …` line. */
const PLAN = /plan: (\d+) wakes/;
const SCORED = /^scored /;

export type InstanceLine =
  | { readonly name: string; readonly kind: 'wake'; readonly wake: number; readonly hour: string; readonly what: string }
  | { readonly name: string; readonly kind: 'plan'; readonly wakes: number }
  | { readonly name: string; readonly kind: 'routine' | 'scored' | 'other'; readonly text: string };

/** null: not an instance's line (the study's own: always shown). */
export function readInstanceLine(line: string): InstanceLine | null {
  const m = INSTANCE_LINE.exec(line);
  if (!m) return null;
  const [, name, text] = m as unknown as [string, string, string];
  const wake = WAKE_LINE.exec(text);
  if (wake) return { name, kind: 'wake', wake: Number(wake[1]), hour: wake[2]!, what: [wake[3], wake[4]].filter((x) => x !== undefined).join(' · ') };
  const plan = PLAN.exec(text);
  if (plan && text.startsWith('manifest signed ')) return { name, kind: 'plan', wakes: Number(plan[1]) };
  if (SCORED.test(text)) return { name, kind: 'scored', text };
  return { name, kind: ROUTINE_LINES.some((r) => r.test(text)) ? 'routine' : 'other', text };
}
