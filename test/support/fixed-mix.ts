// The mix the chaos tests' fixed seeds draw from. Until issue 19's fixes are merged (helper `decisions`'s; the
// reconciler's are in: its poison effects and full pages are drawn), the groups aimed at the paths they fix stay out (test/chaos-planted.test.ts keeps each of those by a
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
/** Groups newer than the fixed seeds' recorded draws: fresh seeds and their aimed lanes draw them. */
const NEWER: Group[] = ['keyless-retry', 'keyless-abandon'];
export const FIXED_MIX: Mix = Object.fromEntries(
  Object.entries(FULL_MIX).filter(([group]) => !OPEN_BUGS.includes(group as Group) && !NEWER.includes(group as Group)),
);
export const FIXED_SKEW: number | 'seeded' = 0;

/**
 * Findings of the chaos run no fix has taken up yet, left out of the fixed seeds' verdict (and reported). Empty:
 * seed 4242's unknown_without_send (a run resumed after a terminate in a "not sent" pause read back and waited for
 * a person) is fixed in v6 (resumed-run-resends-after-not-sent), and test/chaos-planted.test.ts plants its return.
 */
export const OPEN_FINDINGS: string[] = [];
