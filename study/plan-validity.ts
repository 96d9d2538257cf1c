// A new study's plan held to its pre-registration before anything is written (issue 35 item 2):
// a plan whose n or passing counts cannot give the pre-registered verdict (oracle/prereg-departures.ts,
// the rules the report applies at the end) is refused with what to change, unless the researcher
// says it knowingly departs (--exploratory "reason"): then the departures are kept in study.json
// and stated by the report and the verdict. An --exploratory plan that departs from nothing is
// refused too: a label that changes nothing would only mislead.
import path from 'node:path';
import type { PreRegistration } from '../design/prereg.js';
import { preregDepartures, type PreregDeparture } from '../oracle/prereg-departures.js';
import { Exploratory } from '../study-contract/exploratory.js';
import { StudyError } from '../study-contract/study-folder.js';

export interface PlanValidityInput {
  /** --n as given (null: the pre-registration's initial_n_per_group). */
  readonly nFlag: number | null;
  readonly nInitial: number;
  readonly nExpanded: number;
  readonly prereg: PreRegistration;
  readonly preregFile: string;
  /** --exploratory's reason (null: the study claims to follow its pre-registration). */
  readonly exploratory: string | null;
}

/** What each departure makes of the verdict, said with it. */
const CONSEQUENCE: Readonly<Record<PreregDeparture['kind'], string>> = {
  n_initial: 'the batch would be void (spec §6.2), whatever its instances showed',
  passing_row: 'the verdict would be insufficient evidence',
};

/** The plan's exploratory record (null: it follows its pre-registration); StudyError plan_departs when it departs unsaid, or says so without departing. */
export function checkedExploratory(input: PlanValidityInput): Exploratory | null {
  const departures = preregDepartures({ nInitial: input.nInitial, nExpanded: input.nExpanded }, input.prereg);
  const file = path.resolve(input.preregFile);
  if (departures.length === 0) {
    if (input.exploratory === null) return null;
    throw new StudyError('plan_departs', `--exploratory: this plan follows its pre-registration ${file} (n = ${input.nInitial} per group${input.nExpanded > input.nInitial ? `, expandable to ${input.nExpanded}` : ''}, each with a pre-registered passing count), so it is no exploratory study: drop --exploratory. Nothing was written`);
  }
  const statements = departures.map((d) => `${d.statement}: ${CONSEQUENCE[d.kind]}`);
  if (input.exploratory === null) {
    throw new StudyError('plan_departs', `refusing the plan: under its pre-registration ${file} it cannot give a valid verdict — ${statements.join('; ')}. ${adviceOf(input, departures)}; or, to run it knowingly as an exploratory study (its study.json, report and verdict then say so), add --exploratory "why". Nothing was written`);
  }
  const parsed = Exploratory.safeParse({ reason: input.exploratory, departures: departures.map((d) => d.statement) });
  if (!parsed.success) throw new StudyError('plan_departs', `--exploratory: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'reason'}: ${i.message}`).join('; ')}; give the reason in one or two sentences. Nothing was written`);
  return parsed.data;
}

/** What to change so that the plan follows its pre-registration, as the tool accepts it. */
function adviceOf(input: PlanValidityInput, departures: readonly PreregDeparture[]): string {
  const rule = input.prereg.expansion_rule;
  const lockAndPass = 'save it under a new name with a new prereg_version, lock it (npm run prereg -- lock FILE) and give --prereg FILE';
  if (departures.some((d) => d.kind === 'n_initial') && input.nFlag !== null) {
    const drop = `Drop --n ${input.nFlag} (the pre-registration's initial_n_per_group: ${rule.initial_n_per_group} is the default)`;
    return `${drop}; to run n = ${input.nFlag} per group the pre-registration would have to say so — initial_n_per_group: ${input.nFlag}, an expanded_n_per_group above it and a thresholds.c_instances_passing row for each: ${lockAndPass}`;
  }
  const rows = departures.filter((d) => d.kind === 'passing_row').map((d) => `{ "n": ${d.n}, "at_least": … }`);
  return `The pre-registration must fix a passing count for every n its verdict can rest on: add ${rows.join(' and ')} to thresholds.c_instances_passing, ${lockAndPass}`;
}
