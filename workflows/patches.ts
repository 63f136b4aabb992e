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
