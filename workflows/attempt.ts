// One attempt, in one activity: the intent is written (→ attempted), the released package is sent once, and the
// provider's answer is recorded with the stage it leads to. And the two pauses after an attempt that sent nothing:
// "not sent" (the same key goes again) and "not hosted" (a worker that hosts the destination must make it).
import { ActivityFailure, condition } from '@temporalio/workflow';
import type { AttemptReport } from '../activities/attempt-activities.js';
import type { SendOutcome } from '../domain/destination-contract.js';
import { MAIN_STEP } from '../domain/idempotency-key.js';
import { type EffectStage, isEffectStage, isTerminal, stageAfterStepOutcome } from '../domain/stages.js';
import { ledger, sendActivity } from './activity-proxies.js';
import type { EffectRun, Pause, QueuedDecision } from './effect-run.js';

/** A pause that grows to a minute, for "not sent" retries and automatic retries after absence. */
export function backoffMs(n: number, retryAfterMs?: number): number {
  return retryAfterMs ?? Math.min(60_000, 1000 * 2 ** Math.min(n - 1, 6));
}

/** What an attempt ended in, besides a provider outcome. */
export type AttemptEnd =
  | SendOutcome
  /** The ledger held the effect's fact already. */
  | { class: 'recorded-before'; externalId: string; externalUrl: string | null }
  /** An earlier run ended the effect. */
  | { class: 'ended-before'; stage: EffectStage }
  | NotHosted
  /** The effect is on a later revision than this run's: the run hands over to it. */
  | { class: 'superseded'; revision: number };

/** The worker that took the attempt does not host the step's destination: nothing was written or sent. */
export interface NotHosted {
  class: 'not-hosted';
  destination: string;
  reason: string;
}

/**
 * The next attempt of the current step. The activity writes nothing, and says why, when the ledger holds a fact,
 * attempts this run did not make (look first), no release yet, or another revision.
 */
export async function attemptOnce(run: EffectRun): Promise<AttemptEnd> {
  const { input } = run;
  run.attemptNumber += 1;
  run.move('attempted', `the provider's answer to attempt ${run.attemptNumber}`);
  for (;;) {
    let report: AttemptReport;
    const local = input.attemptLocally === true && !run.attemptsRemotely;
    try {
      report = await sendActivity(run.policy.callTimeoutMs, local).attemptOnce({
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
        return { class: 'superseded', revision: report.revision };
      case 'recorded-before':
        return { class: 'recorded-before', ...report.fact };
      case 'earlier-attempts':
        run.attemptNumber = report.highestAttempt;
        run.firstAttemptAt = report.firstAttemptStartedAt;
        if (isEffectStage(report.stage) && isTerminal(report.stage))
          return { class: 'ended-before', stage: report.stage };
        // The last of them was answered "not sent": nothing is in flight, so the next attempt goes (same key).
        if (report.lastAnswer === 'not_sent') {
          run.attemptNumber += 1;
          run.await(
            `the provider's answer to attempt ${run.attemptNumber} (attempt ${report.highestAttempt} was not sent)`,
          );
          continue;
        }
        return {
          class: 'unknown',
          detail: { reason: 'attempts this run did not make are in the ledger: look first' },
        };
      case 'not-hosted':
        // This worker cannot make it (nothing written): the attempt goes as an activity, to a worker that can.
        if (local) {
          run.attemptsRemotely = true;
          continue;
        }
        // Attempt N was not written: the number goes to the attempt a worker that hosts the destination makes.
        run.attemptNumber -= 1;
        return { class: 'not-hosted', destination: report.destination, reason: report.reason };
      case 'sent': {
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
 * the ledger holds the answer the activity recorded, or the effect has moved on to a later revision.
 */
async function lostAnswer(run: EffectRun, reason: string): Promise<AttemptEnd> {
  const { input } = run;
  const made = await ledger.recordLostAnswer(input.effectId, run.step, run.attemptNumber, reason, run.releaseRevision);
  if (made?.effectRevision !== undefined && made.effectRevision !== run.releaseRevision)
    return { class: 'superseded', revision: made.effectRevision };
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
  if (made.answer) {
    run.view.settleAttempt(
      run.attemptNumber,
      made.answer.class,
      `${made.answer.detail.reason} (${reason}; the ledger holds the answer)`,
    );
    return made.answer;
  }
  run.view.settleAttempt(run.attemptNumber, 'unknown', reason);
  return { class: 'unknown', detail: { reason } };
}

/**
 * A pause with nothing of ours in flight: a decision window of its own (what was queued before it answered something
 * else), in which a person may abandon the effect. Waits `pauseMs`; returns the abandon when one came, or hands over
 * when the run has grown long.
 */
async function pauseWith(
  run: EffectRun,
  what: Pause,
  pauseMs: number,
  text: string,
): Promise<QueuedDecision | undefined> {
  run.episode += 1;
  if (run.decisions.length)
    await run.refuseStale(`stale: it answered an earlier wait; the effect is pausing (${text})`);
  run.rest(what, text);
  run.pause = what;
  await condition(() => run.decisions.length > 0, pauseMs);
  run.pause = undefined;
  const abandon = run.decisions.shift();
  // The next run goes on from the pause: after "not sent" it sends again (nothing is in flight).
  if (!abandon && run.woke()) return run.handOver({ resendPending: what === 'resend' });
  return abandon;
}

/** "Not sent": the provider did not take the request; the same key goes again after a pause. */
export function pauseBeforeResend(
  run: EffectRun,
  outcome: Extract<SendOutcome, { class: 'not_sent' }>,
): Promise<QueuedDecision | undefined> {
  const pause = backoffMs(run.attemptNumber, outcome.retryAfterMs);
  return pauseWith(
    run,
    'resend',
    pause,
    `retry with the same key in ${Math.round(pause / 1000)} s (not sent: ${outcome.detail.reason}); a person may abandon it meanwhile`,
  );
}

/**
 * No worker that took the attempt hosts the step's destination; nothing was written or sent. Waits visibly (1 s,
 * doubling to a minute) and tries again, so the effect proceeds once a worker that hosts it polls.
 */
export function awaitHostingWorker(run: EffectRun, end: NotHosted, waits: number): Promise<QueuedDecision | undefined> {
  const pause = backoffMs(waits);
  return pauseWith(
    run,
    'worker',
    pause,
    `a worker that hosts destination ${end.destination} (nothing was sent; the worker asked said: ${end.reason}); trying again in ${Math.round(pause / 1000)} s (abandon it if it will never be hosted)`,
  );
}
