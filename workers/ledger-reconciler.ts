// Keeps every unfinished effect moving: a Temporal Schedule (visible in the Web UI under Schedules) runs
// the ledger reconciler workflow every period; its activity, hosted here with a Temporal client,
// resumes effects the ledger shows as not terminal and Temporal shows as not running (docs/reconciler.md).
import { Context } from '@temporalio/activity';
import { type Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { EffectLedgerClient } from '../client/effect-ledger-client.js';
import type { ReconcilerPassCursor, ReconcilerPassReport } from '../client/reconciler-pass.js';
import { LEDGER_RECONCILER_WORKFLOW_TYPE, type LedgerReconcilerActivities } from '../workflows/ledger-reconciler.js';

export const LEDGER_RECONCILER_SCHEDULE_ID = 'effect-ledger-reconciler';

/** Who ran a pass: the schedule's workflow (what operators see) or a worker's own timer. */
export type PassTrigger = 'schedule' | 'timer';

/** What a worker does with each pass besides logging it: its metrics count it (metrics.ts). */
export interface ReconcilerPassObserver {
  passed(report: ReconcilerPassReport): void;
  failed(): void;
  /** A timer tick that left the pass to the schedule, whose pass completed since the last tick. */
  stoodAside?(): void;
}

/** The fields of a pass's JSON log line ("ledger reconciler pass"): the counts, and why each start failed. */
export function passLogFields(report: ReconcilerPassReport, trigger: PassTrigger) {
  return {
    trigger,
    checked: report.checked,
    running: report.running,
    described: report.described,
    resumed: report.resumed,
    couldNotStart: report.couldNotStart,
    pages: report.pages,
    durationMs: report.durationMs,
    timings: report.timings,
    ...(report.resumedEffects.length ? { resumedEffects: report.resumedEffects } : {}),
    ...(report.failures.length ? { failures: report.failures } : {}),
    ...(report.resumedAfter ? { resumedAfter: report.resumedAfter } : {}),
  };
}

export function createReconcilerActivities(
  effects: EffectLedgerClient,
  observer?: ReconcilerPassObserver,
): LedgerReconcilerActivities {
  return {
    async resumeStrandedEffects(olderThanMs) {
      const context = Context.current();
      // A retry of a pass interrupted mid-way (its worker died) continues from the last page it finished.
      let cursor = passCursor(context.info.heartbeatDetails);
      try {
        const report = await effects.resumeStranded({
          olderThanMs,
          ...(cursor ? { resume: cursor } : {}),
          onPage: (next) => {
            cursor = next;
            context.heartbeat(next);
          },
          onEffect: () => context.heartbeat(cursor),
        });
        context.log.info('ledger reconciler pass', passLogFields(report, 'schedule'));
        observer?.passed(report);
        return report;
      } catch (error) {
        observer?.failed();
        throw error;
      }
    },
  };
}

function passCursor(details: unknown): ReconcilerPassCursor | undefined {
  const cursor = details as Partial<ReconcilerPassCursor> | undefined;
  return typeof cursor?.after === 'string' && typeof cursor.began === 'string'
    ? { after: cursor.after, began: cursor.began }
    : undefined;
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

/**
 * Whether a worker's timer pass may stand aside: the schedule took a pass since this worker's last tick and that
 * pass completed. The timer is the backstop for a schedule that does not run (paused, never created, a server that
 * lost it); while the schedule's passes complete, a timer pass would only repeat one — at 10,000 waiting effects
 * a pass reads every page and asks visibility about each. Clock-free: the ticks compare the schedule's own
 * recent actions, not times. Anything unclear (the describe fails, no new action, one not completed) runs the pass.
 */
export function scheduledPassWatch(
  client: Client,
): () => Promise<{ standAside: false } | { standAside: true; by: string }> {
  let seen: Set<string> | undefined;
  return async () => {
    try {
      const { info, state } = await client.schedule.getHandle(LEDGER_RECONCILER_SCHEDULE_ID).describe();
      const { recentActions } = info;
      const ids = recentActions.map((a) => a.action.workflow.workflowId);
      const before = seen;
      seen = new Set(ids);
      if (!before || state.paused) return { standAside: false };
      // recentActions run oldest to newest: newest first, the latest pass taken since the last tick that completed.
      for (const action of [...recentActions].reverse()) {
        const { workflowId, firstExecutionRunId } = action.action.workflow;
        if (before.has(workflowId)) break;
        const { status } = await client.workflow.getHandle(workflowId, firstExecutionRunId).describe();
        if (status.name === 'COMPLETED') return { standAside: true, by: workflowId };
      }
      return { standAside: false };
    } catch {
      return { standAside: false };
    }
  };
}
