// docs/your-own-destination.md ("A Stripe-shaped refunds API") shows this file line for line (test/readme.test.ts
// checks it): a declaration httpDestination accepts (test/doc-blocks.test.ts defines it). tsc compiles it.
import { z } from 'zod';
import { bodySha256Of, httpDestination } from '../../activities/destinations/index.js';

export const refunds = httpDestination({
  name: 'refunds',
  baseUrl: ({ env }) => env.REFUNDS_URL,
  idempotencyKey: { header: 'Idempotency-Key', retentionSeconds: 24 * 60 * 60, scope: 'revision' },
  reference: 'metadata.effect_id',
  operations: {
    'refund.create': {
      schema: z.object({ charge: z.string(), amount: z.number().int().positive() }).strict(),
      path: '/v1/refunds',
      target: (p) => `refund of ${p.charge}`,
    },
  },
  object: {
    path: '/v1/refunds/{id}',
    noun: 'refund',
    createdAt: { path: 'created', format: 'epoch-seconds' },
    // Stripe keeps no body hash: the released body is the refund's fields and the reference.
    bodySha256: ({ charge, amount, metadata }) => bodySha256Of({ charge, amount, metadata }),
  },
  readback: [
    {
      by: 'reference',
      path: "/v1/refunds/search?query=metadata['effect_id']:'{reference}'",
      items: 'data',
      hasMore: 'has_more',
      nextPage: 'next_page',
      cursorParam: 'page',
      lagMs: 60_000,
    },
  ],
  callTimeoutMs: 10_000,
  retryAfterProvenAbsence: true,
  absenceGraceMs: 65_000, // at least the search's lag: until then, "not found" proves nothing
  readbackMaxIntervalMs: 60 * 60 * 1000,
  readbackRatePerSecond: 20,
});

export default [refunds];
