// The three ways the workflow reaches activities, typed so that the wrong one cannot compile.
import {
  ActivityCancellationType,
  type ActivityOptions,
  proxyActivities,
  proxyLocalActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { EffectActivities } from '../activities/index.js';
import { readbackTaskQueue } from '../domain/destination-contract.js';

/** The activity that can create the external object. */
type SendActivity = Pick<EffectActivities, 'attemptOnce'>;
/** The looks at the destination, on its own readback queue. */
type LookActivity = Pick<EffectActivities, 'watchForObject'>;

/** What only the frozen v6 code calls: a send in three activities, and a one-off readback. */
type V6Only = 'sendToDestination' | 'recordAttempt' | 'readBack';

/** Ledger writes and reads are idempotent: retry them until they answer. */
export const ledger = proxyActivities<Omit<EffectActivities, keyof SendActivity | keyof LookActivity | V6Only>>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['LedgerInvariantError', 'EffectNotFound', 'ReleaseNotFound', 'UnknownDestination'],
  },
});

/**
 * One provider call per activity execution: after the request may have left, only evidence decides what happens
 * next. The activity gets a little more than the call so the adapter classifies first. Local: on this workflow's
 * own worker, in its workflow task (a worker that dies meanwhile leaves the attempt row, and the replayed task's
 * attempt is refused by the ledger: UNKNOWN, a look settles it).
 */
export function sendActivity(callTimeoutMs: number, local: boolean): SendActivity {
  const options = { startToCloseTimeout: callTimeoutMs + 5000, retry: { maximumAttempts: 1 } };
  return local ? proxyLocalActivities<SendActivity>(options) : proxyActivities<SendActivity>(options);
}

/**
 * Who goes first on a destination's readback queue, whose server-side rate the looks of every waiting effect share
 * (priority key: lower first): the first look at an attempt's fate, then a look an operator asked for, then the
 * repeat looks of effects that already know where they stand.
 */
export const LOOK_PRIORITY = { first: 1, asked: 2, repeat: 4 } as const;
export type LookPriority = keyof typeof LOOK_PRIORITY;

/**
 * The looks at the destination: on its own readback queue, which the workers poll at the rate it declares. Each
 * attempt is bounded by its own deadline and a heartbeat per page; retries (the repeat looks, a 429's Retry-After)
 * are unbounded in number and write no history. A cancelled watch is waited for, so a look in progress never
 * records after the workflow has moved on.
 */
export function looks(destination: string, priority: LookPriority): LookActivity {
  const options: ActivityOptions = {
    taskQueue: readbackTaskQueue(workflowInfo().taskQueue, destination),
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '30 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    priority: { priorityKey: LOOK_PRIORITY[priority] },
    retry: {
      initialInterval: '1 second',
      maximumInterval: '1 minute',
      nonRetryableErrorTypes: ['LedgerInvariantError', 'ReleaseNotFound', 'UnknownDestination'],
    },
  };
  return proxyActivities<LookActivity>(options);
}
