// A backend process that closes its effect ledger while Temporal is down (test/client-close.test.ts): it
// connects, prints "connected", and on SIGUSR2 (the test has stopped Temporal meanwhile) approves an effect.
// Once the approval's first attempt has ended UNAVAILABLE, the call waits in the SDK's retry interceptor; then
// it closes, and prints how the approval settled as one JSON line.
import { setLogger } from '@grpc/grpc-js';
import { ServiceError } from '@temporalio/client';
import { openEffectLedger } from '../../client/open-effect-ledger.js';
import { taskRequest } from '../../harness/sample-requests.js';

// The test sets GRPC_TRACE=resolving_call: grpc-js traces every attempt's end, and the first UNAVAILABLE one
// means the call is now in the retry interceptor's hands. Traces stay out of our output.
let armed = false;
let firstAttemptFailed!: () => void;
const retrying = new Promise<void>((resolve) => {
  firstAttemptFailed = resolve;
});
setLogger({
  error: (...parts: unknown[]) => {
    if (armed && /ended with status: code=14\b/.test(parts.join(' '))) firstAttemptFailed();
  },
});

const { effects, close } = await openEffectLedger();
process.stdout.write('connected\n');
// A signal handler alone keeps no process alive (nor does an idle channel): this timer does, until the signal.
const awake = setInterval(() => {}, 60_000);
await new Promise((resolve) => process.once('SIGUSR2', resolve));
clearInterval(awake);

armed = true;
const approval = effects.approve(taskRequest(process.env.CLOSE_EFFECT_ID ?? 'task:close', 'close-1')).then(
  () => ({ settled: 'approved' }),
  (error: Error & { cause?: { code?: number; details?: string } }) => ({
    settled: 'rejected',
    name: error.name,
    serviceError: error instanceof ServiceError,
    message: error.message,
    cause: { code: error.cause?.code, details: error.cause?.details },
  }),
);
// (Or the approval settled first: a refusal before any start, which the test then shows.)
await Promise.race([retrying, approval]);
await close();
process.stdout.write(`${JSON.stringify(await approval)}\n`);
