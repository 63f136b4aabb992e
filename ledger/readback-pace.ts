// Readback requests take turns per destination (schema.ts, readback_pace), across every worker: one upsert
// moves the destination's next free moment forward by one request's share of a second and answers how long
// this request waits for its own moment. The ledger's clock decides, never a worker's (a worker whose clock
// runs ahead would otherwise leave early), and the wait is a duration, so the worker's clock never enters.
//
// A request may reach the provider after its moment (the ledger's answer travels, a sleep overruns): each turn
// reserves how late its request may leave, and a turn starts only a second after the turn a second's worth of
// turns before it may have left. So however late each request leaves within its reservation, no second holds
// more than the rate; and the lateness is paid once a second, not on every turn (a step of 1/rate plus the
// lateness, as before, let a 50-a-second destination read at 14 a second on a loaded machine).
import { type SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { LedgerDb } from './db.js';

const dialect = new PgDialect();

/**
 * A request's share of a second is a little more than 1/rate: turns taken at once leave a little room between
 * them (a request slower on the network than the one before it does not reach the provider on its heels).
 */
export const PACE_MARGIN = 0.05;

/**
 * The least lateness a turn reserves: a request that leaves within this of its moment keeps the promise without
 * any reservation of its own beyond the margin (PACE_MARGIN's 50 ms in a second, less room for the network).
 */
export const PACE_LATE_MS = 40;

/** Room for the network in the window: a request that travels this much slower than one a second before it. */
export const PACE_NETWORK_MS = 10;

/**
 * The most turns in a destination's window: above 1,000 a second the window is a fraction of a second holding
 * that fraction of the rate (a destination may declare up to 10,000).
 */
const MAX_WINDOW_TURNS = 1000;

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
 * The window a destination's turns keep: `turns` of them may leave in any `ms` (a second's worth for up to 1,000
 * a second; below one a second, one turn in 1/rate seconds).
 */
export function paceWindow(ratePerSecond: number): { turns: number; ms: number } {
  const parts = Math.ceil(ratePerSecond / MAX_WINDOW_TURNS);
  const turns = Math.max(1, Math.floor(ratePerSecond / parts));
  return { turns, ms: (turns * 1000) / ratePerSecond };
}

/**
 * Takes the next turn for one request to the destination, unless its turns are taken beyond the horizon.
 * `reserveMs` is how late after its moment the request may leave (at least PACE_LATE_MS): a worker that expects
 * to leave late (its ledger answers slowly, its event loop stalls) reserves more, and the turn a window later
 * starts that much later. Given as a function, it is asked once a connection of the pool is this turn's, just
 * before the statement leaves: the wait for a free connection comes before the turn is decided, so it makes no
 * request late, and a caller timing its lateness from there neither reserves for the pool's queue nor decides
 * its reservation before the answers of the turns queued ahead of it have told it how late they were.
 */
export async function takeReadbackTurn(
  db: LedgerDb,
  destination: string,
  ratePerSecond: number,
  horizonMs = PACE_HORIZON_MS,
  reserveMs: number | (() => number) = PACE_LATE_MS,
): Promise<ReadbackTurn> {
  const ms = (n: number) => sql`${n}::float8 * interval '1 millisecond'`;
  const step = ms(paceIntervalMs(ratePerSecond));
  const window = paceWindow(ratePerSecond);
  const turns = sql`${window.turns}::int`;
  // A turn starts at the latest of: the next free moment, now, and a window after the latest moment the turn a
  // window's worth before it may have left (none while fewer turns were taken: a NULL, which greatest ignores).
  const start = sql`greatest(p.next_at, clock_timestamp(),
    p.latest_departures[cardinality(p.latest_departures) + 1 - ${turns}] + ${ms(window.ms + PACE_NETWORK_MS)})`;
  const connection = await db.$client.reserve();
  try {
    const run = async <T>(query: SQL): Promise<T[]> => {
      const { sql: text, params } = dialect.sqlToQuery(query);
      return (await connection.unsafe(text, params as never[])) as unknown as T[];
    };
    const reserve = ms(Math.max(PACE_LATE_MS, typeof reserveMs === 'function' ? reserveMs() : reserveMs));
    // The WHERE leaves a row whose next turn is beyond the horizon alone, and then nothing is returned.
    const [turn] = await run<{ wait_ms: number; starts_at: string }>(sql`
      INSERT INTO readback_pace AS p (destination, next_at, latest_departures)
        VALUES (${destination}, clock_timestamp() + ${step}, ARRAY[clock_timestamp() + ${reserve}])
      ON CONFLICT (destination) DO UPDATE SET
        next_at = ${start} + ${step},
        latest_departures =
          (p.latest_departures || (${start} + ${reserve}))[greatest(1, cardinality(p.latest_departures) + 2 - ${turns}):]
        WHERE ${start} <= clock_timestamp() + ${ms(horizonMs)}
      RETURNING greatest(0, extract(epoch FROM (p.next_at - ${step} - clock_timestamp())) * 1000)::float8 AS wait_ms,
        p.next_at - ${step} AS starts_at`);
    if (turn) return { taken: true, waitMs: Number(turn.wait_ms), startsAt: new Date(turn.starts_at) };
    const [ahead] = await run<{ ahead_ms: number }>(sql`
      SELECT greatest(0, extract(epoch FROM (${start} - clock_timestamp())) * 1000)::float8 AS ahead_ms
      FROM readback_pace p WHERE destination = ${destination}`);
    // Back once most of what is queued ahead has left (at least a second: the provider is busy anyway).
    return { taken: false, retryInMs: Math.max(1000, Math.round(Number(ahead?.ahead_ms ?? 0) - horizonMs / 2)) };
  } finally {
    connection.release();
  }
}
