// Looking for the effect's object at the destination while it is UNKNOWN. A look never writes to the destination;
// each one leaves its evidence in the ledger. One look is one activity; a wait's repeat looks are the retries of one
// activity (activities/look-activities.ts), which write no history: the workflow wakes only when what the looks see
// changes, when a person decides, or when an operator asks for a look now.
import { CancellationScope, condition, isCancellation, sleep } from '@temporalio/workflow';
import type { ReadbackResult } from '../domain/destination-contract.js';
import { type LookSchedule, nextLookAt, verdictKey } from '../domain/look-schedule.js';
import { type LookPriority, looks } from './activity-proxies.js';
import type { EffectResult } from './contract.js';
import type { EffectRun, QueuedDecision } from './effect-run.js';

export type Found = Extract<ReadbackResult, { outcome: 'found' }>;

/** Notes what a look saw in the run's view (the status query, the UI's details); the ledger has every look. */
function noteLook(run: EffectRun, read: ReadbackResult): void {
  run.view.addReadback({
    at: new Date().toISOString(),
    outcome: read.outcome,
    coverage: read.coverage,
    method: read.detail.method,
    reason: read.detail.reason,
  });
}

/** One look now: the first after an attempt, the fresh one before a retry, an abandon's. */
export async function lookOnce(run: EffectRun, priority: LookPriority = 'first'): Promise<ReadbackResult> {
  const read = await looks(run.destination, priority).watchForObject(run.target());
  noteLook(run, read);
  return read;
}

export function recordFound(run: EffectRun, found: Found): EffectResult {
  run.settleStep(found.externalId, found.externalUrl, 'readback');
  return run.result();
}

/** Why a watch ended: the looks saw something new, a decision came, an operator asked for a look now, or hand over. */
export type WatchEnd =
  | { kind: 'verdict'; read: ReadbackResult }
  | { kind: 'decision'; decision: QueuedDecision }
  | { kind: 'look-now' | 'hand-over' };

/**
 * Watches for a change of `known` (nothing known: the first look's verdict): the looks go on at the destination on
 * `schedule` (the first at `notBefore`) as retries of one activity, until one sees something else. A decision, a
 * look-now or a long run cancels the watch at once (a watch between looks is cancelled by the server without
 * waiting for anything).
 */
export async function watchForChange(
  run: EffectRun,
  known: ReadbackResult | undefined,
  schedule: LookSchedule,
  { notBefore, priority }: { notBefore: number; priority: LookPriority },
): Promise<WatchEnd> {
  const scope = new CancellationScope();
  let seen: ReadbackResult | undefined;
  let failed: unknown;
  const watching = scope
    .run(() =>
      looks(run.destination, priority).watchForObject({
        ...run.target(),
        ...(known ? { known: verdictKey(known) } : {}),
        notBefore,
        schedule,
      }),
    )
    .then(
      (read) => {
        seen = read;
      },
      (error: unknown) => {
        failed = error;
      },
    );
  await condition(
    () => seen !== undefined || failed !== undefined || run.decisions.length > 0 || run.lookNowAsked || run.longWait(),
  );
  const cancelled = seen === undefined && failed === undefined;
  if (cancelled) {
    scope.cancel();
    await watching;
  }
  // A look that finished as the watch was cancelled still counts: what it saw is in the ledger.
  if (seen) {
    noteLook(run, seen);
    return { kind: 'verdict', read: seen };
  }
  // Cancelled, a look in progress ends as it may (its retry is not made): nothing to learn from how. Uncancelled, a
  // failure is one no retry can mend (a missing release, say).
  if (failed !== undefined && !cancelled && !isCancellation(failed)) throw failed;
  const decision = run.decisions.shift();
  if (decision) return { kind: 'decision', decision };
  return { kind: run.lookNowAsked ? 'look-now' : 'hand-over' };
}

/** When a watch over `known` should take its first look. */
export function firstLookAt(known: ReadbackResult, schedule: LookSchedule): number {
  const inFlightUntil = known.detail.inFlightUntil ? Date.parse(known.detail.inFlightUntil) : undefined;
  return inFlightUntil ?? nextLookAt(Date.now(), schedule);
}

/**
 * A retry leaves only after a look that still finds nothing, once our last request can no longer be in flight (the
 * look says until when); the object is recorded instead if it turned up. Returns the look that allows the retry.
 */
export async function freshLookBeforeRetry(run: EffectRun): Promise<Found | ReadbackResult> {
  for (;;) {
    const latest = await lookOnce(run);
    const inFlightUntil = latest.detail.inFlightUntil;
    if (latest.outcome === 'found' || !inFlightUntil) return latest;
    run.await(`retry approved; first waiting until ${inFlightUntil}, when our last request can no longer be in flight`);
    await sleep(Math.max(1000, Date.parse(inFlightUntil) - Date.now()));
  }
}

/** How long a decision that needs a fresh look (a retry past the key's retention) waits for one. */
export const DECISION_LOOK_PATIENCE_MS = 60_000;

/**
 * One look, or undefined when none answered within `patienceMs` (the destination cannot be read): a person's decision
 * that needs a look is answered, not held up for as long as the destination is down.
 */
export async function lookWithin(run: EffectRun, patienceMs: number): Promise<ReadbackResult | undefined> {
  const scope = new CancellationScope();
  let read: ReadbackResult | undefined;
  const looking = scope
    .run(() => lookOnce(run))
    .then(
      (r) => {
        read = r;
      },
      (error: unknown) => {
        if (!isCancellation(error)) throw error;
      },
    );
  const timedOut = await condition(() => read !== undefined, patienceMs).then((done) => !done);
  if (timedOut) scope.cancel();
  await looking.catch(() => undefined);
  return read;
}

/** How long an abandon waits while the destination says it still processes our key, before it is refused. */
export const ABANDON_PATIENCE_MS = 5 * 60_000;

/**
 * The look an abandon waits for: again while our last request may still be processed (until its in-flight window
 * closes, or — for at most ABANDON_PATIENCE_MS — while the destination says a request with our key is in progress).
 * Returns the object when it turned up, the look after the window (absent, or inconclusive: the abandon then needs the
 * person's word), or why it cannot be allowed yet.
 */
export async function lookBeforeAbandon(
  run: EffectRun,
  actor: string,
): Promise<{ found: Found } | { clear: ReadbackResult } | { stillProcessing: string }> {
  const began = Date.now();
  for (let waits = 1; ; waits++) {
    const latest = await lookOnce(run);
    if (latest.outcome === 'found') return { found: latest };
    const { inFlightUntil, stillProcessing } = latest.detail;
    if (!inFlightUntil && !stillProcessing) return { clear: latest };
    const until = inFlightUntil ? Date.parse(inFlightUntil) - Date.now() : 0;
    if (!inFlightUntil && Date.now() - began >= ABANDON_PATIENCE_MS)
      return {
        stillProcessing: `not abandoned: after ${Math.round((Date.now() - began) / 1000)} s the destination still reports a request with our key in progress (${latest.detail.reason}); it may yet make the object — abandon again once it has settled, or confirm-delivery if it did`,
      };
    const wait = Math.max(until, stillProcessing ? Math.min(60_000, 1000 * 2 ** Math.min(waits - 1, 6)) : 1000);
    run.await(
      `abandon by ${actor}: first waiting ${Math.round(wait / 1000)} s while our last request may still be processed` +
        ` (${latest.detail.reason}); an object that lands meanwhile is recorded instead`,
    );
    await sleep(wait);
  }
}
