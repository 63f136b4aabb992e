// The mix the chaos tests' fixed seeds draw from. Until issue 19's fixes are merged (helper `decisions`'s; the
// reconciler's are in: its poison effects and full pages are drawn), the groups aimed at the paths they fix stay out (test/chaos.test.ts keeps each of those by a
// test that shows the run finds the bug), and the worker's clock is not skewed. With the fixes merged: the
// whole mix, skew included (OPEN_BUGS empty, FIXED_SKEW 'seeded').
import { FULL_MIX, type Group, type Mix } from '../../scripts/chaos/generator.js';

export const OPEN_BUGS: Group[] = [
  'cross-step',
  'two-operators',
  'resent',
  'revision-race',
  'in-flight-retry',
  'not-sent-streak',
];
export const FIXED_MIX: Mix = Object.fromEntries(
  Object.entries(FULL_MIX).filter(([group]) => !OPEN_BUGS.includes(group as Group)),
);
export const FIXED_SKEW: number | 'seeded' = 0;

/**
 * Findings of the chaos run no fix has taken up yet, left out of the fixed seeds' verdict (and reported): a run
 * resumed by the reconciler after its predecessor was terminated in a "not sent" pause reads back and waits for
 * a person, though nothing was ever sent (seed 4242: unknown_without_send). The continue-as-new path is the
 * `decisions` helper's; this one is not.
 */
export const OPEN_FINDINGS: string[] = ['unknown_without_send'];
