// What a backend service writes: connection settings come from the environment, as for every Temporal tool.
import { openEffectLedger } from 'effect-ledger';

const ledger = await openEffectLedger();
try {
  const approval = await ledger.effects.approve({
    effectId: 'refund:pkg-1',
    destination: 'keyed-api',
    operation: 'refund.create',
    payload: { charge: 'ch_pkg', amount: 1200, currency: 'EUR' },
    approvedBy: 'ana@example.com',
    authorizationRef: 'TICKET-PKG',
  });
  const result = await ledger.effects.result(approval.effectId);
  process.stdout.write(JSON.stringify({ created: approval.created, stage: result.stage }));
} finally {
  await ledger.close();
}
