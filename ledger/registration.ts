// Approval's write: the effect ID enters the ledger once, with its fingerprint and the exact packages
// allowed to leave (its immutable release, revision 1: one row per outbound step), in one statement. The
// primary key, not a prior SELECT, decides who registered it; the loser of a race reads the winner's row.
import { eq, sql } from 'drizzle-orm';
import type { ReleasedPackage } from '../domain/destination-contract.js';
import { idempotencyKeyFor } from '../domain/idempotency-key.js';
import type { LedgerDb } from './db.js';
import { EffectConflictError } from './errors.js';
import { effects, releases } from './schema.js';

export type EffectRow = typeof effects.$inferSelect;
export type EffectRegistration = Omit<typeof effects.$inferInsert, 'stage' | 'approvedAt' | 'stageChangedAt'>;

/** One outbound step's exact package, as a release row holds it. */
export interface ReleasedStep {
  step: string;
  /** The order steps leave in; main is 1. */
  position: number;
  destination: string;
  operation: string;
  package: ReleasedPackage;
  bodySha256: string;
  /** The key its attempts carry (and the reference stamped in its package); absent: the step's own. */
  idempotencyKey?: string;
}

export interface InitialRelease {
  steps: ReleasedStep[];
}

export async function registerEffect(
  db: LedgerDb,
  registration: EffectRegistration,
  release: InitialRelease,
): Promise<{ created: boolean; effect: EffectRow }> {
  // The effect is born released: its release rows commit with it or not at all.
  const effect = db.$with('effect').as(
    db
      .insert(effects)
      .values({ ...registration, stage: 'released' })
      .onConflictDoNothing({ target: effects.effectId })
      .returning(),
  );
  const steps = JSON.stringify(
    release.steps.map((s) => ({
      ...s,
      target: s.package.target,
      package: s.package,
      body_sha256: s.bodySha256,
      idempotency_key: s.idempotencyKey ?? idempotencyKeyFor(registration.effectId, s.step),
    })),
  );
  // Columns in the table's order (drizzle lists them all for an INSERT … SELECT).
  const released = db.$with('released').as(
    db
      .insert(releases)
      .select(
        sql`SELECT effect.effect_id, 1, s.step, s.position, s.destination, s.operation, s.target, s.package,
                   s.body_sha256, effect.approved_by, s.idempotency_key, now()
            FROM effect, jsonb_to_recordset(${steps}::jsonb)
              AS s(step text, position integer, destination text, operation text, target text, package jsonb,
                   body_sha256 text, idempotency_key text)`,
      )
      .returning({ revision: releases.revision }),
  );
  const [inserted] = await db.with(effect, released).select().from(effect);
  if (inserted) return { created: true, effect: inserted };
  const [existing] = await db.select().from(effects).where(eq(effects.effectId, registration.effectId));
  if (!existing) throw new Error(`effect ${registration.effectId} conflicted on insert but cannot be read`);
  if (existing.fingerprint !== registration.fingerprint) {
    throw new EffectConflictError(registration.effectId, existing.fingerprint, registration.fingerprint);
  }
  return { created: false, effect: existing };
}
