// The paths the effect workflow can take, one recorded history each per workflow version
// (test/histories/v<version>.<path>.json). scripts/history-scenarios.ts drives each one.
export const HISTORY_PATHS = [
  'happy-path',
  'rejected',
  'not-sent-retry',
  'conflict',
  'unknown-readback-found',
  'unknown-readback-absent-retry',
  'unknown-worker-killed',
  'unknown-human-approve-retry',
  'unknown-abandon',
  'malformed-decision-ignored',
  'open-awaiting-human',
  'long-wait-continued-as-new',
  'long-wait-next-run',
  'unknown-human-confirm',
  'multi-step-unknown-readback',
  // v5: an attempt no polling worker could make (the destination not hosted), then one that could.
  'not-hosted-wait',
  'multi-step-continued-as-new',
  'multi-step-next-run',
  // v6: an abandon while the provider still processes our request; the object lands and is recorded instead.
  'unknown-abandon-object-landed',
  // v6: a run terminated while pausing after "not sent"; the next run sends the next attempt (no readback).
  'not-sent-resumed',
  // v7: a wait through at least five looks, each a retry of one activity (no history events), then a person decides.
  'unknown-looks-then-confirm',
  // v7: an operator's look-now while the effect waits between its looks; the look finds the object.
  'unknown-look-now',
  // v7: a person's retry on the key-less feed over a look that cannot see the post: refused, then confirmed.
  'keyless-retry-refused',
  // v8: an abandon over a look that cannot see the post: refused (the person has not said it is not there), then confirmed.
  'keyless-abandon-refused',
] as const;

export type HistoryPath = (typeof HISTORY_PATHS)[number];

/** Paths a later workflow version added: the replay set holds them from that version on (absent: every version). */
export const PATH_SINCE_VERSION: Partial<Record<HistoryPath, number>> = {
  'multi-step-continued-as-new': 5,
  'multi-step-next-run': 5,
  'not-hosted-wait': 5,
  'unknown-abandon-object-landed': 6,
  'not-sent-resumed': 6,
  'unknown-looks-then-confirm': 7,
  'unknown-look-now': 7,
  'keyless-retry-refused': 7,
  'keyless-abandon-refused': 8,
};

/** The paths a version's replay set holds. */
export function pathsOfVersion(version: number): HistoryPath[] {
  return HISTORY_PATHS.filter((path) => (PATH_SINCE_VERSION[path] ?? 1) <= version);
}
