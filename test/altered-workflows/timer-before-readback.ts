// A deeper non-deterministic change, kept to prove the replay guard reaches past the first step: an
// interceptor that starts a timer before every readback. Only histories that read back must break.
import {
  type ActivityInput,
  type Next,
  sleep,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

class TimerBeforeReadback implements WorkflowOutboundCallsInterceptor {
  async scheduleActivity(
    input: ActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>,
  ): Promise<unknown> {
    if (input.activityType === 'readBack') await sleep('1 second');
    return next(input);
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [new TimerBeforeReadback()] });
