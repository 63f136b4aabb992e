// Reads that answer an operator's questions: how many attempts, which approval, was the provider
// contacted, which external object is the result, on what evidence.
import { and, asc, desc, eq, gt, lt, max, sql } from 'drizzle-orm';
import { MAIN_STEP } from '../domain/idempotency-key.js';
import { type EffectStage, isTerminal, TERMINAL_STAGES } from '../domain/stages.js';
import type { LedgerDb } from './db.js';
import { attempts, decisions, effects, facts, providerEvidence, releases, revisions, startFailures } from './schema.js';
import { oneOf } from './sql-words.js';

export interface EffectTrail {
  effect: typeof effects.$inferSelect;
  /** People's revisions of the refused effect (2, 3, …): revision 1 is the approval, the effect row. */
  revisions: (typeof revisions.$inferSelect)[];
  releases: (typeof releases.$inferSelect)[];
  attempts: (typeof attempts.$inferSelect)[];
  evidence: (typeof providerEvidence.$inferSelect)[];
  /** The main step's fact (a single-step effect's only one). */
  fact: typeof facts.$inferSelect | null;
  /** Every step's fact, in the order the steps leave. */
  facts: (typeof facts.$inferSelect)[];
  /** The first step of the latest release without its fact: what the effect waits on (null when none). */
  waitingOnStep: string | null;
  decisions: (typeof decisions.$inferSelect)[];
}

export async function readTrail(db: LedgerDb, effectId: string): Promise<EffectTrail | null> {
  const [effect] = await db.select().from(effects).where(eq(effects.effectId, effectId));
  if (!effect) return null;
  const [revisionRows, releaseRows, attemptRows, evidenceRows, factRows, decisionRows] = await Promise.all([
    db.select().from(revisions).where(eq(revisions.effectId, effectId)).orderBy(asc(revisions.revision)),
    db
      .select()
      .from(releases)
      .where(eq(releases.effectId, effectId))
      .orderBy(asc(releases.revision), asc(releases.position)),
    db.select().from(attempts).where(eq(attempts.effectId, effectId)).orderBy(asc(attempts.attemptId)),
    db
      .select()
      .from(providerEvidence)
      .where(eq(providerEvidence.effectId, effectId))
      .orderBy(asc(providerEvidence.evidenceId)),
    db.select().from(facts).where(eq(facts.effectId, effectId)).orderBy(asc(facts.recordedAt)),
    db.select().from(decisions).where(eq(decisions.effectId, effectId)).orderBy(asc(decisions.decisionId)),
  ]);
  const latest = Math.max(0, ...releaseRows.map((r) => r.revision));
  const steps = releaseRows.filter((r) => r.revision === latest).sort((a, b) => a.position - b.position);
  const facted = new Set(factRows.map((f) => f.step));
  const waiting = steps.find((s) => !facted.has(s.step));
  return {
    effect,
    revisions: revisionRows,
    releases: releaseRows,
    attempts: attemptRows,
    evidence: evidenceRows,
    fact: factRows.find((f) => f.step === MAIN_STEP) ?? null,
    facts: steps.flatMap((s) => factRows.filter((f) => f.step === s.step)),
    waitingOnStep: waiting && !isTerminal(effect.stage as EffectStage) ? waiting.step : null,
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
  /** Set while the ledger reconciler cannot start its workflow: it has none, whatever its stage says. */
  startFailure: { reason: string; since: Date; failures: number } | null;
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
      startFailureReason: startFailures.reason,
      startFailureSince: startFailures.firstFailedAt,
      startFailures: startFailures.failures,
    })
    .from(effects)
    .leftJoin(startFailures, eq(startFailures.effectId, effects.effectId))
    .where(eq(effects.stage, stage))
    .orderBy(desc(effects.stageChangedAt))
    .limit(limit);
  return rows.map(({ startFailureReason, startFailureSince, startFailures: failures, ...r }) => ({
    ...r,
    lastAttemptAt: r.lastAttemptAt ? new Date(r.lastAttemptAt) : null,
    startFailure:
      startFailureReason !== null && startFailureSince !== null
        ? { reason: startFailureReason, since: startFailureSince, failures: failures ?? 1 }
        : null,
  }));
}

export async function readEffect(db: LedgerDb, effectId: string): Promise<typeof effects.$inferSelect | null> {
  const [effect] = await db.select().from(effects).where(eq(effects.effectId, effectId));
  return effect ?? null;
}

/** One step's released package and where it goes, in one read. */
export async function readRelease(db: LedgerDb, effectId: string, revision: number, step: string = MAIN_STEP) {
  const [release] = await db
    .select()
    .from(releases)
    .where(and(eq(releases.effectId, effectId), eq(releases.revision, revision), eq(releases.step, step)));
  return release ? { release, destination: release.destination, operation: release.operation } : null;
}

/** The steps of an effect's latest release, in the order they leave. */
export async function readReleasedSteps(db: LedgerDb, effectId: string): Promise<(typeof releases.$inferSelect)[]> {
  return db
    .select()
    .from(releases)
    .where(
      and(
        eq(releases.effectId, effectId),
        sql`${releases.revision} = (SELECT max(r.revision) FROM ${releases} r WHERE r.effect_id = ${effectId})`,
      ),
    )
    .orderBy(asc(releases.position));
}

/** The main step's fact (a single-step effect's only one). */
export async function readFact(db: LedgerDb, effectId: string): Promise<typeof facts.$inferSelect | null> {
  const [fact] = await db
    .select()
    .from(facts)
    .where(and(eq(facts.effectId, effectId), eq(facts.step, MAIN_STEP)));
  return fact ?? null;
}

/** Attempt N of a step of the effect's current revision (the only one a run may add attempts to). */
export async function readAttempt(
  db: LedgerDb,
  effectId: string,
  step: string,
  attemptNumber: number,
): Promise<typeof attempts.$inferSelect | null> {
  const [row] = await db
    .select()
    .from(attempts)
    .where(
      and(
        eq(attempts.effectId, effectId),
        eq(attempts.step, step),
        eq(attempts.attemptNumber, attemptNumber),
        sql`${attempts.releaseRevision} = (SELECT e.revision FROM ${effects} e WHERE e.effect_id = ${effectId})`,
      ),
    );
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

/** What a reconciler pass needs of an unfinished effect to decide whether to look further. */
export interface UnfinishedEffect {
  effectId: string;
  stage: string;
}

export interface UnfinishedPage {
  /** Effects whose stage last moved before this long ago (their approver may still be starting the rest). */
  olderThanMs: number;
  /** Keyset cursor: only effect IDs after this one (the last of the previous page). */
  after?: string;
  limit: number;
}

/**
 * One page of the effects the ledger shows as not terminal, by effect ID: a pass reads page after page
 * (keyset, so each page costs the same however deep it is) until one comes back short. The effect ID never
 * changes, so an effect that moves during a pass is neither skipped nor read twice. effects_unfinished_idx
 * holds only unfinished effects; its predicate is spelled here as it is there, with literals, so the planner
 * can use it whatever plan the statement gets.
 */
export async function listUnfinishedEffects(db: LedgerDb, page: UnfinishedPage): Promise<UnfinishedEffect[]> {
  return db
    .select({ effectId: effects.effectId, stage: effects.stage })
    .from(effects)
    .where(
      and(
        sql`${effects.stage} NOT IN (${oneOf(TERMINAL_STAGES)})`,
        page.after === undefined ? undefined : gt(effects.effectId, page.after),
        lt(effects.stageChangedAt, sql`now() - make_interval(secs => ${page.olderThanMs / 1000})`),
      ),
    )
    .orderBy(asc(effects.effectId))
    .limit(page.limit);
}
