// orders-sql's contract: what the approving side needs to validate an order and fix its package. No
// database driver here: backend code imports this; the adapter (orders-sql.ts) connects it.
import { z } from 'zod';
import type { DestinationContract } from '../../domain/destination-contract.js';

const order = z
  .object({
    customer: z.string().min(1).max(100),
    sku: z.string().min(1).max(100),
    quantity: z.number().int().min(1).max(10_000),
    amountCents: z.number().int().min(0),
  })
  .strict();

/** An order and the email that tells the customer: two outbound steps of one approval. */
const invoice = order
  .extend({ to: z.email().max(254), subject: z.string().min(1).max(200), text: z.string().min(1).max(10_000) })
  .strict();

export const ordersSqlContract: DestinationContract = {
  name: 'orders-sql',
  mechanism: 'transactional',
  // The key lives as long as its row: no expiry to declare.
  keyRetentionSeconds: null,
  // A refused order commits nothing, so its key is free for the revision: one order per effect, whatever the revision.
  keyScope: 'effect',
  operations: { 'order.create': order, 'invoice.send': invoice },
  steps: {
    // The order row first (main, in one transaction with its key), then the email (step `email`, its
    // Message-ID derived from `effectID~email`): the customer is told only once the order exists.
    'invoice.send': ({ to, subject, text, ...order }) => [
      { step: 'main', destination: 'orders-sql', operation: 'order.create', payload: order },
      { step: 'email', destination: 'email-smtp', operation: 'email.send', payload: { to, subject, text } },
    ],
  },
  callTimeoutMs: 5_000,
  // A retry either inserts or meets our own row on the unique key: a duplicate is impossible.
  retryAfterProvenAbsence: true,
  // A statement whose client went away may still run (waiting on a lock) and commit a moment later.
  absenceGraceMs: 5_000,
  // The key dedupes every retry forever; reading back rarely while a person is awaited costs nothing.
  readbackMaxIntervalMs: 4 * 60 * 60 * 1000,
  // One indexed SELECT by key a readback (its one turn): the orders database's pool, not its CPU, bounds it.
  readbackRatePerSecond: 20,
  buildPackage(effectId, _operation, payload) {
    return {
      target: `INSERT INTO orders customer=${String(payload.customer)}`,
      body: { ...payload, effect_id: effectId },
    };
  },
  describe(operation, payload) {
    const order = `order ${String(payload.quantity)} × ${String(payload.sku)} for ${String(payload.customer)}`;
    return operation === 'invoice.send' ? `${order}, emailed to ${String(payload.to)}` : order;
  },
};
