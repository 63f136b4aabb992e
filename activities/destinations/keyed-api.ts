// keyed-api: a Stripe-style HTTP API (our simulator's /v1), the friendliest kind of destination.
// Mechanism: idempotency key. It stores the first response per `Idempotency-Key` for 24 h and replays
// it (`Idempotent-Replayed: true`), answers 400 when a key comes back with other parameters, 409 while
// a request with the key is in flight. We also stamp the effect ID into `metadata` so readback can
// find the object by reference after the key is forgotten.
import { z } from 'zod';
import type {
  DestinationAdapter,
  DestinationContract,
  LookupResult,
  ReadbackResult,
  SendOutcome,
} from '../../domain/destination-contract.js';
import { foreignBodyVerdict, isExactObject, isForeignBody, type StampedObject } from './exact-match.js';
import { bearer, classifyErrorStatus, isOutcome, postJson } from './http-outcome.js';
import { getJson, objectIdFromUrl } from './http-read.js';

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

export const keyedApiContract: DestinationContract = {
  name: 'keyed-api',
  mechanism: 'idempotency_key',
  keyRetentionSeconds: 24 * 60 * 60,
  // A key that comes back with other parameters is answered 400 (Stripe's rule): a revision's new body
  // needs its own key, `effectID#r<n>`.
  keyScope: 'revision',
  operations: { 'refund.create': refund, 'task.create': task, 'task.announce': taskAnnounced },
  steps: {
    // The task first (main, keyed here), then the announcement on the social feed (key-less: step `announce`).
    'task.announce': ({ channel, text, ...task }) => [
      { step: 'main', destination: 'keyed-api', operation: 'task.create', payload: task },
      { step: 'announce', destination: 'social-feed', operation: 'post.publish', payload: { channel, text } },
    ],
  },
  callTimeoutMs: 10_000,
  // Absence is proven by a server-side search over every object carrying our effect ID, and the key
  // (when still remembered) dedupes anyway: a same-key retry after that cannot make a duplicate.
  retryAfterProvenAbsence: true,
  // The key lookup reports a request still in flight (409 while processing); a short grace covers the
  // moment between our timeout and the provider registering the key.
  absenceGraceMs: 5_000,
  // One metadata search every few hours at most while a person is awaited: the key dedupes meanwhile.
  readbackMaxIntervalMs: 4 * 60 * 60 * 1000,
  buildPackage(effectId, operation, payload) {
    const target =
      operation === 'refund.create'
        ? `POST /v1/objects refund of ${String(payload.charge)}`
        : `POST /v1/objects task for ${String(payload.request)}`;
    return { target, body: { kind: operation, ...payload, metadata: { effect_id: effectId } } };
  },
  describe(operation, payload) {
    if (operation === 'refund.create')
      return `refund ${String(payload.amount)} ${String(payload.currency)} on ${String(payload.charge)}`;
    const task = `task "${String(payload.title)}" for ${String(payload.request)}`;
    return operation === 'task.announce' ? `${task}, announced on ${String(payload.channel)}` : task;
  },
};

const createdObject = z.object({ id: z.string().min(1), created_at: z.string().optional() });

interface ProviderObject extends StampedObject {
  id: string;
  created_at: string;
}

const READBACK_PAGE_LIMIT = 10;

/** `credential`: the API key, from the worker's environment or a file (never from a payload). */
export function keyedApi(baseUrl: string, credential?: string): DestinationAdapter {
  const auth = bearer(credential);
  return {
    ...keyedApiContract,
    async send({ idempotencyKey, package: pkg, timeoutMs }): Promise<SendOutcome> {
      const answer = await postJson(
        `${baseUrl}/v1/objects`,
        pkg.body,
        { ...auth, 'idempotency-key': idempotencyKey },
        timeoutMs,
      );
      if (isOutcome(answer)) return answer;
      const { status, headers, body } = answer;
      const replayed = headers.get('idempotent-replayed') === 'true';
      if (status >= 200 && status < 300) {
        const parsed = createdObject.safeParse(body);
        if (!parsed.success)
          return { class: 'unknown', httpStatus: status, detail: { reason: '2xx without an object ID', body } };
        return {
          class: 'confirmed',
          httpStatus: status,
          externalId: parsed.data.id,
          externalUrl: `${baseUrl}/v1/objects/${parsed.data.id}`,
          occurredAt: parsed.data.created_at ?? new Date().toISOString(),
          detail: { reason: replayed ? 'created (stored response replayed for our key)' : 'created', body, replayed },
        };
      }
      return classifyErrorStatus(status, body, headers.get('retry-after'));
    },

    async readBack(request): Promise<ReadbackResult> {
      const url = (id: string) => `${baseUrl}/v1/objects/${id}`;
      // 1. By key, while the provider remembers it.
      const byKey = await getJson<{ status: string; object_id: string | null }>(
        `${baseUrl}/v1/idempotency_keys/${encodeURIComponent(request.idempotencyKey)}`,
        request,
        auth,
      );
      if (byKey.status === 200 && byKey.body.status === 'in_flight') {
        return {
          outcome: 'inconclusive',
          coverage: 'partial',
          detail: { method: 'idempotency_key', reason: 'a request with our key is still being processed' },
        };
      }
      if (byKey.status === 200 && byKey.body.object_id) {
        const object = await getJson<ProviderObject>(url(byKey.body.object_id), request, auth);
        if (object.status === 200 && isExactObject(object.body, request)) {
          return {
            outcome: 'found',
            coverage: 'complete',
            externalId: object.body.id,
            externalUrl: url(object.body.id),
            occurredAt: object.body.created_at,
            detail: { method: 'idempotency_key', reason: 'the key maps to an object carrying our effect ID and body' },
          };
        }
      }
      // 2. By the reference we stamped, over every object (a server-side filter: complete coverage).
      const matches: ProviderObject[] = [];
      const foreign: string[] = [];
      let after: string | undefined;
      let scanned = 0;
      for (let page = 0; page < READBACK_PAGE_LIMIT; page++) {
        const query = `limit=100&metadata[effect_id]=${encodeURIComponent(request.effectId)}${after ? `&starting_after=${after}` : ''}`;
        const listed = await getJson<{ data: ProviderObject[]; has_more: boolean }>(
          `${baseUrl}/v1/objects?${query}`,
          request,
          auth,
        );
        if (listed.status === 404) throw new Error('object listing is missing at the provider');
        scanned += listed.body.data.length;
        matches.push(...listed.body.data.filter((o) => isExactObject(o, request)));
        foreign.push(...listed.body.data.filter((o) => isForeignBody(o, request)).map((o) => o.id));
        if (!listed.body.has_more || listed.body.data.length === 0) {
          const [first, ...others] = matches.sort((a, b) => a.created_at.localeCompare(b.created_at));
          if (!first && foreign.length) return foreignBodyVerdict('metadata_search', foreign, scanned);
          if (!first)
            return {
              outcome: 'absent',
              coverage: 'complete',
              detail: { method: 'metadata_search', reason: 'no object carries our effect ID and body', scanned },
            };
          return {
            outcome: 'found',
            coverage: 'complete',
            externalId: first.id,
            externalUrl: url(first.id),
            occurredAt: first.created_at,
            detail: {
              method: 'metadata_search',
              reason: 'found by the effect ID stamped in metadata and the body hash',
              scanned,
              duplicates: others.map((o) => o.id),
            },
          };
        }
        after = listed.body.data.at(-1)?.id;
      }
      return {
        outcome: 'inconclusive',
        coverage: 'partial',
        detail: { method: 'metadata_search', reason: `stopped after ${READBACK_PAGE_LIMIT} pages`, scanned },
      };
    },

    resolveUrl: (url) => objectIdFromUrl(url, baseUrl, '/v1/objects/'),
    objectUrlShape: `${baseUrl}/v1/objects/<id>`,

    async lookup(externalId, request): Promise<LookupResult> {
      const found = await getJson<ProviderObject>(
        `${baseUrl}/v1/objects/${encodeURIComponent(externalId)}`,
        request,
        auth,
      );
      if (found.status === 404) return { exists: false };
      return {
        exists: true,
        externalId: found.body.id,
        externalUrl: `${baseUrl}/v1/objects/${found.body.id}`,
        occurredAt: found.body.created_at,
        matchesRelease: isExactObject(found.body, request),
      };
    },
  };
}
