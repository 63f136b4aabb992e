// One approved business effect, carried from release to a recorded fact. Workflow ID = effect ID.
// Deterministic: no I/O here; the ledger and the destination are reached only through activities.
// The function below is the stage diagram (README, "Stages"); each phase lives in its own module.
import { patched } from '@temporalio/workflow';
import { isTerminal } from '../../domain/stages.js';
import { attemptInSteps, attemptOnce, awaitHostingWorker, pauseBeforeResend } from './attempt.js';
import type { EffectInput, EffectResult } from './contract.js';
import { EffectRun } from './effect-run.js';
import { handleMessages } from './messages.js';
import { MULTI_STEP_PATCH, ONE_ACTIVITY_ATTEMPT_PATCH } from './patches.js';
import { applyDecision, RETRY, reconcile } from './reconcile.js';
import { releaseInWorkflow, takeUpRelease } from './release.js';

export async function effectWorkflow(input: EffectInput): Promise<EffectResult> {
  const run = new EffectRun(input);
  handleMessages(run);
  const v3 = patched(ONE_ACTIVITY_ATTEMPT_PATCH);
  run.v3 = v3;

  // prepared → released; straight to recorded when the ledger already holds the fact.
  if (v3) takeUpRelease(run);
  else {
    const settled = await releaseInWorkflow(run);
    if (settled) return run.finish(settled);
  }

  // v4: each outbound step in turn, to its own fact; the last step's result is the effect's. Only a
  // multi-step input asks (and records the marker): a single-step run issues v3's commands unchanged.
  if (v3 && run.multiStep && patched(MULTI_STEP_PATCH)) {
    for (const step of run.stepsToGo()) {
      run.beginStep(step);
      const result = await carryStep(run);
      if (isTerminal(result.stage)) return run.finish(result);
    }
  }
  return run.finish(await carryStep(run));
}

/**
 * The current step from its release to its fact. Returns the effect's result when it ends (recorded with
 * its last step, rejected, abandoned); a step before the last returns a non-terminal stage once settled.
 */
async function carryStep(run: EffectRun): Promise<EffectResult> {
  // v5: the run before paused after "not sent" and handed over: nothing is in flight, so this one sends again.
  const resumesSending = run.resumesSending;
  run.resumesSending = false;
  // An earlier run started attempts and left no outcome we trust: read back, never a blind second write.
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
  for (;;) {
    const outcome = run.v3 ? await attemptOnce(run) : await attemptInSteps(run);
    switch (outcome.class) {
      case 'confirmed':
        run.settleStep(outcome.externalId, outcome.externalUrl, 'response');
        return run.result();
      case 'recorded-before':
        run.settleStep(outcome.externalId, outcome.externalUrl, 'response');
        return run.result('the ledger already held this effect’s fact');
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
      case 'not_sent': {
        const abandon = await pauseBeforeResend(run, outcome);
        const resolution = abandon && (await applyDecision(run, abandon));
        if (resolution && resolution !== RETRY) return resolution;
        break;
      }
      case 'not-hosted': {
        // Nothing written or sent: wait for a worker that hosts the destination (never fail the run for it).
        const abandon = await awaitHostingWorker(run, outcome);
        const resolution = abandon && (await applyDecision(run, abandon));
        if (resolution && resolution !== RETRY) return resolution;
      }
    }
  }
}
