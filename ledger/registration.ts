// Approval's write: the effect ID enters the ledger once, with its fingerprint and the exact package
// allowed to leave (its immutable release, revision 1), in one statement. The primary key, not a prior
// SELECT, decides who registered it; the loser of a race reads the winner's row.
import { eq, sql } from 'drizzle-orm';
import type { ReleasedPackage } from '../domain/destination-contract.js';
import type { LedgerDb } from './db.js';
import { EffectConflictError } from './errors.js';
import { effects, releases } from './schema.js';

export type EffectRow = typeof effects.$inferSelect;
export type EffectRegistration = Omit<typeof effects.$inferInsert, 'stage' | 'approvedAt' | 'stageChangedAt'>;

export interface InitialRelease {
  package: ReleasedPackage;
  bodySha256: string;
}

export async function registerEffect(
  db: LedgerDb,
  registration: EffectRegistration,
  release: InitialRelease,
): Promise<{ created: boolean; effect: EffectRow }> {
  // The effect is born released: its release row commits with it or not at all.
  const effect = db.$with('effect').as(
    db
      .insert(effects)
      .values({ ...registration, stage: 'released' })
      .onConflictDoNothing({ target: effects.effectId })
      .returning(),
  );
  const released = db.$with('released').as(
    db
      .insert(releases)
      .select(
        db
          .select({
            effectId: effect.effectId,
            revision: sql<number>`1`.as('revision'),
            target: sql<string>`${release.package.target}`.as('target'),
            package: sql`${JSON.stringify(release.package)}::jsonb`.as('package'),
            bodySha256: sql<string>`${release.bodySha256}`.as('body_sha256'),
            releasedBy: effect.approvedBy,
            releasedAt: sql<Date>`now()`.as('released_at'),
          })
          .from(effect),
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
