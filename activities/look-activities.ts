// A waiting effect's looks for its object as the retries of ONE activity: each attempt reads back once (through
// readBack: its turn under the destination's rate, its evidence in the ledger, its fact when found) and, when it
// saw what the workflow already knows, fails with the time of the next look as its retry delay. Retries write no
// history events, so a wait of weeks costs the workflow nothing; it wakes only when the verdict changes, or when
// a person decides (it cancels this activity: one still in its retry delay is cancelled at once). A look now is a
// reset of this activity (its retry delay discarded): no signal, no workflow task, no history event. The Web UI's
// pending activity shows the last look and when the next one is; the ledger keeps every look (effect status).
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import type { ReadbackResult } from '../domain/destination-contract.js';
import { type LookSchedule, nextLookAt, verdictKey } from '../domain/look-schedule.js';
import type { ActivityDeps } from './effect-activities.js';
import { createReconciliationActivities, type ReadbackTarget } from './reconciliation-activities.js';

export interface LookRequest extends ReadbackTarget {
  /** The verdict the workflow knows (verdictKey): the same again is not returned. Absent: return the first look. */
  known?: string;
  /** No look before this moment (ms since the epoch): the wait's next scheduled look, or the in-flight window's end. */
  notBefore?: number;
  /** The repeat looks' schedule; absent: one look, returned whatever it saw. */
  schedule?: LookSchedule;
}

/** Below this, a look is due now: the retry delay of the previous attempt aimed at it. */
const EARLY_MS = 250;

const when = (ms: number) => new Date(ms).toISOString();

/** The retry that carries the wait: benign (no failure metric, DEBUG not WARN), and what the UI shows. */
function nextLook(delayMs: number, message: string, last?: ReadbackResult): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'LookAgain',
    message,
    nextRetryDelay: Math.max(1000, Math.round(delayMs)),
    category: ApplicationFailureCategory.BENIGN,
    ...(last ? { details: [last] } : {}),
  });
}

export function createLookActivities(deps: ActivityDeps) {
  const { readBack } = createReconciliationActivities(deps);
  return {
    /**
     * Looks for the effect's object until the verdict differs from `known` (or it is found), on `schedule`. The
     * first attempt waits for `notBefore`; every later one is the scheduled look its predecessor asked for.
     */
    async watchForObject(request: LookRequest): Promise<ReadbackResult> {
      const { known, notBefore, schedule, ...target } = request;
      const now = Date.now();
      const { info } = Context.current();
      // Reset by an operator (Temporal's activity reset, `effect-ledger decide --look-now`): attempt 1 again, but
      // scheduled later than the activity was — the look is taken now, whatever the schedule said.
      const reset = info.attempt === 1 && info.currentAttemptScheduledTimestampMs > info.scheduledTimestampMs;
      if (info.attempt === 1 && !reset && notBefore !== undefined && notBefore - now > EARLY_MS)
        throw nextLook(notBefore - now, `waiting to look: the next look is at ${when(notBefore)}`);
      const read = await readBack(target);
      if (read.outcome === 'found' || known === undefined || !schedule || verdictKey(read) !== known) return read;
      const after = Date.now();
      const inFlightUntil = read.detail.inFlightUntil ? Date.parse(read.detail.inFlightUntil) : undefined;
      const next = Math.min(nextLookAt(after, schedule), inFlightUntil ?? Number.POSITIVE_INFINITY);
      throw nextLook(
        next - after,
        `looked at ${when(now)}: ${read.outcome} (${read.coverage}, ${read.detail.method}: ${read.detail.reason}); next look at ${when(next)}`,
        read,
      );
    },
  };
}
