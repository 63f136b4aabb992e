// The two ways the workflow reaches activities, typed so that the wrong one cannot compile.
import { type ActivityOptions, proxyActivities } from '@temporalio/workflow';
import type { EffectActivities } from '../../activities/index.js';

/** The activities that can create the external object: v3's attemptOnce, and v1/v2's sendToDestination. */
type SendActivity = Pick<EffectActivities, 'attemptOnce' | 'sendToDestination'>;

/** Ledger writes and readbacks are idempotent: retry them until they answer. */
export const ledger = proxyActivities<Omit<EffectActivities, keyof SendActivity>>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['LedgerInvariantError', 'EffectNotFound', 'ReleaseNotFound', 'UnknownDestination'],
  },
});

/**
 * v3's readback: bounded by its own deadline and a heartbeat per page, so a hung read is noticed and
 * retried, and a cancelled one stops before it records anything.
 */
const READBACK_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['LedgerInvariantError', 'ReleaseNotFound', 'UnknownDestination'],
  },
};

export const readback = proxyActivities<Pick<EffectActivities, 'readBack'>>(READBACK_OPTIONS);

/**
 * The same readback on its destination's task queue (READBACK_QUEUE_PATCH), where the server hands tasks out at
 * the destination's declared rate. A 429 retries after the provider's Retry-After (the activity's nextRetryDelay).
 */
export function readbackOn(taskQueue: string): Pick<EffectActivities, 'readBack'> {
  return proxyActivities<Pick<EffectActivities, 'readBack'>>({ ...READBACK_OPTIONS, taskQueue });
}

/**
 * One provider call per activity execution: after the request may have left, only evidence decides
 * what happens next. The activity gets a little more than the call so the adapter classifies first.
 */
export function sendActivity(callTimeoutMs: number): SendActivity {
  return proxyActivities<SendActivity>({
    startToCloseTimeout: callTimeoutMs + 5000,
    retry: { maximumAttempts: 1 },
  });
}
