// The ledger against Temporal, on a schedule: an effect the ledger shows as not terminal always has a
// running workflow again within one period — after an approver died between its ledger write and the
// workflow start, or after a run was terminated, failed, reset or cut off by the history limit. The result
// is the pass's report, so the Web UI shows what each scheduled pass did (docs/reconciler.md).
import { proxyActivities } from '@temporalio/workflow';

export const LEDGER_RECONCILER_WORKFLOW_TYPE = 'ledgerReconcilerWorkflow';

/** What one pass did: counts over every page, and the first effects of each kind by name. */
export interface ReconcilerPassReport {
  /** Unfinished effects the pass looked at (the ledger's, every page). */
  checked: number;
  /** Of those, how many visibility showed with a running workflow. */
  running: number;
  /** The rest, each confirmed with a describe. */
  described: number;
  /** Started again: the ledger said unfinished, Temporal said not running. */
  resumed: number;
  /** Whose start failed (recorded in start_failures, with why; the pass went on). */
  couldNotStart: number;
  /** The first resumed effects (at most 50). */
  resumedEffects: string[];
  /** The first effects that could not be started, with their stage and why (at most 50). */
  failures: { effectId: string; stage: string; reason: string }[];
  /** Ledger pages read. */
  pages: number;
  durationMs: number;
  /** Where the time went: reading ledger pages, asking visibility, describing and starting candidates. */
  timings: { ledgerMs: number; visibilityMs: number; candidatesMs: number };
  /** Set when this attempt continued an interrupted one from its cursor: the counts are from there on. */
  resumedAfter?: string;
}

/** Implemented by the worker process, which holds a Temporal client (workers/ledger-reconciler.ts). */
export interface LedgerReconcilerActivities {
  resumeStrandedEffects(olderThanMs: number): Promise<ReconcilerPassReport>;
}

// Heartbeating: a worker killed mid-pass is noticed within 10 s, and the retry continues from the last page
// done (its heartbeat). The pass reads every unfinished effect, so it gets longer than a call: 10 minutes.
const { resumeStrandedEffects } = proxyActivities<LedgerReconcilerActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

export async function ledgerReconcilerWorkflow(olderThanMs: number): Promise<ReconcilerPassReport> {
  return resumeStrandedEffects(olderThanMs);
}
