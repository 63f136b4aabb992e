// A readback's requests take their turns at the destination's declared rate (ledger/readback-pace.ts), across
// every worker: the turn of its first request before the adapter is called, so a readback whose adapter never
// asks still waits one turn; the adapter asks again (ReadbackRequest.beforeRequest) before each further request
// — the declarative HTTP adapter and the email adapter do, on every GET. A destination whose turns are taken
// beyond the horizon (a provider just back from an outage, thousands waiting) is not waited for in the
// activity: it is retried after the turns ahead have gone, before any request has left (a further request of
// a readback under way waits longer: FURTHER_REQUEST_HORIZON_MS). A worker that leaves late (its ledger answers
// slowly, its event loop stalls) reserves longer turns for itself, so it neither crowds the next request nor
// gives its turns up forever.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { DEFAULT_READBACK_RATE_PER_SECOND } from '../domain/destination-contract.js';
import type { LedgerDb } from '../ledger/db.js';
import {
  FURTHER_REQUEST_HORIZON_MS,
  PACE_HORIZON_MS,
  PACE_LATE_MS,
  takeReadbackTurn,
} from '../ledger/readback-pace.js';

export interface ReadbackTurns {
  /** The first request's turn, taken before the adapter is called. */
  first(): Promise<void>;
  /** Before each request the adapter makes: the first one uses the turn taken by first(). */
  beforeRequest(): Promise<void>;
}

/**
 * How late this process's last request would have left after its turn's moment: the lateness of a process (a
 * loaded machine, a far ledger) lasts, so its next turn reserves for it. Each measurement replaces the last, so a
 * stall that has passed costs one longer turn, not a lasting slowdown.
 */
let lastLateMs = 0;

/** What a turn reserves beyond PACE_LATE_MS: half as much again as the last lateness, to absorb its jitter. */
function reserveMs(): number {
  return Math.max(0, Math.ceil(lastLateMs * 1.5) - PACE_LATE_MS);
}

/**
 * A readback put off this many times in a row is no longer a storm draining: it is a rate that cannot serve the
 * destination's readbacks (a decision may be waiting behind one). Its failure is then logged at WARN and counted
 * as a failure, not as the benign retry it was.
 */
export const PACED_VISIBLE_AFTER = 10;

export function readbackTurns(
  db: LedgerDb,
  destination: string,
  ratePerSecond = DEFAULT_READBACK_RATE_PER_SECOND,
  /** Called each time a readback is put off (the worker's metric). */
  onPaced?: () => void,
): ReadbackTurns {
  let prepaid = false;
  const take = async (horizonMs: number) => {
    for (;;) {
      const reserved = reserveMs();
      const asked = performance.now();
      const turn = await takeReadbackTurn(db, destination, ratePerSecond, horizonMs, reserved);
      if (!turn.taken) {
        onPaced?.();
        const attempt = Context.current().info.attempt;
        const stuck = attempt >= PACED_VISIBLE_AFTER;
        throw ApplicationFailure.create({
          type: 'ReadbackPaced',
          message: `${stuck ? `readback put off ${attempt} times in a row: ` : ''}${destination} takes ${ratePerSecond} readback requests a second and its turns are taken: reading back again in ${turn.retryInMs} ms`,
          nextRetryDelay: turn.retryInMs,
          // Expected while a storm drains, not a failure: logged at DEBUG, kept out of the failure metrics — until it
          // has gone on so long that it is no storm (WARN, a failure: visible, alert-able).
          ...(stuck ? {} : { category: ApplicationFailureCategory.BENIGN }),
        });
      }
      const answered = performance.now();
      if (turn.waitMs >= 1) {
        const context = Context.current();
        context.heartbeat();
        await context.sleep(turn.waitMs);
      }
      // How late the request would leave, by this process's own durations (no clock compared): at most the answer's
      // whole round trip plus the sleep's overrun. Later than its turn reserved for, it could leave on the heels of
      // the next turn's: it takes another, which reserves for the lateness just seen.
      const late = answered - asked + (performance.now() - answered - Math.max(0, turn.waitMs));
      lastLateMs = late;
      if (late <= PACE_LATE_MS + reserved) return;
    }
  };
  return {
    async first() {
      await take(PACE_HORIZON_MS);
      prepaid = true;
    },
    async beforeRequest() {
      if (prepaid) {
        prepaid = false;
        return;
      }
      await take(FURTHER_REQUEST_HORIZON_MS);
    },
  };
}
