// docs/conformance.md shows this file: why a revision's conformance cells need a refused payload with the
// sample's target, and a declaration for which one can be built (test/doc-blocks.test.ts checks both with the
// kit's own check).
import { z } from 'zod';
import { type HttpDestinationSpec, httpDestination } from '../../activities/destinations/index.js';

/** A refunds API that keys each revision: what both declarations below share. */
const api = {
  baseUrl: ({ env }) => env.REFUNDS_URL,
  idempotencyKey: { header: 'Idempotency-Key', retentionSeconds: 24 * 60 * 60, scope: 'revision' },
  reference: 'metadata.reference',
  object: { path: '/v1/refunds/{id}', bodySha256: 'metadata.body_sha256' },
  readback: [
    {
      by: 'reference',
      path: '/v1/refunds?reference={reference}',
      items: 'data',
      hasMore: 'has_more',
      cursorParam: 'after',
    },
  ],
  callTimeoutMs: 5_000,
  retryAfterProvenAbsence: true,
  absenceGraceMs: 2_000,
  readbackMaxIntervalMs: 60 * 60 * 1000,
} satisfies Omit<HttpDestinationSpec, 'name' | 'operations'>;

// No refused payload can be built: -100 fails the schema, and 999999 changes the target.
export const strictRefunds = httpDestination({
  ...api,
  name: 'strict-refunds',
  operations: {
    'refund.create': {
      schema: z.object({ charge: z.string(), amount: z.number().int().positive(), currency: z.string().length(3) }),
      path: '/v1/refunds',
      target: (p) => `refund of ${p.amount} on ${p.charge}`,
    },
  },
});

// This one works: the provider judges the amount (it answers 400 for -100), and the target stays the same.
export const refunds = httpDestination({
  ...api,
  name: 'refunds',
  operations: {
    'refund.create': {
      schema: z.object({ charge: z.string(), amount: z.number().int(), currency: z.string().length(3) }),
      path: '/v1/refunds',
      target: (p) => `refund on ${p.charge}`,
    },
  },
});

export default [strictRefunds, refunds];

// The payloads refunds' conformance target gives the kit (beside upstream, env, count and stop):
export const sample = { operation: 'refund.create', payload: { charge: 'ch_1', amount: 100, currency: 'EUR' } };
export const refusedPayload = { charge: 'ch_1', amount: -100, currency: 'EUR' }; // the same target; the API refuses it
