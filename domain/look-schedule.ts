// While an effect waits in UNKNOWN, readback looks again and again for its object: the in-flight window first, then
// the effect's interval, doubling after each look up to the destination's cap. The workflow and the activity that
// takes the looks (as retries of one activity, which write no history) read the schedule and the verdicts from here.
import type { ReadbackResult } from './destination-contract.js';

/** What the workflow must know of a look: a change of it wakes the workflow; the same verdict again does not. */
export function verdictKey(read: ReadbackResult): string {
  const { inFlightUntil, stillProcessing } = read.detail;
  return [
    read.outcome,
    read.coverage,
    ...(inFlightUntil ? ['in-flight'] : []),
    ...(stillProcessing ? ['still-processing'] : []),
  ].join('/');
}

export interface LookSchedule {
  /** When the wait began (ms since the epoch): its first look. */
  since: number;
  /** The gap after the first look. */
  intervalMs: number;
  /** The gap never grows past this. */
  maxIntervalMs: number;
}

/** The first scheduled look after `after`: since + interval, then gaps doubling up to the cap. */
export function nextLookAt(after: number, { since, intervalMs, maxIntervalMs }: LookSchedule): number {
  const first = Math.max(1, intervalMs);
  const cap = Math.max(first, maxIntervalMs);
  let at = since;
  let gap = first;
  // Doubling reaches the cap within ~40 gaps; past it the looks are evenly spaced, computed at once.
  while (gap < cap) {
    at += gap;
    if (at > after) return at;
    gap *= 2;
  }
  return at + cap * (Math.floor(Math.max(0, after - at) / cap) + 1);
}
