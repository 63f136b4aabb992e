// One attempt: the intent is written (→ attempted), the released package is sent once, and the
// provider's answer is recorded with the stage it leads to. Returns the classified outcome.
import { ActivityFailure, sleep } from '@temporalio/workflow';
import type { SendOutcome } from '../domain/destination-contract.js';
import { MAIN_STEP } from '../domain/idempotency-key.js';
import { stageAfterOutcome } from '../domain/stages.js';
import { ledger, sendActivity } from './activity-proxies.js';
import type { EffectRun } from './effect-run.js';

/** A pause that grows to a minute, for "not sent" retries and automatic retries after absence. */
export function backoffMs(n: number, retryAfterMs?: number): number {
  return retryAfterMs ?? Math.min(60_000, 1000 * 2 ** Math.min(n - 1, 6));
}

export async function attempt(run: EffectRun): Promise<SendOutcome> {
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

/** "Not sent": the provider cannot have applied it; the same key goes again after a pause. */
export async function pauseBeforeResend(
  run: EffectRun,
  outcome: Extract<SendOutcome, { class: 'not_sent' }>,
): Promise<void> {
  const pause = backoffMs(run.attemptNumber, outcome.retryAfterMs);
  run.await(`retry with the same key in ${Math.round(pause / 1000)} s (not sent: ${outcome.detail.reason})`);
  await sleep(pause);
}
