// The study's three groups (spec §5): the same code, schedule and budgets, differing only by
// capability switches (design/manifest.ts GROUP_CAPABILITIES). The one home of the letters: the
// plan, the study folder, the report, the review and the fault harness all take them from here.
import { z } from 'zod';

export const GROUPS = ['A', 'B', 'C'] as const;
export const Group = z.enum(GROUPS);
export type Group = z.infer<typeof Group>;
