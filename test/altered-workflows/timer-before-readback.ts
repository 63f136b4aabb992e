// A deeper non-deterministic change, kept to prove the replay guard reaches past the first step: an
// interceptor that starts a timer before every readback (v6's readBack, v7's looks). Only histories that read back
// must break.
import {
  type ActivityInput,
  type Next,
  sleep,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** The activities that read back: v1–v6's one-off readback, v7's looks. */
export const READBACKS = ['readBack', 'watchForObject'];

class TimerBeforeReadback implements WorkflowOutboundCallsInterceptor {
  async scheduleActivity(
    input: ActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>,
  ): Promise<unknown> {
    if (READBACKS.includes(input.activityType)) await sleep('1 second');
    return next(input);
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [new TimerBeforeReadback()] });
