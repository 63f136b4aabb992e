// prepared → released. Since v3 the approval writes the release with the effect, in one statement, and
// the run only takes it up; v1/v2 runs replay their release activity (which also reported the fact and
// the attempts earlier runs made).
import { MAIN_STEP } from '../../domain/idempotency-key.js';
import { ledger } from './activity-proxies.js';
import type { EffectResult } from './contract.js';
import type { EffectRun } from './effect-run.js';

/**
 * v3 starts from the stored release: revision 1, or the person's revision the run was started for (an input
 * value, not a command: older histories replay unchanged). A carried run resumes from what the last run knew.
 */
export function takeUpRelease(run: EffectRun): void {
  const { carried } = run.input;
  run.releaseRevision = run.input.releaseRevision ?? 1;
  if (carried) {
    run.attemptNumber = Math.max(0, ...carried.attempts.map((a) => a.attemptNumber));
    run.firstAttemptAt = carried.attempts[0]?.startedAt ?? null;
  } else {
    // The start's search attribute already says released: no upsert needed.
    run.view.move('released');
  }
}

/** v1/v2: the release activity; returns the result when the ledger already holds the effect's fact. */
export async function releaseInWorkflow(run: EffectRun): Promise<EffectResult | undefined> {
  const { input } = run;
  run.publish();
  const release = await ledger.releaseEffect(input.effectId, MAIN_STEP);
  if (release.fact) {
    run.view.setResult(release.fact.externalId, release.fact.externalUrl);
    run.move('recorded');
    return run.result('the ledger already held this effect’s fact');
  }
  if (!input.carried) run.move('released');
  run.releaseRevision = release.revision;
  run.attemptNumber = release.attemptsSoFar;
  run.firstAttemptAt = release.firstAttemptStartedAt;
  return undefined;
}
