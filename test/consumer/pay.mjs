// Backend code: approve a payment on the user's own destination and wait for its result. The destinations come
// from EFFECT_LEDGER_DESTINATIONS (as the worker's do); connection settings from the environment.
import { openEffectLedger } from 'effect-ledger';

const [effectId, amount] = process.argv.slice(2);
const ledger = await openEffectLedger();
try {
  const approval = await ledger.effects.approve({
    effectId,
    destination: 'payments',
    operation: 'payment.create',
    payload: { amount: Number(amount), currency: 'EUR', customer: 'cus_42' },
    approvedBy: 'ana@example.com',
    authorizationRef: 'TICKET-PAY',
  });
  const result = await ledger.effects.result(approval.effectId);
  process.stdout.write(
    JSON.stringify({ created: approval.created, stage: result.stage, externalId: result.externalId }),
  );
} finally {
  await ledger.close();
}
