// The send activity runs at most once per attempt: the compiler, not a reviewer, keeps it off the
// retried proxy. `npm test` typechecks this file (tsc covers test/); an unused @ts-expect-error fails it.
import type { ledger, sendActivity } from '../workflows/activity-proxies.js';

type Retried = typeof ledger;
type SendOnce = ReturnType<typeof sendActivity>;

// @ts-expect-error the retried proxy cannot reach the send activity
type RetriedSend = Retried['sendToDestination'];
// @ts-expect-error nor the one-activity attempt that sends
type RetriedAttempt = Retried['attemptOnce'];
// @ts-expect-error the single-shot proxy carries nothing but the send
type SendOnceWrites = SendOnce['recordAttempt'];

export type { RetriedAttempt, RetriedSend, SendOnceWrites };
