// The happy path in one activity execution: write the attempt (intent before send, committed on its own),
// send the released package once, and record the answer. One provider call per execution: the workflow
// runs this with maximumAttempts 1, and anything it cannot finish becomes UNKNOWN and a readback.
import { Context, log } from '@temporalio/activity';
import type { ReleasedPackage, SendOutcome } from '../domain/destination-contract.js';
import { isTerminal, stageAfterStepOutcome } from '../domain/stages.js';
import { beginAttempt, recordAnswer } from '../ledger/attempt-log.js';
import type { LedgerDb } from '../ledger/db.js';
import { recordEvidence } from '../ledger/progress.js';
import { readAttempt, readRelease } from '../ledger/trail.js';
import { hostedAdapter, notHostedReason } from './destination-hosting.js';
import type { Destinations } from './destinations/registry.js';
import type { AttemptRef } from './effect-activities.js';
import { type EffectMetrics, NO_METRICS } from './effect-metrics.js';

/** Time kept back from the activity's deadline for writing the answer after the call. */
const ANSWER_MARGIN_MS = 1000;

export interface AttemptRequest {
  effectId: string;
  step: string;
  attemptNumber: number;
  releaseRevision: number;
  callTimeoutMs: number;
  /** False for a step of a multi-step effect before its last: confirmed, it leaves the effect attempted. */
  lastStep?: boolean;
}

export type AttemptReport =
  /** The attempt was written and the package sent (or not, with why); `recorded` says the answer is in the ledger. */
  | {
      kind: 'sent';
      attempt: AttemptRef;
      outcome: SendOutcome;
      recorded: boolean;
      /** Where the step went (a multi-step effect's steps may go to several destinations). */
      destination?: string;
    }
  /** Nothing written: the ledger already holds this effect's fact. */
  | { kind: 'recorded-before'; fact: { externalId: string; externalUrl: string | null } }
  /** Nothing written: attempts this run did not make exist (an earlier run's), or the effect is terminal. */
  | { kind: 'earlier-attempts'; highestAttempt: number; firstAttemptStartedAt: string | null; stage: string | null }
  /** Nothing written: no release row (an effect approved before releases were made at approval). */
  | { kind: 'unreleased' }
  /** Nothing written: this worker does not host the step's destination; a worker that does must make the attempt. */
  | { kind: 'not-hosted'; destination: string; reason: string };

export function createAttemptActivities({
  db,
  destinations,
  metrics = NO_METRICS,
}: {
  db: LedgerDb;
  destinations: Destinations;
  metrics?: EffectMetrics;
}) {
  return {
    /** → attempted → the provider's answer, recorded. Never throws for a provider outcome. */
    async attemptOnce(request: AttemptRequest): Promise<AttemptReport> {
      const { info } = Context.current();
      const deadline = Date.now() + info.startToCloseTimeoutMs;
      const begun = await beginAttempt(
        db,
        { ...request, workflowRunId: info.workflowExecution?.runId ?? 'outside-a-workflow' },
        Object.keys(destinations),
      );
      if (begun.fact) return { kind: 'recorded-before', fact: begun.fact };
      if (!begun.release) return { kind: 'unreleased' };
      if (!begun.attempt) {
        const { destination } = begun.release;
        const open = begun.stage !== null && !isTerminal(begun.stage);
        if (open && begun.highestAttempt < request.attemptNumber && !hostedAdapter(destinations, destination))
          return { kind: 'not-hosted', destination, reason: notHostedReason(destinations, destination) };
        return {
          kind: 'earlier-attempts',
          highestAttempt: begun.highestAttempt,
          firstAttemptStartedAt: begun.firstAttemptStartedAt?.toISOString() ?? null,
          stage: begun.stage,
        };
      }
      // The key released with the step: the step's own, or its revision's where the destination scopes keys so.
      const idempotencyKey = begun.release.idempotencyKey;
      const attempt: AttemptRef = {
        effectId: request.effectId,
        step: request.step,
        attemptNumber: request.attemptNumber,
        attemptId: begun.attempt.attemptId,
        idempotencyKey,
        startedAt: begun.attempt.startedAt.toISOString(),
      };
      metrics.attempt(begun.release.destination);
      const outcome = await sendBeforeDeadline(begun.release, attempt, request.callTimeoutMs, deadline);
      metrics.outcome(begun.release.destination, outcome.class);
      // What the logs may say about a call: never the package or the provider's body (detail).
      log.info('attempt answered', {
        effectId: request.effectId,
        destination: begun.release.destination,
        attemptNumber: request.attemptNumber,
        outcome: outcome.class,
        httpStatus: outcome.httpStatus ?? null,
      });
      const confirmed = outcome.class === 'confirmed' ? outcome : undefined;
      const recorded = await recordAnswer(db, {
        effectId: request.effectId,
        step: request.step,
        attemptId: attempt.attemptId,
        destination: begun.release.destination,
        outcome: outcome.class,
        httpStatus: outcome.httpStatus ?? null,
        detail: outcome.detail,
        stage: stageAfterStepOutcome(outcome.class, request.lastStep),
        fact: confirmed && {
          externalId: confirmed.externalId,
          externalUrl: confirmed.externalUrl ?? null,
          occurredAt: confirmed.occurredAt,
        },
      }).then(
        () => true,
        // The answer is in the workflow's history either way; the workflow records it with retries.
        () => false,
      );
      return { kind: 'sent', attempt, outcome, recorded, destination: begun.release.destination };
    },

    /**
     * The send activity did not finish (timed out, its worker died): what reached the ledger? Records
     * the attempt's answer as unknown; returns the attempt, or null if its row was never written
     * (then no request left: intent comes before send).
     */
    async recordLostAnswer(effectId: string, step: string, attemptNumber: number, reason: string) {
      const row = await readAttempt(db, effectId, step, attemptNumber);
      if (!row) return null;
      const released = await readRelease(db, effectId, row.releaseRevision, step);
      if (released) metrics.outcome(released.destination, 'unknown');
      await recordEvidence(
        db,
        { effectId, step, attemptId: row.attemptId, kind: 'response', outcome: 'unknown', detail: { reason } },
        'unknown',
      );
      return { startedAt: row.startedAt.toISOString(), idempotencyKey: row.idempotencyKey, attemptId: row.attemptId };
    },
  };

  /** Sends only with time for the whole call and the answer's write left; never after the deadline. */
  async function sendBeforeDeadline(
    release: { package: ReleasedPackage; destination: string; operation: string },
    attempt: AttemptRef,
    callTimeoutMs: number,
    deadline: number,
  ): Promise<SendOutcome> {
    const left = deadline - Date.now() - ANSWER_MARGIN_MS;
    if (left < callTimeoutMs) {
      return {
        class: 'not_sent',
        detail: { reason: `too little time left before the activity's deadline (${left} ms): nothing was sent` },
      };
    }
    // beginAttempt wrote no attempt for a destination this worker does not host; this is only a guard.
    const adapter = hostedAdapter(destinations, release.destination);
    if (!adapter) return { class: 'not_sent', detail: { reason: notHostedReason(destinations, release.destination) } };
    return adapter.send({
      effectId: attempt.effectId,
      idempotencyKey: attempt.idempotencyKey,
      operation: release.operation,
      package: release.package,
      timeoutMs: callTimeoutMs,
    });
  }
}
