// A readback's requests take their turns at the destination's declared rate (ledger/readback-pace.ts), across
// every worker: the turn of its first request before the adapter is called, so a readback whose adapter never
// asks still waits one turn; the adapter asks again (ReadbackRequest.beforeRequest) before each further request
// — the declarative HTTP adapter and the email adapter do, on every GET. A destination whose turns are taken
// beyond the horizon (a provider just back from an outage, thousands waiting) is not waited for in the
// activity: it is retried after the turns ahead have gone, before any request has left (a further request of
// a readback under way waits longer: FURTHER_REQUEST_HORIZON_MS). Each turn reserves how late this process's
// requests have lately left; one that would leave later than its turn reserved takes another instead.
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
 * How late this process's last requests would have left after their turns' moments, newest last: the lateness of
 * a process (a loaded machine, a far ledger) lasts, so its next turn reserves for it. A few are kept, so one quick
 * answer between slow ones does not leave the next turn short (it would be given up); a stall that has passed
 * leaves them after that many turns. A reservation costs its lateness once a second, not per turn
 * (ledger/readback-pace.ts), so erring long is cheap and a turn given up is rare.
 */
const recentLateMs: number[] = [];
const LATE_KEPT = 8;

/** What a turn reserves: a quarter more than the latest of the recent latenesses, at least PACE_LATE_MS. */
function reserveMs(): number {
  return Math.max(PACE_LATE_MS, Math.ceil(Math.max(0, ...recentLateMs) * 1.25));
}

function noteLate(ms: number): void {
  recentLateMs.push(ms);
  if (recentLateMs.length > LATE_KEPT) recentLateMs.shift();
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
  /** Keeps the activity alive through a turn's wait (the readback's quiet heartbeat). */
  keepAlive: () => void = () => Context.current().heartbeat(),
): ReadbackTurns {
  let prepaid = false;
  const take = async (horizonMs: number) => {
    for (;;) {
      let reserved = PACE_LATE_MS;
      let asked = performance.now();
      const turn = await takeReadbackTurn(db, destination, ratePerSecond, horizonMs, () => {
        asked = performance.now();
        reserved = reserveMs();
        return reserved;
      });
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
        keepAlive();
        await Context.current().sleep(turn.waitMs);
      }
      // How late the request would leave, by this process's own durations (no clock compared): at most the answer's
      // whole round trip plus the sleep's overrun. Later than its turn reserved for, it could crowd a second the
      // turns a second later count on: it takes another, which reserves for the lateness just seen.
      const late = answered - asked + (performance.now() - answered - Math.max(0, turn.waitMs));
      noteLate(late);
      if (late <= reserved) return;
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
