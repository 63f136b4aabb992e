// Keeps every unfinished effect moving: a Temporal Schedule (visible in the Web UI under Schedules) runs
// the ledger reconciler workflow every period; its activity, hosted here with a Temporal client,
// resumes effects the ledger shows as not terminal and Temporal shows as not running.
import { Context } from '@temporalio/activity';
import { type Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { LEDGER_RECONCILER_WORKFLOW_TYPE, type LedgerReconcilerActivities } from '../workflows/ledger-reconciler.js';

export const LEDGER_RECONCILER_SCHEDULE_ID = 'effect-ledger-reconciler';

export function createReconcilerActivities(effects: EffectLedgerClient): LedgerReconcilerActivities {
  return {
    resumeStrandedEffects: (olderThanMs) => effects.resumeStranded(olderThanMs, () => Context.current().heartbeat()),
  };
}

export interface ReconcilerSchedule {
  taskQueue: string;
  /** How often the ledger is compared with Temporal (the bound on how long an effect can sit unmoved). */
  everyMs: number;
  /** Effects whose stage moved more recently than this are left alone: their approver may still be starting them. */
  olderThanMs: number;
}

/** Creates the schedule once; a schedule that already exists is left as it is. */
export async function ensureReconcilerSchedule(client: Client, schedule: ReconcilerSchedule): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: LEDGER_RECONCILER_SCHEDULE_ID,
      spec: { intervals: [{ every: schedule.everyMs }] },
      action: {
        type: 'startWorkflow',
        workflowType: LEDGER_RECONCILER_WORKFLOW_TYPE,
        taskQueue: schedule.taskQueue,
        args: [schedule.olderThanMs],
      },
      // Passes may overlap (one stuck on a dead worker must not hold the next back); starting is idempotent.
      policies: { overlap: ScheduleOverlapPolicy.ALLOW_ALL, catchupWindow: schedule.everyMs },
      memo: { purpose: 'resume effects the ledger shows as unfinished and Temporal as not running' },
    });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
}
