// A person's decision on an effect that waits: approve a retry with the same key, confirm delivery with evidence,
// or abandon. Each answers the step, revision and decision window it arrived in, and is refused as stale, with why,
// once that is over; a decision ID the ledger already holds is answered, never applied twice.
import type { DecisionTaken } from '../ledger/progress.js';
import { ledger } from './activity-proxies.js';
import type { EffectResult } from './contract.js';
import type { EffectRun, QueuedDecision } from './effect-run.js';
import { freshLookBeforeRetry, lookBeforeAbandon, recordFound } from './looks.js';

export const RETRY = 'retry';
export type Resolution = typeof RETRY | EffectResult;

/**
 * Why a same-key retry may not leave now, or undefined. Past the key's retention the destination no longer dedupes
 * it: the retry is a new request, allowed only once a look proved absence over complete coverage — which no look
 * claims on the strength of a forgotten key.
 */
export function retryRefusal(
  run: EffectRun,
  latest: { outcome: string; detail: { reason: string } },
): string | undefined {
  const expiresAt = run.keyExpiresAt();
  if (expiresAt === undefined || Date.now() < expiresAt || latest.outcome === 'absent') return undefined;
  return `the idempotency key stopped deduping at ${new Date(expiresAt).toISOString()} (kept ${run.policy.keyRetentionSeconds} s from the first attempt): a retry now is a new request, allowed only once a look proves absence without the key; the last look was ${latest.outcome} (${latest.detail.reason}) — confirm-delivery, abandon, or approve again once a look proves absence`;
}

/**
 * The retry a decision or the policy allowed, after a fresh look: the object when it turned up, RETRY, or the
 * reason it may not leave.
 */
export async function retryAfterFreshLook(run: EffectRun, why: string): Promise<Resolution | { refused: string }> {
  const latest = await freshLookBeforeRetry(run, why);
  if (latest.outcome === 'found') return recordFound(run, latest);
  const refused = retryRefusal(run, latest);
  return refused ? { refused } : RETRY;
}

/** Acts on a human decision: a resolution, or undefined when it was refused and the wait goes on. */
export async function applyDecision(run: EffectRun, queued: QueuedDecision): Promise<Resolution | undefined> {
  const { input, view } = run;
  const { ref, decision, answer } = queued;
  const respond = (accepted: boolean, reason?: string, repeated?: boolean) =>
    answer?.({
      accepted,
      stage: view.stage,
      ...(reason === undefined ? {} : { reason }),
      ...(repeated ? { repeated } : {}),
    });
  const refuse = async (why: string) => {
    await run.refuse(decision.kind, decision.actor, decision, why, run.ownRef(queued));
    respond(false, why);
    return undefined;
  };
  const stale = run.staleness(queued);
  if (stale) return refuse(stale);
  const accepted = { requestRef: ref, effectId: input.effectId, ...decision, payload: decision, accepted: true };
  /** The ledger already held this decision ID (sent again after a continue-as-new): answered, not applied twice. */
  const repeat = (taken: DecisionTaken | undefined) => {
    if (!taken || taken.first) return false;
    const then = taken.accepted ? 'accepted' : `refused (${taken.rejectionReason ?? 'no reason recorded'})`;
    const why = `already decided: decision ${ref.replace(/^update:/, '')} was taken before and ${then}; not applied again`;
    view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: false, note: why });
    run.showDetails();
    respond(taken.accepted, why, true);
    return true;
  };
  switch (decision.kind) {
    case 'approve-retry': {
      // Past the key's retention, the answer waits for a fresh look: the retry is allowed only over proven absence.
      if (run.keyExpired()) {
        const checked = await retryAfterFreshLook(run, `retry approved by ${decision.actor}`);
        if (checked !== RETRY && 'refused' in checked) return refuse(checked.refused);
        if (checked !== RETRY) {
          await refuse(`not retried: the object turned up (${checked.externalId}); recorded instead`);
          return checked;
        }
        if (repeat(await ledger.recordDecision(accepted))) return undefined;
        view.addDecision({
          kind: decision.kind,
          actor: decision.actor,
          accepted: true,
          note: `${decision.reason} (the key no longer dedupes: a new request, after a look proved absence)`,
        });
        respond(true, 'the key is past its retention: the retry is a new request, sent after a look proved absence');
        return RETRY;
      }
      if (repeat(await ledger.recordDecision(accepted))) return undefined;
      view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: true, note: decision.reason });
      respond(true);
      const checked = await retryAfterFreshLook(run, `retry approved by ${decision.actor}`);
      if (checked === RETRY || !('refused' in checked)) return checked;
      // The key stopped deduping between the decision and its look: the retry does not leave after all.
      await run.refuse(decision.kind, decision.actor, decision, `the approved retry did not leave: ${checked.refused}`);
      return undefined;
    }
    case 'abandon': {
      // In UNKNOWN, not while our request may still land; an object that did is the result instead.
      const look = view.stage === 'unknown' ? await lookBeforeAbandon(run, decision.actor) : { clear: true as const };
      if ('found' in look) {
        const resolution = recordFound(run, look.found);
        await refuse(
          `not abandoned: the object turned up (${look.found.externalId}) before our last request could no longer be in flight; recorded instead`,
        );
        return resolution;
      }
      if ('stillProcessing' in look) return refuse(look.stillProcessing);
      if (repeat(await ledger.recordDecision(accepted, 'abandoned'))) return undefined;
      view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: true, note: decision.reason });
      run.move('abandoned');
      respond(true);
      return run.result(`abandoned by ${decision.actor}: ${decision.reason}`);
    }
    case 'confirm-delivery': {
      const confirmed = await ledger.confirmDelivery(run.target(), decision, ref);
      if (!confirmed.accepted && repeat(confirmed.taken)) return undefined;
      view.addDecision({
        kind: decision.kind,
        actor: decision.actor,
        accepted: confirmed.accepted,
        note: confirmed.accepted ? decision.reason : confirmed.reason,
      });
      if (!confirmed.accepted) {
        run.showDetails();
        respond(false, confirmed.reason);
        return undefined;
      }
      run.settleStep(confirmed.externalId, confirmed.externalUrl, 'human');
      respond(true);
      return run.result(`confirmed by ${decision.actor}`);
    }
  }
}
