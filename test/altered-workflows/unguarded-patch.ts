// The workflow SDK as the effect workflow would see it had one change been made without its patch guard:
// patched(UNGUARDED) is always true, so new code runs on replay of histories that old code wrote. Bundled
// in place of '@temporalio/workflow' by test/replay.test.ts, which defines UNGUARDED per bundle.
import { patched as guarded } from '@temporalio/workflow/lib/index.js';

export * from '@temporalio/workflow/lib/index.js';

declare const UNGUARDED: string;

export function patched(patchId: string): boolean {
  // The real guard still runs, so runs that did record the marker replay as they were written.
  const recorded = guarded(patchId);
  return patchId === UNGUARDED || recorded;
}
