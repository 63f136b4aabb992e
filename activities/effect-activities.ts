// The effect workflow's activities. Ledger steps are idempotent and retried freely; the provider call
// is one attempt per activity execution (the workflow sets maximumAttempts: 1) because a blind retry
// after the request may have left is exactly the double effect we exist to prevent.

import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { deadlineSignal } from '../domain/deadline-signal.js';
import type { ReleasedPackage, SendOutcome } from '../domain/destination-contract.js';
import { idempotencyKeyFor } from '../domain/idempotency-key.js';
import type { OutcomeClass } from '../domain/outcomes.js';
import type { EffectStage } from '../domain/stages.js';
import type { LedgerDb } from '../ledger/db.js';
import { LedgerInvariantError } from '../ledger/errors.js';
import { canonicalJson, sha256Hex } from '../ledger/fingerprint.js';
import { recordAttempt, recordEvidence, releaseEffect } from '../ledger/progress.js';
import { readEffect, readRelease, readReleasedSteps } from '../ledger/trail.js';
import { checkedSend, sendErrorOutcome } from './crossing-checks.js';
import { requireHosted } from './destination-hosting.js';
import type { Destinations } from './destinations/registry.js';
import { type EffectMetrics, NO_METRICS } from './effect-metrics.js';

export interface ActivityDeps {
  db: LedgerDb;
  destinations: Destinations;
  /** Counters per destination (attempts, outcomes, readbacks, decisions); none by default. */
  metrics?: EffectMetrics;
}

export interface ReleaseResult {
  revision: number;
  /** Set when the ledger already holds this effect's fact: nothing more to do. */
  fact: { externalId: string; externalUrl: string | null } | null;
  /** Attempts earlier runs made: a new run must not assume the provider was never contacted. */
  attemptsSoFar: number;
  firstAttemptStartedAt: string | null;
}

/** v5: the revision an effect is on now, its stage, and the key each step of that revision carries. */
export interface CurrentRelease {
  revision: number;
  stage: string;
  keys: Record<string, string>;
}

export interface AttemptRef {
  effectId: string;
  step: string;
  attemptNumber: number;
  attemptId: number;
  idempotencyKey: string;
  startedAt: string;
}

/** Non-retryable: retrying cannot fix a broken invariant or a missing registration. */
function invariantFailure(error: unknown): never {
  if (error instanceof LedgerInvariantError) throw ApplicationFailure.nonRetryable(error.message, error.name);
  throw error;
}

export function createEffectActivities({ db, destinations, metrics = NO_METRICS }: ActivityDeps) {
  return {
    /** Where the effect is now: a run that finds itself on an older revision hands over to this one. */
    async currentRelease(effectId: string): Promise<CurrentRelease> {
      const [effect, steps] = await Promise.all([readEffect(db, effectId), readReleasedSteps(db, effectId)]);
      if (!effect) throw ApplicationFailure.nonRetryable(`effect ${effectId} is not in the ledger`, 'EffectNotFound');
      return {
        revision: effect.revision,
        stage: effect.stage,
        keys: Object.fromEntries(steps.map((s) => [s.step, s.idempotencyKey])),
      };
    },

    /** prepared → released: fixes the exact package from the approved payload (revision 1). */
    async releaseEffect(effectId: string, step: string): Promise<ReleaseResult> {
      const effect = await readEffect(db, effectId);
      if (!effect)
        throw ApplicationFailure.nonRetryable(
          `effect ${effectId} is not in the ledger; approve it first`,
          'EffectNotFound',
        );
      const pkg = requireHosted(destinations, effect.destination).buildPackage(
        effectId,
        effect.operation,
        effect.payload as Record<string, unknown>,
      );
      const state = await releaseEffect(
        db,
        {
          effectId,
          revision: 1,
          destination: effect.destination,
          operation: effect.operation,
          target: pkg.target,
          package: pkg,
          bodySha256: sha256Hex(canonicalJson(pkg.body)),
          releasedBy: effect.approvedBy,
          // v1/v2 runs only ever release revision 1: its key is the step's own.
          idempotencyKey: idempotencyKeyFor(effectId, step),
        },
        step,
      ).catch(invariantFailure);
      return {
        revision: state.release.revision,
        fact: state.fact && { externalId: state.fact.externalId, externalUrl: state.fact.externalUrl },
        attemptsSoFar: state.attemptsSoFar,
        firstAttemptStartedAt: state.firstAttemptStartedAt?.toISOString() ?? null,
      };
    },

    /** → attempted: the attempt row, with its effect-scoped key, is written before anything is sent. */
    async recordAttempt(
      effectId: string,
      step: string,
      attemptNumber: number,
      releaseRevision: number,
    ): Promise<AttemptRef> {
      const idempotencyKey = idempotencyKeyFor(effectId, step);
      const { workflowExecution } = Context.current().info;
      const row = await recordAttempt(db, {
        effectId,
        step,
        attemptNumber,
        idempotencyKey,
        releaseRevision,
        workflowRunId: workflowExecution?.runId ?? 'outside-a-workflow',
      }).catch(invariantFailure);
      const released = await readRelease(db, effectId, releaseRevision, step);
      if (released) metrics.attempt(released.destination);
      return {
        effectId,
        step,
        attemptNumber,
        attemptId: row.attemptId,
        idempotencyKey,
        startedAt: row.startedAt.toISOString(),
      };
    },

    /** The one call that can create the external object. Never throws for a provider outcome: it classifies. */
    async sendToDestination(attempt: AttemptRef, releaseRevision: number, timeoutMs: number): Promise<SendOutcome> {
      const found = await readRelease(db, attempt.effectId, releaseRevision);
      if (!found)
        throw ApplicationFailure.nonRetryable(
          `release ${attempt.effectId}#${releaseRevision} not found`,
          'ReleaseNotFound',
        );
      const adapter = requireHosted(destinations, found.destination);
      // The exact released package leaves, never a re-derivation of it.
      const pkg = found.release.package as ReleasedPackage;
      const callDeadline = deadlineSignal(timeoutMs, Context.current().cancellationSignal);
      const outcome = checkedSend(
        await adapter
          .send({
            effectId: attempt.effectId,
            idempotencyKey: attempt.idempotencyKey,
            operation: found.operation,
            package: pkg,
            timeoutMs,
            signal: callDeadline.signal,
          })
          .catch((error: unknown) => {
            const unreadable = sendErrorOutcome(error);
            if (!unreadable) throw error;
            return unreadable;
          })
          .finally(callDeadline.clear),
      );
      metrics.outcome(found.destination, outcome.class);
      log.info('attempt answered', {
        effectId: attempt.effectId,
        destination: found.destination,
        attemptNumber: attempt.attemptNumber,
        outcome: outcome.class,
      });
      return outcome;
    },

    /** Writes the provider's answer to an attempt, the fact when it confirms, and the next stage. */
    async recordResponse(
      attempt: AttemptRef,
      destination: string,
      outcome: SendOutcome,
      stage: EffectStage,
    ): Promise<void> {
      const confirmed = outcome.class === 'confirmed' ? outcome : undefined;
      await recordEvidence(
        db,
        {
          effectId: attempt.effectId,
          step: attempt.step,
          attemptId: attempt.attemptId,
          kind: 'response',
          outcome: outcome.class satisfies OutcomeClass,
          httpStatus: 'httpStatus' in outcome ? (outcome.httpStatus ?? null) : null,
          externalId: confirmed?.externalId ?? null,
          externalUrl: confirmed?.externalUrl ?? null,
          detail: outcome.detail,
        },
        stage,
        confirmed && {
          destination,
          externalId: confirmed.externalId,
          externalUrl: confirmed.externalUrl ?? null,
          occurredAt: confirmed.occurredAt,
          confirmedBy: 'provider_response',
        },
      ).catch(invariantFailure);
    },
  };
}
