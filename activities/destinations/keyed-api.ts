// keyed-api: a Stripe-style HTTP API (our simulator's /v1), the friendliest kind of destination.
// Mechanism: idempotency key. It stores the first response per `Idempotency-Key` for 24 h and replays
// it (`Idempotent-Replayed: true`), answers 400 when a key comes back with other parameters, 409 while
// a request with the key is in flight. We also stamp the effect ID into `metadata` so readback can
// find the object by reference after the key is forgotten.
import { z } from 'zod';
import type { DestinationAdapter, DestinationContract, SendOutcome } from './destination.js';
import { classifyErrorStatus, classifyTransportError } from './http-outcome.js';

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

export const keyedApiContract: DestinationContract = {
  name: 'keyed-api',
  mechanism: 'idempotency_key',
  keyRetentionSeconds: 24 * 60 * 60,
  operations: { 'refund.create': refund, 'task.create': task },
  callTimeoutMs: 10_000,
  buildPackage(effectId, operation, payload) {
    const target =
      operation === 'refund.create' ? `POST /v1/objects refund of ${String(payload.charge)}` : `POST /v1/objects task for ${String(payload.request)}`;
    return { target, body: { kind: operation, ...payload, metadata: { effect_id: effectId } } };
  },
  describe(operation, payload) {
    return operation === 'refund.create'
      ? `refund ${String(payload.amount)} ${String(payload.currency)} on ${String(payload.charge)}`
      : `task "${String(payload.title)}" for ${String(payload.request)}`;
  },
};

const createdObject = z.object({ id: z.string().min(1), created_at: z.string().optional() });

export function keyedApi(baseUrl: string): DestinationAdapter {
  return {
    ...keyedApiContract,
    async send({ idempotencyKey, package: pkg, timeoutMs }): Promise<SendOutcome> {
      let response: Response;
      let text: string;
      try {
        response = await fetch(`${baseUrl}/v1/objects`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
          body: JSON.stringify(pkg.body),
          signal: AbortSignal.timeout(timeoutMs),
        });
        text = await response.text();
      } catch (error) {
        return classifyTransportError(error);
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return { class: 'unknown', httpStatus: response.status, detail: { reason: 'unparseable response body', body: text.slice(0, 500) } };
      }
      const replayed = response.headers.get('idempotent-replayed') === 'true';
      if (response.ok) {
        const parsed = createdObject.safeParse(body);
        if (!parsed.success) return { class: 'unknown', httpStatus: response.status, detail: { reason: '2xx without an object ID', body } };
        return {
          class: 'confirmed',
          httpStatus: response.status,
          externalId: parsed.data.id,
          externalUrl: `${baseUrl}/v1/objects/${parsed.data.id}`,
          occurredAt: parsed.data.created_at ?? new Date().toISOString(),
          detail: { reason: replayed ? 'created (stored response replayed for our key)' : 'created', body, replayed },
        };
      }
      return classifyErrorStatus(response.status, body, response.headers.get('retry-after'));
    },
  };
}
