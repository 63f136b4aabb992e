// The happy path's two writes, one statement each, made by the send activity itself: the attempt
// (intent, committed before any byte leaves) and the provider's answer (evidence, the fact when it
// confirms, and the stage). The database's constraints and triggers guard them as they guard every write.
import { sql } from 'drizzle-orm';
import type { ReleasedPackage } from '../domain/destination-contract.js';
import type { OutcomeClass } from '../domain/outcomes.js';
import { type EffectStage, TERMINAL_STAGES } from '../domain/stages.js';
import type { LedgerDb } from './db.js';
import { type AttemptInput, factTimeOrRefuse } from './progress.js';
import { oneOf } from './sql-words.js';

const terminal = oneOf(TERMINAL_STAGES);

/** The attempt to write: the row progress.ts's recordAttempt writes for v1/v2 runs, its key read from the release. */
export type AttemptIntent = Omit<AttemptInput, 'idempotencyKey'>;

/** What the ledger held when the attempt was asked for, and the attempt if it was written. */
export interface AttemptBegun {
  /** Set when the row was written: the request may now leave. */
  attempt: { attemptId: number; startedAt: Date } | null;
  release: { package: ReleasedPackage; destination: string; operation: string; idempotencyKey: string } | null;
  stage: EffectStage | null;
  /** The revision the effect is on: an attempt of another one is never written (its run hands over). */
  effectRevision: number | null;
  /** The highest attempt number the ledger holds for this step (0 for none). */
  highestAttempt: number;
  firstAttemptStartedAt: Date | null;
  fact: { externalId: string; externalUrl: string | null } | null;
  /**
   * How the effect was approved to dedupe (effects.mechanism), when the step goes to the effect's own destination:
   * a worker whose declaration of it says otherwise today writes nothing (its request would go without the
   * protection the effect was approved under).
   */
  approvedMechanism: string | null;
}

interface BeginRow extends Record<string, unknown> {
  mechanism: string | null;
  effect_destination: string | null;
  attempt_id: string | null;
  started_at: string | null;
  package: ReleasedPackage | null;
  destination: string | null;
  operation: string | null;
  idempotency_key: string | null;
  stage: EffectStage | null;
  effect_revision: number | null;
  highest_attempt: string | null;
  first_started_at: string | null;
  fact_external_id: string | null;
  fact_external_url: string | null;
}

/**
 * Writes attempt N of a step's release revision and moves the effect to `attempted`, in one statement, only
 * if the step is released, the effect is on that revision and not terminal, the step has no fact, no attempt
 * of that revision numbered N or higher exists (an earlier run's attempt whose outcome this run does not
 * know), and the calling worker hosts the step's destination (an attempt it could not send is never written).
 * The key is the one released with the step. Otherwise writes nothing and says what it found. The same
 * conditions but hosting are the attempt trigger's (0006), which decides when a write races this statement.
 */
export async function beginAttempt(
  db: LedgerDb,
  intent: AttemptIntent,
  /** The destinations the calling worker hosts: for any other, nothing is written (and the release says which). */
  hosts?: readonly string[],
  /**
   * How the calling worker's declaration of each hosted destination dedupes today: for a step to the effect's own
   * destination, nothing is written unless it is the mechanism the effect was approved under.
   */
  mechanisms?: Readonly<Record<string, string>>,
): Promise<AttemptBegun> {
  const { effectId, step, attemptNumber, releaseRevision, workflowRunId } = intent;
  const hosted =
    hosts === undefined
      ? sql`true`
      : hosts.length
        ? sql`released.destination IN (${sql.join(
            hosts.map((name) => sql`${name}`),
            sql`, `,
          )})`
        : sql`false`;
  const pairs = Object.entries(mechanisms ?? {});
  const approvedUnder =
    mechanisms === undefined
      ? sql`true`
      : pairs.length
        ? sql`(released.destination <> released.effect_destination OR (released.destination, released.mechanism) IN (${sql.join(
            pairs.map(([name, mechanism]) => sql`(${name}, ${mechanism})`),
            sql`, `,
          )}))`
        : sql`false`;
  const rows = await db.execute<BeginRow>(sql`
    WITH released AS (
      SELECT r.package, r.destination, r.operation, r.idempotency_key, e.stage, e.revision AS effect_revision,
             e.mechanism, e.destination AS effect_destination
      FROM releases r JOIN effects e ON e.effect_id = r.effect_id
      WHERE r.effect_id = ${effectId} AND r.revision = ${releaseRevision} AND r.step = ${step}
    ), earlier AS (
      SELECT max(attempt_number) AS highest, min(started_at) AS first
      FROM attempts WHERE effect_id = ${effectId} AND step = ${step} AND release_revision = ${releaseRevision}
    ), fact AS (
      SELECT external_id, external_url FROM facts WHERE effect_id = ${effectId} AND step = ${step}
    ), attempt AS (
      INSERT INTO attempts (effect_id, step, attempt_number, idempotency_key, release_revision, workflow_run_id)
      SELECT ${effectId}, ${step}, ${attemptNumber}, released.idempotency_key, ${releaseRevision}, ${workflowRunId}
      FROM released, earlier
      WHERE released.stage NOT IN (${terminal})
        AND released.effect_revision = ${releaseRevision}
        AND coalesce(earlier.highest, 0) < ${attemptNumber}
        AND NOT EXISTS (SELECT 1 FROM fact)
        AND ${hosted}
        AND ${approvedUnder}
      RETURNING attempt_id, started_at
    ), moved AS (
      UPDATE effects SET stage = 'attempted', stage_changed_at = now()
      WHERE effect_id = ${effectId} AND stage NOT IN ('attempted', ${terminal}) AND EXISTS (SELECT 1 FROM attempt)
      RETURNING 1
    )
    SELECT attempt.attempt_id, attempt.started_at, released.package, released.destination, released.operation,
           released.idempotency_key, released.stage, released.effect_revision, released.mechanism,
           released.effect_destination, earlier.highest AS highest_attempt,
           earlier.first AS first_started_at,
           fact.external_id AS fact_external_id, fact.external_url AS fact_external_url
    FROM earlier
    LEFT JOIN released ON true
    LEFT JOIN attempt ON true
    LEFT JOIN fact ON true`);
  const row = rows[0];
  if (!row) throw new Error(`attempt ${effectId}#${attemptNumber}: the ledger returned no row`);
  return {
    attempt:
      row.attempt_id === null
        ? null
        : { attemptId: Number(row.attempt_id), startedAt: new Date(row.started_at ?? Number.NaN) },
    release:
      row.package && row.destination && row.operation && row.idempotency_key
        ? {
            package: row.package,
            destination: row.destination,
            operation: row.operation,
            idempotencyKey: row.idempotency_key,
          }
        : null,
    stage: row.stage,
    effectRevision: row.effect_revision === null ? null : Number(row.effect_revision),
    highestAttempt: Number(row.highest_attempt ?? 0),
    firstAttemptStartedAt: row.first_started_at ? new Date(row.first_started_at) : null,
    fact: row.fact_external_id ? { externalId: row.fact_external_id, externalUrl: row.fact_external_url } : null,
    approvedMechanism: row.destination !== null && row.destination === row.effect_destination ? row.mechanism : null,
  };
}

export interface AttemptAnswer {
  effectId: string;
  step: string;
  attemptId: number;
  destination: string;
  outcome: OutcomeClass;
  httpStatus: number | null;
  detail: unknown;
  stage: EffectStage;
  /** The canonical result, when the answer confirms the effect. */
  fact?: { externalId: string; externalUrl: string | null; occurredAt: string };
}

/**
 * The answer to an attempt, the step's fact when it confirms, and the stage it leads to: one statement.
 * A confirmed step before the last leaves the effect `attempted` (the database refuses `recorded` until
 * every step has its fact).
 */
export async function recordAnswer(db: LedgerDb, answer: AttemptAnswer): Promise<void> {
  const { effectId, step, attemptId, destination, outcome, httpStatus, detail, stage, fact } = answer;
  await db.execute(sql`
    WITH evidence AS (
      INSERT INTO provider_evidence (effect_id, step, attempt_id, kind, outcome, http_status, external_id, external_url, detail)
      VALUES (${effectId}, ${step}, ${attemptId}, 'response', ${outcome}, ${httpStatus}, ${fact?.externalId ?? null},
              ${fact?.externalUrl ?? null}, ${JSON.stringify(detail ?? {})}::jsonb)
      RETURNING evidence_id
    ), fact AS (
      INSERT INTO facts (effect_id, step, destination, external_id, external_url, occurred_at, confirmed_by, evidence_id)
      SELECT ${effectId}, ${step}, ${destination}, ${fact?.externalId ?? null}, ${fact?.externalUrl ?? null},
             ${fact ? factTimeOrRefuse(fact.occurredAt) : null}::timestamptz, 'provider_response', evidence_id
      FROM evidence WHERE ${fact !== undefined}
      RETURNING effect_id
    )
    -- Reading the fact CTE makes it run before the row is updated: the stage guard then sees the fact.
    UPDATE effects SET stage = ${stage}, stage_changed_at = now()
    WHERE effect_id = ${effectId} AND stage NOT IN (${terminal}, ${stage})
      AND (${fact === undefined} OR EXISTS (SELECT 1 FROM fact))`);
}
