// The ledger against Temporal, on a schedule: an effect the ledger shows as not terminal always has a
// running workflow again within one period — after an approver died between its ledger write and the
// workflow start, or after a run was terminated, failed, reset or cut off by the history limit.
import { proxyActivities } from '@temporalio/workflow';

export const LEDGER_RECONCILER_WORKFLOW_TYPE = 'ledgerReconcilerWorkflow';

/** Implemented by the worker process, which holds a Temporal client (workers/reconciler-activities.ts). */
export interface LedgerReconcilerActivities {
  resumeStrandedEffects(olderThanMs: number): Promise<{ checked: number; resumed: string[] }>;
}

// Short and heartbeating: a worker killed mid-pass must not hold the next passes back for long.
const { resumeStrandedEffects } = proxyActivities<LedgerReconcilerActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

export async function ledgerReconcilerWorkflow(olderThanMs: number): Promise<{ checked: number; resumed: string[] }> {
  return resumeStrandedEffects(olderThanMs);
}
