// Why an effect did not close, in the words a person debugging it needs: its stage and what it awaits (the
// workflow's status), its latest attempt, and every activity it is waiting on with that activity's retries and
// last failure (Temporal's describe()), e.g. "recordResponse failing, attempt 14: Invalid time value (RangeError)".
// Not only "did not close within 74 s": a declaration the ledger cannot record is named by its error.
import type { Client } from '@temporalio/client';
import { statusQuery } from '../workflows/contract.js';

/** PendingActivityState / PendingWorkflowTaskState SCHEDULED: on the queue, not yet taken by a worker. */
const PENDING_ACTIVITY_STATE_SCHEDULED = 1;
const PENDING_WORKFLOW_TASK_STATE_SCHEDULED = 1;

/** The messages along an error's causes: a failed workflow's own words are in its cause, not its message. */
export function failureText(error: unknown): string {
  const messages: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    const { message, cause } = current as { message?: unknown; cause?: unknown };
    if (typeof message === 'string' && message && !messages.includes(message)) messages.push(message);
    current = cause;
  }
  return messages.join(': ') || String(error);
}

export async function whyOpen(client: Client, effectId: string): Promise<string> {
  const handle = client.workflow.getHandle(effectId);
  let describeFailed = '';
  const [status, description] = await Promise.all([
    handle.query(statusQuery).catch(() => undefined),
    handle.describe().catch((error: unknown) => {
      describeFailed = `its describe failed: ${failureText(error)}`;
      return undefined;
    }),
  ]);
  const parts = [`stage ${status?.stage ?? '?'}`];
  if (status?.awaiting) parts.push(`awaiting ${status.awaiting}`);
  const last = status?.attempts.at(-1);
  if (last)
    parts.push(
      `attempt ${last.attemptNumber}${last.step ? ` of step ${last.step}` : ''}: ${last.outcome}${last.detail ? ` (${last.detail})` : ''}`,
    );
  for (const pending of description?.raw.pendingActivities ?? []) {
    const name = pending.activityType?.name ?? 'an activity';
    const failure = pending.lastFailure;
    const type = failure?.applicationFailureInfo?.type;
    parts.push(
      failure?.message
        ? `${name} failing, attempt ${pending.attempt ?? '?'}: ${failure.message}${type ? ` (${type})` : ''}`
        : pending.state === PENDING_ACTIVITY_STATE_SCHEDULED
          ? `${name} scheduled, no worker has taken it (attempt ${pending.attempt ?? '?'})`
          : `${name} running, attempt ${pending.attempt ?? '?'}`,
    );
  }
  if (describeFailed) parts.push(describeFailed);
  // A workflow that cannot move although nothing is pending: its workflow task is failing or timing out.
  const task = description?.raw.pendingWorkflowTask;
  if (task && (task.attempt ?? 1) > 1)
    parts.push(`workflow task retried, attempt ${task.attempt}${await lastTaskFailure(client, effectId)}`);
  // Its next step not yet taken: a worker has not taken or not yet finished the workflow task that makes it.
  else if (task)
    parts.push(
      task.state === PENDING_WORKFLOW_TASK_STATE_SCHEDULED
        ? 'a workflow task scheduled, no worker has taken it'
        : 'a workflow task in progress',
    );
  return parts.join('; ');
}

/** The last workflow task failure or timeout in the history, as ": <cause> <message>", or "". */
async function lastTaskFailure(client: Client, effectId: string): Promise<string> {
  try {
    const history = await client.workflow.getHandle(effectId).fetchHistory();
    const events = history.events ?? [];
    for (let i = events.length - 1; i >= 0; i--) {
      const event = events[i];
      const failed = event?.workflowTaskFailedEventAttributes;
      if (failed) return `: failed (cause ${failed.cause ?? '?'}): ${failed.failure?.message ?? ''}`;
      if (event?.workflowTaskTimedOutEventAttributes)
        return `: timed out (${event.workflowTaskTimedOutEventAttributes.timeoutType ?? '?'})`;
    }
    return '';
  } catch {
    return '';
  }
}
