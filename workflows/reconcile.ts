// UNKNOWN: automatic retries are frozen. Look first; retry with the same key only where the destination's contract
// allows it after proven absence (and the key still dedupes); otherwise wait for a person while the looks go on, on
// the destination's schedule, so a late object is still found. Every retry, a person's or the policy's, is preceded
// by a fresh look that records the object instead when it turned up. Ends in a result, or in RETRY.
import { sleep } from '@temporalio/workflow';
import type { ReadbackResult } from '../domain/destination-contract.js';
import type { LookSchedule } from '../domain/look-schedule.js';
import { isTerminal } from '../domain/stages.js';
import type { LookPriority } from './activity-proxies.js';
import { backoffMs } from './attempt.js';
import { applyDecision, RETRY, type Resolution, retryAfterFreshLook } from './decisions.js';
import { type EffectRun, MAX_AUTOMATIC_RETRIES } from './effect-run.js';
import { firstLookAt, recordFound, watchForChange } from './looks.js';

export async function reconcile(run: EffectRun): Promise<Resolution> {
  run.episode += 1;
  const resolution = await settleUnknown(run);
  // A decision queued while this episode ended must not be applied to a later, different one.
  if (resolution === RETRY)
    await run.refuseStale(
      `stale: it answered UNKNOWN episode ${run.episode}, which ended in a retry; send it again if it still holds`,
    );
  // Nor to the next step, once this one settled (a terminal result answers them in finish()).
  else if (!isTerminal(resolution.stage) && run.decisions.length)
    await run.refuseStale(
      `stale: it answered step ${run.step}, which is settled; decide again on the next step if it needs you`,
    );
  return resolution;
}

async function settleUnknown(run: EffectRun): Promise<Resolution> {
  run.rest('look', 'readback: looking for the exact object at the destination');
  const carriedSince = run.input.carried?.waitingSince;
  const schedule: LookSchedule = {
    since: carriedSince ? Date.parse(carriedSince) : Date.now(),
    intervalMs: run.input.readbackIntervalMs,
    maxIntervalMs: run.policy.readbackMaxIntervalMs ?? run.input.readbackIntervalMs,
  };
  // What the looks have seen (nothing yet: the first look is under way), and when and how urgently to look next.
  let read: ReadbackResult | undefined;
  let priority: LookPriority = 'first';
  let notBefore = Date.now();
  for (;;) {
    if (read) {
      if (read.outcome === 'found') return recordFound(run, read);
      if (mayRetryAutomatically(run, read)) {
        const retried = await automaticRetry(run);
        if (retried !== undefined) return retried;
      }
      showWait(run, read, notBefore);
    }
    // Even the first look gives way to a person: a destination that cannot be read never holds a decision up.
    const waiting = read !== undefined;
    const end = await watchForChange(run, read, schedule, { notBefore, priority });
    priority = read ? 'repeat' : 'first';
    switch (end.kind) {
      case 'verdict':
        read = end.read;
        priority = 'repeat';
        notBefore = firstLookAt(read, schedule);
        break;
      case 'look-now':
        run.lookNowAsked = false;
        priority = read ? 'asked' : 'first';
        notBefore = Date.now();
        break;
      case 'hand-over':
        return run.handOver({ waitingSince: schedule.since });
      case 'decision': {
        const resolution = await applyDecision(run, end.decision);
        if (resolution) return resolution;
        // Refused: the wait goes on, its looks on their schedule.
        notBefore = read ? Math.max(Date.now(), firstLookAt(read, schedule)) : Date.now();
      }
    }
    // A wake from a wait (the first look is not one) counts toward the run's hand-over.
    if ((waiting || end.kind === 'decision') && run.woke()) return run.handOver({ waitingSince: schedule.since });
  }
}

/**
 * Policy's same-key retry: absence proven over complete coverage, the contract allows it, the key still dedupes —
 * or, key-less, there is no key to forget and the retry's own fresh look must prove absence again.
 */
function mayRetryAutomatically(run: EffectRun, read: ReadbackResult): boolean {
  return (
    read.outcome === 'absent' &&
    read.coverage === 'complete' &&
    run.policy.retryAfterProvenAbsence &&
    run.automaticRetries < MAX_AUTOMATIC_RETRIES &&
    run.decisions.length === 0 &&
    (run.keyless || !run.keyExpired())
  );
}

/** The policy's retry after a pause and a fresh look: RETRY, the object, or undefined when it may not leave. */
async function automaticRetry(run: EffectRun): Promise<Resolution | undefined> {
  run.automaticRetries += 1;
  const why = `retry with the same key: a look proved absence (automatic retry ${run.automaticRetries} of ${MAX_AUTOMATIC_RETRIES})`;
  run.await(why);
  await sleep(backoffMs(run.automaticRetries));
  const checked = await retryAfterFreshLook(run);
  return checked === RETRY || !('refused' in checked) ? checked : undefined;
}

/** What the effect waits for now, in the details and (where it changed) the search attributes. */
function showWait(run: EffectRun, read: ReadbackResult, nextLook: number): void {
  const next = new Date(nextLook).toISOString();
  if (read.detail.inFlightUntil) {
    run.rest(
      'look',
      `our last request may still be in flight until ${read.detail.inFlightUntil}: looking again then (a person may decide meanwhile: approve-retry, confirm-delivery or abandon)`,
    );
    return;
  }
  const expiresAt = run.keyExpiresAt();
  const key = run.keyless
    ? ' Nothing at this destination dedupes a retry: it is a new request, allowed only once a look proves absence.'
    : expiresAt !== undefined && Date.now() >= expiresAt
      ? ` The key stopped deduping at ${new Date(expiresAt).toISOString()}: a retry is a new request, allowed only once a look proves absence.`
      : '';
  run.rest(
    'person',
    `a human decision (signal approve-retry, confirm-delivery or abandon): the last look was ${read.outcome} (${read.detail.reason}); looking again at ${next}, then less often (the pending activity watchForObject shows each look; effect status lists them all).${key}`,
  );
}
