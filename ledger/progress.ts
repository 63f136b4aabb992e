// The effect workflow's writes, one function per step, each safe to repeat: a retried activity must
// find its own earlier row, never add a second one or overwrite history.
import { and, count, eq, min, notInArray, sql } from 'drizzle-orm';
import type { RecordedDecisionKind } from '../domain/decisions.js';
import type { ReleasedPackage } from '../domain/destination-contract.js';
import { factTime } from '../domain/fact-time.js';
import { MAIN_STEP } from '../domain/idempotency-key.js';
import type { ConfirmationMethod, Coverage, EvidenceKind, EvidenceOutcome } from '../domain/outcomes.js';
import { type EffectStage, TERMINAL_STAGES } from '../domain/stages.js';
import { storableJson, storableText } from '../domain/storable.js';
import type { LedgerDb } from './db.js';
import { LedgerInvariantError } from './errors.js';
import { attempts, decisions, effects, facts, providerEvidence, releases } from './schema.js';

type Tx = Parameters<Parameters<LedgerDb['transaction']>[0]>[0];
export type FactRow = typeof facts.$inferSelect;
export type ReleaseRow = typeof releases.$inferSelect;

/**
 * A write the database refuses by a trigger (integrity_constraint_violation) or a CHECK is an invariant,
 * not a transient failure: retrying cannot help, so it surfaces as LedgerInvariantError (non-retryable
 * in the activities) instead of an activity retried forever.
 */
const REFUSAL_CODES = new Set(['23000', '23514']);

/** The database's own words when it refused a write by a trigger or a CHECK; undefined for anything else. */
export function ledgerRefusal(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 3; current = (current as Error).cause, depth++) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && REFUSAL_CODES.has(code)) return String(message);
  }
  return undefined;
}

export function refusedByLedger(error: unknown): never {
  const refusal = ledgerRefusal(error);
  if (refusal !== undefined)
    throw new LedgerInvariantError(`the ledger refused the write: ${refusal}`, { cause: error });
  throw error;
}

/**
 * Moves the ledger's copy of the stage: none out of a terminal stage (the database refuses too), none to the stage
 * it is in. A query, so a look's one-statement record can put it in its CTE (recordLook).
 */
function stageMove(tx: Tx | LedgerDb, effectId: string, stage: EffectStage) {
  return tx
    .update(effects)
    .set({ stage, stageChangedAt: sql`now()` })
    .where(and(eq(effects.effectId, effectId), notInArray(effects.stage, [...TERMINAL_STAGES, stage])));
}

export interface ReleaseInput {
  effectId: string;
  revision: number;
  /** v1/v2 runs release only the main step, where their effect goes. */
  destination: string;
  operation: string;
  target: string;
  package: ReleasedPackage;
  bodySha256: string;
  releasedBy: string;
  idempotencyKey: string;
}

export interface ReleaseState {
  release: ReleaseRow;
  fact: FactRow | null;
  attemptsSoFar: number;
  firstAttemptStartedAt: Date | null;
}

/** Fixes the package allowed to leave. A second call with the same body is a no-op; another body is refused. */
export async function releaseEffect(db: LedgerDb, input: ReleaseInput, step: string): Promise<ReleaseState> {
  return db
    .transaction(async (tx) => {
      await tx
        .insert(releases)
        .values(input)
        .onConflictDoNothing({ target: [releases.effectId, releases.revision, releases.step] });
      const [release] = await tx
        .select()
        .from(releases)
        .where(
          and(eq(releases.effectId, input.effectId), eq(releases.revision, input.revision), eq(releases.step, step)),
        );
      if (!release) throw new LedgerInvariantError(`release ${input.effectId}#${input.revision} vanished`);
      if (release.bodySha256 !== input.bodySha256) {
        throw new LedgerInvariantError(
          `release ${input.effectId}#${input.revision} exists with another body; an edit needs a new revision`,
        );
      }
      const [fact] = await tx
        .select()
        .from(facts)
        .where(and(eq(facts.effectId, input.effectId), eq(facts.step, step)));
      const [made] = await tx
        .select({ n: count(), first: min(attempts.startedAt) })
        .from(attempts)
        .where(and(eq(attempts.effectId, input.effectId), eq(attempts.step, step)));
      if (!fact)
        await tx
          .update(effects)
          .set({ stage: 'released', stageChangedAt: sql`now()` })
          .where(and(eq(effects.effectId, input.effectId), eq(effects.stage, 'prepared')));
      return { release, fact: fact ?? null, attemptsSoFar: made?.n ?? 0, firstAttemptStartedAt: made?.first ?? null };
    })
    .catch(refusedByLedger);
}

export interface AttemptInput {
  effectId: string;
  step: string;
  attemptNumber: number;
  idempotencyKey: string;
  releaseRevision: number;
  workflowRunId: string;
}

/** Intent before send: the attempt row exists before any byte leaves. */
export async function recordAttempt(
  db: LedgerDb,
  input: AttemptInput,
): Promise<{ attemptId: number; startedAt: Date }> {
  return db
    .transaction(async (tx) => {
      await tx
        .insert(attempts)
        .values(input)
        .onConflictDoNothing({
          target: [attempts.effectId, attempts.step, attempts.releaseRevision, attempts.attemptNumber],
        });
      const [row] = await tx
        .select({ attemptId: attempts.attemptId, startedAt: attempts.startedAt, key: attempts.idempotencyKey })
        .from(attempts)
        .where(
          and(
            eq(attempts.effectId, input.effectId),
            eq(attempts.step, input.step),
            eq(attempts.releaseRevision, input.releaseRevision),
            eq(attempts.attemptNumber, input.attemptNumber),
          ),
        );
      if (!row || row.key !== input.idempotencyKey)
        throw new LedgerInvariantError(
          `attempt ${input.effectId}/${input.step}#${input.attemptNumber} exists with another key`,
        );
      await stageMove(tx, input.effectId, 'attempted');
      return { attemptId: row.attemptId, startedAt: row.startedAt };
    })
    .catch(refusedByLedger);
}

export interface EvidenceInput {
  effectId: string;
  /** The step it speaks of (`main` when absent). */
  step?: string;
  attemptId: number | null;
  kind: EvidenceKind;
  outcome: EvidenceOutcome;
  httpStatus?: number | null;
  externalId?: string | null;
  externalUrl?: string | null;
  coverage?: Coverage | null;
  detail: unknown;
}

/**
 * A fact's time as the database takes it (ISO text of a plausible creation time). Adapters' answers are checked
 * before they cross into the ledger (activities/crossing-checks.ts): this refuses what slipped past, naming the field,
 * instead of letting `::timestamptz` fail the same way on every retry.
 */
export function factTimeOrRefuse(occurredAt: string): string {
  const time = factTime(occurredAt);
  if (!time.ok) throw new LedgerInvariantError(`a fact's time cannot be recorded: ${time.why}`);
  return time.at.toISOString();
}

export interface FactInput {
  destination: string;
  externalId: string;
  externalUrl?: string | null;
  occurredAt: string;
  confirmedBy: ConfirmationMethod;
}

/**
 * Records what the provider said or showed and, when it confirms the effect, the fact — in one
 * transaction with the stage, so the ledger never shows "recorded" without its fact or vice versa.
 */
export async function recordEvidence(
  db: LedgerDb,
  evidence: EvidenceInput,
  stage: EffectStage,
  fact?: FactInput,
): Promise<{ evidenceId: number; fact: FactRow | null }> {
  if (!fact && evidence.kind !== 'response') return recordLook(db, evidence, stage);
  return db
    .transaction(async (tx) => {
      let evidenceId: number | undefined;
      if (evidence.kind === 'response' && evidence.attemptId !== null) {
        // One response per attempt (partial unique index): a retried activity finds its own row.
        const [existing] = await tx
          .select({ evidenceId: providerEvidence.evidenceId })
          .from(providerEvidence)
          .where(and(eq(providerEvidence.attemptId, evidence.attemptId), eq(providerEvidence.kind, 'response')));
        evidenceId = existing?.evidenceId;
      }
      if (evidenceId === undefined) {
        const [row] = await tx
          .insert(providerEvidence)
          // What a provider said, made storable: a NUL in its answer must not block the record forever.
          .values({ ...evidence, detail: storableJson(evidence.detail ?? {}) })
          .returning({ evidenceId: providerEvidence.evidenceId });
        if (!row) throw new LedgerInvariantError(`evidence for ${evidence.effectId} was not written`);
        evidenceId = row.evidenceId;
      }
      let factRow: FactRow | null = null;
      if (fact) {
        const step = evidence.step ?? MAIN_STEP;
        await tx
          .insert(facts)
          .values({
            effectId: evidence.effectId,
            step,
            ...fact,
            occurredAt: new Date(factTimeOrRefuse(fact.occurredAt)),
            evidenceId,
          })
          .onConflictDoNothing({ target: [facts.effectId, facts.step] });
        const [row] = await tx
          .select()
          .from(facts)
          .where(and(eq(facts.effectId, evidence.effectId), eq(facts.step, step)));
        if (!row || row.externalId !== fact.externalId) {
          throw new LedgerInvariantError(
            `effect ${evidence.effectId} step ${step} already has fact ${row?.externalId}; refusing ${fact.externalId}`,
          );
        }
        factRow = row;
      }
      await stageMove(tx, evidence.effectId, stage);
      return { evidenceId, fact: factRow };
    })
    .catch(refusedByLedger);
}

/**
 * Evidence without a fact (a look that found nothing, or found what it cannot settle) and the stage: one statement,
 * no transaction — thousands of waiting effects each write one per look, and a transaction's BEGIN and COMMIT were
 * two of its four round trips.
 */
async function recordLook(
  db: LedgerDb,
  evidence: EvidenceInput,
  stage: EffectStage,
): Promise<{ evidenceId: number; fact: null }> {
  const recorded = db.$with('recorded').as(
    db
      .insert(providerEvidence)
      .values({ ...evidence, detail: storableJson(evidence.detail ?? {}) })
      .returning({ evidenceId: providerEvidence.evidenceId }),
  );
  const staged = db
    .$with('staged')
    .as(stageMove(db, evidence.effectId, stage).returning({ effectId: effects.effectId }));
  const [row] = await db
    .with(recorded, staged)
    .select({ evidenceId: recorded.evidenceId })
    .from(recorded)
    .catch(refusedByLedger);
  if (!row) throw new LedgerInvariantError(`evidence for ${evidence.effectId} was not written`);
  return { evidenceId: row.evidenceId, fact: null };
}

export interface DecisionInput {
  requestRef: string;
  effectId: string;
  kind: RecordedDecisionKind;
  actor: string;
  reason: string;
  payload: unknown;
  accepted: boolean;
  rejectionReason?: string | null;
  /** The run taking it (its own retried write finds its row; another run's row with the reference is a repeat). */
  workflowRunId?: string | null;
}

/** What the ledger holds under a decision's reference once the write returns. */
export interface DecisionTaken {
  /**
   * False when another run already took a decision under this reference (a caller's decision ID sent again
   * after the run continued as new): nothing was written, the stage did not move.
   */
  first: boolean;
  accepted: boolean;
  rejectionReason: string | null;
}

/**
 * A human's decision, accepted or not; with `stage`, moves the effect in the same transaction. The reference is
 * unique per effect: the database, not a prior read, decides that a decision ID sent twice is one decision.
 */
export async function recordDecision(
  db: LedgerDb,
  decision: DecisionInput,
  stage?: EffectStage,
): Promise<DecisionTaken> {
  return db
    .transaction(async (tx) => {
      const inserted = await tx
        .insert(decisions)
        .values({
          ...decision,
          // A refused payload is recorded as it arrived, made storable: NUL or a lone surrogate in it (or
          // in the actor or reason it names) must not make this write fail on every retry.
          actor: storableText(decision.actor),
          reason: storableText(decision.reason),
          payload: { value: storableJson(decision.payload ?? null) },
          rejectionReason: decision.rejectionReason == null ? null : storableText(decision.rejectionReason),
          workflowRunId: decision.workflowRunId ?? null,
        })
        .onConflictDoNothing({ target: [decisions.effectId, decisions.requestRef] })
        .returning({ accepted: decisions.accepted, rejectionReason: decisions.rejectionReason });
      let taken: DecisionTaken | undefined = inserted[0] && { first: true, ...inserted[0] };
      if (!taken) {
        const [earlier] = await tx
          .select()
          .from(decisions)
          .where(and(eq(decisions.effectId, decision.effectId), eq(decisions.requestRef, decision.requestRef)));
        if (!earlier) throw new LedgerInvariantError(`decision ${decision.requestRef} conflicted but cannot be read`);
        // The same run writing again (a retried activity) is this decision, not a repeat of it.
        const ours = earlier.workflowRunId !== null && earlier.workflowRunId === (decision.workflowRunId ?? null);
        taken = { first: ours, accepted: earlier.accepted, rejectionReason: earlier.rejectionReason };
      }
      if (stage && taken.first) await stageMove(tx, decision.effectId, stage);
      return taken;
    })
    .catch(refusedByLedger);
}

/** The decision recorded under a reference, if any. */
export async function readDecision(db: LedgerDb, effectId: string, requestRef: string) {
  const [row] = await db
    .select()
    .from(decisions)
    .where(and(eq(decisions.effectId, effectId), eq(decisions.requestRef, requestRef)));
  return row ?? null;
}
