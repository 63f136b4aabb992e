// One approved business effect, carried from release to a recorded fact. Workflow ID = effect ID.
// Deterministic: no I/O here; the ledger and the destination are reached only through activities.
// The function below is the stage diagram (README, "Stages"); each phase lives in its own module.
import { MAIN_STEP } from '../domain/idempotency-key.js';
import { ledger } from './activity-proxies.js';
import { attempt, pauseBeforeResend } from './attempt.js';
import type { EffectInput, EffectResult } from './contract.js';
import { EffectRun } from './effect-run.js';
import { handleMessages } from './messages.js';
import { RETRY, reconcile } from './reconcile.js';

export { CONTINUE_AS_NEW_PATCH } from './reconcile.js';

export async function effectWorkflow(input: EffectInput): Promise<EffectResult> {
  const run = new EffectRun(input);
  handleMessages(run);
  run.publish();

  // prepared → released; straight to recorded when the ledger already holds the fact.
  const release = await ledger.releaseEffect(input.effectId, MAIN_STEP);
  if (release.fact) {
    run.view.setResult(release.fact.externalId, release.fact.externalUrl);
    run.move('recorded');
    return run.finish(run.result('the ledger already held this effect’s fact'));
  }
  if (!input.carried) run.move('released');
  run.releaseRevision = release.revision;
  run.attemptNumber = release.attemptsSoFar;
  run.firstAttemptAt = release.firstAttemptStartedAt;

  // An earlier run started attempts and left no outcome we trust: read back, never a blind second write.
  if (run.attemptNumber > 0) {
    if (!input.carried) {
      run.move('attempted');
      run.move('unknown');
    }
    const resolved = await reconcile(run);
    if (resolved !== RETRY) return run.finish(resolved);
  }

  // attempted → recorded | rejected | unknown (→ reconcile) | not sent (same key again after a pause).
  for (;;) {
    const outcome = await attempt(run);
    switch (outcome.class) {
      case 'confirmed':
        run.view.setResult(outcome.externalId, outcome.externalUrl);
        run.move('recorded');
        return run.finish(run.result());
      case 'rejected':
        run.move('rejected');
        return run.finish(run.result(outcome.detail.reason));
      case 'unknown': {
        run.move('unknown');
        const resolved = await reconcile(run);
        if (resolved !== RETRY) return run.finish(resolved);
        break;
      }
      case 'not_sent':
        await pauseBeforeResend(run, outcome);
    }
  }
}
