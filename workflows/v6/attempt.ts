// One attempt: the intent is written (→ attempted), the released package is sent once, and the
// provider's answer is recorded with the stage it leads to. Returns the classified outcome.
// v3 does it in one activity (attemptOnce); v1/v2 runs replay their three (attemptInSteps).
import { ActivityFailure, condition, patched, sleep, workflowInfo } from '@temporalio/workflow';
import type { AttemptReport } from '../../activities/attempt-activities.js';
import type { SendOutcome } from '../../domain/destination-contract.js';
import { MAIN_STEP } from '../../domain/idempotency-key.js';
import {
  type EffectStage,
  isEffectStage,
  isTerminal,
  stageAfterOutcome,
  stageAfterStepOutcome,
} from '../../domain/stages.js';
import { ledger, sendActivity } from './activity-proxies.js';
import type { EffectRun, QueuedDecision } from './effect-run.js';
import {
  NOT_HOSTED_PATCH,
  NOT_SENT_CARRIED_PATCH,
  RESEND_AFTER_NOT_SENT_PATCH,
  REVISION_HANDOVER_PATCH,
} from './patches.js';

/** A pause that grows to a minute, for "not sent" retries and automatic retries after absence. */
export function backoffMs(n: number, retryAfterMs?: number): number {
  return retryAfterMs ?? Math.min(60_000, 1000 * 2 ** Math.min(n - 1, 6));
}

export async function attemptInSteps(run: EffectRun): Promise<SendOutcome> {
  const { input } = run;
  run.attemptNumber += 1;
  const made = await ledger.recordAttempt(input.effectId, MAIN_STEP, run.attemptNumber, run.releaseRevision);
  run.firstAttemptAt ??= made.startedAt;
  run.view.addAttempt(made);
  run.move('attempted', `the provider's answer to attempt ${run.attemptNumber}`);

  let outcome: SendOutcome;
  try {
    outcome = await sendActivity(input.callTimeoutMs).sendToDestination(made, run.releaseRevision, input.callTimeoutMs);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    // The activity timed out or its worker died mid-call: the request may have left.
    outcome = {
      class: 'unknown',
      detail: { reason: `provider call did not finish: ${error.cause?.message ?? error.message}` },
    };
  }
  await ledger.recordResponse(made, input.destination, outcome, stageAfterOutcome(outcome.class));
  run.view.settleAttempt(run.attemptNumber, outcome.class, outcome.detail.reason);
  return outcome;
}

/**
 * "Not sent": the provider cannot have applied it; the same key goes again after a pause. In v3 a
 * person may abandon the effect meanwhile (nothing is in flight), and a long refusal continues as new.
 * Returns the abandon decision when one came.
 */
export async function pauseBeforeResend(
  run: EffectRun,
  outcome: Extract<SendOutcome, { class: 'not_sent' }>,
): Promise<QueuedDecision | undefined> {
  const pause = backoffMs(run.attemptNumber, outcome.retryAfterMs);
  run.await(`retry with the same key in ${Math.round(pause / 1000)} s (not sent: ${outcome.detail.reason})`);
  if (!run.v3) {
    await sleep(pause);
    return undefined;
  }
  // The pause is a decision window of its own (v5): what was queued before it answered something else.
  run.episode += 1;
  if (run.decisions.length && run.decisionsBound())
    await run.refuseStale('stale: it answered an earlier wait; the effect is pausing to resend');
  run.resendPending = true;
  await condition(() => run.decisions.length > 0, pause);
  run.resendPending = false;
  const abandon = run.decisions.shift();
  // v5: the next run goes on resending; before, it started in UNKNOWN and read back.
  if (!abandon && workflowInfo().continueAsNewSuggested) return run.handOver(patched(NOT_SENT_CARRIED_PATCH));
  return abandon;
}

/**
 * No worker that took the attempt hosts the step's destination; nothing was written or sent. Waits visibly (1 s,
 * doubling to a minute) and tries again, so the effect proceeds once a worker that hosts it polls; a person may
 * abandon it meanwhile (nothing is in flight). Returns the abandon decision when one came.
 */
export async function awaitHostingWorker(run: EffectRun, end: NotHosted): Promise<QueuedDecision | undefined> {
  run.notHostedWaits += 1;
  const pause = backoffMs(run.notHostedWaits);
  run.await(
    `a worker that hosts destination ${end.destination} (nothing was sent; the worker asked said: ${end.reason}); trying again in ${Math.round(pause / 1000)} s (abandon it if it will never be hosted)`,
  );
  run.resendPending = true;
  await condition(() => run.decisions.length > 0, pause);
  run.resendPending = false;
  const abandon = run.decisions.shift();
  if (!abandon && workflowInfo().continueAsNewSuggested) return run.handOver();
  return abandon;
}

/** What an attempt ended in, besides a provider outcome: the ledger showed the effect was settled before. */
export type AttemptEnd =
  | SendOutcome
  | { class: 'recorded-before'; externalId: string; externalUrl: string | null }
  | { class: 'ended-before'; stage: EffectStage }
  | NotHosted
  /** v5: the effect is on a later revision than this run's: the run hands over to it. */
  | { class: 'superseded'; revision: number };

/** The worker that took the attempt does not host the step's destination: nothing was written or sent. */
export interface NotHosted {
  class: 'not-hosted';
  destination: string;
  reason: string;
}

/**
 * v3: one activity writes the attempt, sends and records the answer. It writes nothing, and says why,
 * when the ledger holds a fact, attempts this run did not make (read back first), or no release yet.
 */
export async function attemptOnce(run: EffectRun): Promise<AttemptEnd> {
  const { input } = run;
  run.attemptNumber += 1;
  run.move('attempted', `the provider's answer to attempt ${run.attemptNumber}`);
  for (;;) {
    let report: AttemptReport;
    try {
      report = await sendActivity(run.policy.callTimeoutMs).attemptOnce({
        effectId: input.effectId,
        step: run.step,
        attemptNumber: run.attemptNumber,
        releaseRevision: run.releaseRevision,
        callTimeoutMs: run.policy.callTimeoutMs,
        ...(run.multiStep ? { lastStep: run.lastStep } : {}),
      });
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      return lostAnswer(run, `provider call did not finish: ${error.cause?.message ?? error.message}`);
    }
    switch (report.kind) {
      case 'unreleased':
        await ledger.releaseEffect(input.effectId, MAIN_STEP);
        continue;
      case 'superseded':
        if (patched(REVISION_HANDOVER_PATCH)) return { class: 'superseded', revision: report.revision };
        continue;
      case 'recorded-before':
        return { class: 'recorded-before', ...report.fact };
      case 'earlier-attempts':
        run.attemptNumber = report.highestAttempt;
        run.firstAttemptAt = report.firstAttemptStartedAt;
        if (isEffectStage(report.stage) && isTerminal(report.stage))
          return { class: 'ended-before', stage: report.stage };
        // v6: the last of them was answered "not sent": nothing is in flight, so the next attempt goes (same key).
        if (report.lastAnswer === 'not_sent' && patched(RESEND_AFTER_NOT_SENT_PATCH)) {
          run.attemptNumber += 1;
          run.await(
            `the provider's answer to attempt ${run.attemptNumber} (attempt ${report.highestAttempt} was not sent)`,
          );
          continue;
        }
        return {
          class: 'unknown',
          detail: { reason: 'attempts this run did not make are in the ledger: read back first' },
        };
      case 'not-hosted':
        // A new kind of answer: histories recorded before it never reach this line (the marker says it is new).
        if (!patched(NOT_HOSTED_PATCH)) continue;
        // Attempt N was not written: the number goes to the attempt a worker that hosts the destination makes.
        run.attemptNumber -= 1;
        return { class: 'not-hosted', destination: report.destination, reason: report.reason };
      case 'sent': {
        run.notHostedWaits = 0;
        const { attempt: made, outcome } = report;
        run.firstAttemptAt ??= made.startedAt;
        run.view.addAttempt(made);
        if (!report.recorded) {
          const stage = stageAfterStepOutcome(outcome.class, run.lastStep);
          await ledger.recordResponse(made, report.destination ?? input.destination, outcome, stage);
        }
        run.view.settleAttempt(run.attemptNumber, outcome.class, outcome.detail.reason);
        return outcome;
      }
    }
  }
}

/**
 * The send activity did not finish. With no attempt row nothing left (intent before send); else UNKNOWN, unless
 * (v5) the ledger holds the answer the activity recorded, or the effect has moved on to a later revision.
 */
async function lostAnswer(run: EffectRun, reason: string): Promise<AttemptEnd> {
  const { input } = run;
  const made = await ledger.recordLostAnswer(input.effectId, run.step, run.attemptNumber, reason, run.releaseRevision);
  if (
    made?.effectRevision !== undefined &&
    made.effectRevision !== run.releaseRevision &&
    patched(REVISION_HANDOVER_PATCH)
  )
    return { class: 'superseded', revision: made.effectRevision };
  if (made?.answer && patched(REVISION_HANDOVER_PATCH)) {
    run.firstAttemptAt ??= made.startedAt;
    run.view.addAttempt({
      attemptNumber: run.attemptNumber,
      idempotencyKey: made.idempotencyKey,
      startedAt: made.startedAt,
    });
    run.view.settleAttempt(
      run.attemptNumber,
      made.answer.class,
      `${made.answer.detail.reason} (${reason}; the ledger holds the answer)`,
    );
    return made.answer;
  }
  if (!made?.idempotencyKey) {
    run.attemptNumber -= 1;
    return {
      class: 'not_sent',
      detail: { reason: `${reason}; its attempt never reached the ledger, so nothing left` },
    };
  }
  run.firstAttemptAt ??= made.startedAt;
  run.view.addAttempt({
    attemptNumber: run.attemptNumber,
    idempotencyKey: made.idempotencyKey,
    startedAt: made.startedAt,
  });
  run.view.settleAttempt(run.attemptNumber, 'unknown', reason);
  return { class: 'unknown', detail: { reason } };
}
