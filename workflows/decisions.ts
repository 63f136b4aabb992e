// A person's decision on an effect that waits: approve a retry with the same key, confirm delivery with evidence,
// or abandon. Each answers the step, revision and decision window it arrived in, and is refused as stale, with why,
// once that is over; a decision ID the ledger already holds is answered, never applied twice.
import type { DecisionTaken } from '../ledger/progress.js';
import { ledger } from './activity-proxies.js';
import type { EffectResult } from './contract.js';
import type { EffectRun, QueuedDecision } from './effect-run.js';
import {
  DECISION_LOOK_PATIENCE_MS,
  freshLookBeforeRetry,
  lookBeforeAbandon,
  lookWithin,
  recordFound,
} from './looks.js';

export const RETRY = 'retry';

/** What a person is told who approves a retry where nothing dedupes one. */
const KEYLESS_RETRY =
  'this destination honours no idempotency key: the retry leaves only once a look after our last request could no longer be in flight proves absence; otherwise it is refused and the effect waits on';
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
  if (run.keyless)
    return `this destination honours no idempotency key: a retry is a second request, allowed only once a look proves absence; the last look was ${latest.outcome} (${latest.detail.reason}) — confirm-delivery, abandon, or approve again once a look proves absence`;
  return `the idempotency key stopped deduping at ${new Date(expiresAt).toISOString()} (kept ${run.policy.keyRetentionSeconds} s from the first attempt): a retry now is a new request, allowed only once a look proves absence without the key; the last look was ${latest.outcome} (${latest.detail.reason}) — confirm-delivery, abandon, or approve again once a look proves absence`;
}

/** Why an abandon over a look that could not tell is refused, and what the person may do. */
function abandonUnproven(latest: { outcome: string; detail: { reason: string } }): string {
  return `not abandoned: the last look was ${latest.outcome} (${latest.detail.reason}), so the object may be at the destination — check there: confirm-delivery with its ID if it is, or abandon again with "checkedAbsent": true once you have seen it is not`;
}

/** Why a retry is a new request: the destination honours no key (retention 0), or it forgot ours. */
export function whyNewRequest(run: EffectRun): string {
  return run.keyless ? 'this destination honours no idempotency key' : 'the idempotency key no longer dedupes';
}

/**
 * The retry a decision or the policy allowed, after a fresh look: the object when it turned up, RETRY, or the
 * reason it may not leave. Past the key's retention the look must come within DECISION_LOOK_PATIENCE_MS.
 */
export async function retryAfterFreshLook(run: EffectRun): Promise<Resolution | { refused: string }> {
  // Key-less: the look waits out our last request's in-flight window, and only absence lets the retry leave.
  if (run.keyExpired() && !run.keyless) {
    const latest = await lookWithin(run, DECISION_LOOK_PATIENCE_MS);
    if (!latest)
      return {
        refused: `${whyNewRequest(run)} and no look could be taken within ${DECISION_LOOK_PATIENCE_MS / 1000} s to prove absence (the destination does not answer readbacks): decide again once it does`,
      };
    if (latest.outcome === 'found') return recordFound(run, latest);
    if (latest.detail.inFlightUntil)
      return { refused: 'our last request may still be in flight: decide again after it' };
    const refused = retryRefusal(run, latest);
    return refused ? { refused } : RETRY;
  }
  const latest = await freshLookBeforeRetry(run);
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
      if (run.keyExpired() && !run.keyless) {
        const checked = await retryAfterFreshLook(run);
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
          note: `${decision.reason} (${whyNewRequest(run)}: a new request, after a look proved absence)`,
        });
        respond(true, `${whyNewRequest(run)}: the retry is a new request, sent after a look proved absence`);
        return RETRY;
      }
      if (repeat(await ledger.recordDecision(accepted))) return undefined;
      view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: true, note: decision.reason });
      respond(true, run.keyless ? KEYLESS_RETRY : undefined);
      const checked = await retryAfterFreshLook(run);
      if (checked === RETRY || !('refused' in checked)) return checked;
      // The look did not prove absence where nothing dedupes, or the key stopped deduping meanwhile: no retry.
      await run.refuse(decision.kind, decision.actor, decision, `the approved retry did not leave: ${checked.refused}`);
      return undefined;
    }
    case 'abandon': {
      // In UNKNOWN, not while our request may still land; an object that did is the result instead.
      const look = view.stage === 'unknown' ? await lookBeforeAbandon(run, decision.actor) : { clear: undefined };
      if ('found' in look) {
        const resolution = recordFound(run, look.found);
        await refuse(
          `not abandoned: the object turned up (${look.found.externalId}) before our last request could no longer be in flight; recorded instead`,
        );
        return resolution;
      }
      if ('stillProcessing' in look) return refuse(look.stillProcessing);
      // A look that could not tell (the post fell out of a crowded listing) is no ground to give up beside an object
      // that may be there: the person checks the destination and says so (found by chaos seed 2026120603).
      if (look.clear && look.clear.outcome !== 'absent' && !decision.checkedAbsent)
        return refuse(abandonUnproven(look.clear));
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
