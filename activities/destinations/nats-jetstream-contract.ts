// nats-jetstream's contract: what the approving side needs to validate an event and fix its package. No
// NATS client here: backend code imports this; the adapter (nats-jetstream.ts) connects it.
import { z } from 'zod';
import type { DestinationContract } from '../../domain/destination-contract.js';

const event = z
  .object({
    type: z.string().min(1).max(100),
    data: z.record(z.string(), z.unknown()),
  })
  .strict();

/** NATS' default duplicate window; the stream must keep at least this (the adapter records the real one). */
const DECLARED_WINDOW_SECONDS = 120;

export const natsJetStreamContract: DestinationContract = {
  name: 'nats-jetstream',
  mechanism: 'idempotency_key',
  keyRetentionSeconds: DECLARED_WINDOW_SECONDS,
  // A Nats-Msg-Id per revision: the stream's duplicate window would otherwise drop a revision as a repeat.
  keyScope: 'revision',
  operations: { 'event.publish': event },
  callTimeoutMs: 5_000,
  // Absence is read from the effect's own subject over the whole stream, and a late copy of our publish
  // cannot land after the in-flight window (its connection is closed): a same-key retry is safe.
  retryAfterProvenAbsence: true,
  // We close the connection when a publish times out; what the server had read by then is stored at once.
  absenceGraceMs: 2_000,
  readbackMaxIntervalMs: 60 * 60 * 1000,
  buildPackage(effectId, _operation, payload) {
    return { target: `JetStream publish ${String(payload.type)}`, body: { ...payload, effect_id: effectId } };
  },
  describe(_operation, payload) {
    return `event ${String(payload.type)}`;
  },
};
