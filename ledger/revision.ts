// A person's revision of a refused effect, written in one transaction: the revision row (who, under which
// authorization, why, the new payload and its fingerprints), its release rows, and the effect's one move out
// of a terminal stage, rejected → released at the next revision. The triggers of migration 0006 refuse every
// other shape of it (a revision of an effect that is not rejected, a release without its revision, a move
// without both, steps added or dropped, a target changed); the row lock makes concurrent revisions take turns.
import { eq, sql } from 'drizzle-orm';
import type { LedgerDb } from './db.js';
import { refusedByLedger } from './progress.js';
import type { ReleasedStep } from './registration.js';
import { effects, releases, revisions } from './schema.js';

export type RevisionRow = typeof revisions.$inferSelect;

export interface RevisionRecord {
  effectId: string;
  /** The next revision: the effect's current one plus one. */
  revision: number;
  payload: Record<string, unknown>;
  fingerprint: string;
  intentSha256: string;
  approvedBy: string;
  authorizationRef: string;
  reason: string;
  /** Every step of the effect, each with its package for this revision (a settled step's, unchanged). */
  steps: (ReleasedStep & { idempotencyKey: string })[];
}

export async function recordRevision(db: LedgerDb, record: RevisionRecord): Promise<void> {
  const { effectId, revision, steps, ...approval } = record;
  await db
    .transaction(async (tx) => {
      await tx.insert(revisions).values({ effectId, revision, ...approval });
      await tx.insert(releases).values(
        steps.map((s) => ({
          effectId,
          revision,
          step: s.step,
          position: s.position,
          destination: s.destination,
          operation: s.operation,
          target: s.package.target,
          package: s.package,
          bodySha256: s.bodySha256,
          releasedBy: approval.approvedBy,
          idempotencyKey: s.idempotencyKey,
        })),
      );
      await tx
        .update(effects)
        .set({ stage: 'released', revision, stageChangedAt: sql`now()` })
        .where(eq(effects.effectId, effectId));
    })
    .catch(refusedByLedger);
}

export async function readRevisions(db: LedgerDb, effectId: string): Promise<RevisionRow[]> {
  return db.select().from(revisions).where(eq(revisions.effectId, effectId)).orderBy(revisions.revision);
}
