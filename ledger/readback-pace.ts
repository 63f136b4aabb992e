// Readback requests take turns per destination (schema.ts, readback_pace), across every worker: one upsert
// moves the destination's next free moment forward by one request's share of a second and answers how long
// this request waits for its own moment. The ledger's clock decides, never a worker's (a worker whose clock
// runs ahead would otherwise leave early), and the wait is a duration, so the worker's clock never enters.
import { sql } from 'drizzle-orm';
import type { LedgerDb } from './db.js';

/**
 * A request's share of a second is a little more than 1/rate: requests then leave at most `rate` in any second
 * even when each reaches the provider up to this share of a second later than the one before it (an event loop
 * or a network that is slow for one request and quick for the next).
 */
export const PACE_MARGIN = 0.05;

/**
 * How late a request may leave after its turn's moment and still keep that promise (the margin, 50 ms in any
 * second, less room for the network), beyond what its turn reserved: a request that would leave later takes
 * another turn, leaving its own empty.
 */
export const PACE_LATE_MS = 40;

/**
 * The most a readback's first request waits for its turn; a turn further out is not taken (the readback comes
 * back later, having sent nothing).
 */
export const PACE_HORIZON_MS = 2_000;

/**
 * The most a further request of a readback under way waits (the key's object after the key, a second page): the
 * readback has already cost the provider a request, so it waits longer rather than start over, well within the
 * activity's heartbeat timeout.
 */
export const FURTHER_REQUEST_HORIZON_MS = 10_000;

export type ReadbackTurn =
  /** The turn is taken: the request leaves after `waitMs`, at `startsAt` by the ledger's clock. */
  | { taken: true; waitMs: number; startsAt: Date }
  /** The destination's turns are taken for longer than the horizon: none was taken; come back in `retryInMs`. */
  | { taken: false; retryInMs: number };

/** The milliseconds between two requests to a destination declaring `ratePerSecond`. */
export function paceIntervalMs(ratePerSecond: number): number {
  return (1000 / ratePerSecond) * (1 + PACE_MARGIN);
}

/**
 * Takes the next turn for one request to the destination, unless its turns are taken beyond the horizon.
 * `reserveMs` lengthens this turn alone: a worker that expects to leave that much later than PACE_LATE_MS allows
 * (its ledger answers slowly, its event loop stalls) takes a longer turn instead of leaving on the next one's heels.
 */
export async function takeReadbackTurn(
  db: LedgerDb,
  destination: string,
  ratePerSecond: number,
  horizonMs = PACE_HORIZON_MS,
  reserveMs = 0,
): Promise<ReadbackTurn> {
  const step = sql`${paceIntervalMs(ratePerSecond) + Math.max(0, reserveMs)} * interval '1 millisecond'`;
  // A turn starts at max(next_at, now); next_at moves one step past it. The WHERE leaves a row whose next_at
  // is beyond the horizon alone, and then nothing is returned.
  const [turn] = await db.execute<{ wait_ms: number; starts_at: string }>(sql`
    INSERT INTO readback_pace AS p (destination, next_at) VALUES (${destination}, clock_timestamp() + ${step})
    ON CONFLICT (destination) DO UPDATE SET next_at = greatest(p.next_at, clock_timestamp()) + ${step}
      WHERE p.next_at <= clock_timestamp() + ${horizonMs} * interval '1 millisecond'
    RETURNING greatest(0, extract(epoch FROM (p.next_at - ${step} - clock_timestamp())) * 1000)::float8 AS wait_ms,
      p.next_at - ${step} AS starts_at`);
  if (turn) return { taken: true, waitMs: Number(turn.wait_ms), startsAt: new Date(turn.starts_at) };
  const [ahead] = await db.execute<{ ahead_ms: number }>(sql`
    SELECT greatest(0, extract(epoch FROM (next_at - clock_timestamp())) * 1000)::float8 AS ahead_ms
    FROM readback_pace WHERE destination = ${destination}`);
  // Back once most of what is queued ahead has left (at least a second: the provider is busy anyway).
  return { taken: false, retryInMs: Math.max(1000, Math.round(Number(ahead?.ahead_ms ?? 0) - horizonMs / 2)) };
}
