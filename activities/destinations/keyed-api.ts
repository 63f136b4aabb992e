// keyed-api — an EXAMPLE destination: a Stripe-style HTTP API, our provider simulator's /v1 (harness/simulator/),
// the friendliest kind of destination. It is declared through the declarative HTTP destination
// (http-destination.ts), as a user declares theirs. Mechanism: idempotency key. The API stores the first
// response per `Idempotency-Key` for 24 h and replays it (`Idempotent-Replayed: true`), answers 400 when a key
// comes back with other parameters (rejected: a revision needs its own key), 409 while a request with the key
// is in flight (unknown: that one may succeed). We also stamp the effect ID into `metadata` so readback finds
// the object by reference after the key is forgotten.
import { z } from 'zod';
import type { DestinationAdapter } from '../../domain/destination-contract.js';
import { type HttpDestinationSpec, httpAdapter, httpContract, httpDestination } from './http-destination.js';

const refund = z
  .object({
    charge: z.string().min(1).max(100),
    // Sign and limits are the provider's to judge; it answers 400 and we record a rejection.
    amount: z.number().int(),
    currency: z.string().regex(/^[A-Z]{3}$/),
    reason: z.string().max(500).optional(),
  })
  .strict();

const task = z
  .object({
    title: z.string().min(1).max(200),
    request: z.string().min(1).max(100),
    notes: z.string().max(2000).optional(),
  })
  .strict();

/** A task, and a post announcing it on a channel: two outbound steps of one approval. */
const taskAnnounced = task.extend({ channel: z.string().min(1).max(64), text: z.string().min(1).max(2000) }).strict();

/** Where the simulator listens unless the worker's environment says otherwise (`npm run simulator`). */
export const DEFAULT_PROVIDER_URL = 'http://127.0.0.1:4010';

export const keyedApiSpec: HttpDestinationSpec = {
  name: 'keyed-api',
  baseUrl: ({ env }) => env.EFFECT_LEDGER_PROVIDER_URL || DEFAULT_PROVIDER_URL,
  // A key that comes back with other parameters is answered 400 (Stripe's rule): a revision's new body
  // needs its own key, `effectID#r<n>`.
  idempotencyKey: {
    header: 'Idempotency-Key',
    retentionSeconds: 24 * 60 * 60,
    scope: 'revision',
    replayedHeader: 'Idempotent-Replayed',
  },
  reference: 'metadata.effect_id',
  operations: {
    'refund.create': {
      schema: refund,
      path: '/v1/objects',
      body: (payload, reference) => ({ kind: 'refund.create', ...payload, metadata: { effect_id: reference } }),
      target: (payload) => `POST /v1/objects refund of ${String(payload.charge)}`,
    },
    'task.create': {
      schema: task,
      path: '/v1/objects',
      body: (payload, reference) => ({ kind: 'task.create', ...payload, metadata: { effect_id: reference } }),
      target: (payload) => `POST /v1/objects task for ${String(payload.request)}`,
    },
  },
  plans: {
    // The task first (main, keyed here), then the announcement on the social feed (key-less: step `announce`).
    'task.announce': {
      schema: taskAnnounced,
      steps: ({ channel, text, ...task }) => [
        { step: 'main', destination: 'keyed-api', operation: 'task.create', payload: task },
        { step: 'announce', destination: 'social-feed', operation: 'post.publish', payload: { channel, text } },
      ],
    },
  },
  object: { path: '/v1/objects/{id}', id: 'id', createdAt: 'created_at', bodySha256: 'body_sha256' },
  readback: [
    // 1. By key, while the provider remembers it (409-style "in flight" is inconclusive, never absence).
    {
      by: 'key',
      path: '/v1/idempotency_keys/{key}',
      objectId: 'object_id',
      inFlight: { field: 'status', equals: 'in_flight' },
    },
    // 2. By the reference we stamped, over every object (a server-side filter: complete coverage).
    {
      by: 'reference',
      path: '/v1/objects?limit=100&metadata[effect_id]={reference}',
      items: 'data',
      hasMore: 'has_more',
      cursorParam: 'starting_after',
      maxPages: 10,
    },
  ],
  callTimeoutMs: 10_000,
  // Absence is proven by a server-side search over every object carrying our effect ID, and the key
  // (when still remembered) dedupes anyway: a same-key retry after that cannot make a duplicate.
  retryAfterProvenAbsence: true,
  // The key lookup reports a request still in flight (409 while processing); a short grace covers the
  // moment between our timeout and the provider registering the key.
  absenceGraceMs: 5_000,
  // One metadata search every few hours at most while a person is awaited: the key dedupes meanwhile.
  readbackMaxIntervalMs: 4 * 60 * 60 * 1000,
  // Readback requests: a readback is a key lookup and an object fetch (a metadata search once the key expired),
  // so 50 requests are 25 readbacks a second, well under a Stripe-style 100 reads a second, leaving room for
  // the sends.
  readbackRatePerSecond: 50,
  describe(operation, payload) {
    if (operation === 'refund.create')
      return `refund ${String(payload.amount)} ${String(payload.currency)} on ${String(payload.charge)}`;
    const task = `task "${String(payload.title)}" for ${String(payload.request)}`;
    return operation === 'task.announce' ? `${task}, announced on ${String(payload.channel)}` : task;
  },
};

export const keyedApiContract = httpContract(keyedApiSpec);

/** The example as a destination: hosted wherever the worker runs (the simulator's URL from its environment). */
export const keyedApiDestination = httpDestination(keyedApiSpec);

/** `credential`: the API key, from the worker's environment or a file (never from a payload). */
export function keyedApi(baseUrl: string, credential?: string): DestinationAdapter {
  return httpAdapter(keyedApiSpec, { baseUrl, ...(credential ? { credential } : {}) });
}
