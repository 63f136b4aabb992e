// The user's own destination, in a file of its own: their payments API, declared through effect-ledger's
// declarative HTTP destination. Backend code and workers both load this file (EFFECT_LEDGER_DESTINATIONS);
// it imports nothing heavier than 'effect-ledger/destinations' and zod.
import { bodySha256Of, httpDestination } from 'effect-ledger/destinations';
import { z } from 'zod';

export const payments = httpDestination({
  name: 'payments',
  baseUrl: ({ env }) => env.PAYMENTS_URL, // unset: this worker does not host payments
  idempotencyKey: { header: 'Idempotency-Key', retentionSeconds: 24 * 60 * 60, scope: 'revision' },
  reference: 'metadata.reference', // stamped into every body, searched for on readback
  operations: {
    'payment.create': {
      schema: z.object({ amount: z.number().int().positive(), currency: z.string().length(3), customer: z.string() }),
      path: '/v1/payments',
      target: (p) => `payment of ${p.amount} ${p.currency} from ${p.customer}`,
    },
  },
  object: {
    path: '/v1/payments/{id}',
    // The API keeps no body hash: the released body is the payment's fields and the reference.
    bodySha256: ({ amount, currency, customer, metadata }) => bodySha256Of({ amount, currency, customer, metadata }),
  },
  readback: [
    {
      by: 'reference',
      path: '/v1/payments?reference={reference}',
      items: 'data',
      hasMore: 'has_more',
      cursorParam: 'starting_after',
    },
  ],
  callTimeoutMs: 5_000,
  retryAfterProvenAbsence: true, // the search covers every payment, and the key dedupes for 24 h anyway
  absenceGraceMs: 2_000,
  readbackMaxIntervalMs: 60 * 60 * 1000,
});

export default [payments];
