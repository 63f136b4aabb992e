// Every patch the effect workflow carries, with what it changed (README, "Evolving the workflow safely").
// Runs older code started replay with the guard saying no; new runs record the marker and take the change.

/** v2: a long wait for a human continues as new; a v1 run that is waiting hands over at its next live check. */
export const CONTINUE_AS_NEW_PATCH = 'continue-as-new-while-awaiting-human';

/** v3: the release is written at approval, and each attempt is one activity (write, send, record). */
export const ONE_ACTIVITY_ATTEMPT_PATCH = 'one-activity-attempts';
