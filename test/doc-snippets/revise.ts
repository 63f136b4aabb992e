// docs/multi-step-and-revisions.md ("Revisions") shows this file line for line (test/readme.test.ts checks it): a
// revision from backend code. tsc compiles it.
import { openEffectLedger } from '../../client/index.js';

const ledger = await openEffectLedger();
try {
  const payload = { charge: 'ch_1', amount: 4000, currency: 'EUR' }; // the fixed payload
  const revision = await ledger.effects.revise('refund:A-1', {
    payload,
    approvedBy: 'ops@example.com',
    authorizationRef: 'REFUND-POLICY-7',
    reason: 'amount was mistyped',
  });
  process.stdout.write(JSON.stringify(revision));
} finally {
  await ledger.close();
}
