// A readback's requests take their turns at the destination's declared rate (ledger/readback-pace.ts), across
// every worker: the turn of its first request before the adapter is called, so a readback whose adapter never
// asks still waits one turn; the adapter asks again (ReadbackRequest.beforeRequest) before each further request
// — the declarative HTTP adapter and the email adapter do, on every GET. A destination whose turns are taken
// beyond the horizon (a provider just back from an outage, thousands waiting) is not waited for in the
// activity: it is retried after the turns ahead have gone, before any request has left (a further request of
// a readback under way waits longer: FURTHER_REQUEST_HORIZON_MS).
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

export function readbackTurns(
  db: LedgerDb,
  destination: string,
  ratePerSecond = DEFAULT_READBACK_RATE_PER_SECOND,
): ReadbackTurns {
  let prepaid = false;
  const take = async (horizonMs: number) => {
    for (;;) {
      const asked = performance.now();
      const turn = await takeReadbackTurn(db, destination, ratePerSecond, horizonMs);
      if (!turn.taken)
        throw ApplicationFailure.create({
          type: 'ReadbackPaced',
          message: `${destination} takes ${ratePerSecond} readback requests a second and its turns are taken: reading back again in ${turn.retryInMs} ms`,
          nextRetryDelay: turn.retryInMs,
          // Expected while a storm drains, not a failure: logged at DEBUG, kept out of the failure metrics.
          category: ApplicationFailureCategory.BENIGN,
        });
      const answered = performance.now();
      if (turn.waitMs >= 1) {
        const context = Context.current();
        context.heartbeat();
        await context.sleep(turn.waitMs);
      }
      // How late the request would leave, by this process's own durations (no clock compared): at most the answer's
      // whole round trip plus the sleep's overrun. A loaded machine (a stalled event loop) makes it late, and a late
      // request could leave on the heels of the next turn's: it takes another turn instead.
      const late = answered - asked + (performance.now() - answered - Math.max(0, turn.waitMs));
      if (late <= PACE_LATE_MS) return;
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
