// The effects the ledger reconciler could not give a running workflow, and why (schema.ts, start_failures).
// A pass upserts a row per failed start, deletes it when a start succeeds, and, once it has been through
// every page, deletes the rows no pass refreshed since it began: a row lives exactly as long as passes fail.
import { asc, eq, lt, sql } from 'drizzle-orm';
import type { LedgerDb } from './db.js';
import { effects, startFailures } from './schema.js';

export type StartFailure = typeof startFailures.$inferSelect;

/** The most of a reason the ledger keeps (its CHECK): enough for a server's refusal and its cause. */
export const MAX_START_FAILURE_REASON = 2000;

/** The ledger's clock now: passes compare rows by it, never by a worker's clock. */
export async function ledgerNow(db: LedgerDb): Promise<Date> {
  const [row] = await db.execute<{ now: string }>(sql`SELECT now() AS now`);
  return new Date(String(row?.now));
}

/**
 * One more failed start of an effect: the first records when it began, every one refreshes the reason.
 * Two workers' passes can fail the same start at once, and the one whose transaction began first may update
 * the row the other inserted: its now() is older than the row's first failure, so the newest time wins.
 */
export async function recordStartFailure(
  db: Pick<LedgerDb, 'insert'>,
  effectId: string,
  reason: string,
): Promise<void> {
  const text = reason.length > MAX_START_FAILURE_REASON ? `${reason.slice(0, MAX_START_FAILURE_REASON - 1)}…` : reason;
  await db
    .insert(startFailures)
    .values({ effectId, reason: text || 'no reason given' })
    .onConflictDoUpdate({
      target: startFailures.effectId,
      set: {
        reason: sql`excluded.reason`,
        lastFailedAt: sql`GREATEST(${startFailures.lastFailedAt}, now())`,
        failures: sql`${startFailures.failures} + 1`,
      },
    });
}

/** The effect was started (or found running): it is no longer one the reconciler cannot start. */
export async function clearStartFailure(db: LedgerDb, effectId: string): Promise<void> {
  await db.delete(startFailures).where(eq(startFailures.effectId, effectId));
}

/** After a full pass that began at `passBegan`: rows no pass has refreshed since then are not current. */
export async function clearStartFailuresBefore(db: LedgerDb, passBegan: Date): Promise<number> {
  const gone = await db
    .delete(startFailures)
    .where(lt(startFailures.lastFailedAt, passBegan))
    .returning({ effectId: startFailures.effectId });
  return gone.length;
}

export async function readStartFailure(db: LedgerDb, effectId: string): Promise<StartFailure | null> {
  const [row] = await db.select().from(startFailures).where(eq(startFailures.effectId, effectId));
  return row ?? null;
}

export interface UnstartableEffect extends StartFailure {
  stage: string;
  destination: string;
  operation: string;
  summary: string;
  stageChangedAt: Date;
}

/** Every effect the latest passes could not start, the longest-failing first. */
export async function listStartFailures(db: LedgerDb, limit = 100): Promise<UnstartableEffect[]> {
  return db
    .select({
      effectId: startFailures.effectId,
      reason: startFailures.reason,
      firstFailedAt: startFailures.firstFailedAt,
      lastFailedAt: startFailures.lastFailedAt,
      failures: startFailures.failures,
      stage: effects.stage,
      destination: effects.destination,
      operation: effects.operation,
      summary: effects.summary,
      stageChangedAt: effects.stageChangedAt,
    })
    .from(startFailures)
    .innerJoin(effects, eq(effects.effectId, startFailures.effectId))
    .orderBy(asc(startFailures.firstFailedAt), asc(startFailures.effectId))
    .limit(limit);
}
