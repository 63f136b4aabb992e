// One approved business effect, carried from release to a recorded fact. Workflow ID = effect ID.
// Deterministic: no I/O here; the ledger and the destination are reached only through activities.
import {
  ActivityFailure,
  condition,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { EffectActivities } from '../activities/index.js';
import type { AttemptRef } from '../activities/effect-activities.js';
import type { SendOutcome } from '../activities/destinations/destination.js';
import { statusQuery, statusQueryDescription, type EffectInput, type EffectResult } from './contract.js';
import { EffectView } from './effect-view.js';
import { MAIN_STEP } from './idempotency-key.js';
import { effectStageKey } from './search-attributes.js';
import { stageAfterOutcome, type EffectStage } from './stages.js';

// Ledger writes are idempotent: retry them until the database answers.
const ledger = proxyActivities<EffectActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', nonRetryableErrorTypes: ['LedgerInvariantError', 'EffectNotFound'] },
});

/** A "not sent" outcome is retried with the same key after a pause that grows to a minute. */
function notSentPause(attemptNumber: number, retryAfterMs?: number): number {
  return retryAfterMs ?? Math.min(60_000, 1000 * 2 ** Math.min(attemptNumber - 1, 6));
}

export async function effectWorkflow(input: EffectInput): Promise<EffectResult> {
  const view = new EffectView(input);
  setHandler(statusQuery, () => view.status(), { description: statusQueryDescription });

  const publish = () => {
    upsertSearchAttributes([{ key: effectStageKey, value: view.stage }]);
    setCurrentDetails(view.details());
  };
  const move = (to: EffectStage, awaiting?: string) => {
    view.move(to, awaiting);
    publish();
  };
  const result = (reason?: string): EffectResult => {
    const s = view.status();
    return { effectId: s.effectId, stage: s.stage, externalId: s.externalId, externalUrl: s.externalUrl, reason };
  };

  // One attempt per execution: after the request may have left, only evidence decides what happens next.
  const destination = proxyActivities<EffectActivities>({
    startToCloseTimeout: input.callTimeoutMs + 5000,
    retry: { maximumAttempts: 1 },
  });
  const send = async (attempt: AttemptRef, revision: number): Promise<SendOutcome> => {
    try {
      return await destination.sendToDestination(attempt, revision, input.callTimeoutMs);
    } catch (error) {
      // The activity timed out or its worker died mid-call: the request may have left.
      if (error instanceof ActivityFailure) {
        return { class: 'unknown', detail: { reason: `provider call did not finish: ${error.cause?.message ?? error.message}` } };
      }
      throw error;
    }
  };

  publish();
  const release = await ledger.releaseEffect(input.effectId, MAIN_STEP);
  if (release.fact) {
    view.setResult(release.fact.externalId, release.fact.externalUrl);
    move('recorded');
    return result('the ledger already held this effect’s fact');
  }
  move('released');

  let attemptNumber = release.attemptsSoFar;
  if (attemptNumber > 0) {
    // An earlier run started attempts and left no outcome we trust: never a blind second write.
    move('attempted');
    move('unknown', `an earlier run made ${attemptNumber} attempt(s) without a recorded outcome: readback or a human decision`);
    return awaitResolution();
  }

  for (;;) {
    attemptNumber += 1;
    const attempt = await ledger.recordAttempt(input.effectId, MAIN_STEP, attemptNumber, release.revision);
    view.addAttempt(attempt);
    move('attempted', `the provider's answer to attempt ${attemptNumber}`);

    const outcome = await send(attempt, release.revision);
    const next = stageAfterOutcome(outcome.class);
    await ledger.recordResponse(attempt, input.destination, outcome, next);
    view.settleAttempt(attemptNumber, outcome.class, outcome.detail.reason);

    switch (outcome.class) {
      case 'confirmed':
        view.setResult(outcome.externalId, outcome.externalUrl);
        move('recorded');
        return result();
      case 'rejected':
        move('rejected');
        return result(outcome.detail.reason);
      case 'unknown':
        move('unknown', 'readback or a human decision; automatic retries are frozen');
        return awaitResolution();
      case 'not_sent': {
        const pause = notSentPause(attemptNumber, outcome.retryAfterMs);
        view.await(`retry with the same key in ${Math.round(pause / 1000)} s (not sent: ${outcome.detail.reason})`);
        publish();
        await sleep(pause);
      }
    }
  }

  async function awaitResolution(): Promise<EffectResult> {
    // Frozen: nothing leaves again until evidence or a decision arrives (readback and signals: issue 3).
    await condition(() => view.stage !== 'unknown');
    return result();
  }
}
