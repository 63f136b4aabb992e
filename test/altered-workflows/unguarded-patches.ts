// The workflow SDK as the effect workflow would see it had its changes been made without a patch guard:
// patched() is always true, so new code runs on replay of histories that old code wrote. Bundled in place
// of '@temporalio/workflow' by test/replay.test.ts.
export * from '@temporalio/workflow/lib/index.js';

export function patched(_patchId: string): boolean {
  return true;
}
