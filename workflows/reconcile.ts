// UNKNOWN: automatic retries are frozen. Read back first; retry with the same key only where the
// destination's contract allows it after proven absence; otherwise wait for a human, reading back
// again on a schedule so a late object is still found. Ends in a result, or in RETRY (same key).
import { allHandlersFinished, condition, patched, sleep } from '@temporalio/workflow';
import type { ReadbackResult } from '../domain/destination-contract.js';
import { ledger } from './activity-proxies.js';
import { backoffMs } from './attempt.js';
import type { EffectResult } from './contract.js';
import type { EffectRun, QueuedDecision } from './effect-run.js';
import { CONTINUE_AS_NEW_PATCH } from './patches.js';

/** Automatic same-key retries after proven absence, before a human must decide. */
export const MAX_AUTOMATIC_RETRIES = 3;

export const RETRY = 'retry';
export type Resolution = typeof RETRY | EffectResult;

export async function reconcile(run: EffectRun): Promise<Resolution> {
  for (;;) {
    const readback = await readBack(run);
    if (readback.outcome === 'found') {
      run.view.setResult(readback.externalId, readback.externalUrl);
      run.move('reconciled');
      run.move('recorded');
      return run.result();
    }
    if (mayRetryAutomatically(run, readback)) {
      run.automaticRetries += 1;
      run.await(
        `retry with the same key: readback proved absence (automatic retry ${run.automaticRetries} of ${MAX_AUTOMATIC_RETRIES})`,
      );
      await sleep(backoffMs(run.automaticRetries));
      return RETRY;
    }
    const decision = await awaitDecision(run, readback);
    if (!decision) continue; // time to read back again
    const resolution = await decide(run, decision);
    if (resolution) return resolution;
  }
}

async function readBack(run: EffectRun): Promise<ReadbackResult> {
  run.await('readback: looking for the exact object at the destination');
  const readback = await ledger.readBack(run.target());
  run.readbacksThisRun += 1;
  run.view.addReadback({
    at: new Date().toISOString(),
    outcome: readback.outcome,
    coverage: readback.coverage,
    method: readback.detail.method,
    reason: readback.detail.reason,
  });
  return readback;
}

function mayRetryAutomatically(run: EffectRun, readback: ReadbackResult): boolean {
  return (
    readback.outcome === 'absent' &&
    run.input.retryAfterProvenAbsence &&
    run.automaticRetries < MAX_AUTOMATIC_RETRIES &&
    run.decisions.length === 0
  );
}

/** The next human decision, or undefined when the readback interval passed without one. */
async function awaitDecision(run: EffectRun, readback: ReadbackResult): Promise<QueuedDecision | undefined> {
  const { input, decisions } = run;
  run.await(
    `a human decision (signal approve-retry, confirm-delivery or abandon): readback was ${readback.outcome}` +
      ` (${readback.detail.reason}); reading back again every ${Math.round(input.readbackIntervalMs / 1000)} s`,
  );
  if (!(await condition(() => decisions.length > 0, input.readbackIntervalMs))) {
    if (!(run.longWait() && patched(CONTINUE_AS_NEW_PATCH))) return undefined;
    // Hand over only between decisions: one that arrives meanwhile is decided in this run.
    await condition(() => decisions.length > 0 || allHandlersFinished());
    if (decisions.length === 0) return run.handOver();
  }
  return decisions.shift();
}

/** Acts on a human decision: a resolution, or undefined when a confirmation was refused. */
async function decide(run: EffectRun, { ref, decision, answer }: QueuedDecision): Promise<Resolution | undefined> {
  const { input, view } = run;
  const respond = (accepted: boolean, reason?: string) => answer?.({ accepted, stage: view.stage, reason });
  const accepted = { requestRef: ref, effectId: input.effectId, ...decision, payload: decision, accepted: true };
  switch (decision.kind) {
    case 'approve-retry':
      await ledger.recordDecision(accepted);
      view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: true, note: decision.reason });
      respond(true);
      return RETRY;
    case 'abandon':
      await ledger.recordDecision(accepted, 'abandoned');
      view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: true, note: decision.reason });
      run.move('abandoned');
      respond(true);
      return run.result(`abandoned by ${decision.actor}: ${decision.reason}`);
    case 'confirm-delivery': {
      const confirmed = await ledger.confirmDelivery(run.target(), decision, ref);
      view.addDecision({
        kind: decision.kind,
        actor: decision.actor,
        accepted: confirmed.accepted,
        note: confirmed.accepted ? decision.reason : confirmed.reason,
      });
      if (!confirmed.accepted) {
        run.publish();
        respond(false, confirmed.reason);
        return undefined;
      }
      view.setResult(confirmed.externalId, confirmed.externalUrl);
      run.move('recorded');
      respond(true);
      return run.result(`confirmed by ${decision.actor}`);
    }
  }
}
