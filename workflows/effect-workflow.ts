// One approved business effect, carried from release to a recorded fact. Workflow ID = effect ID.
// Deterministic: no I/O here; the ledger and the destination are reached only through activities. Runs pinned to
// the worker deployment version that started it, so this code has no branches for histories older code wrote
// (docs/versioning.md). The functions below are the stage diagram (README, "Stages"); each phase has its module.
import { setWorkflowOptions } from '@temporalio/workflow';
import { isTerminal } from '../domain/stages.js';
import { attemptOnce, awaitHostingWorker, pauseBeforeResend } from './attempt.js';
import type { EffectInput, EffectResult } from './contract.js';
import { applyDecision, RETRY } from './decisions.js';
import { EffectRun } from './effect-run.js';
import { handleMessages } from './messages.js';
import { reconcile } from './reconcile.js';

export async function effectWorkflow(input: EffectInput): Promise<EffectResult> {
  const run = new EffectRun(input);
  handleMessages(run);
  // prepared → released happened at approval (one statement with the effect): the run takes the release up.
  if (!input.carried) run.view.move('released');
  // Each outbound step in turn, to its own fact; the last step's result is the effect's.
  let resumesSending = input.carried?.resendPending === true;
  for (const step of run.stepsToGo()) {
    run.beginStep(step);
    const result = await carryStep(run, resumesSending);
    resumesSending = false;
    if (isTerminal(result.stage) || run.lastStep) return run.finish(result);
  }
  return run.finish(run.result());
}
setWorkflowOptions({ versioningBehavior: 'PINNED' }, effectWorkflow);

/**
 * The current step from its release to its fact. Returns the effect's result when it ends (recorded with its last
 * step, rejected, abandoned); a step before the last returns a non-terminal stage once settled.
 */
async function carryStep(run: EffectRun, resumesSending: boolean): Promise<EffectResult> {
  // A run before this one started attempts and left no outcome we trust: look, never a blind second write. (The one
  // before paused after "not sent" and handed over: nothing is in flight, this one sends again.)
  if (run.attemptNumber > 0 && !resumesSending) {
    if (!run.input.carried) {
      run.move('attempted');
      run.move('unknown');
    }
    const resolved = await reconcile(run);
    if (resolved !== RETRY) return resolved;
  }

  // attempted → recorded | rejected | unknown (→ reconcile) | not sent (same key again after a pause) | not hosted
  // by the worker that took it (nothing written: again once a worker that hosts the destination polls).
  let notHostedWaits = 0;
  for (;;) {
    const outcome = await attemptOnce(run);
    if (outcome.class !== 'not-hosted') notHostedWaits = 0;
    switch (outcome.class) {
      case 'confirmed':
      case 'recorded-before':
        run.settleStep(outcome.externalId, outcome.externalUrl, 'response');
        return run.result(
          outcome.class === 'recorded-before' ? 'the ledger already held this effect’s fact' : undefined,
        );
      case 'ended-before':
        return { ...run.result(`an earlier run ended this effect ${outcome.stage}`), stage: outcome.stage };
      case 'superseded':
        return run.handOverToRevision(run.result(`the effect is on revision ${outcome.revision}`));
      case 'rejected':
        run.move('rejected');
        return run.result(outcome.detail.reason);
      case 'unknown': {
        run.move('unknown');
        const resolved = await reconcile(run);
        if (resolved !== RETRY) return resolved;
        break;
      }
      case 'not_sent':
      case 'not-hosted': {
        const abandon =
          outcome.class === 'not_sent'
            ? await pauseBeforeResend(run, outcome)
            : await awaitHostingWorker(run, outcome, ++notHostedWaits);
        const resolution = abandon && (await applyDecision(run, abandon));
        if (resolution && resolution !== RETRY) return resolution;
      }
    }
  }
}
