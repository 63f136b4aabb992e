// Reads that answer an operator's questions: how many attempts, which approval, was the provider
// contacted, which external object is the result, on what evidence.
import { and, asc, desc, eq, lt, max, notInArray, sql } from 'drizzle-orm';
import { type EffectStage, TERMINAL_STAGES } from '../domain/stages.js';
import type { LedgerDb } from './db.js';
import { attempts, decisions, effects, facts, providerEvidence, releases } from './schema.js';

export interface EffectTrail {
  effect: typeof effects.$inferSelect;
  releases: (typeof releases.$inferSelect)[];
  attempts: (typeof attempts.$inferSelect)[];
  evidence: (typeof providerEvidence.$inferSelect)[];
  fact: typeof facts.$inferSelect | null;
  decisions: (typeof decisions.$inferSelect)[];
}

export async function readTrail(db: LedgerDb, effectId: string): Promise<EffectTrail | null> {
  const [effect] = await db.select().from(effects).where(eq(effects.effectId, effectId));
  if (!effect) return null;
  const [releaseRows, attemptRows, evidenceRows, factRows, decisionRows] = await Promise.all([
    db.select().from(releases).where(eq(releases.effectId, effectId)).orderBy(asc(releases.revision)),
    db.select().from(attempts).where(eq(attempts.effectId, effectId)).orderBy(asc(attempts.attemptId)),
    db
      .select()
      .from(providerEvidence)
      .where(eq(providerEvidence.effectId, effectId))
      .orderBy(asc(providerEvidence.evidenceId)),
    db.select().from(facts).where(eq(facts.effectId, effectId)),
    db.select().from(decisions).where(eq(decisions.effectId, effectId)).orderBy(asc(decisions.decisionId)),
  ]);
  return {
    effect,
    releases: releaseRows,
    attempts: attemptRows,
    evidence: evidenceRows,
    fact: factRows[0] ?? null,
    decisions: decisionRows,
  };
}

export interface EffectListing {
  effectId: string;
  stage: string;
  destination: string;
  operation: string;
  summary: string;
  stageChangedAt: Date;
  /** When the latest attempt started; null if none was made. */
  lastAttemptAt: Date | null;
  /** The latest evidence's reason: why the effect is where it is. */
  lastReason: string | null;
}

export async function listEffectsByStage(db: LedgerDb, stage: EffectStage, limit = 100): Promise<EffectListing[]> {
  const rows = await db
    .select({
      effectId: effects.effectId,
      stage: effects.stage,
      destination: effects.destination,
      operation: effects.operation,
      summary: effects.summary,
      stageChangedAt: effects.stageChangedAt,
      // Correlated on the outer row: qualified by hand, since drizzle would render a bare "effect_id".
      lastAttemptAt: sql<
        string | null
      >`(SELECT max(a.started_at) FROM ${attempts} a WHERE a.effect_id = "effects"."effect_id")`,
      lastReason: sql<
        string | null
      >`(SELECT e.detail->>'reason' FROM ${providerEvidence} e WHERE e.effect_id = "effects"."effect_id" ORDER BY e.evidence_id DESC LIMIT 1)`,
    })
    .from(effects)
    .where(eq(effects.stage, stage))
    .orderBy(desc(effects.stageChangedAt))
    .limit(limit);
  return rows.map((r) => ({ ...r, lastAttemptAt: r.lastAttemptAt ? new Date(r.lastAttemptAt) : null }));
}

export async function readEffect(db: LedgerDb, effectId: string): Promise<typeof effects.$inferSelect | null> {
  const [effect] = await db.select().from(effects).where(eq(effects.effectId, effectId));
  return effect ?? null;
}

/** The released package and the effect's routing, in one read. */
export async function readRelease(db: LedgerDb, effectId: string, revision: number) {
  const [row] = await db
    .select({ release: releases, destination: effects.destination, operation: effects.operation })
    .from(releases)
    .innerJoin(effects, eq(effects.effectId, releases.effectId))
    .where(and(eq(releases.effectId, effectId), eq(releases.revision, revision)));
  return row ?? null;
}

export async function readFact(db: LedgerDb, effectId: string): Promise<typeof facts.$inferSelect | null> {
  const [fact] = await db.select().from(facts).where(eq(facts.effectId, effectId));
  return fact ?? null;
}

export async function readAttempt(
  db: LedgerDb,
  effectId: string,
  step: string,
  attemptNumber: number,
): Promise<typeof attempts.$inferSelect | null> {
  const [row] = await db
    .select()
    .from(attempts)
    .where(and(eq(attempts.effectId, effectId), eq(attempts.step, step), eq(attempts.attemptNumber, attemptNumber)));
  return row ?? null;
}

/** When the latest attempt of an effect's step started: our request may be in flight from then on. */
export async function lastAttemptStartedAt(db: LedgerDb, effectId: string, step: string): Promise<Date | null> {
  const [row] = await db
    .select({ at: max(attempts.startedAt) })
    .from(attempts)
    .where(and(eq(attempts.effectId, effectId), eq(attempts.step, step)));
  return row?.at ?? null;
}

/** Effects the ledger shows as not terminal, whose stage last moved before `olderThanMs` ago. */
export async function listUnfinishedEffects(
  db: LedgerDb,
  olderThanMs: number,
  limit = 10_000,
): Promise<(typeof effects.$inferSelect)[]> {
  return db
    .select()
    .from(effects)
    .where(
      and(
        notInArray(effects.stage, [...TERMINAL_STAGES]),
        lt(effects.stageChangedAt, sql`now() - make_interval(secs => ${olderThanMs / 1000})`),
      ),
    )
    .orderBy(asc(effects.stageChangedAt))
    .limit(limit);
}
