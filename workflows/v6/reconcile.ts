// UNKNOWN: automatic retries are frozen. Read back first; retry with the same key only where the
// destination's contract allows it after proven absence; otherwise wait for a human, reading back
// again on a schedule so a late object is still found. Every retry, human or automatic, is preceded
// by a fresh readback that records the object instead when it turns up. Ends in a result, or in RETRY.
import { allHandlersFinished, condition, patched, sleep, workflowInfo } from '@temporalio/workflow';
import { type ReadbackResult, readbackTaskQueue } from '../../domain/destination-contract.js';
import { isTerminal } from '../../domain/stages.js';
import type { DecisionTaken } from '../../ledger/progress.js';
import { ledger, readback, readbackOn } from './activity-proxies.js';
import { backoffMs } from './attempt.js';
import type { EffectResult } from './contract.js';
import type { EffectRun, QueuedDecision } from './effect-run.js';
import { ABANDON_READS_BACK_PATCH, CONTINUE_AS_NEW_PATCH, READBACK_QUEUE_PATCH } from './patches.js';

/** Automatic same-key retries after proven absence, before a human must decide. */
export const MAX_AUTOMATIC_RETRIES = 3;

export const RETRY = 'retry';
export type Resolution = typeof RETRY | EffectResult;

export async function reconcile(run: EffectRun): Promise<Resolution> {
  run.episode += 1;
  const resolution = await settleUnknown(run);
  // A decision queued while this episode ended must not be applied to a later, different one.
  if (resolution === RETRY && run.v3) {
    await run.refuseStale(
      `stale: it answered UNKNOWN episode ${run.episode}, which ended in a retry; send it again if it still holds`,
    );
  }
  // v5: nor to the next step, once this one settled (a terminal result answers them in finish()).
  if (resolution !== RETRY && !isTerminal(resolution.stage) && run.decisions.length && run.decisionsBound()) {
    await run.refuseStale(
      `stale: it answered step ${run.step}, which is settled; decide again on the next step if it needs you`,
    );
  }
  return resolution;
}

async function settleUnknown(run: EffectRun): Promise<Resolution> {
  // Once a person is awaited, a readback is a look taken while that wait goes on, and says so.
  let whileAwaitingPerson = false;
  for (;;) {
    const found = await readBack(run, whileAwaitingPerson);
    if (found.outcome === 'found') return recordFound(run, found);
    if (mayRetryAutomatically(run, found)) {
      run.automaticRetries += 1;
      run.await(
        `retry with the same key: readback proved absence (automatic retry ${run.automaticRetries} of ${MAX_AUTOMATIC_RETRIES})`,
      );
      await sleep(backoffMs(run.automaticRetries));
      return freshReadbackBeforeRetry(run);
    }
    const decision = await awaitDecision(run, found);
    // A wait for a person, not only for the in-flight window to close: the next look is taken during it.
    whileAwaitingPerson = !found.detail.inFlightUntil;
    if (!decision) continue; // time to read back again
    const resolution = await applyDecision(run, decision);
    if (resolution) return resolution;
  }
}

async function readBack(run: EffectRun, whileAwaitingPerson = false): Promise<ReadbackResult> {
  // The text only (no command): a look taken while a person is awaited is still that wait, for the UI and the
  // audit alike (a readback queued behind its destination's rate limit was once taken for a lost effect).
  run.await(
    whileAwaitingPerson
      ? 'a human decision, reading back meanwhile (signal approve-retry, confirm-delivery or abandon): looking for the exact object at the destination'
      : 'readback: looking for the exact object at the destination',
  );
  // v3 reads back through a proxy with a heartbeat timeout; earlier runs replay the retried ledger proxy. v5
  // reads back on the destination's own, rate-limited task queue.
  const read = !run.v3
    ? ledger.readBack
    : patched(READBACK_QUEUE_PATCH)
      ? readbackOn(readbackTaskQueue(workflowInfo().taskQueue, run.destination)).readBack
      : readback.readBack;
  const result = await read(run.target());
  run.readbacksThisRun += 1;
  run.view.addReadback({
    at: new Date().toISOString(),
    outcome: result.outcome,
    coverage: result.coverage,
    method: result.detail.method,
    reason: result.detail.reason,
  });
  return result;
}

function recordFound(run: EffectRun, found: Extract<ReadbackResult, { outcome: 'found' }>): EffectResult {
  run.settleStep(found.externalId, found.externalUrl, 'readback');
  return run.result();
}

/**
 * v3: a retry leaves only after a readback that still finds nothing, once our last request can no
 * longer be in flight (the readback says until when); the object is recorded instead if it turned up.
 */
async function freshReadbackBeforeRetry(run: EffectRun): Promise<Resolution> {
  if (!run.v3) return RETRY;
  for (;;) {
    const latest = await readBack(run);
    if (latest.outcome === 'found') return recordFound(run, latest);
    const inFlightUntil = latest.detail.inFlightUntil;
    if (!inFlightUntil) return RETRY;
    run.await(`retry approved; first waiting until ${inFlightUntil}, when our last request can no longer be in flight`);
    await sleep(Math.max(1000, Date.parse(inFlightUntil) - Date.now()));
  }
}

/**
 * v6: the readback an abandon waits for: again and again while our last request may still be processed (until
 * its in-flight window closes, or while the destination says a request with our key is in progress); the object
 * when it turned up.
 */
async function objectBeforeAbandon(
  run: EffectRun,
  actor: string,
): Promise<Extract<ReadbackResult, { outcome: 'found' }> | undefined> {
  for (let waits = 1; ; waits++) {
    const latest = await readBack(run);
    if (latest.outcome === 'found') return latest;
    const { inFlightUntil, stillProcessing } = latest.detail;
    if (!inFlightUntil && !stillProcessing) return undefined;
    const until = inFlightUntil ? Date.parse(inFlightUntil) - Date.now() : 0;
    const wait = Math.max(until, stillProcessing ? backoffMs(waits) : 1000);
    run.await(
      `abandon by ${actor}: first waiting ${Math.round(wait / 1000)} s while our last request may still be processed` +
        ` (${latest.detail.reason}); an object that lands meanwhile is recorded instead`,
    );
    await sleep(wait);
  }
}

function mayRetryAutomatically(run: EffectRun, read: ReadbackResult): boolean {
  return (
    read.outcome === 'absent' &&
    run.policy.retryAfterProvenAbsence &&
    run.automaticRetries < MAX_AUTOMATIC_RETRIES &&
    run.decisions.length === 0
  );
}

/** The next human decision, or undefined when the readback interval passed without one. */
async function awaitDecision(run: EffectRun, read: ReadbackResult): Promise<QueuedDecision | undefined> {
  const { decisions } = run;
  // While our last request may still be in flight, read again as soon as that window closes.
  const inFlightUntil = read.detail.inFlightUntil ? Date.parse(read.detail.inFlightUntil) : undefined;
  const interval = readbackInterval(run);
  const wait = inFlightUntil ? Math.min(interval, Math.max(1000, inFlightUntil - Date.now())) : interval;
  run.await(
    inFlightUntil
      ? `our last request may still be in flight until ${read.detail.inFlightUntil}: reading back then` +
          ' (a person may decide meanwhile: approve-retry, confirm-delivery or abandon)'
      : `a human decision (signal approve-retry, confirm-delivery or abandon): readback was ${read.outcome}` +
          ` (${read.detail.reason}); reading back again in ${Math.round(wait / 1000)} s`,
  );
  if (!(await condition(() => decisions.length > 0, wait))) {
    if (!(run.longWait() && patched(CONTINUE_AS_NEW_PATCH))) return undefined;
    // Hand over only between decisions: one that arrives meanwhile is decided in this run.
    await condition(() => decisions.length > 0 || allHandlersFinished());
    if (decisions.length === 0) return run.handOver();
  }
  return decisions.shift();
}

/**
 * How long to wait for a person before reading back again: v3 doubles the effect's interval after each
 * readback of this wait, up to the destination's cap; earlier runs replay a fixed interval.
 */
function readbackInterval(run: EffectRun): number {
  const { readbackIntervalMs } = run.input;
  const { readbackMaxIntervalMs } = run.policy;
  if (!run.v3 || readbackMaxIntervalMs === undefined) return readbackIntervalMs;
  const doublings = Math.min(Math.max(0, run.readbacksThisRun - 1), 30);
  return Math.min(readbackMaxIntervalMs, readbackIntervalMs * 2 ** doublings);
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
  // v5: the step, revision and episode it answered are still the ones awaited, and so is what it names (the
  // patch is asked only where the answer differs, so the histories of decisions that hold stay as they were).
  const unbound = run.staleness(queued);
  const stale =
    unbound && run.decisionsBound()
      ? unbound
      : run.v3 && decision.attempt !== undefined && decision.attempt !== run.attemptNumber
        ? `stale: it answers attempt ${decision.attempt}; the effect is on attempt ${run.attemptNumber}`
        : undefined;
  if (stale) {
    await run.refuse(decision.kind, decision.actor, decision, stale, run.ownRef(queued));
    respond(false, stale);
    return undefined;
  }
  const accepted = { requestRef: ref, effectId: input.effectId, ...decision, payload: decision, accepted: true };
  /** v5: the ledger already held this decision ID (sent again after a continue-as-new): answered, not applied twice. */
  const repeat = (taken: DecisionTaken | undefined) => {
    if (!taken || taken.first || !run.decisionsBound()) return false;
    const then = taken.accepted ? 'accepted' : `refused (${taken.rejectionReason ?? 'no reason recorded'})`;
    const why = `already decided: decision ${ref.replace(/^update:/, '')} was taken before and ${then}; not applied again`;
    view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: false, note: why });
    run.publish();
    respond(taken.accepted, why, true);
    return true;
  };
  switch (decision.kind) {
    case 'approve-retry': {
      if (repeat(await ledger.recordDecision(accepted))) return undefined;
      view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: true, note: decision.reason });
      respond(true);
      return freshReadbackBeforeRetry(run);
    }
    case 'abandon': {
      // v6: in UNKNOWN, not while our request may still land; an object that did is the result instead.
      const mayHaveLanded = view.stage === 'unknown' && run.decisionsBound() && patched(ABANDON_READS_BACK_PATCH);
      const found = mayHaveLanded ? await objectBeforeAbandon(run, decision.actor) : undefined;
      if (found) {
        const resolution = recordFound(run, found);
        const why = `not abandoned: the object turned up (${found.externalId}) before our last request could no longer be in flight; recorded instead`;
        await run.refuse(decision.kind, decision.actor, decision, why, run.ownRef(queued));
        respond(false, why);
        return resolution;
      }
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
        run.publish();
        respond(false, confirmed.reason);
        return undefined;
      }
      run.settleStep(confirmed.externalId, confirmed.externalUrl, 'human');
      respond(true);
      return run.result(`confirmed by ${decision.actor}`);
    }
  }
}
