// The happy path in one activity execution: write the attempt (intent before send, committed on its own),
// send the released package once, and record the answer. One provider call per execution: the workflow
// runs this with maximumAttempts 1, and anything it cannot finish becomes UNKNOWN and a readback.
import { Context, log } from '@temporalio/activity';
import { deadlineSignal } from '../domain/deadline-signal.js';
import type { DestinationAdapter, ReleasedPackage, SendOutcome, SentWith } from '../domain/destination-contract.js';
import { isTerminal, stageAfterStepOutcome } from '../domain/stages.js';
import { type AttemptBegun, type AttemptIntent, beginAttempt, recordAnswer } from '../ledger/attempt-log.js';
import type { LedgerDb } from '../ledger/db.js';
import { ledgerRefusal, recordEvidence } from '../ledger/progress.js';
import { readAttempt, readAttemptAnswer, readEffect, readRelease } from '../ledger/trail.js';
import { checkedSend, sendErrorOutcome } from './crossing-checks.js';
import { hostedAdapter, notHostedReason } from './destination-hosting.js';
import type { Destinations } from './destinations/registry.js';
import type { AttemptRef } from './effect-activities.js';
import { type EffectMetrics, NO_METRICS } from './effect-metrics.js';
import { markActivity, outcomeAttributes, sendSpan, stepAttributes } from './provider-spans.js';

/** Time kept back from the activity's deadline for writing the answer after the call. */
const ANSWER_MARGIN_MS = 1000;

/**
 * A send begins within this long of its attempt row being asked for, or not at all ("not sent"). The answer
 * records how long after it the send began (`sendBeganAfterMs`); readback's in-flight window counts from there,
 * or from this limit when no answer was recorded (the worker died mid-call).
 */
export const SEND_START_LIMIT_MS = 2000;

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
  | {
      kind: 'earlier-attempts';
      highestAttempt: number;
      firstAttemptStartedAt: string | null;
      stage: string | null;
      /** The answer the highest of them got, when the ledger holds one (`not_sent`: nothing is in flight). */
      lastAnswer?: SendOutcome['class'];
    }
  /** Nothing written: no release row (an effect approved before releases were made at approval). */
  | { kind: 'unreleased' }
  /**
   * Nothing written: this worker cannot make the attempt — it does not host the step's destination (`not-hosted`),
   * its declaration of it no longer dedupes as the effect was approved (`contract-changed`), or it cannot build the
   * released request (`unsendable`). A worker that can must make the attempt; the effect waits visibly meanwhile.
   */
  | { kind: 'not-hosted'; destination: string; reason: string; why?: NotHostedWhy }
  /** Nothing written: the effect is on another revision than the run's (a person revised it): hand over to it. */
  | { kind: 'superseded'; revision: number; stage: string | null };

export type NotHostedWhy = 'not-hosted' | 'contract-changed' | 'unsendable';

/** How this worker's declaration sends for a destination: recorded with each answer, compared before a retry. */
function sentWith(adapter: DestinationAdapter): SentWith {
  return { mechanism: adapter.mechanism, keyHeader: adapter.keyHeader ?? null, keyScope: adapter.keyScope };
}

/** What the ledger says of an attempt whose send activity did not finish (recordLostAnswer). */
export interface LostAnswer {
  startedAt: string;
  idempotencyKey: string;
  attemptId: number;
  /** The revision the effect is on now: another than the run's means the run must hand over. */
  effectRevision?: number;
  /** The provider's answer, when the activity recorded it before its own answer to the workflow was lost. */
  answer?: SendOutcome;
}

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
      markActivity(stepAttributes({ ...request, revision: request.releaseRevision, attempt: request.attemptNumber }));
      const deadline = Date.now() + info.startToCloseTimeoutMs;
      // The send must begin soon after this (SEND_START_LIMIT_MS), measured on a clock no adjustment moves.
      const asked = performance.now();
      // A retry goes as the attempts before it went (the key in the same header, the same mechanism and scope), or not
      // at all: read on retries only, so the happy path's statement stays one.
      if (request.attemptNumber > 1) {
        const changed = await contractChanged(request);
        if (changed) return changed;
      }
      const begun = await begin({ ...request, workflowRunId: info.workflowExecution?.runId ?? 'outside-a-workflow' });
      if (begun.effectRevision !== null && begun.effectRevision !== request.releaseRevision)
        return { kind: 'superseded', revision: begun.effectRevision, stage: begun.stage };
      if (begun.fact) return { kind: 'recorded-before', fact: begun.fact };
      if (!begun.release) return { kind: 'unreleased' };
      if (!begun.attempt) {
        const { destination } = begun.release;
        const open = begun.stage !== null && !isTerminal(begun.stage);
        const adapter = hostedAdapter(destinations, destination);
        if (open && begun.highestAttempt < request.attemptNumber) {
          if (!adapter)
            return {
              kind: 'not-hosted',
              why: 'not-hosted',
              destination,
              reason: notHostedReason(destinations, destination),
            };
          if (begun.approvedMechanism !== null && begun.approvedMechanism !== adapter.mechanism)
            return {
              kind: 'not-hosted',
              why: 'contract-changed',
              destination,
              reason: `contract-changed: the effect was approved to dedupe by ${begun.approvedMechanism}, and this worker's declaration of ${destination} says ${adapter.mechanism} today; nothing is sent under another protection than the approved one (deploy a worker whose declaration matches, or abandon it)`,
            };
        }
        // A worker that cannot build the released request (its declaration changed since): wait, write nothing.
        const cannot =
          open && adapter ? adapter.unsendable?.(begun.release.operation, begun.release.package) : undefined;
        if (cannot) return { kind: 'not-hosted', why: 'unsendable', destination, reason: `unsendable: ${cannot}` };
        // Read only on this path (a resumed, reset or reworked run): the happy path's statement stays one.
        const highest = open
          ? await readAttempt(db, request.effectId, request.step, begun.highestAttempt, request.releaseRevision)
          : null;
        const lastAnswer = highest ? (await readAttemptAnswer(db, highest.attemptId))?.class : undefined;
        return {
          kind: 'earlier-attempts',
          highestAttempt: begun.highestAttempt,
          firstAttemptStartedAt: begun.firstAttemptStartedAt?.toISOString() ?? null,
          stage: begun.stage,
          ...(lastAnswer ? { lastAnswer } : {}),
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
      // Hosted, but this worker cannot build the released request: answered "not sent" once (its row was just
      // written), then the effect waits for a worker that can — a later ask writes nothing (the branch above).
      const cannot = hostedAdapter(destinations, begun.release.destination)?.unsendable?.(
        begun.release.operation,
        begun.release.package,
      );
      if (cannot) {
        await recordAnswer(db, {
          effectId: request.effectId,
          step: request.step,
          attemptId: attempt.attemptId,
          destination: begun.release.destination,
          outcome: 'not_sent',
          httpStatus: null,
          detail: { reason: `unsendable: ${cannot}: nothing was sent` },
          stage: stageAfterStepOutcome('not_sent', request.lastStep),
        });
        return {
          kind: 'not-hosted',
          why: 'unsendable',
          destination: begun.release.destination,
          reason: `unsendable: ${cannot}`,
        };
      }
      metrics.attempt(begun.release.destination);
      const outcome = await sendBeforeDeadline(
        { ...begun.release, revision: request.releaseRevision },
        attempt,
        request.callTimeoutMs,
        deadline,
        asked,
      );
      metrics.outcome(begun.release.destination, outcome.class);
      const { destination, operation } = begun.release;
      markActivity({ ...stepAttributes({ ...attempt, destination, operation }), ...outcomeAttributes(outcome) });
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
     * The send activity did not finish (timed out, its worker died): what reached the ledger? Returns the
     * attempt, or null if its row was never written (then no request left: intent comes before send). With the
     * run's revision (v5), it also says which revision the effect is on now, and returns the provider's answer
     * when the activity recorded it; only an attempt with no answer is recorded as unknown, and only while its
     * revision is the effect's (a revision's run must not move its effect's stage from an older one).
     */
    async recordLostAnswer(
      effectId: string,
      step: string,
      attemptNumber: number,
      reason: string,
      releaseRevision?: number,
    ): Promise<LostAnswer | null> {
      const effect = releaseRevision === undefined ? null : await readEffect(db, effectId);
      const row = await readAttempt(db, effectId, step, attemptNumber, releaseRevision);
      if (!row) return effect && effect.revision !== releaseRevision ? lost(null, effect.revision) : null;
      const made = lost(row, effect?.revision);
      if (effect && effect.revision !== releaseRevision) return made;
      if (releaseRevision !== undefined) {
        const answer = await readAttemptAnswer(db, row.attemptId);
        if (answer) return { ...made, answer };
      }
      const released = await readRelease(db, effectId, row.releaseRevision, step);
      if (released) metrics.outcome(released.destination, 'unknown');
      await recordEvidence(
        db,
        { effectId, step, attemptId: row.attemptId, kind: 'response', outcome: 'unknown', detail: { reason } },
        'unknown',
      );
      return made;
    },
  };

  /**
   * Not-hosted (`contract-changed`) when the step's last answered attempt went otherwise than this worker's
   * declaration of its destination would send it now: another mechanism, key header or key scope.
   */
  async function contractChanged(request: AttemptRequest): Promise<AttemptReport | undefined> {
    const before = await readAttempt(
      db,
      request.effectId,
      request.step,
      request.attemptNumber - 1,
      request.releaseRevision,
    );
    if (!before) return undefined;
    const went = (await readAttemptAnswer(db, before.attemptId))?.detail.sentWith;
    if (!went) return undefined;
    const released = await readRelease(db, request.effectId, request.releaseRevision, request.step);
    const adapter = released ? hostedAdapter(destinations, released.destination) : undefined;
    if (!released || !adapter) return undefined;
    const now = sentWith(adapter);
    const differs = (['mechanism', 'keyHeader', 'keyScope'] as const).filter((k) => went[k] !== now[k]);
    if (!differs.length) return undefined;
    return {
      kind: 'not-hosted',
      why: 'contract-changed',
      destination: released.destination,
      reason: `contract-changed: attempt ${request.attemptNumber - 1} went with ${differs.map((k) => `${k} ${String(went[k])}`).join(', ')}; this worker's declaration of ${released.destination} says ${differs.map((k) => `${k} ${String(now[k])}`).join(', ')}; nothing is sent otherwise than the attempts before it (deploy a worker whose declaration matches, or abandon it)`,
    };
  }

  /**
   * beginAttempt, and its answer again when the database refused the write (the attempt trigger saw a revision,
   * a fact or an attempt that committed after the statement's snapshot): the statement, run anew, sees it and
   * says so without writing. A refused attempt is never "not sent" left to loop.
   */
  async function begin(intent: AttemptIntent): Promise<AttemptBegun> {
    const hosts = Object.keys(destinations);
    // Written only under the protection the effect was approved under (its destination's mechanism).
    const mechanisms = Object.fromEntries(Object.entries(destinations).map(([name, a]) => [name, a.mechanism]));
    try {
      return await beginAttempt(db, intent, hosts, mechanisms);
    } catch (error) {
      const refusal = ledgerRefusal(error);
      if (refusal === undefined) throw error;
      log.info('attempt refused by the ledger; reading what it holds', { effectId: intent.effectId, refusal });
      return beginAttempt(db, intent, hosts, mechanisms);
    }
  }

  function lost(
    row: { startedAt: Date; idempotencyKey: string; attemptId: number } | null,
    effectRevision: number | undefined,
  ): LostAnswer {
    return {
      startedAt: row?.startedAt.toISOString() ?? '',
      idempotencyKey: row?.idempotencyKey ?? '',
      attemptId: row?.attemptId ?? 0,
      ...(effectRevision === undefined ? {} : { effectRevision }),
    };
  }

  /** Sends only with time for the whole call and the answer's write left; never after the deadline. */
  async function sendBeforeDeadline(
    release: { package: ReleasedPackage; destination: string; operation: string; revision: number },
    attempt: AttemptRef,
    callTimeoutMs: number,
    deadline: number,
    asked: number,
  ): Promise<SendOutcome> {
    const since = Math.round(performance.now() - asked);
    if (since > SEND_START_LIMIT_MS) {
      return {
        class: 'not_sent',
        detail: {
          reason: `the send could not begin within ${SEND_START_LIMIT_MS} ms of its attempt row (${since} ms): nothing was sent`,
        },
      };
    }
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
    const began = Math.round(performance.now() - asked);
    const { destination, operation, revision } = release;
    // Fires at the call's timeout (or the activity's cancellation): a request must not outlive it.
    const callDeadline = deadlineSignal(callTimeoutMs, Context.current().cancellationSignal);
    const outcome = await sendSpan(
      { ...attempt, attempt: attempt.attemptNumber, destination, operation, revision },
      () =>
        adapter
          .send({
            effectId: attempt.effectId,
            idempotencyKey: attempt.idempotencyKey,
            operation: release.operation,
            package: release.package,
            timeoutMs: callTimeoutMs,
            signal: callDeadline.signal,
          })
          // An answer the adapter could not read as declared: the request left, so it is unknown (never a retry).
          .catch((error: unknown) => {
            const unreadable = sendErrorOutcome(error);
            if (!unreadable) throw error;
            return unreadable;
          }),
    )
      .then(checkedSend)
      .finally(callDeadline.clear);
    // When the request began to leave, after its row: readback's in-flight window counts from there. How it went: what
    // a retry is compared with.
    return { ...outcome, detail: { ...outcome.detail, sendBeganAfterMs: began, sentWith: sentWith(adapter) } };
  }
}
