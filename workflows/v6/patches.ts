// Every patch the effect workflow carries, with what it changed (README, "Evolving the workflow safely").
// Runs older code started replay with the guard saying no; new runs record the marker and take the change.

/** v2: a long wait for a human continues as new; a v1 run that is waiting hands over at its next live check. */
export const CONTINUE_AS_NEW_PATCH = 'continue-as-new-while-awaiting-human';

/** v3: the release is written at approval, and each attempt is one activity (write, send, record). */
export const ONE_ACTIVITY_ATTEMPT_PATCH = 'one-activity-attempts';

/**
 * v4: an effect may have several outbound steps, carried one after another, each with its own attempts,
 * readbacks and fact; the effect is recorded when its last step is.
 */
export const MULTI_STEP_PATCH = 'multi-step-effects';

/**
 * An attempt a worker could not make because it does not host the step's destination is answered "not hosted"
 * (nothing written); the run waits, visibly, and tries again, never failing for it. Reached only on that answer,
 * which no earlier history holds.
 */
export const NOT_HOSTED_PATCH = 'wait-for-a-worker-that-hosts-the-destination';

/**
 * v5: a decision answers the step, revision and UNKNOWN episode (or not-sent pause) it arrived in, and is refused
 * as stale, with the reason recorded, once that is over: when its step settles as well as when its episode ends
 * in a retry, and whenever it is dequeued later. A pause before a resend takes only an abandon. A decision ID sent
 * again after a continue-as-new finds its decision in the ledger and is answered, not applied twice.
 */
export const DECISIONS_BOUND_PATCH = 'decisions-bound-to-their-step-and-episode';

/**
 * v5: a run that learns the effect is on a later revision than its own (its attempt refused by the ledger, a
 * lost answer, a revision signalled while it closes as rejected) continues as new on the current revision
 * instead of looping or closing; a lost answer the ledger holds is taken from the ledger.
 */
export const REVISION_HANDOVER_PATCH = 'runs-hand-over-to-the-current-revision';

/**
 * v5: a readback runs on its destination's own task queue (`<taskQueue>-readback-<destination>`), which the
 * workers poll at the rate the destination declares: when a provider returns from an outage, the readbacks of
 * every effect waiting on it go out at that rate, whatever the number of workers. Earlier runs read back on the
 * effect's task queue.
 */
export const READBACK_QUEUE_PATCH = 'readback-per-destination-queue';

/** v5: a run that continues as new while pausing after "not sent" hands the pause over: the next run sends again. */
export const NOT_SENT_CARRIED_PATCH = 'not-sent-pause-carried-across-continue-as-new';

/**
 * v6: an abandon gives up only on what has not happened. In UNKNOWN it first reads back, waiting while our last
 * request may still be processed (its in-flight window, or the destination says a request with our key is still
 * being processed); an object that turns up is recorded and the abandon is refused, with why.
 */
export const ABANDON_READS_BACK_PATCH = 'abandon-reads-back-past-what-is-in-flight';

/**
 * v6: a run that finds earlier runs' attempts, the last of them answered "not sent" (the run before was terminated,
 * reset or failed while pausing to resend), sends the next attempt with the same key: nothing is in flight. Before,
 * it started in UNKNOWN and read back, and on a key-less destination waited for a person (chaos seed 4242).
 */
export const RESEND_AFTER_NOT_SENT_PATCH = 'resumed-run-resends-after-not-sent';
