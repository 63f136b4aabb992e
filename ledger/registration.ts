// Approval's write: the effect ID enters the ledger once, with its fingerprint. The primary key, not
// a prior SELECT, decides who registered it; the loser of a race reads the winner's row.
import { eq } from 'drizzle-orm';
import type { LedgerDb } from './db.js';
import { EffectConflictError } from './errors.js';
import { effects } from './schema.js';

export type EffectRow = typeof effects.$inferSelect;
export type EffectRegistration = Omit<typeof effects.$inferInsert, 'stage' | 'approvedAt' | 'stageChangedAt'>;

export async function registerEffect(
  db: LedgerDb,
  registration: EffectRegistration,
): Promise<{ created: boolean; effect: EffectRow }> {
  const [inserted] = await db
    .insert(effects)
    .values(registration)
    .onConflictDoNothing({ target: effects.effectId })
    .returning();
  if (inserted) return { created: true, effect: inserted };
  const [existing] = await db.select().from(effects).where(eq(effects.effectId, registration.effectId));
  if (!existing) throw new Error(`effect ${registration.effectId} conflicted on insert but cannot be read`);
  if (existing.fingerprint !== registration.fingerprint) {
    throw new EffectConflictError(registration.effectId, existing.fingerprint, registration.fingerprint);
  }
  return { created: false, effect: existing };
}
